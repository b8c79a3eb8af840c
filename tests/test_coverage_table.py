"""The coverage table in notebooks/README.md keeps its promises: every claim, procedure and figure
of the three seed articles points at a notebook section that exists, says how it is shown, and
names something the section really runs (or, for prose, really says)."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "notebooks" / "README.md"
HOW = {"live", "simulated", "computed", "prose"}
MAX_PROSE = 3


def coverage_rows() -> list[dict]:
    text = README.read_text(encoding="utf-8")
    start = text.index("## What the seeds say, and where the workbook shows it")
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        if not line.startswith("| ") or line.startswith(("| seed", "|---")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 5, f"a coverage row has 5 columns: {line}"
        seed, item, where, how, shown = cells
        rows.append({"seed": seed, "item": item, "where": where, "how": how, "shown": shown,
                     "line": line})
    return rows


ROWS = coverage_rows()


def section_cells(where: str):
    """The cells of ``NN §K`` (from the heading "## K." to the next "## ")."""
    m = re.fullmatch(r"(\d\d) §(\d+)", where)
    assert m, f"'where' reads like '04 §3', not {where!r}"
    [path] = (ROOT / "notebooks").glob(f"{m[1]}_*.ipynb")
    cells, inside = [], False
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown":
            heads = re.findall(r"^## (.*)$", cell.source, re.M)
            if heads:          # the cell's last "## " heading decides what follows it
                number = re.match(r"(\d+)\.", heads[-1])
                inside = bool(number) and number[1] == m[2]
                if any(re.match(rf"{m[2]}\.", h) for h in heads):
                    inside = True
        if inside:
            cells.append(cell)
    assert cells, f"{path.name} has no section '## {m[2]}.'"
    return cells


def test_the_table_is_there_and_says_how_each_item_is_shown():
    assert len(ROWS) >= 40
    assert {r["how"] for r in ROWS} <= HOW, {r["how"] for r in ROWS} - HOW
    assert not [r for r in ROWS if "missing" in r["line"].lower()]
    prose = [r["item"] for r in ROWS if r["how"] == "prose"]
    assert len(prose) <= MAX_PROSE, prose


def test_every_seed_has_rows():
    assert {r["seed"] for r in ROWS} == {"000", "001", "002"}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['seed']}-{r['where']}-{r['shown'][:30]}")
def test_each_row_points_at_a_section_that_shows_it(row):
    cells = section_cells(row["where"])
    token = re.fullmatch(r"`([^`]+)`", row["shown"])
    assert token, f"'shown by' is one `identifier` or phrase in backticks: {row['shown']!r}"
    kinds = ("markdown", "code") if row["how"] == "prose" else ("code",)
    text = "\n".join(c.source for c in cells if c.cell_type in kinds)
    assert token[1] in text, (f"{row['where']} ({'/'.join(kinds)} cells) never mentions "
                              f"{token[1]!r}, which the coverage table says shows: {row['item']}")


def test_the_exercise_counts_in_the_readme_are_the_registrys():
    from collections import Counter

    from labkit import exercises
    text = README.read_text(encoding="utf-8")
    table = text[text.index("| notebook | closed | open | code |"):].split("\n\n")[0]
    shown = {}
    for line in table.splitlines()[2:]:
        nb, closed, open_, code = [c.strip() for c in line.strip().strip("|").split("|")]
        shown[int(nb)] = (int(closed), int(open_), int(code))
    kinds = Counter((int(i.split(".")[0]), ex.kind) for i, ex in exercises.REGISTRY.items())
    actual = {n: (kinds[n, exercises.CLOSED], kinds[n, exercises.OPEN], kinds[n, exercises.CODE])
              for n in {n for n, _ in kinds}}
    assert shown == actual


def test_every_notebook_asks_an_open_question_and_three_ask_for_code():
    from labkit import exercises
    by_nb = {}
    for i, ex in exercises.REGISTRY.items():
        by_nb.setdefault(i.split(".")[0], set()).add(ex.kind)
    notebooks = {p.name[:2].lstrip("0") or "0" for p in (ROOT / "notebooks").glob("0[0-9]_*.ipynb")}
    assert set(by_nb) == notebooks
    assert all(exercises.OPEN in kinds for kinds in by_nb.values()), by_nb
    assert sum(exercises.CODE in kinds for kinds in by_nb.values()) >= 3
