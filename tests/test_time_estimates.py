"""One set of time estimates: each notebook's header says what notebooks/README.md's map says."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "notebooks" / "README.md").read_text(encoding="utf-8")


def map_times() -> dict[str, tuple[str, str]]:
    out = {}
    for line in README.splitlines():
        m = re.match(r"\| \[`([\w]+)`\]\(\1\.ipynb\).*\| ([^|]+) / ([^|]+) \|$", line)
        if m:
            out[m[1]] = (m[2].strip(), m[3].strip())
    return out


TIMES = map_times()


def test_every_notebook_is_in_the_map():
    assert set(TIMES) == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}


@pytest.mark.parametrize("stem", sorted(TIMES))
def test_the_header_says_what_the_map_says(stem):
    quick, full = TIMES[stem]
    header = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4).cells[0].source
    m = re.search(r"\*\*Machine time:\*\*(.*?)(?:\n\n|$)", header, re.S)
    assert m, f"{stem}: the first cell has no **Machine time:** line"
    said = " ".join(m[1].split())
    assert said.startswith(f" {quick} on a 2-core CPU in quick mode".strip()), (stem, said)
    assert f"{full} at full size" in said, (stem, said)


@pytest.mark.parametrize("stem", sorted(TIMES))
def test_the_chinese_header_gives_the_same_figures(stem):
    """The zh-TW edition's 機器時間 line quotes the same numbers as the map."""
    quick, full = TIMES[stem]
    header = nbformat.read(ROOT / "notebooks" / "zh-TW" / f"{stem}.ipynb", as_version=4).cells[0].source
    m = re.search(r"\*\*機器時間\*\*：(.*?)(?:\n\n|$)", header, re.S)
    assert m, f"zh-TW/{stem}: the first cell has no **機器時間**： line"
    for figure in re.findall(r"\d+(?:[–-]\d+)?", f"{quick} {full}"):
        assert figure in m[1], (stem, figure, m[1])
