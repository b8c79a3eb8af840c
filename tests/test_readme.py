"""The README's first lines are a contract: two commands that work on a fresh machine."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    head = (ROOT / "README.md").read_text().splitlines()[:8]
    cmds = [ln.strip().split("  #")[0].strip() for ln in head if ln.startswith("    ")]
    assert len(cmds) == 2, f"expected two indented commands near the top, found {cmds}"
    return cmds


def test_readme_opens_with_two_commands():
    main_job, tests = readme_commands()
    assert main_job.startswith("pip install -e .") and "labkit" in main_job
    assert tests.startswith("pip install -e") and tests.endswith("pytest")


def test_ci_runs_the_readme_test_command():
    _, tests = readme_commands()
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(rf"^{re.escape(tests)}$", ci, re.M), "CI must run the README's test command"


def test_ci_then_runs_what_the_default_leaves_out():
    _, tests = readme_commands()
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "pytest --lane=long" in lines, "CI must run the tests the default run leaves out"
    assert lines.index("pytest --lane=long") > lines.index(tests)


def test_ci_then_runs_the_gpu_lane():
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ".ci/gpu-lane" in lines, "CI must run the GPU path on the software GPU"
    assert lines.index(".ci/gpu-lane") > lines.index("pytest --lane=long")
    lane = (ROOT / ".ci" / "gpu-lane").read_text()
    assert re.search(r"pytest -m gpu tests", lane) and "GGML_VK_VISIBLE_DEVICES=0" in lane
