import contextlib
import os
import subprocess
import sys

# Quick mode shrinks the notebooks' and the benchmarks' workloads so the whole suite fits a
# 2-core machine; it applies to every pytest run from this checkout, notebooks included.
# LABKIT_QUICK=0 runs the full sizes.
os.environ.setdefault("LABKIT_QUICK", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

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


# The default run executes each notebook's code once: the English notebooks under nbval (the
# Chinese twins' code cells equal theirs, which tests/test_editions.py proves without running
# them), and in the browser one notebook per widget kind and edition. What it leaves out is
# marked `again`: the Chinese notebooks under nbval and their worked solutions, the other
# browser notebooks. `--lane` chooses: `default` leaves the `again` tests out (unless they are
# all that was collected, as in `pytest notebooks/zh-TW`: naming them asks for them), `again`
# runs only them (.ci/run runs it after the default), `all` runs everything.
LANES = ("default", "again", "all")


def pytest_addoption(parser):
    parser.addoption("--lane", choices=LANES, default="default",
                     help="default: each notebook's code once (the `again` tests left out); "
                          "again: only the `again` tests; all: both")


def _runs_again(item) -> bool:
    return item.get_closest_marker("again") is not None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The notebooks' cells run in a Jupyter kernel: slow; those of the Chinese edition run
    again what the English ones run. Then the lane keeps its tests and deselects the rest."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)
            if "zh-TW" in item.path.parts:
                item.add_marker(pytest.mark.again)
    lane = config.getoption("lane")
    if lane == "all" or (lane == "default" and all(map(_runs_again, items))):
        return
    wanted = lane == "again"
    dropped = [item for item in items if _runs_again(item) != wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if _runs_again(item) == wanted]


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
    three words or more (labkit.lang.editions.english_printed_in), and each one fails the
    cell, named with its notebook, its cell and the phrase."""
    outputs = getattr(item, "test_outputs", None)
    if outputs is None or "zh-TW" not in item.path.parts:
        return
    from labkit.lang.editions import english_printed_in
    found = english_printed_in(item.path, item.cell_num, outputs)
    if found:
        item.raise_cell_error("English printed in the Chinese edition:\n" + "\n".join(found))
