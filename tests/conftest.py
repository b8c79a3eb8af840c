import pytest

# Quick mode (LABKIT_QUICK) is set for every run by the conftest.py at the repository root.


@pytest.fixture(scope="session")
def model_path():
    from labkit.models.files import default_model_path
    return str(default_model_path())
