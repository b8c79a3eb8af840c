"""The reading notebook 05 §9 prints stands on the table printed above it, in the committed
outputs of both editions: every gain and TTFT ratio a sentence quotes is the table's figure for
that server, workload, KV mode and slot count, and every verdict word ("pays", "barely
change", "lowered") is the one labkit.bench.reading's thresholds give that gain. A copy whose
sentence or table was edited by hand fails."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from labkit.bench import reading
from labkit.lang.i18n import HEADINGS

ROOT = Path(__file__).resolve().parents[1]
CELL = "4c00386f"
EDITIONS = {"en": ROOT / "notebooks" / "05_slots_live.ipynb",
            "zh-TW": ROOT / "notebooks" / "zh-TW" / "05_slots_live.ipynb"}
KV = {"split": "split", "unified": "unified", "分割": "split", "統一": "unified"}

# One line per configuration, and the line on what the run shows, in each language.
LINE = {"en": re.compile(r"^- (?P<server>.+?), (?P<workload>[\w-]+), (?P<slots>\d+) slots? "
                         r"\((?P<kv>\w+)\): x(?P<gain>[\d.]+) the tokens/s of 1 slot "
                         r"\((?P<pct>[+-]\d+) %\), TTFT p50 x(?P<ttft>[\d.]+)"),
        "zh-TW": re.compile(r"^- (?P<server>.+?)，(?P<workload>[\w-]+)，(?P<slots>\d+) 個槽位"
                            r"（(?P<kv>\S+?) KV）：tokens/s 是 1 個槽位的 (?P<gain>[\d.]+) 倍"
                            r"（(?P<pct>[+-]\d+) %），首字等待 p50 是 (?P<ttft>[\d.]+) 倍")}
VERDICT = {"en": {"pays": "slots pay", "flat": "slots barely change", "lowers": "slots lowered"},
           "zh-TW": {"pays": "槽位有用", "flat": "槽位幾乎沒有改變", "lowers": "槽位讓總 tokens/s 下降"}}
RUN = {"en": re.compile(r"^- This run \((?P<server>.+?), (?P<workload>[\w-]+)\): (?P<text>.*)"),
       "zh-TW": re.compile(r"^- 這次的結果（(?P<server>.+?)，(?P<workload>[\w-]+)）：(?P<text>.*)")}


def _cell(nb):
    return next(c for c in nb["cells"] if c.get("id") == CELL)


def _table(cell, edition) -> list[dict]:
    """The reading's table as the cell showed it: one dict per row, keyed by column name."""
    html = next("".join(o["data"]["text/html"]) for o in cell["outputs"]
                if "text/html" in o.get("data", {}))
    soup = BeautifulSoup(html, "html.parser")
    names = {HEADINGS.get(k, k) if edition == "zh-TW" else k: k
             for k in ("server", "workload", "kv_mode", "slots", "tok_s_vs_1", "ttft_p50_vs_1")}
    head = [th.get_text() for th in soup.find("thead").find_all("th")]
    rows = []
    for tr in soup.find("tbody").find_all("tr"):
        cells = [td.get_text() for td in tr.find_all(["th", "td"])]
        rows.append({names[h]: v for h, v in zip(head, cells) if h in names})
    return rows


def _lines(cell) -> list[str]:
    return "".join(t for o in cell["outputs"] if o["output_type"] == "stream"
                   for t in o["text"]).splitlines()


def problems(nb, edition) -> list[str]:
    """What the cell's sentences say that its table does not, or why they cannot be read."""
    cell = _cell(nb)
    if not cell.get("outputs"):
        return [f"cell {CELL} has no output"]
    table, lines = _table(cell, edition), _lines(cell)
    found, out = 0, []
    # The lines of one run come before its "this run" line: the gain it reads is the one at the
    # largest slot count among them.
    top: dict[tuple, tuple[int, list[float]]] = {}
    for line in lines:
        m = LINE[edition].match(line)
        if m:
            found += 1
            key = (m["server"], m["workload"], KV.get(m["kv"], m["kv"]), m["slots"])
            rows = [r for r in table
                    if (r["server"], r["workload"], r["kv_mode"], r["slots"]) == key]
            if not any(r["tok_s_vs_1"] == m["gain"] and r["ttft_p50_vs_1"] == m["ttft"]
                       for r in rows):
                out.append(f"{line!r}: the table has "
                           f"{[(r['tok_s_vs_1'], r['ttft_p50_vs_1']) for r in rows]}")
            gain = float(m["gain"])
            if abs(round((gain - 1) * 100) - int(m["pct"])) > 1:
                out.append(f"{line!r}: x{gain} is not {m['pct']} %")
            g, n = (m["server"], m["workload"]), int(m["slots"])
            best, gains = top.get(g, (0, []))
            if n > best:
                top[g] = (n, [gain])
            elif n == best:          # split and unified at the same slot count: either is read
                gains.append(gain)
            continue
        m = RUN[edition].match(line)
        if m and (m["server"], m["workload"]) in top:
            n, gains = top.pop((m["server"], m["workload"]))
            # the table prints gains to two decimals: a printed x1.15 may be 1.146 ("flat")
            words = {VERDICT[edition][reading.verdict_of(v)]
                     for x in gains for v in (x - 0.005, x, x + 0.004)}
            if not any(m["text"].startswith(w) for w in words):
                out.append(f"{line!r}: {gains} at {n} slots reads one of {sorted(words)}")
    if not found:
        out.append(f"cell {CELL} prints no reading line")
    return out


@pytest.fixture(params=sorted(EDITIONS), scope="module")
def committed(request):
    return request.param, json.loads(EDITIONS[request.param].read_text(encoding="utf-8"))


def test_the_committed_reading_stands_on_its_table(committed):
    edition, nb = committed
    assert problems(nb, edition) == []


def test_a_sentence_edited_by_hand_fails(committed):
    edition, nb = committed
    bad = copy.deepcopy(nb)
    out = next(o for o in _cell(bad)["outputs"] if o["output_type"] == "stream")
    text = "".join(out["text"])
    m = next(LINE[edition].match(x) for x in text.splitlines() if LINE[edition].match(x))
    wrong = f"{float(m['gain']) + 0.5:.2f}"
    out["text"] = text.replace(m.group(0), m.group(0).replace(m["gain"], wrong, 1), 1)
    assert any("the table has" in p for p in problems(bad, edition))


def test_a_verdict_word_that_does_not_fit_fails(committed):
    edition, nb = committed
    bad = copy.deepcopy(nb)
    out = next(o for o in _cell(bad)["outputs"] if o["output_type"] == "stream")
    words = VERDICT[edition]
    text = "".join(out["text"])
    for a, b in (("pays", "flat"), ("flat", "pays"), ("lowers", "pays")):
        text = text.replace(words[a], "\0" + b)
    for b in words:
        text = text.replace("\0" + b, words[b])
    out["text"] = text
    assert any("reads" in p for p in problems(bad, edition))


def test_no_output_fails(committed):
    edition, nb = committed
    bad = copy.deepcopy(nb)
    _cell(bad)["outputs"] = []
    assert problems(bad, edition) == [f"cell {CELL} has no output"]
