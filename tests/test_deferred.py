"""llama-server defers a request that finds every slot busy, and counts it in /metrics."""

import pytest

from labkit import deferred

METRICS = """# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 3
"""


def test_metric_reads_a_gauge_and_not_its_help_line():
    assert deferred.metric(METRICS, "requests_deferred") == 3.0
    assert deferred.metric(METRICS, "requests_processing") == 1.0
    assert deferred.metric(METRICS, "n_decode_total") is None


@pytest.mark.slow
def test_llama_server_defers_a_burst_and_refuses_none():
    if not deferred.have_llama_server():
        pytest.skip("llama-server (xllamacpp, the ref extra) is not installed")
    gauges, answers = deferred.llama_server_burst(n=4, max_tokens=4, n_slots=1)
    assert gauges["requests_deferred"].max() >= 1
    assert (answers["status"] == 200).all() and len(answers) == 4
