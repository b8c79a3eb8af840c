"""`labkit bench` end to end on the real embedded model, in quick mode (LABKIT_QUICK=1:
1 round, 2 documents, 1 and 2 split slots)."""

import json

import pandas as pd
import pytest

from labkit.bench.cli import main


@pytest.mark.slow
def test_labkit_bench_quick_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_QUICK", "1")
    rc = main(["--out", str(tmp_path), "--no-progress"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    (out,) = tmp_path.iterdir()
    ws = pd.read_csv(out / "worksheet.csv")
    assert list(ws["slots"]) == [1, 2] and list(ws["n_ctx_slot"]) == [4096, 2048]
    assert (ws["kv_mode"] == "split").all() and (ws["in_flight"] == ws["slots"]).all()
    assert (ws["errors"] == 0).all() and (ws["correct"] == 2).all()
    assert ws["fits_context"].all() and ws["all_correct"].all()
    assert (ws["output_tok_s"] > 0).all() and (ws["sampled_peak_mib"] > 50).all()
    assert ws["memory"].str.contains("RSS").all()
    assert "| labkit 0.1.0 | CPU | split | 4096 | 1 | 4096 | 1 | short |" in printed
    assert (ws["device"] == "CPU").all() and (ws["n_gpu_layers"] == 0).all()
    rows = pd.read_csv(out / "requests.csv")
    assert len(rows) == 4 and rows["error"].isna().all()
    assert (rows["ttft_s"] > 0).all() and (rows["completion_s"] >= rows["ttft_s"]).all()
    # Both clocks timed every request's generation (how closely they agree is a measurement:
    # benchmarks/server_latency.py).
    ta = pd.read_csv(out / "timing_agreement.csv")
    assert len(ta) == len(rows)
    assert (ta["gen_client_s"] > 0).all() and (ta["gen_server_s"] > 0).all()
    runs = json.loads((out / "runs.json").read_text())
    assert all(r["warmup_error"] is None and "labkit.server" in " ".join(r["command"])
               for r in runs)
    env = json.loads((out / "environment.json").read_text())
    assert env["model"]["sha256"] == ws["model_sha256"].iloc[0]
    assert env["bench"]["quick"] is True
    assert (env["bench"]["device"], env["bench"]["n_gpu_layers"]) == ("CPU", 0)
    for name in ("throughput_vs_slots", "ttft_per_request", "timeline", "memory_over_time"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 1000
    assert (out / "worksheet.md").read_text().count("\n| labkit") == 2


@pytest.mark.slow
def test_labkit_bench_measures_a_running_server_by_url(tmp_path, capsys):
    """--base-url: any OpenAI-compatible server someone started, measured as it is."""
    from labkit.server.launch import ServerConfig, launch
    with launch(ServerConfig(n_ctx=2048, n_slots=2, kv_unified=False)) as srv:
        rc = main(["--base-url", srv.base_url, "--in-flight", "2", "--out", str(tmp_path),
                   "--no-progress"])
        printed = capsys.readouterr().out
    assert rc == 0, printed
    (out,) = tmp_path.iterdir()
    ws = pd.read_csv(out / "worksheet.csv")
    assert len(ws) == 1
    row = ws.iloc[0]
    # The per-slot cap and slot count are read back from the server, not assumed.
    assert (row["slots"], row["n_ctx_slot"], row["in_flight"]) == (2, 1024, 2)
    assert row["errors"] == 0 and row["correct"] == 2
