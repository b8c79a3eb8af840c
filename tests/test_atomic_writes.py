"""Writes that cannot half-happen. On a full disk, a file labkit writes for a learner is
written whole or not at all: the recipe saved before stays byte for byte, a bench result's
folder holds only whole files and never a worksheet.csv without the rest of its run, and
`labkit bench` has printed its table before it saves and says in one line what it could not
save, and where.

Two full disks: a patched writer (every file opened for writing under a folder gets
``free`` bytes between them, then the write system call fails with ENOSPC, as a kernel's
does: a short write, then the error), and, where this machine lets a test mount one, a real
tmpfs of a few hundred kB."""

from __future__ import annotations

import builtins
import ctypes
import errno
import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from labkit.bench.runner import BenchResult
from labkit.machine.atomic import TMP_SUFFIX, write_atomic, write_csv
from test_bench import fake_rows

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)).strerror


# ------------------------------------------------------------------ a patched full disk

class FullDisk:
    """Files opened for writing under ``root`` share ``free`` bytes; past them the raw write
    is short, then fails with ENOSPC. Patches ``open`` itself (builtins and io), so it
    catches every writer: Path.write_text, pandas' to_csv, matplotlib's savefig, os.fdopen."""

    def __init__(self, root: Path, free: int):
        self.root, self.free = Path(root).resolve(), free
        self.real_open = builtins.open

    def _under_root(self, file) -> bool:
        if isinstance(file, int):
            file = os.readlink(f"/proc/self/fd/{file}")
        try:
            return Path(os.path.abspath(file)).resolve().is_relative_to(self.root)
        except (TypeError, ValueError):
            return False

    def open(self, file, mode="r", buffering=-1, encoding=None, errors=None, newline=None,
             closefd=True, opener=None):
        if not any(c in mode for c in "wax+") or not self._under_root(file):
            return self.real_open(file, mode, buffering, encoding, errors, newline, closefd,
                                  opener)
        disk = self

        class Raw(io.FileIO):
            def write(self, b):
                n = min(len(b), disk.free)
                if n == 0:
                    raise OSError(errno.ENOSPC, ENOSPC)
                done = super().write(memoryview(b)[:n])
                disk.free -= done
                return done

        raw = Raw(file, mode.replace("b", "").replace("t", ""), closefd=closefd, opener=opener)
        buffered = io.BufferedRandom(raw) if "+" in mode else io.BufferedWriter(raw)
        if "b" in mode:
            return buffered
        return io.TextIOWrapper(buffered, encoding=encoding or "utf-8", errors=errors,
                                newline=newline)

    def install(self, monkeypatch):
        monkeypatch.setattr(builtins, "open", self.open)
        monkeypatch.setattr(io, "open", self.open)
        return self


def temporaries(folder: Path) -> list[Path]:
    return [p for p in Path(folder).rglob("*") if p.name.endswith(TMP_SUFFIX)]


def test_a_write_is_whole_replaces_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "a.json"
    write_atomic(target, "old\n")
    write_atomic(target, "新的\n")
    assert target.read_text(encoding="utf-8") == "新的\n" and temporaries(tmp_path) == []
    umask = os.umask(0o022)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask    # as open() would make it
    write_csv(tmp_path / "t.csv", pd.DataFrame({"a": [1, 2]}), index=False)
    assert (tmp_path / "t.csv").read_text() == "a\n1\n2\n"


def test_a_failed_write_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    target = tmp_path / "a.json"
    target.write_bytes(b"the good one")
    FullDisk(tmp_path, free=5).install(monkeypatch)
    with pytest.raises(OSError) as info:
        write_atomic(target, "x" * 10_000)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert target.read_bytes() == b"the good one" and temporaries(tmp_path) == []


def test_ctrl_c_during_a_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "a.json"
    target.write_bytes(b"the good one")
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert target.read_bytes() == b"the good one" and temporaries(tmp_path) == []


# ------------------------------------------------------------------ the recipe

def recipe(n: int) -> dict:
    return {"labkit": "0.1.0", "model": {"name": "SmolLM2", "sha256": "ab" * 32},
            "notes": ["一個很長的筆記 " * 20] * n}


def test_a_recipe_saved_on_a_full_disk_leaves_the_good_one_byte_identical(tmp_path,
                                                                           monkeypatch):
    from labkit import notebook as nb
    monkeypatch.setenv("LABKIT_RESULTS", str(tmp_path))
    good = nb.save_recipe(recipe(2))
    before = good.read_bytes()
    json.loads(before)
    FullDisk(tmp_path, free=4096).install(monkeypatch)
    with pytest.raises(OSError) as info:
        nb.save_recipe(recipe(200))
    assert good.read_bytes() == before and temporaries(tmp_path) == []
    assert info.value.errno == errno.ENOSPC and "recipe.json" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recipe.json"]


# ------------------------------------------------------------------ a bench result

class SmallPlots(BenchResult):
    """A result whose plots are two small figures: drawing the four real ones takes seconds
    (tests/test_bench.py saves those); what is tested here is how the files are written."""

    @property
    def plots(self) -> dict:
        import matplotlib.pyplot as plt
        figs = {}
        for name in ("throughput_vs_slots", "timeline"):
            fig, ax = plt.subplots(figsize=(2, 1.5))
            ax.plot([1, 2, 4], [10, 18, 30], marker="o")
            figs[name] = fig
        return figs


def fake_result() -> BenchResult:
    rows = pd.concat([fake_rows(2, "split", 1), fake_rows(2, "unified", 2)], ignore_index=True)
    mem = pd.DataFrame({"t_s": [0, 0.2, 0.4], "kind": "rss", "device": -1,
                        "bytes": [1e8, 2e8, 1.5e8], "run_id": "split-1-r0"})
    return SmallPlots(rows, mem, runs=[{"run_id": "split-1-r0", "cmd": ["labkit", "serve"]}],
                      env={"labkit": "0.1.0", "model": {"sha256": "abc"}})


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, bytes]:
    """Every file of the fake result's folder, saved on a disk with room: name -> bytes."""
    folder = tmp_path_factory.mktemp("reference")
    fake_result().save(folder)
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def check_only_whole_files(folder: Path, reference: dict[str, bytes],
                           varies=()) -> dict[str, bytes]:
    """What a failed save left in ``folder``: only files equal to the reference (those in
    ``varies``, JSON whose content the caller adds to, only whole JSON), no temporary, and a
    worksheet.csv only beside every other file of the run. Returns what is there."""
    there = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
             if p.is_file()}
    assert temporaries(folder) == []
    for name, body in there.items():
        assert name in reference, name
        if name in varies:
            json.loads(body)
            continue
        assert body == reference[name], f"{name}: {len(body)} of {len(reference[name])} bytes"
    if "worksheet.csv" in there:
        assert set(there) == set(reference), \
            f"a worksheet.csv without {sorted(set(reference) - set(there))}"
    return there


def test_the_reference_folder_holds_every_file(reference):
    assert {"worksheet.csv", "worksheet.md", "rounds.csv", "requests.csv", "requests.json",
            "timing_agreement.csv", "memory.csv", "runs.json", "environment.json",
            "plots/timeline.png"} <= set(reference)
    assert reference["plots/timeline.png"].startswith(b"\x89PNG")


@pytest.mark.parametrize("share", [0, 0.02, 0.1, 0.3, 0.5, 0.7, 0.9, -1000, -1])
def test_a_result_saved_on_a_full_disk_leaves_only_whole_files(tmp_path, monkeypatch,
                                                                reference, share):
    """From no room at all to one byte short of the whole folder: ``share`` of the folder's
    bytes free (negative: that many bytes short of it)."""
    total = sum(len(b) for b in reference.values())
    free = int(share * total) if share >= 0 else total + share
    assert 0 <= free < total
    folder = tmp_path / "run"
    FullDisk(tmp_path, free=free).install(monkeypatch)
    with pytest.raises(OSError) as info:
        fake_result().save(folder)
    there = check_only_whole_files(folder, reference)
    from labkit.bench.report import NotSaved
    exc = info.value
    assert isinstance(exc, NotSaved) and exc.errno == errno.ENOSPC
    assert "worksheet.csv" in exc.unsaved and not set(exc.unsaved) & set(there)
    assert set(exc.unsaved) | set(there) == set(reference)
    assert str(folder) in str(exc) and exc.unsaved[0].split("/")[0] in str(exc)


def test_a_result_saved_again_after_a_failure_is_whole(tmp_path, monkeypatch, reference):
    """The measurements stay in memory: once there is room, the same result saves in full."""
    result = fake_result()
    disk = FullDisk(tmp_path, free=8_000).install(monkeypatch)
    with pytest.raises(OSError):
        result.save(tmp_path / "run")
    disk.free = 10**9
    result.save(tmp_path / "run")
    assert check_only_whole_files(tmp_path / "run", reference).keys() == reference.keys()


# ------------------------------------------------------------------ labkit bench itself

def run_bench_on(out: Path, monkeypatch, capsys, lang: str = "en"):
    """`labkit bench --base-url ...` with the measurement replaced by the fake result: the
    table, the save, the messages and the exit status are bench's own."""
    from labkit.bench import runner
    from labkit.bench.cli import main
    monkeypatch.setenv("LABKIT_LANG", lang)
    monkeypatch.setattr(runner, "measure", lambda *a, **k: fake_result())
    rc = main(["--base-url", "http://127.0.0.1:9", "--out", str(out), "--no-progress"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err.strip().splitlines()


@pytest.mark.parametrize("lang,words", [("en", "could not save"), ("zh-TW", "存下")])
def test_bench_prints_its_table_then_names_what_it_could_not_save(tmp_path, monkeypatch, capsys,
                                                                  reference, lang, words):
    out = tmp_path / "results"
    FullDisk(tmp_path, free=8_000).install(monkeypatch)
    rc, stdout, err = run_bench_on(out, monkeypatch, capsys, lang)
    assert rc == 2
    assert "| split" in stdout and "| unified" in stdout           # the worksheet's two lines
    assert "Traceback" not in "\n".join(err)
    (folder,) = out.iterdir()
    last = err[-1]
    assert last.startswith("labkit bench") and words in last
    assert str(folder) in last and "worksheet.csv" in last
    check_only_whole_files(folder, reference, varies={"environment.json"})
    assert not (folder / "worksheet.csv").exists()


def test_bench_with_room_writes_everything_and_says_so(tmp_path, monkeypatch, capsys, reference):
    out = tmp_path / "results"
    rc, stdout, err = run_bench_on(out, monkeypatch, capsys)
    (folder,) = out.iterdir()
    assert rc == 0 and f"wrote {folder}/" in stdout
    assert stdout.index("| split") < stdout.index("wrote")
    there = check_only_whole_files(folder, reference, varies={"environment.json"})
    assert there.keys() == reference.keys()


# ------------------------------------------------------------------ a real full disk

MNT_DETACH = 2


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 512 kB tmpfs mounted on a folder (mount(2) through ctypes: no process started), or a
    skip where this machine does not let the test mount one (not root, no CAP_SYS_ADMIN)."""
    libc = ctypes.CDLL(None, use_errno=True)
    where = tmp_path / "small-disk"
    where.mkdir()
    if libc.mount(b"tmpfs", str(where).encode(), b"tmpfs", 0, b"size=512k") != 0:
        pytest.skip(f"cannot mount a tmpfs here: {os.strerror(ctypes.get_errno())}")
    try:
        yield where
    finally:
        libc.umount2(str(where).encode(), MNT_DETACH)


def leave_free(disk: Path, free: int) -> None:
    """Fill ``disk`` until about ``free`` bytes are left (tmpfs counts whole pages)."""
    st = os.statvfs(disk)
    have = st.f_bavail * st.f_frsize
    if have > free:
        with open(disk / "filler", "wb") as f:
            f.write(b"\0" * (have - free))


def test_on_a_real_full_tmpfs(small_tmpfs, monkeypatch, capsys, reference):
    from labkit import notebook as nb
    disk = small_tmpfs
    monkeypatch.setenv("LABKIT_RESULTS", str(disk))
    good = nb.save_recipe(recipe(2))
    before = good.read_bytes()
    leave_free(disk, 8192)
    with pytest.raises(OSError) as info:
        nb.save_recipe(recipe(200))                 # ~60 kB: more than is left
    assert info.value.errno == errno.ENOSPC
    assert good.read_bytes() == before and temporaries(disk) == []
    for free in (16_384, 40_960):       # 4 pages: two CSVs; 10 pages: all but plots and worksheet
        (disk / "filler").unlink()
        leave_free(disk, free)
        out = disk / f"results-{free}"
        rc, stdout, err = run_bench_on(out, monkeypatch, capsys)
        assert rc == 2 and "| split" in stdout and "could not save" in err[-1]
        (folder,) = out.iterdir()
        check_only_whole_files(folder, reference, varies={"environment.json"})
        assert not (folder / "worksheet.csv").exists()


# ------------------------------------------------------------------ the other writers

def test_a_prompt_saved_on_a_full_disk_keeps_the_old_one(tmp_path, monkeypatch):
    from labkit.bench.prompt import Prompt
    path = tmp_path / "prompt.json"
    Prompt.default().save(path)
    before = path.read_bytes()
    FullDisk(tmp_path, free=100).install(monkeypatch)
    with pytest.raises(OSError):
        Prompt(system="長的系統提示 " * 500).save(path)
    assert path.read_bytes() == before and temporaries(tmp_path) == []


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_labkit_sim_csv_on_a_full_disk_is_one_line_and_keeps_the_old_file(tmp_path, monkeypatch,
                                                                         capsys, lang):
    from labkit.sim.cli import main
    monkeypatch.setenv("LABKIT_LANG", lang)
    out = tmp_path / "table.csv"
    out.write_text("the table of yesterday\n")
    FullDisk(tmp_path, free=200).install(monkeypatch)
    assert main(["--requests", "12", "--compare", "none", "--csv", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and ENOSPC in err[0]
    assert out.read_text() == "the table of yesterday\n" and temporaries(tmp_path) == []


# Writers that are not a learner's files written whole: the server's log (a stream, written as
# the server runs), the synthetic model cache (its own temporary file and rename, under a lock)
# and the editions tool (a maintainer's notebooks, under git).
NOT_WHOLE_FILES = {"labkit/server/launch.py", "labkit/models/synthetic.py",
                   "authoring/editions.py", "labkit/machine/atomic.py"}


def direct_writes(source: str) -> list[str]:
    """Calls in ``source`` that write a file in place: ``.write_text``/``.write_bytes``, a
    ``to_csv``/``to_json``/``savefig`` given a path, ``json.dump``, ``open`` for writing."""
    import ast
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        mode = next((a.value for a in node.args[1:2] if isinstance(a, ast.Constant)), "")
        mode = next((k.value.value for k in node.keywords
                     if k.arg == "mode" and isinstance(k.value, ast.Constant)), mode)
        path_kw = any(k.arg in ("path_or_buf", "fname") for k in node.keywords)
        if (name in ("write_text", "write_bytes")
                or (name in ("to_csv", "to_json", "savefig") and (node.args or path_kw))
                or (isinstance(f, ast.Attribute) and name == "dump"
                    and getattr(f.value, "id", "") == "json")
                or (name == "open" and isinstance(mode, str) and set(mode) & set("wax+"))):
            found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_every_file_labkit_writes_for_a_learner_goes_through_the_atomic_writer():
    root = Path(__file__).resolve().parent.parent
    found = {}
    for path in sorted((root / "labkit").rglob("*.py")):
        rel = str(path.relative_to(root))
        if rel not in NOT_WHOLE_FILES and (calls := direct_writes(path.read_text())):
            found[rel] = calls
    assert found == {}


def test_the_direct_write_finder_finds_them():
    src = ('p.write_text("x")\ndf.to_csv(p, index=False)\nfig.savefig(p)\njson.dump(x, f)\n'
           'open(p, "w")\nopen(p, mode="ab")\ndf.to_csv(index=False)\nopen(p)\nopen(p, "rb")\n')
    assert [c.split(":")[0] for c in direct_writes(src)] == [f"line {i}" for i in range(1, 7)]
