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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The notebooks' cells run in a Jupyter kernel: slow."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)


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
