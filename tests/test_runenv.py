"""The run environment is read in one place: one parser for on/off words, quick mode, the
results folder, and one function per meaning of "how many threads"."""

import logging
import os
from pathlib import Path

import pytest

from labkit.machine import runenv

ON = ["1", "true", "yes", "on", "TRUE", "Yes", "On", " on ", "\ttrue\n"]
OFF = ["0", "false", "no", "off", "", "FALSE", "No", "OFF", "  ", " 0 "]


@pytest.mark.parametrize("text", ON)
def test_flag_on_words(text):
    assert runenv.flag(text) is True


@pytest.mark.parametrize("text", OFF)
def test_flag_off_words(text):
    assert runenv.flag(text) is False


def test_flag_unset_is_off():
    assert runenv.flag(None) is False


@pytest.mark.parametrize("text", ["2", "maybe", "enabled", "y", "n", "-1"])
def test_flag_refuses_other_words_and_says_what_is_allowed(text):
    with pytest.raises(ValueError) as err:
        runenv.flag(text, "LABKIT_QUICK")
    msg = str(err.value)
    assert "LABKIT_QUICK" in msg and repr(text) in msg
    for word in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        assert word in msg


@pytest.mark.parametrize("text, want", [("1", True), ("on", True), ("off", False),
                                        ("OFF", False), ("0", False), ("", False)])
def test_quick_reads_labkit_quick(monkeypatch, text, want):
    monkeypatch.setenv("LABKIT_QUICK", text)
    assert runenv.quick() is want
    assert runenv.pick("q", "f") == ("q" if want else "f")


def test_quick_unset_is_full_size(monkeypatch):
    monkeypatch.delenv("LABKIT_QUICK", raising=False)
    assert runenv.quick() is False


def test_quick_with_a_bad_value_is_an_error(monkeypatch):
    monkeypatch.setenv("LABKIT_QUICK", "sometimes")
    with pytest.raises(ValueError, match="LABKIT_QUICK='sometimes'"):
        runenv.quick()


class _Measured(Exception):
    pass


@pytest.mark.parametrize("text, quick", [("off", False), ("OFF", False), ("on", True), ("1", True)])
def test_notebooks_and_bench_read_quick_mode_the_same_way(monkeypatch, text, quick):
    """LABKIT_QUICK=off once ran notebooks at full size but `labkit bench` in quick mode."""
    from labkit import notebook
    from labkit.bench import cli, runner
    seen = {}

    def fake_measure(configs, workloads, rounds, **kw):
        seen.update(configs=configs, rounds=rounds, max_docs=kw["max_docs"])
        raise _Measured

    monkeypatch.setattr(runner, "measure", fake_measure)
    monkeypatch.setenv("LABKIT_QUICK", text)
    assert notebook.quick() is quick
    with pytest.raises(_Measured):
        cli.main(["--no-progress", "--out", "unused"])
    assert seen["rounds"] == (1 if quick else 3)
    assert seen["max_docs"] == (cli.QUICK_DOCS if quick else None)
    assert len(seen["configs"]) == (2 if quick else 6)
    assert {c.n_threads for c in seen["configs"]} == {runenv.server_threads_beside_client()}


def test_results_dir_follows_labkit_results(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_RESULTS", str(tmp_path / "mine"))
    assert runenv.results_dir() == tmp_path / "mine" and (tmp_path / "mine").is_dir()
    monkeypatch.delenv("LABKIT_RESULTS")
    monkeypatch.chdir(tmp_path)
    assert runenv.results_dir().resolve() == (tmp_path / "results").resolve()


def test_log_to_file_is_idempotent(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_RESULTS", str(tmp_path))
    logger = logging.getLogger("labkit")
    before = list(logger.handlers)
    try:
        path = runenv.log_to_file("t.log")
        assert runenv.log_to_file("t.log") == path
        mine = [h for h in logger.handlers if h not in before]
        assert len(mine) == 1
        logging.getLogger("labkit.test").info("hello from the test")
        mine[0].flush()
        assert "hello from the test" in path.read_text()
        other = runenv.log_to_file("other.log")
        assert other != path
        assert len([h for h in logger.handlers if h not in before]) == 1
    finally:
        for h in [h for h in logger.handlers if h not in before]:
            logger.removeHandler(h)
            h.close()
        runenv._log_handler = None


@pytest.mark.parametrize("cores, beside", [({0}, 1), ({0, 1}, 1), (set(range(8)), 7)])
def test_thread_counts_follow_the_affinity_mask(monkeypatch, cores, beside):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cores, raising=False)
    assert runenv.usable_cores() == len(cores)
    assert runenv.server_threads_beside_client() == beside


def _cores_allowed_by_the_kernel() -> int | None:
    """How many cores Linux lets this process run on, from /proc (None elsewhere)."""
    status = Path("/proc/self/status")
    if not status.exists():
        return None
    line = next(ln for ln in status.read_text().splitlines() if ln.startswith("Cpus_allowed_list:"))
    spans = [part.split("-") for part in line.split(":", 1)[1].strip().split(",")]
    return sum(int(s[-1]) - int(s[0]) + 1 for s in spans)


def test_thread_counts_on_this_machine():
    n = runenv.usable_cores()
    assert n == (_cores_allowed_by_the_kernel() or os.cpu_count())
    assert runenv.server_threads_beside_client() == max(1, n - 1)
