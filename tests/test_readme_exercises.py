"""notebooks/README.md's exercise table is the registry's, and every notebook asks an open
question; three ask for code."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "notebooks" / "README.md"


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
