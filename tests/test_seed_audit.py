"""The seed audit (authoring/seed_audit.py, rendered into notebooks/README.md) keeps its
promises: every row names cells that exist, the calls it names are in their code, the claim's key
words are in their text (English in the English notebook, Chinese in the zh-TW twin of each prose
cell), a row said to run llama-server names a cell that starts it, and a partial or missing row
says what is left out. The README's table is the one the data renders.

And the outputs: every row that is not prose, partial or missing names the cell whose committed
OUTPUT shows its item (``shown``), and that output, in the committed notebooks of both editions,
holds the row's evidence (``evidence``: a regex per edition). Who produced the output and the size
of the run it comes from (metadata.labkit.reference_run) are in the README's table; a procedure the
seed runs at full size is partial while its output comes from a quick run. Changing a 05 row after
a new run is changing its ``evidence`` (and its status) in seed_audit.py: the checks here follow."""

import re
from functools import lru_cache
from pathlib import Path

import nbformat
import pytest

from authoring import seed_audit
from authoring.seed_audit import ROWS, SERVERS, STATUSES, R, evidence_problems, server_of

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
#: What starts llama.cpp's own llama-server in a cell: labkit.lessons.llama_server's helpers (the
#: seed's procedure, seed_slots, among them),
#: the prompt-cache lesson's runs (labkit.lessons.prompt_cache.compare: both servers), or a
#: launch of kind "xllamacpp".
STARTS_LLAMA_SERVER = re.compile(r"llama_server\.(compare|fill_pool|llama_server_burst|mixed_burst|prompt_estimate|seed_slots|seed_server)\(|"
                                 r"prompt_cache\.compare\(|"
                                 r"kind=\"xllamacpp\"|kinds=\(\"xllamacpp\"")
#: What runs llama.cpp through labkit in a cell: its server, its engine, or llama.cpp's C API.
RUNS_LABKIT = re.compile(r"\blaunch\(|\bbench\.run|\bengine_run\(|\bllama_decode\b|"
                         r"\bEngineConfig\b|\bqueue_burst\(|\broofline\.|\bnb\.ask\(|\bdoctor\.|"
                         r"\bstartup_table\(|\bbench\.measure\(")


@lru_cache(maxsize=None)
def _cells(edition: str, nb: str) -> dict:
    folder = NOTEBOOKS if edition == "en" else NOTEBOOKS / "zh-TW"
    paths = seed_audit.parts(nb, folder)             # a chapter's parts: 05_roofline, 05_slots_live
    assert paths, f"no notebook {nb}_*.ipynb"
    return {c.id: c for path in paths for c in nbformat.read(path, as_version=4).cells}


def problems(row) -> list[str]:
    """What is wrong with one row, against the notebooks as they are; [] when nothing is."""
    out = []
    if row.status not in STATUSES:
        return [f"unknown status {row.status!r}"]
    if row.status in ("partial", "missing") and len(row.note) < 20:
        out.append(f"a {row.status} row says what is left out, and why, in its note")
    if row.status == "missing":
        return out + (["a missing row names no cells"] if row.cells else [])
    if not row.cells:
        return out + ["the row names no cell"]
    if not row.words:
        out.append("the row names no key words of its claim")
    en, zh, code, prose = [], [], [], []
    for ref in row.cells:
        nb, cid = ref.split(":")
        cell = _cells("en", nb).get(cid)
        if cell is None:
            out.append(f"notebook {nb} has no cell {cid}")
            continue
        en.append(cell.source)
        if cell.cell_type == "code":
            code.append(cell.source)
        else:
            prose.append(cid)
        twin = _cells("zh-TW", nb).get(cid)
        if twin is None:
            out.append(f"zh-TW/{nb} has no twin of cell {cid}")
        else:
            zh.append(twin.source)
    text, zh_text, code_text = "\n".join(en), "\n".join(zh), "\n".join(code)
    out += [f"no named code cell calls {c!r}" for c in row.calls if c not in code_text]
    out += [f"the named cells never say {w!r}" for w in row.words if w not in text]
    if prose or row.status == "prose only":
        if not row.words_zh:
            out.append("a row naming prose cells gives Chinese key words for their twins")
    out += [f"the zh-TW twins never say {w!r}" for w in row.words_zh if w not in zh_text]
    if row.status == "prose only" and not row.note:
        out.append("a prose-only row cites its source in its note")
    if row.status == "live on llama-server" and not STARTS_LLAMA_SERVER.search(code_text):
        out.append("'live on llama-server' but no named cell starts llama-server")
    if row.status == "live on labkit" and not (RUNS_LABKIT.search(code_text) or code_text and
                                               _runs_with_earlier(row)):
        out.append("'live on labkit' but no named cell runs labkit on llama.cpp")
    if row.status in ("simulated", "computed", "live on labkit", "live on llama-server") and not code:
        out.append(f"a {row.status} row names a code cell")
    return out


def output_problems(row) -> list[str]:
    """What is wrong with the output a row names, in the committed notebooks of both editions."""
    out = []
    if server_of(row) not in SERVERS:
        out.append(f"the row says who produced its output: one of {SERVERS}")
    if row.status in ("prose only", "partial", "missing"):
        if row.status == "missing" and row.shown:
            out.append("a missing row names no output")
    elif not row.shown:
        out.append(f"a {row.status} row names the cell whose output shows it")
    if not row.shown:
        return out
    cells = [seed_audit.shown_cell(row, edition)[1] for edition in ("en", "zh-TW")]
    out += evidence_problems(row, *cells)
    text = " ".join(seed_audit.output_text(c) for c in cells if c)
    if "llama-server" in server_of(row) and "llama-server" not in text:
        out.append("the output said to come from llama-server never names llama-server")
    if row.kind == "procedure" and seed_audit.size_of(row) != "full" and row.status != "partial":
        out.append(f"a procedure shown by a {seed_audit.size_of(row)} run is partial")
    return out


def _runs_with_earlier(row) -> bool:
    """A live row's named cell reads a run made by an earlier cell of its notebook: it uses a
    name that an earlier cell which runs labkit on llama.cpp assigns (``result`` from
    ``bench.run``, ``live`` from an engine run)."""
    for ref in row.cells:
        nb, cid = ref.split(":")
        cells = list(_cells("en", nb).values())
        ids = [c.id for c in cells]
        source = cells[ids.index(cid)].source
        for earlier in cells[:ids.index(cid)]:
            if earlier.cell_type != "code" or not RUNS_LABKIT.search(earlier.source):
                continue
            names = set()
            for m in re.finditer(r"^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=[^=]",
                                 earlier.source, re.M):
                names |= {n.strip() for n in m[1].split(",")}
            if any(re.search(rf"\b{re.escape(n)}\b", source) for n in names):
                return True
    return False


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.seed}-{r.status}-{r.claim[:40]}")
def test_each_row_is_shown_where_it_says(row):
    assert problems(row) == []


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.seed}-{r.status}-{r.claim[:40]}")
def test_each_row_names_the_output_that_shows_it(row):
    assert output_problems(row) == []


def test_every_seed_and_every_status_needed_is_there():
    assert {r.seed for r in ROWS} == set(seed_audit.SEEDS)
    assert len(ROWS) >= 70
    claims = [r.claim for r in ROWS]
    assert len(claims) == len(set(claims)), "a claim is listed twice"


def test_the_readme_shows_the_table_the_data_renders():
    text = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    assert seed_audit.current_section(text) == seed_audit.render(), (
        "notebooks/README.md's seed audit is stale: python -m authoring.seed_audit")


# ------------------------------------------------------------------------ cases that must fail

def test_a_row_pointing_at_a_cell_without_the_call_fails():
    row = R("000", "x", "computed", ["03:c10"], ["capacity_panel"], ["2048"])
    assert problems(row) == ["no named code cell calls 'capacity_panel'"]


def test_a_row_pointing_at_a_cell_without_the_key_words_fails():
    row = R("000", "x", "computed", ["03:c10"], ["bytes_per_token(32, 8, 128"], ["PagedAttention"])
    assert problems(row) == ["the named cells never say 'PagedAttention'"]


def test_a_prose_row_whose_twin_lacks_the_chinese_words_fails():
    row = R("000", "x", "prose only", ["03:seedswa0"], [], ["--swa-full"], ["分頁注意力"], note="src")
    assert problems(row) == ["the zh-TW twins never say '分頁注意力'"]
    no_zh = R("000", "x", "prose only", ["03:seedswa0"], [], ["--swa-full"], [], note="src")
    assert "a row naming prose cells gives Chinese key words for their twins" in problems(no_zh)


def test_live_on_llama_server_without_a_cell_that_starts_it_fails():
    row = R("002", "x", "live on llama-server", ["07:73d0b1be"], ["max_queue"], ["queue_burst"])
    assert problems(row) == ["'live on llama-server' but no named cell starts llama-server"]


def test_live_on_labkit_on_a_simulator_cell_fails():
    row = R("001", "x", "live on labkit", ["07:8421138e"], ["per_stream_tok_s"],
            ["throughput_tok_s"])
    assert "'live on labkit' but no named cell runs labkit on llama.cpp" in problems(row)


def test_a_missing_cell_and_a_silent_partial_row_fail():
    assert "notebook 03 has no cell nosuchcell" in problems(
        R("000", "x", "computed", ["03:nosuchcell"], [], ["x"]))
    assert problems(R("000", "x", "partial", ["03:c10"], [], ["2048"])) == [
        "a partial row says what is left out, and why, in its note"]
    assert problems(R("000", "x", "missing", [], [], [], note="short")) != []


def test_a_stale_readme_is_named(tmp_path):
    readme = tmp_path / "README.md"
    text = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    readme.write_text(text.replace("| live on llama-server |", "| live on labkit |", 1),
                      encoding="utf-8")
    assert seed_audit.current_section(readme.read_text(encoding="utf-8")) != seed_audit.render()


def test_a_row_names_the_part_that_holds_its_cell():
    """A chapter in parts: the table names the notebook a reader opens; a cell no part holds
    keeps the chapter's number (and the row's check says that the cell is missing)."""
    from authoring.seed_audit import part_of
    assert part_of("05", "907bdfb1") == "05_roofline"
    assert part_of("05", "9bdc6821") == "05_slots_live"
    assert part_of("05", "no-such-cell") == "05"


# ----------------------------------------------- outputs: cases that must fail (in-memory copies)

import copy  # noqa: E402

SHOWN = [r for r in ROWS if r.shown]


def _altered(row, edition, outputs):
    """The row's two named cells, one edition's replaced by a copy with ``outputs``."""
    cells = {e: seed_audit.shown_cell(row, e)[1] for e in ("en", "zh-TW")}
    cells[edition] = dict(copy.deepcopy(cells[edition]), outputs=outputs)
    return cells["en"], cells["zh-TW"]


@pytest.mark.parametrize("row", [ROWS[i] for i in (7, 13)] +
                         [r for r in SHOWN if r.shown.startswith("05:")][:2],
                         ids=lambda r: r.shown)
@pytest.mark.parametrize("edition", ["en", "zh-TW"])
def test_a_named_cell_without_its_outputs_fails(row, edition):
    assert evidence_problems(row, *_altered(row, edition, [])) == [
        f"{edition}: {row.shown} has no output"]


@pytest.mark.parametrize("row", [ROWS[i] for i in (7, 13)] +
                         [r for r in SHOWN if r.shown.startswith("05:")][:2],
                         ids=lambda r: r.shown)
@pytest.mark.parametrize("edition", ["en", "zh-TW"])
def test_a_named_cell_whose_output_lacks_the_evidence_fails(row, edition):
    stream = [{"output_type": "stream", "name": "stdout", "text": ["something else entirely\n"]}]
    problems_ = evidence_problems(row, *_altered(row, edition, stream))
    assert len(problems_) == 1 and problems_[0].startswith(f"{edition}: {row.shown}'s output does not show")


def test_every_named_output_is_checked_in_both_editions():
    """Each shown row passes as committed, and fails once either edition's output is emptied:
    the check reads outputs, not sources."""
    for row in SHOWN:
        for edition in ("en", "zh-TW"):
            assert evidence_problems(row, *_altered(row, edition, [])), (row.claim, edition)


def test_a_row_without_evidence_or_output_cell_fails():
    row = R("000", "x", "computed", ["03:c10"], ["bytes_per_token(32, 8, 128"], ["2048"],
            shown="03:c10")
    assert "a row naming an output cell gives its evidence for both editions" in output_problems(row)
    assert output_problems(R("000", "x", "computed", ["03:c10"], [], ["2048"])) == [
        "a computed row names the cell whose output shows it"]
    assert "a missing row names no output" in output_problems(
        R("000", "x", "missing", note="not shown anywhere, for a reason", shown="03:c10",
          evidence="131,072"))


def test_a_markdown_cell_is_no_output():
    row = R("000", "x", "prose only", ["03:seedswa0"], [], ["--swa-full"], ["--swa-full"],
            note="src", shown="03:seedswa0", evidence="swa")
    assert "en: 03:seedswa0 is not a code cell" in output_problems(row)


def test_a_quick_run_cannot_carry_a_full_procedure():
    live = R("000", "x", "live on labkit", ["05:9bdc6821"], [], ["configs"], kind="procedure",
             shown="05:9bdc6821", evidence=r"\d+ (?:requests measured|個請求)|量了 \d+")
    if seed_audit.size_of(live) == "quick":
        assert "a procedure shown by a quick run is partial" in output_problems(live)
    else:
        assert "a procedure shown by a quick run is partial" not in output_problems(live)


def test_llama_server_rows_show_llama_server():
    row = R("002", "x", "live on llama-server", ["07:a58c1baa"], [], ["requests_deferred"],
            shown="03:c10", evidence="131,072")
    assert "the output said to come from llama-server never names llama-server" in \
        output_problems(row)


def test_the_readme_names_server_run_and_status_of_each_row():
    text = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    for row in ROWS:
        line = next(l for l in text.splitlines() if l.startswith(f"| {row.seed} | {row.kind} | ")
                    and seed_audit._cell(row.claim) in l)
        assert f"| {row.status} | " in line and f"| {server_of(row)} | " in line
        assert f"| {seed_audit.size_of(row)} | " in line
