"""The GPU check's pure parts: what the carry folder keeps of llama.cpp, and the report."""

import importlib.util
import sys
from pathlib import Path

import pytest

GPU = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", GPU / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


pack = _load("pack")
run = _load("run")


@pytest.mark.parametrize("path", [
    "CMakeLists.txt", "cmake/build-info.cmake", "ggml/src/ggml.c", "ggml/src/ggml-version.h.in",
    "ggml/src/ggml-cuda/fattn.cu", "ggml/src/ggml-cuda", "ggml/src/ggml-cpu/ggml-cpu.c",
    "src/llama.cpp", "common/arg.cpp", "tools/server/server.cpp", "tools/mtmd/models/models.h",
    "tools/ui/CMakeLists.txt", "tools/ui/ui.cpp.in", "scripts/ui-assets.cmake",
    "vendor/cpp-httplib/httplib.h", "LICENSE"])
def test_pack_keeps_what_cmake_reads(path):
    assert pack.keep(path)


@pytest.mark.parametrize("path", [
    "models/ggml-vocab-llama-bpe.gguf", "docs/build.md", "tests/test-backend-ops.cpp",
    "examples/simple/simple.cpp", "ggml/src/ggml-vulkan/ggml-vulkan.cpp", "ggml/src/ggml-metal",
    "tools/ui/src/app.ts", "tools/server/tests/unit/test_basic.py", "scripts/sync-ggml.sh",
    "tools/mtmd/test-3.mp4", "convert_hf_to_gguf.py", "README.md"])
def test_pack_drops_what_no_build_reads(path):
    assert not pack.keep(path)


def test_report_has_the_gain_over_one_slot_and_says_what_was_skipped(tmp_path):
    r = run.Run(tmp_path / "out", tmp_path / "work", budget_s=None)
    r.facts["gpu"] = {"name": "Card", "memory_mib": 1000, "compute_cap": "9.0", "driver": "1"}
    base = {"model": "synthetic:smollm2-135m", "server": "llama-server", "server_kind":
            "llama-server", "n_ctx_slot": 4096, "n_requests": 32, "ttft_p50_s": 0.1,
            "ttft_max_s": 0.2, "sampled_peak_mib": 900.0, "errors": 0, "verdict": "pass",
            "memory": "sampled peak GPU memory", "seconds": 5.0}
    r.lines = [dict(base, slots=1, output_tok_s=100.0), dict(base, slots=4, output_tok_s=250.0)]
    r.facts["doctor"] = {"ok": True, "gpu_offload": True, "devices": ["CUDA0 (Card)"],
                         "path": "gpu", "gpu_devices": ["CUDA0 (Card, CUDA)"]}
    r.note("synthetic:llama-3.1-8b:q4_0 llama-server 16 slots skipped: 3 s of the budget left")
    run.report(r)
    text = (tmp_path / "out" / "report.md").read_text()
    assert "Card, 1000 MiB, compute capability 9.0" in text
    assert "compute path: gpu; GPU devices llama.cpp sees (backend): CUDA0 (Card, CUDA)" in text
    assert "| synthetic:smollm2-135m | llama-server | 4 | 4096 | 32 | 250 | 2.50 |" in text
    assert "16 slots skipped" in text
    assert (tmp_path / "out" / "results.csv").is_file() and (tmp_path / "out" / "plots.png").is_file()


def test_notebooks_are_not_run_off_the_gpu_path_and_the_report_says_why(tmp_path):
    r = run.Run(tmp_path / "out", tmp_path / "work", budget_s=None)
    run.notebooks(r, run.NOTEBOOKS, "cpu", "quick")
    assert r.notebooks == []
    run.report(r)
    text = (tmp_path / "out" / "report.md").read_text()
    assert "notebooks' GPU branches not run: the compute path is cpu" in text
    assert "## Notebooks' GPU branches" not in text


def _notebook(path, *cells):
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbformat.write(nb, path)


@pytest.mark.slow
def test_notebooks_run_in_a_kernel_that_requires_the_gpu_and_failures_are_named(tmp_path,
                                                                              monkeypatch):
    """Each notebook runs top to bottom in its own kernel with LABKIT_REQUIRE_GPU=1; a cell
    that raises is the notebook's result, named in the report, and the next notebook still
    runs."""
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks" / "good.ipynb",
              "import os\nassert os.environ['LABKIT_REQUIRE_GPU'] == '1'\n"
              "assert os.environ['LABKIT_QUICK'] == '1'",
              "def skip_without_gpu(what):\n    return True",
              "if skip_without_gpu('a GPU cell'):\n    print('gpu cell')")
    _notebook(tmp_path / "notebooks" / "bad.ipynb", "raise RuntimeError('this cell would be skipped')")
    monkeypatch.setattr(run, "REPO", tmp_path)
    r = run.Run(tmp_path / "out", tmp_path / "work", budget_s=None)
    run.notebooks(r, ["bad", "good"], "gpu", "quick")
    assert [(n["notebook"], n["result"]) for n in r.notebooks] == [
        ("bad", "failed: RuntimeError: this cell would be skipped"), ("good", "passed")]
    assert r.notebooks[1]["gpu_cells"] == 1
    assert (tmp_path / "out" / "notebooks" / "good.ipynb").is_file()
    text = (tmp_path / "out" / "report.md").read_text()
    assert "| bad | quick | failed: RuntimeError: this cell would be skipped | 0 |" in text
    assert "| good | quick | passed | 1 |" in text


def _rounds(model, kind, slots, tok_s, ttft_s):
    import pandas as pd
    return pd.DataFrame({"server": f"{kind} 1.0", "slots": slots, "round": range(len(tok_s)),
                         "output_tok_s": tok_s, "ttft_p50_s": ttft_s, "model": model,
                         "server_kind": kind})


def _parity_report(tmp_path, on_gpu, labkit_tok_s, labkit_ttft_s, reference="llama-server"):
    r = run.Run(tmp_path / "out", tmp_path / "work", budget_s=None)
    r.facts["on_gpu"] = on_gpu
    for model in run.MODELS:
        r.rounds += [_rounds(model, "labkit", 4, labkit_tok_s, labkit_ttft_s),
                     _rounds(model, reference, 4, [100.0, 100.0, 100.0], [0.1, 0.1, 0.1])]
    run.report(r)
    return (tmp_path / "out" / "report.md").read_text()


def test_report_holds_labkit_to_serve_bench_targets_model_by_model(tmp_path):
    """The same ratios, targets and table as benchmarks/serve_bench.py: on a GPU the small
    model's steps are as short as the stand-in's (>= 0.95x), the 8B's are not (>= 0.98x)."""
    text = _parity_report(tmp_path, True, [96.0, 94.0, 97.0], [0.1, 0.1, 0.1])
    assert "## labkit / llama-server" in text and "the same llama.cpp build" in text
    assert ("| synthetic:smollm2-135m | 4 | 0.960x | 0.96 / 0.94 / 0.97 | 0.960x | >= 0.95 | yes | "
            "1.000x | 1.00 / 1.00 / 1.00 | yes |") in text
    assert ("| synthetic:llama-3.1-8b:q4_0 | 4 | 0.960x | 0.96 / 0.94 / 0.97 | 0.960x | >= 0.98 | "
            "NO |") in text
    assert "1 of 2 slot counts meet both targets." in text


def test_report_says_no_to_a_slow_first_token_and_off_the_gpu_to_the_stand_in_target(tmp_path):
    text = _parity_report(tmp_path, False, [99.0, 99.0, 99.0], [0.1, 0.12, 0.2],
                          reference="xllamacpp")
    assert "| synthetic:smollm2-135m | 4 | 0.990x | 0.99 / 0.99 / 0.99 | 0.990x | >= 0.98 | yes | " \
           "1.200x | 1.00 / 1.20 / 2.00 | NO |" in text
    assert "0 of 2 slot counts meet both targets." in text
    assert "not a parity measurement" in text


def test_no_ratio_without_labkit_beside_a_llama_cpp_server(tmp_path):
    r = run.Run(tmp_path / "out", tmp_path / "work", budget_s=None)
    r.rounds = [_rounds(run.MODELS[0], "llama-server", 4, [100.0], [0.1])]
    run.report(r)
    assert "## labkit / llama-server" not in (tmp_path / "out" / "report.md").read_text()


def test_the_median_of_round_ratios_is_shown_beside_the_ratio_of_medians(tmp_path):
    """Each round's two runs are minutes apart; the machine's drift over the whole run moves the
    ratio of medians but not the per-round ratios, so both are printed (the target is judged on
    the first, as the issue states it)."""
    r = run.Run(tmp_path / "out", tmp_path / "work", budget_s=None)
    r.rounds = [_rounds(run.MODELS[0], "labkit", 2, [100.0, 90.0, 110.0], [0.1] * 3),
                _rounds(run.MODELS[0], "llama-server", 2, [80.0, 100.0, 120.0], [0.1] * 3)]
    run.report(r)
    assert ("| synthetic:smollm2-135m | 2 | 1.000x | 1.25 / 0.90 / 0.92 | 0.917x | >= 0.98 | yes |"
            in (tmp_path / "out" / "report.md").read_text())
