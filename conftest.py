import contextlib
import os
import subprocess
import sys
from pathlib import Path

# Quick mode shrinks the notebooks' and the benchmarks' workloads so the whole suite fits a
# 2-core machine; it applies to every pytest run from this checkout, notebooks included.
# LABKIT_QUICK=0 runs the full sizes.
os.environ.setdefault("LABKIT_QUICK", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
ROOT = Path(__file__).resolve().parent

import pytest  # noqa: E402

# Two lanes. `pytest -m "not slow"` is the fast one: it starts no process and loads no
# model, so it runs in seconds. Everything that starts a server, a kernel or any other
# subprocess, or loads the model, is marked `@pytest.mark.slow`; the notebooks (executed by
# nbval) are slow by definition. The hooks below hold the fast lane to that: in a test
# not marked slow, starting a process or loading a model fails the test at once.

MARK_IT_SLOW = ("{what} in a test not marked slow: mark it @pytest.mark.slow "
                "(the fast lane, pytest -m 'not slow', starts no process and loads no model)")
LLAMA_LOADERS = ("llama_model_load_from_file", "llama_load_model_from_file",
                 "llama_model_load_from_splits")


# Two runs of the model-dependent tests. The default (the README's `pytest`) runs the fast lane,
# each notebook's code once and a short set of model tests, to stay near ten minutes on a 2-core
# machine. What it leaves out is marked `long`, and CI (.ci/run) runs it next with
# `--lane=long`, so nothing stops running there:
# - the Chinese notebooks under nbval (their code cells are the English ones, which
#   tests/test_editions.py proves without running them) and their worked solutions;
# - the browser notebooks outside tests/browser_support.py's DRIVEN;
# - the English notebooks the browser runs by default, when it can (DRIVEN runs their code,
#   in JupyterLab; without Chromium nbval runs them in the default);
# - the slow tests of LONG_SUITES, each a minute or more of model work on 2 cores.
# `--lane` chooses: `default` leaves the `long` tests out (unless they are all that was
# collected, as in `pytest notebooks/zh-TW`: naming them asks for them), `long` runs only them,
# `all` runs everything.
LANES = ("default", "long", "all")
LONG_SUITES = frozenset({
    "test_differential.py",     # labkit against llama-server, 144 cases, about 30 server starts
    "test_server.py",           # labkit serve end to end: 64 streams, queue bounds, signals
    "test_llama_server.py",     # the lessons' llama-server helpers, a pool filled on both servers
    "test_sim_calibrate.py",    # the simulator calibrated on the engine's own runs
    "test_synthetic.py",        # synthetic models written, loaded and generated from (an 8B file)
    "test_bench_timing.py",     # labkit bench timing-only on a synthetic 1B model
    "test_bench_e2e.py",        # labkit bench end to end, twice
    "test_workload_zh.py",      # labkit bench on the Chinese workload
    "test_kv_attention.py",     # split against unified decoding, 320-token prompts, both servers
    "test_prompt_cache.py",     # the agent fleet on labkit's server and llama-server
    "test_seed_slots_live.py",  # the seed's 1/2/4-slot procedure on both servers
})


def pytest_addoption(parser):
    parser.addoption("--lane", choices=LANES, default="default",
                     help="default: the fast lane, each notebook's code once and a short set of "
                          "model tests (the `long` tests left out); long: only the `long` tests; "
                          "all: both")


def _runs_long(item) -> bool:
    return item.get_closest_marker("long") is not None


def _notebooks_the_browser_runs() -> set[str]:
    """The English notebooks whose code the default run's browser tests execute (by file
    name), or none when no browser can be driven here."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from browser_support import DRIVEN, browser_missing
    finally:
        sys.path.pop(0)
    return set() if browser_missing() else {name.removeprefix("zh-TW/") for name in DRIVEN}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The notebooks' cells run in a Jupyter kernel: slow. Then the `long` tests are marked
    (see LANES above), and the lane keeps its tests and deselects the rest."""
    in_the_browser = _notebooks_the_browser_runs()
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)
            if "zh-TW" in item.path.parts or (item.path.parent.name == "notebooks"
                                              and item.path.name in in_the_browser):
                item.add_marker(pytest.mark.long)
        elif item.path.name in LONG_SUITES and item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.long)
    lane = config.getoption("lane")
    if lane == "all" or (lane == "default" and all(map(_runs_long, items))):
        return
    wanted = lane == "long"
    dropped = [item for item in items if _runs_long(item) != wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if _runs_long(item) == wanted]


def pytest_sessionstart(session):
    # Two libraries run a command once and cache what it said: the platform module asks
    # `uname -p` for the processor (platform.platform() and labkit doctor's report), and
    # matplotlib lists the system fonts with `fc-list` the first time it is imported on a
    # machine. Let them do it here, outside any test, so that a fast test starts no process.
    import platform

    import matplotlib.font_manager  # noqa: F401
    platform.processor()


def _refuse(what: str):
    def refused(*args, **kwargs):
        pytest.fail(MARK_IT_SLOW.format(what=what), pytrace=True)
    return refused


@contextlib.contextmanager
def _fast_lane_guard(item):
    """While a test not marked slow sets up and runs, starting a process or loading a model
    fails it. (A hook rather than a fixture: a module-scoped fixture that starts a server
    or loads the model is set up inside the first test that asks for it, and is caught.)"""
    if item.get_closest_marker("slow"):
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess.Popen, "__init__", _refuse("starting a subprocess"))
        # llama.cpp is patched only when something has imported it already: the fast lane
        # does not pay for importing it. Its loaders are reached through two modules:
        # llama_cpp.Llama calls llama_cpp.llama_cpp's, labkit.engine.native the package's.
        for module_name in ("llama_cpp", "llama_cpp.llama_cpp"):
            module = sys.modules.get(module_name)
            for loader in LLAMA_LOADERS:
                if hasattr(module, loader):
                    mp.setattr(module, loader, _refuse("loading a llama.cpp model"))
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _fast_lane_guard(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _fast_lane_guard(item):
        yield


@pytest.hookimpl(trylast=True, specname="pytest_runtest_call")
def pytest_runtest_call_in_chinese(item):
    """After a cell of a Chinese notebook ran under nbval: it printed no English sentence. What it
    printed (nbval keeps it as the item's ``test_outputs``) is read for English phrases of
    three words or more (authoring.editions.english_printed_in), and each one fails the
    cell, named with its notebook, its cell and the phrase."""
    outputs = getattr(item, "test_outputs", None)
    if outputs is None or "zh-TW" not in item.path.parts:
        return
    from authoring.editions import english_printed_in
    found = english_printed_in(item.path, item.cell_num, outputs)
    if found:
        item.raise_cell_error("English printed in the Chinese edition:\n" + "\n".join(found))
