"""labkit.costs.roofline: the arithmetic on hand-made machines and models (exact), the embedded model's
cost read from its file, the machine record, the sweep's bookkeeping on a hand-made trace, and
one short sweep on the real engine."""

import dataclasses
import doctest
import math
import platform
import sys
import types

import pandas as pd
import pytest

from labkit.costs import roofline as rl
from labkit.models.gguf import TensorInfo
from labkit.machine.runenv import usable_cores
from roofline_frames import sweep_frame

F32, Q8_0 = 0, 8

# A round machine and a round model: 100 B/s, 1000 FLOP/s; 1000 weight bytes, 100 matrix
# parameters of which 10 in the output layer, 10 KV bytes and 2 attention FLOPs per cell.
M = rl.Machine(bandwidth=100.0, flops=1000.0, bandwidth_source="test", flops_source="test")
C = rl.ModelCost("toy", weight_bytes=1000, file_tensor_bytes=1000, matrix_params=100,
                 output_params=10, kv_bytes_per_cell=10.0, attention_flops_per_cell=2)


def test_docstring_examples_hold():
    assert doctest.testmod(rl).failed == 0


# ------------------------------------------------------------------ the arithmetic

def test_a_decode_step_at_batch_one_is_the_weights_over_the_bandwidth():
    # moving: 1000 B / 100 B/s = 10 s; computing: 2 x 100 / 1000 = 0.2 s.
    assert rl.step_times(M, C, tokens=1, logits=1, kv_cells=0, attention_cells=0) == (10.0, 0.2)
    assert rl.decode_step_seconds(M, C, 1) == 10.0
    assert rl.decode_tok_s(M, C, 1) == 0.1 == M.bandwidth / C.weight_bytes
    assert rl.decode_bound(M, C, 1) == "bandwidth"


def test_batching_shares_the_weight_read_until_the_arithmetic_catches_up():
    # Bandwidth-bound below 50: the same 10 s step carries B tokens.
    assert [rl.decode_tok_s(M, C, b) for b in (1, 2, 4, 25)] == [0.1, 0.2, 0.4, 2.5]
    assert rl.crossover_batch(M, C) == 50.0
    assert rl.decode_bound(M, C, 50) == "bandwidth" and rl.decode_bound(M, C, 51) == "compute"
    # Past it the aggregate stays at the arithmetic ceiling: 1000 / 200 = 5 tok/s.
    assert rl.decode_tok_s(M, C, 100) == 5.0 == M.flops / C.flops_per_token


def test_without_overlap_moving_and_computing_add_up():
    assert rl.decode_step_seconds(M, C, 1, overlap=False) == 10.2
    # 10 s of weights shared, 0.2 s of arithmetic each: the gain tends to (10 + 0.2) / 0.2.
    assert rl.decode_tok_s(M, C, 50, overlap=False) == 50 / 20
    assert rl.prefill_step_seconds(M, C, 1, 100, overlap=False) == 20 + 28.12
    t = rl.predict(M, C, batches=(1,))
    assert t.loc[1, "decode_tok_s_no_overlap"] == 1 / 10.2 < t.loc[1, "decode_tok_s"]


def test_the_kv_cache_adds_bytes_and_arithmetic_per_attended_cell():
    # Batch 2, 10 cells each: 1000 + 20 x 10 = 1200 B (12 s); 2 x 200 + 20 x 2 = 440 FLOPs.
    assert rl.step_times(M, C, tokens=2, logits=2, kv_cells=20, attention_cells=20) == (12.0, 0.44)
    assert rl.decode_tok_s(M, C, 2, context=10) == 2 / 12
    # Crossover with context 10: (1000 / 100) / ((200 + 20) / 1000 - 100 / 100) < 0: never.
    assert rl.crossover_batch(M, C, context=10) == math.inf
    # A thin context: (10) / ((200 + 2) / 1000 - 10 / 100) = 10 / 0.102.
    assert rl.crossover_batch(M, C, context=1) == pytest.approx(10 / 0.102, rel=1e-12)


def test_an_unknown_arithmetic_rate_is_bandwidth_bound_at_every_batch():
    gpu = rl.Machine(100.0, math.inf, "test", "not known")
    assert rl.crossover_batch(gpu, C) == math.inf
    assert rl.decode_tok_s(gpu, C, 1000) == 100.0


def test_prefill_is_compute_bound_and_flat_in_the_batch():
    # 100 tokens: 2 x 90 x 100 + 2 x 10 x 1 + 2 x 5050 = 28120 FLOPs (28.12 s) against
    # (1000 + 1000) / 100 = 20 s of reading.
    assert rl.prefill_step_seconds(M, C, 1, 100) == 28.12
    assert rl.prefill_tok_s(M, C, 1, 100) == 100 / 28.12
    wide = dataclasses.replace(C, attention_flops_per_cell=0, kv_bytes_per_cell=0.0)
    rates = [rl.prefill_tok_s(M, wide, b, 100) for b in (1, 2, 4, 8)]
    assert rates[0] == pytest.approx(100 / 18.02)
    assert max(rates) / min(rates) < 1.01
    assert C.prefill_flops_per_token == 180 and C.flops_per_token == 200


def test_predict_has_a_row_per_batch():
    t = rl.predict(M, C, batches=(1, 2, 64), prompt_tokens=100)
    assert list(t.index) == [1, 2, 64]
    assert list(t["decode_bound"]) == ["bandwidth", "bandwidth", "compute"]
    assert t.loc[2, "decode_tok_s"] == 0.2 and t.loc[2, "decode_tok_s_per_stream"] == 0.1
    assert t.loc[64, "decode_tok_s"] == 5.0


def test_only_the_decode_part_of_a_request_gains_from_slots():
    # All decode: the gain is the decode speed-up itself.
    assert rl.lockstep_gain(0, 100, 4, 300, 100, 300) == pytest.approx(3.0)
    # All prompt: no gain at all.
    assert rl.lockstep_gain(100, 0, 4, 300, 100, 300) == pytest.approx(1.0)
    # Half the time in each (1 s + 1 s), decode 3x faster at batch 4: 8 / (4 + 4/3) = 1.5.
    assert rl.lockstep_gain(300, 100, 4, 300, 100, 300) == pytest.approx(1.5)
    assert rl.prefill_share(300, 100, 300, 100) == 0.5
    assert rl.lockstep_seconds(300, 100, 4, 300, 300) == pytest.approx(4 + 4 / 3)


def test_peak_bandwidth_of_a_gpu_bus():
    assert rl.peak_bandwidth(5120, 2619) == 640 * 2619e6 * 2
    assert rl.peak_bandwidth(384, 10501) == pytest.approx(1008.1e9, rel=1e-4)   # an RTX 4090


# ------------------------------------------------------------------ the model

def _tensor(name, shape, ggml_type=F32):
    return TensorInfo(name, tuple(shape), ggml_type, 0)


def test_tied_embeddings_are_read_whole_and_multiplied():
    tensors = [_tensor("token_embd.weight", (64, 1000), Q8_0),      # 64000 / 32 x 34 bytes
               _tensor("blk.0.attn_norm.weight", (64,)),             # 256 bytes
               _tensor("blk.0.ffn_up.weight", (64, 128))]            # 32768 bytes
    c = rl.cost_from_tensors("tied", tensors, n_layer=1, n_head=2, head_dim=32,
                             kv_bytes_per_cell=256.0)
    assert c.weight_bytes == c.file_tensor_bytes == 68000 + 256 + 32768
    assert c.matrix_params == 64000 + 8192 and c.output_params == 64000
    assert c.attention_flops_per_cell == 4 * 1 * 2 * 32


def test_an_untied_embedding_table_is_only_looked_up():
    tensors = [_tensor("token_embd.weight", (64, 1000)), _tensor("output.weight", (64, 1000)),
               _tensor("blk.0.ffn_up.weight", (64, 128))]
    c = rl.cost_from_tensors("untied", tensors, 1, 2, 32, 256.0)
    assert c.file_tensor_bytes == 4 * (64000 + 64000 + 8192)
    assert c.weight_bytes == 4 * (64000 + 8192)
    assert c.matrix_params == 64000 + 8192 and c.output_params == 64000


def test_a_tensor_of_unknown_size_is_refused():
    with pytest.raises(ValueError, match="unknown size"):
        rl.cost_from_tensors("odd", [_tensor("token_embd.weight", (4, 4), 999)], 1, 1, 1, 1.0)


def test_the_embedded_model_cost_comes_from_its_own_tensor_table():
    c = rl.model_cost()
    # SmolLM2-135M Q4_1: every tensor's bytes (tied embeddings: all of them are read).
    assert c.weight_bytes == c.file_tensor_bytes == 96_576_768
    assert c.output_params == 576 * 49152
    assert c.matrix_params == 134_479_872          # every parameter but the 61 norm vectors
    assert c.kv_bytes_per_cell == 2 * 30 * 3 * 64 * 2
    assert c.attention_flops_per_cell == 4 * 30 * 9 * 64


# ------------------------------------------------------------------ the machine record

def test_the_latest_machine_is_kept_for_this_host_only(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE", str(tmp_path))
    assert rl.latest_machine() is None
    here = rl.Machine(12e9, 50e9, "test", "test", platform.node(), usable_cores(), "now",
                      load_before=0.5, load_after=0.7)
    rl._save_record(here)
    assert rl.record_path().parent == tmp_path
    assert rl.latest_machine() == here == rl.machine()
    rl._save_record(rl.Machine(1.0, 1.0, "test", "test", "another-host", usable_cores()))
    assert rl.latest_machine() is None
    rl.record_path().write_text("not json")
    assert rl.latest_machine() is None


def test_measure_machine_records_what_it_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE", str(tmp_path))
    monkeypatch.setattr(rl, "measure_bandwidth", lambda *a, **k: 8e9)
    monkeypatch.setattr(rl, "measure_matmul", lambda *a, **k: 40e9)
    m = rl.measure_machine()
    assert (m.bandwidth, m.flops, m.host) == (8e9, 40e9, platform.node())
    assert m.bandwidth_source["kind"] == "numpy-sum" and m.flops_source["kind"] == "numpy-matmul"
    assert "sums of a" in rl.source_text(m.bandwidth_source, "en")
    assert "matrix product" in rl.source_text(m.flops_source, "en")
    assert rl.latest_machine() == m
    unkept = rl.measure_machine(flops=1e9, keep=False)
    assert unkept.flops == 1e9 and unkept.flops_source == {"kind": "given"}
    assert rl.latest_machine() == m
    assert "memory bandwidth" in m.table().index


def test_small_measurements_are_positive():
    assert 0 < rl.measure_bandwidth(8 * rl.MiB, repeats=1, threads=2) < math.inf
    assert 0 < rl.measure_matmul(64, repeats=1) < math.inf


def test_nvml_bus_width_and_memory_clock_give_the_peak(monkeypatch):
    fake = types.SimpleNamespace(
        NVML_CLOCK_MEM=2, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: i, nvmlDeviceGetName=lambda h: b"H100 SXM",
        nvmlDeviceGetMemoryBusWidth=lambda h: 5120,
        nvmlDeviceGetMaxClockInfo=lambda h, kind: 2619 if kind == 2 else 0)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    bw, source = rl.nvml_peak_bandwidth()
    assert bw == rl.peak_bandwidth(5120, 2619)
    assert source == {"kind": "nvml-peak", "index": 0, "name": "H100 SXM", "bits": 5120, "mhz": "2619"}
    text = rl.source_text(source, "en")
    assert "NVML" in text and "5120-bit" in text and "2619 MHz" in text

    def no_driver():
        raise OSError("driver not loaded")
    monkeypatch.setattr(fake, "nvmlInit", no_driver)
    with pytest.raises(RuntimeError, match="no NVIDIA GPU"):
        rl.nvml_peak_bandwidth()


# ------------------------------------------------------------------ the sweep's bookkeeping

def _steps(rows):
    cols = ["step", "t_start", "t_end", "dur_s", "n_tokens", "n_prefill_tokens",
            "n_prefill_seqs", "n_decode", "attended", "kv_used", "n_busy"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_phase_rows_keep_only_pure_steps_and_predict_those_very_steps():
    steps = _steps([
        # step, t0, t1, dur, tokens, prefill, seqs, decode, attended, kv, busy
        (0, 0, 30, 30.0, 200, 200, 2, 0, 200, 200, 2),     # both prompts together
        (1, 30, 40, 10.0, 2, 0, 0, 2, 202, 202, 2),        # both decode
        (2, 40, 50, 10.0, 2, 0, 0, 2, 204, 204, 2),
        (3, 50, 60, 10.0, 1, 0, 0, 1, 103, 103, 1),        # one left: not a batch-2 step
    ])
    dec, pre = rl._phase_rows(M, C, 2, steps)
    assert (dec["phase"], dec["steps"], dec["tokens"], dec["seconds"]) == ("decode", 2, 4, 20.0)
    assert dec["measured_tok_s"] == 0.2
    # Predicted: 1000 + 202 x 10 = 3020 B (30.2 s), then 1000 + 2040 = 3040 B (30.4 s).
    assert dec["predicted_tok_s"] == pytest.approx(4 / 60.6)
    # Without overlap the arithmetic adds 0.804 s and 0.808 s (400 + 2 x 202, 400 + 2 x 204 FLOPs).
    assert dec["no_overlap_tok_s"] == pytest.approx(4 / (60.6 + 0.804 + 0.808))
    assert (pre["steps"], pre["tokens"], pre["seqs_per_step"]) == (1, 200, 2.0)
    # 2 x 90 x 200 + 2 x 10 x 2 + 2 x (2 x 100 x 101 / 2) = 56240 FLOPs (56.24 s) against
    # (1000 + 200 x 10) / 100 = 30 s of reading.
    assert pre["predicted_tok_s"] == pytest.approx(200 / 56.24)
    assert pre["no_overlap_tok_s"] == pytest.approx(200 / (56.24 + 30))
    assert pre["measured_tok_s"] == 200 / 30


def test_pure_steps_drop_the_mixed_and_the_partial_ones():
    steps = _steps([(0, 0, 1, 1.0, 64, 64, 2, 0, 64, 64, 2),      # both prompts
                    (1, 1, 2, 1.0, 33, 32, 1, 1, 65, 97, 2),      # a prompt beside a decode
                    (2, 2, 3, 1.0, 2, 0, 0, 2, 66, 99, 2),        # both decode
                    (3, 3, 4, 1.0, 1, 0, 0, 1, 34, 100, 1)])      # one left
    assert list(rl._pure_steps(steps, 2)["step"]) == [0, 2]


def test_table_and_plot_read_a_sweep():
    import matplotlib.pyplot as plt
    df = sweep_frame()
    df.attrs.update(machine=M, cost=C)
    t = rl.table(df)
    assert list(t.index) == [1, 2, 4]
    assert t.loc[4, "decode measured tok/s per stream"] == pytest.approx(0.09)
    assert t.loc[2, "decode measured / roofline"] == pytest.approx(0.9)
    assert t.loc[2, "decode measured / no-overlap"] == pytest.approx(1.125)
    assert t.loc[1, "prefill roofline tok/s"] == 3.5 and t.loc[1, "prefill no-overlap tok/s"] == 2.5
    assert list(t.columns)[:3] == ["decode measured tok/s", "decode measured tok/s per stream",
                                   "decode roofline tok/s"]
    fig = rl.plot(df)
    assert len(fig.axes) == 2
    plt.close(fig)


def test_the_bounds_reading_follows_the_sweeps_own_ratios():
    between = sweep_frame(batches=(1, 2, 4), decode=1.0, predicted=1.1, no_overlap=0.9)
    (en, zh), = rl.bounds_reading(between)
    assert en.startswith("decode, every batch (1-4): between") and "1.11" in en and "1.11" in zh
    slow = sweep_frame(batches=(1, 2, 4), decode=1.0, predicted=4.0, no_overlap=2.0)
    (en, zh), = rl.bounds_reading(slow)
    assert en.startswith("decode, every batch (1-4): slower than even the no-overlap bound")
    assert "比不重疊的界線還慢" in zh
    mixed = sweep_frame(batches=(1, 2), decode=1.0, predicted=1.1, no_overlap=0.9)
    mixed.loc[(mixed["batch"] == 2) & (mixed["phase"] == "decode"), "ratio_no_overlap"] = 0.8
    lines = [en for en, _ in rl.bounds_reading(mixed)]
    assert lines[0].startswith("decode, batch 2: slower") and lines[1].startswith("decode, batch 1: between")


def test_the_gain_reading_places_the_measured_gain_against_both_predictions():
    df = sweep_frame(batches=(1, 4), decode=1.0, predicted=1.0, no_overlap=1.0)
    dec = (df["phase"] == "decode")
    four = dec & (df["batch"] == 4)
    df.loc[four, ["predicted_tok_s", "no_overlap_tok_s"]] = [1.3, 1.69]
    df.loc[four, "measured_tok_s"] = 2.53
    en, zh = rl.gain_reading(df)
    assert en.startswith("batch 4 / batch 1: measured x2.53 against the roofline's x1.30 and the "
                         "no-overlap bound's x1.69: above both") and "比兩者都高" in zh
    df.loc[four, "measured_tok_s"] = 1.5
    assert ": between the two" in rl.gain_reading(df)[0]
    df.loc[four, "measured_tok_s"] = 1.1
    assert ": below both" in rl.gain_reading(df)[0]
    assert rl.gain_reading(df, batch=8) is None


# ------------------------------------------------------------------ on the real engine

@pytest.mark.slow
def test_a_short_sweep_on_the_engine(monkeypatch):
    loads = iter([1.25])         # the first reading (before the sweep), then 2.5 for any later
    monkeypatch.setattr(rl.os, "getloadavg", lambda: (next(loads, 2.5), 0.0, 0.0))
    df = rl.sweep(batches=(1, 2), prompt_tokens=32, new_tokens=4, m=M)
    assert list(zip(df["batch"], df["phase"])) == [(1, "decode"), (1, "prefill"),
                                                   (2, "decode"), (2, "prefill")]
    dec, pre = df[df["phase"] == "decode"], df[df["phase"] == "prefill"]
    # The prompts share one step; the first answer token comes from it, then 3 decode steps
    # carry the whole batch. The one-token request that held the door left no step behind.
    assert list(pre["steps"]) == [1, 1] and list(pre["tokens"]) == [32, 64]
    assert list(pre["seqs_per_step"]) == [1.0, 2.0]
    assert list(dec["steps"]) == [3, 3] and list(dec["tokens"]) == [3, 6]
    assert (df["no_overlap_tok_s"] < df["predicted_tok_s"]).all()
    steps = df.attrs["steps"]
    assert list(steps["batch"]) == [1] * 4 + [2] * 4 and steps["dur_s"].gt(0).all()
    assert (df["measured_tok_s"] > 0).all() and (df["ratio"] > 0).all()
    assert df.attrs["prompt_tokens"] == 32 and df.attrs["machine"] is M
    assert (df.attrs["load_before"], df.attrs["load_after"]) == (1.25, 2.5)
