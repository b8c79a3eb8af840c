import os

import pytest

# Notebooks and slow tests shrink their workloads in quick mode; CI and the
# README's test command run in it. LABKIT_QUICK=0 runs the full sizes.
os.environ.setdefault("LABKIT_QUICK", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def model_path():
    from labkit.models import default_model_path
    return str(default_model_path())
