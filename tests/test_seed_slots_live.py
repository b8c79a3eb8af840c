"""The seed's 1/2/4-slot procedure, small, on llama.cpp's llama-server and on labkit's server
(notebook 05): every run labelled with its server and flags, the same graded answers, the table
and the plot naming both servers."""

import matplotlib
import pytest

matplotlib.use("Agg")

from labkit.bench import provenance  # noqa: E402
from labkit.lessons import llama_server  # noqa: E402


@pytest.mark.slow
@pytest.mark.skipif(not llama_server.reference_installed(),
                    reason="llama-server (xllamacpp) not installed")
def test_seed_procedure_small_on_both_servers():
    result = llama_server.seed_slots((1, 2), max_docs=2, rounds=1)
    rows = result.rows
    assert len(rows) == 2 * 2 * 2 and rows["error"].isna().all(), rows[["server", "error"]]
    assert set(rows["flags"]) == {"-c 4096 -np 1 --no-kv-unified", "-c 4096 -np 2 --no-kv-unified"}
    names = provenance.servers(rows)
    assert names[0].startswith("labkit server ") and names[1].startswith("llama-server (")
    # the client kept as many requests in flight as the server had slots, on both servers
    assert (rows["in_flight"] == rows["slots"]).all()
    side = llama_server.side_by_side(result)
    assert len(side) == 4 and side["server"].str.contains(" · -c 4096 -np ").all()
    assert (side["correct"] == side["n_requests"]).all(), side    # same graded answers on both
    assert provenance.missing(result.plots["throughput_vs_slots"], rows) == []
    assert [line[0].split(":")[0] for line in llama_server.slot_gains(side)] == names
