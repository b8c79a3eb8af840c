"""What a bench run shows, in sentences computed from its own numbers.

A worksheet answers "what did each configuration do"; a learner asks "so do more slots pay here,
and why". :func:`read` puts each configuration beside the 1-slot run of the same server and
workload and adds what the server's own clock says about where the time went, and
:func:`sentences` turns that into the lines ``labkit bench`` prints under its table and writes
into worksheet.md (and notebook 05 prints under its worksheet). Nothing in them is written in
advance: every figure is read off the run, and every word that interprets one is chosen by a
stated threshold on it.

The reason has two parts, both from the server's per-request ``timings`` (llama-server's and
labkit's, the same fields):

- **The prompt share** at 1 slot: the part of the server's time spent reading prompts,
  ``sum(prompt_ms) / sum(prompt_ms + predicted_ms)``. A prompt is read many tokens per
  ``llama_decode`` call already, with 1 slot as with 4, so more slots can only speed up the rest:
  even if a decode step of N sequences cost no more than a step of one, N slots could give at
  most ``1 / (share + (1 - share) / N)`` times the tokens/s (``ceiling``).
- **The cost of sharing a decode step**: the time between two tokens of one request,
  ``predicted_ms / predicted_n``, with N slots against 1 slot (``token_interval_vs_1``). Near 1, a
  step serving N sequences costs about what a step serving one does: reading the weights (memory
  bandwidth) sets the pace, and sharing the step is nearly free. Near N, each sequence costs as
  much as it would alone: arithmetic sets the pace (notebook 05_roofline measures both rates on
  this machine). The interval also holds the other slots' prompts read between two of its tokens,
  so on a prompt-heavy workload it runs above the decode step's own cost.

Combined, ``1 / (share + (1 - share) * token_interval_vs_1 / N)`` is the gain those two figures
explain (``explained``), printed beside the measured one.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from ..lang.i18n import pick, value

#: A configuration's tokens/s against 1 slot at or above this "pays"; at or below
#: :data:`LOWERS` it "lowers" the total; between the two slots "barely change" it. A step of 15 %
#: is what three rounds on a shared 2-core machine can tell apart from noise.
PAYS = 1.15
LOWERS = 0.95
#: A prompt share at or above this "dominates" the server's time.
PROMPT_HEAVY = 0.5
#: A token interval with N slots within this fraction of N times the 1-slot interval means each
#: sequence cost about as much as alone ("arithmetic sets the pace"); one at or below
#: :data:`SHARED_CHEAP` of N, that sharing the step was cheap ("memory bandwidth sets it").
ALONE = 0.75
SHARED_CHEAP = 0.5

GROUP = ["server", "workload", "load", "cache_prompt"]
#: The worksheet columns a reading stands on; a table without them has nothing to read.
NEEDED = ("server", "workload", "kv_mode", "slots", "output_tok_s", "ttft_p50_s", "errors",
          "verdict")
KV_ZH = {"split": "分割", "unified": "統一"}


def _server_time(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (``config`` key) and round, the server's own clock summed over the
    answered requests: ``prompt_ms``, ``predicted_ms``, ``predicted_n``."""
    ok = rows[rows["error"].isna()].copy()
    for col in ("prompt_ms", "predicted_ms", "predicted_n"):
        ok[col] = pd.to_numeric(ok.get(col), errors="coerce")
    ok = ok.dropna(subset=["prompt_ms", "predicted_ms", "predicted_n"])
    return ok


def _key(r) -> tuple:
    return tuple(str(r[k]) if k in r and not _missing(r[k]) else "" for k in GROUP)


def _missing(v) -> bool:
    try:
        return v is None or bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _ratio(a, b) -> float:
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return math.nan
    return a / b if b and not (math.isnan(a) or math.isnan(b)) else math.nan


def read(ws: pd.DataFrame, rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """One line per configuration that has a 1-slot run of the same server and workload (the
    same KV mode when there is one, else the other: one slot holds the same cells either way):
    ``tok_s_vs_1``, ``ttft_p50_vs_1``, and, where ``rows`` carry the server's timings,
    ``prompt_share_1`` (the 1-slot run's), ``token_interval_vs_1``, ``ceiling`` and
    ``explained`` (see the module's docstring). NaN where a figure cannot be read: a failed
    request (no throughput), a server that reports no timings."""
    if not set(NEEDED) <= set(ws.columns):
        return pd.DataFrame()
    timed = _server_time(rows) if rows is not None and len(rows) else None
    # The server's clock per configuration: keyed like the worksheet's lines.
    clock = {}
    if timed is not None and len(timed):
        for _, g in timed.groupby(GROUP + ["kv_mode", "slots"], dropna=False, sort=False):
            first = g.iloc[0]
            prompt, predicted = g["prompt_ms"].sum(), g["predicted_ms"].sum()
            # A request of one token has no interval between two of its tokens.
            two = g[g["predicted_n"] > 1]
            clock[_key(first) + (str(first["kv_mode"]), int(first["slots"]))] = {
                "prompt_share": _ratio(prompt, prompt + predicted),
                "token_interval_ms": _ratio(two["predicted_ms"].sum(), two["predicted_n"].sum())}
    said = _errors(rows)
    out = []
    for _, r in ws.iterrows():
        mask = pd.Series([_key(o) == _key(r) for _, o in ws.iterrows()], index=ws.index)
        same = ws[mask & (ws["slots"] == 1)]
        base = same[same["kv_mode"] == r["kv_mode"]]
        base = base if len(base) else same
        # A configuration with no 1-slot run beside it keeps its line (a failure is still
        # worth saying) with no ratios.
        b = base.iloc[0] if len(base) else pd.Series(dtype=object)
        n = int(r["slots"])
        mine = clock.get(_key(r) + (str(r["kv_mode"]), n), {})
        alone = clock.get(_key(b) + (str(b["kv_mode"]), 1), {}) if len(b) else {}
        share = alone.get("prompt_share", math.nan)
        interval = _ratio(mine.get("token_interval_ms"), alone.get("token_interval_ms"))
        line = {k: r[k] for k in GROUP + ["kv_mode", "slots"] if k in r}
        line.update({
            "output_tok_s": r["output_tok_s"],
            "tok_s_vs_1": _ratio(r["output_tok_s"], b.get("output_tok_s")),
            "ttft_p50_s": r["ttft_p50_s"], "ttft_p50_1_s": b.get("ttft_p50_s", math.nan),
            "ttft_p50_vs_1": _ratio(r["ttft_p50_s"], b.get("ttft_p50_s")),
            "completion_p50_vs_1": _ratio(r.get("completion_p50_s"), b.get("completion_p50_s")),
            "errors": int(r["errors"]), "verdict": r["verdict"],
            "error": said.get(_key(r) + (str(r["kv_mode"]), n), ""),
            "fits_context": r.get("fits_context", True), "ttft_ok": r.get("ttft_ok", True),
            "all_correct": r.get("all_correct", True), "ttft_max_s": r.get("ttft_max_s", math.nan),
            "correct": r.get("correct", math.nan), "n_requests": r.get("n_requests", math.nan),
            "prompt_share_1": share, "token_interval_vs_1": interval,
            "ceiling": 1 / (share + (1 - share) / n) if share == share else math.nan,
            "explained": (1 / (share + (1 - share) * interval / n))
            if share == share and interval == interval else math.nan,
        })
        out.append(line)
    return pd.DataFrame(out)


def error_text(error) -> str:
    """The server's own words in a request's error: the message of a JSON error (llama-server
    sends one inside the stream when a request ends mid-generation), else the text as recorded."""
    if not isinstance(error, str):
        return ""
    text = error.split(": ", 1)[1] if error.startswith(("RuntimeError: ", "ValueError: ")) else error
    try:
        err = json.loads(text)
    except ValueError:
        return text
    if isinstance(err, dict) and err.get("message"):
        return f"HTTP {err['code']} {err['message']}" if err.get("code") else str(err["message"])
    return text


def _most_said(rows, keys: list[str]) -> list[tuple]:
    """Per group of ``keys`` among the failed requests: its first row, the error they gave most
    often (:func:`error_text`), how many gave it, and how many failed."""
    if rows is None or not len(rows) or "error" not in rows:
        return []
    bad = rows[rows["error"].notna()]
    out = []
    for _, g in bad.groupby(keys, dropna=False, sort=False):
        said = g["error"].map(error_text).value_counts()
        out.append((g.iloc[0], said.index[0], int(said.iloc[0]), len(g)))
    return out


def _errors(rows) -> dict:
    """Per configuration (keyed as :func:`read` keys the server's clock), the error its failed
    requests gave most often, with how many gave it."""
    return {_key(first) + (str(first["kv_mode"]), int(first["slots"])): (msg, k)
            for first, msg, k, _ in _most_said(rows, GROUP + ["kv_mode", "slots"])}


def failures(rows) -> pd.DataFrame:
    """One line per configuration whose requests failed: how many, and the server's own words
    for the failure they gave most often (:func:`error_text`). A table to read: under
    LABKIT_LANG=zh-TW its headings are Chinese."""
    from ..lang.i18n import show
    keys = ["server", "workload", "kv_mode", "slots"]
    lines = [{**{k: first[k] for k in keys}, "failed": n, "error": msg}
             for first, msg, _, n in _most_said(rows, keys)]
    return show(pd.DataFrame(lines, columns=keys + ["failed", "error"]),
                {"failed": "失敗", "error": "伺服器的錯誤訊息"})


def verdict_of(gain: float) -> str:
    """``pays``, ``flat`` or ``lowers`` for a tokens/s ratio against 1 slot (see :data:`PAYS`);
    ``unknown`` when there is no ratio (a failed request)."""
    if gain != gain:
        return "unknown"
    return "pays" if gain >= PAYS else "lowers" if gain <= LOWERS else "flat"


def pace_of(interval: float, slots: int) -> str:
    """What sets a decode step's pace, from the token interval with ``slots`` slots against 1:
    ``arithmetic`` (each sequence cost about as much as alone), ``bandwidth`` (sharing was
    cheap), ``between``, or ``unknown``."""
    if interval != interval or slots < 2:
        return "unknown"
    if interval >= ALONE * slots:
        return "arithmetic"
    return "bandwidth" if interval <= max(1.0, SHARED_CHEAP * slots) else "between"


def _pct(x: float) -> str:
    return f"{(x - 1) * 100:+.0f} %"


def sentences(reading: pd.DataFrame) -> list[str]:
    """The lines under a worksheet: one per configuration beyond 1 slot (its gain, its TTFT cost,
    its gates), then, per server and workload, one line on why (prompt share, the cost of sharing
    a decode step) and one on what this run shows. In the language in use."""
    out = []
    if reading is None or not len(reading):
        return out
    for key, g in reading.groupby(GROUP, dropna=False, sort=False):
        server, workload = key[0], key[1]
        more = g[g["slots"] > 1]
        for _, r in g.iterrows():
            n, kv = int(r["slots"]), r["kv_mode"]
            head = pick(f"{server}, {workload}, {n} slot{'s' if n > 1 else ''} ({kv})",
                        f"{server}，{workload}，{n} 個槽位（{KV_ZH.get(kv, kv)} KV）")
            if r["errors"]:
                msg, k = r["error"] if r["error"] else ("", 0)
                why_en = (f" ({k} of them: '{msg}')" if k < r["errors"] else f" ('{msg}')") \
                    if msg else ""
                why_zh = (f"（其中 {k} 個：「{msg}」）" if k < r["errors"] else f"（「{msg}」）") \
                    if msg else ""
                out.append(pick(f"{head}: {r['errors']} request(s) failed{why_en}, so its "
                                f"tokens/s is not a result; {r['verdict']}.",
                                f"{head}：{r['errors']} 個請求失敗{why_zh}，所以它的 tokens/s 不算"
                                f"結果；{value('verdict', r['verdict'])}。"))
                out += _remedy(r)
                continue
            x, tt, c = r["tok_s_vs_1"], r["ttft_p50_vs_1"], r["completion_p50_vs_1"]
            if n == 1:
                out += _baseline(r, head)
                continue
            if x != x:
                continue            # no 1-slot run beside it
            done_en = f", the median request x{c:.2f} as long to finish" if c == c else ""
            done_zh = f"，請求完成時間的中位數是 {c:.2f} 倍" if c == c else ""
            out.append(pick(
                f"{head}: x{x:.2f} the tokens/s of 1 slot ({_pct(x)}), TTFT p50 x{tt:.2f} "
                f"({r['ttft_p50_1_s']:.2f} s -> {r['ttft_p50_s']:.2f} s){done_en}; "
                f"{r['verdict']}.",
                f"{head}：tokens/s 是 1 個槽位的 {x:.2f} 倍（{_pct(x)}），首字等待 p50 是 {tt:.2f} 倍"
                f"（{r['ttft_p50_1_s']:.2f} 秒 → {r['ttft_p50_s']:.2f} 秒）{done_zh}；"
                f"{value('verdict', r['verdict'])}。"))
            out += _remedy(r)
        if len(more):
            out += _why(more, server, workload)
    return out


def _failed(gate) -> bool:
    """A gate that was judged and did not pass: False (a gate not judged, such as an ungraded
    answer's "not graded", or a missing one, is not a failure)."""
    return not isinstance(gate, str) and gate is not None and gate == gate and not bool(gate)


def _baseline(r, head: str) -> list[str]:
    """A line for a 1-slot run only when it fails a gate itself: every gain beside it is then
    measured against a configuration that does not do the job."""
    if str(r["verdict"]).startswith("pass"):
        return []
    facts_en, facts_zh = [], []
    if _failed(r.get("ttft_ok")) and r.get("ttft_max_s") == r.get("ttft_max_s"):
        facts_en.append(f"its slowest first token came after {float(r['ttft_max_s']):.1f} s")
        facts_zh.append(f"最慢的第一個 token 等了 {float(r['ttft_max_s']):.1f} 秒")
    if _failed(r.get("all_correct")) and r.get("n_requests") == r.get("n_requests"):
        facts_en.append(f"{float(r['correct']):.0f} of {float(r['n_requests']):.0f} answers "
                        "graded correct")
        facts_zh.append(f"{float(r['n_requests']):.0f} 個答案中有 {float(r['correct']):.0f} 個"
                        "判為正確")
    en = f" ({'; '.join(facts_en)})" if facts_en else ""
    zh = f"（{'；'.join(facts_zh)}）" if facts_zh else ""
    return [pick(f"{head}: the baseline itself fails{en}: {r['verdict']}. More slots cannot mend "
                 "that; the gains beside it are against a run that does not do the job.",
                 f"{head}：基準本身就沒通過{zh}：{value('verdict', r['verdict'])}。槽位變多也補不了"
                 "這一點；旁邊的倍數是跟一個沒有完成工作的設定相比。")] + _remedy(r)


def _remedy(r) -> list[str]:
    """The seed's advice for a configuration that failed a gate: a document that did not fit
    calls for fewer requests in flight or more room; first tokens too late with room to spare,
    for a look at long prompts and queueing. Nothing for a configuration that passed both."""
    if _failed(r.get("fits_context")) and str(r.get("kv_mode")) == "unified":
        return [pick("What to try (the seed's advice when long documents fail): the pool is "
                     "already shared, and the requests in flight together needed more cells than "
                     "it holds; fewer requests in flight (fewer slots), or a larger -c.",
                     "可以怎麼做（種子文章對長文件失敗的建議）：池已經是共用的，是在途的請求加起來需要的"
                     "格子比池裡的還多；先減少在途數（槽位少一點），或加大 -c。")]
    if _failed(r.get("fits_context")):
        return [pick("What to try (the seed's advice when long documents fail): fewer requests "
                     "in flight (fewer slots, so each gets more of the pool), or more room: a "
                     "larger -c, or unified KV so that one long request can use the cells the "
                     "others leave free.",
                     "可以怎麼做（種子文章對長文件失敗的建議）：先減少在途數（槽位少一點，每個槽位分到"
                     "的池就大一點），或調整容量：加大 -c，或改用統一 KV，讓一個長請求能用其他請求沒用到的"
                     "格子。")]
    if _failed(r.get("ttft_ok")):
        return [pick("What to try (the seed's advice when the context suffices but first tokens "
                     "come too late): look at long prompts (each is read before its first token, "
                     "and holds up the steps of its neighbours) and at queueing (requests waiting "
                     "for a slot).",
                     "可以怎麼做（種子文章對容量足夠但首字等太久的建議）：檢查長提示（每個提示都要先讀完"
                     "才有第一個 token，也會拖慢鄰居的解碼步）和排隊（請求在等空的槽位）。")]
    return []


def _why(more: pd.DataFrame, server: str, workload: str) -> list[str]:
    """Why, for one server and workload: read at its largest slot count without a failure."""
    ok = more[(more["errors"] == 0) & more["tok_s_vs_1"].notna()]
    if not len(ok):
        return []
    # The largest slot count without a failure; of its KV modes, the better gain (then the
    # first mode in name order), so the same table always reads the same line.
    top = ok.assign(_kv=ok["kv_mode"].astype(str)).sort_values(
        ["slots", "tok_s_vs_1", "_kv"], ascending=[False, False, True], kind="stable").iloc[0]
    n, x = int(top["slots"]), float(top["tok_s_vs_1"])
    share, interval = top["prompt_share_1"], top["token_interval_vs_1"]
    kv = str(top["kv_mode"])
    if more["kv_mode"].nunique() > 1:
        name = pick(f"{server}, {workload}, {kv} KV", f"{server}，{workload}，{KV_ZH.get(kv, kv)} KV")
    else:
        name = pick(f"{server}, {workload}", f"{server}，{workload}")
    lines = []
    if share == share and share >= PROMPT_HEAVY:
        # Prompts dominate: a request's token interval then holds the other slots' prompts too,
        # so it says little about the decode step itself; the prompt share is the reason.
        lines.append(pick(
            f"Why ({name}): at 1 slot {share:.0%} of the server's time went to reading prompts. "
            f"A prompt is read many tokens per step with 1 slot as with {n}, so more slots speed "
            f"up only the other {1 - share:.0%}: even if sharing a decode step cost nothing, {n} "
            f"slots could give at most x{top['ceiling']:.2f}; measured x{x:.2f}. (The "
            f"decode_heavy workload shows what sharing a decode step costs on this machine.)",
            f"原因（{name}）：1 個槽位時，伺服器有 {share:.0%} 的時間在讀提示。不管 1 個還是 {n} 個"
            f"槽位，提示都是一步讀很多個 token，所以槽位變多只能加快其餘的 {1 - share:.0%}：就算共用"
            f"解碼步完全不花成本，{n} 個槽位最多也只能到 {top['ceiling']:.2f} 倍；實測 {x:.2f} 倍。"
            f"（decode_heavy 工作負載會量出在這台機器上共用一個解碼步要花多少。）"))
    elif share == share and interval == interval:
        pace = pace_of(interval, n)
        pace_en = {"arithmetic": f"nearly as long as {n} steps of one: arithmetic, not memory "
                                 "bandwidth, sets a decode step's pace on this machine",
                   "bandwidth": "little more than a step serving one: reading the weights sets "
                                "the pace, so sharing a step is nearly free",
                   "between": f"more than a step serving one but well under {n} of them: "
                              "between the two limits",
                   "unknown": ""}[pace]
        pace_zh = {"arithmetic": f"幾乎等於 {n} 個只服務一條的步：在這台機器上，決定解碼一步快慢的是"
                                 "算力，不是記憶體頻寬",
                   "bandwidth": "只比服務一條的一步多一點：讀權重決定速度，所以大家共用一步幾乎不花成本",
                   "between": f"比服務一條的一步多，但遠少於 {n} 步：介於兩種限制之間",
                   "unknown": ""}[pace]
        lines.append(pick(
            f"Why ({name}): at 1 slot {share:.0%} of the server's time went to reading prompts, "
            f"so {n} slots could give at most x{top['ceiling']:.2f} if sharing a decode step cost "
            f"nothing; with {n} slots a request waited x{interval:.2f} as long between two of its "
            f"tokens: a step serving {n} sequences took {pace_en}. Together these explain "
            f"x{top['explained']:.2f}; measured x{x:.2f} (notebook 05_roofline measures the "
            f"machine's two limits).",
            f"原因（{name}）：1 個槽位時，伺服器有 {share:.0%} 的時間在讀提示，所以就算共用解碼步完全"
            f"不花成本，{n} 個槽位最多也只能到 {top['ceiling']:.2f} 倍；{n} 個槽位時，一個請求兩個 "
            f"token 之間等了 {interval:.2f} 倍的時間：服務 {n} 條序列的一步所花的時間{pace_zh}。"
            f"兩者合起來可以解釋 {top['explained']:.2f} 倍，實測 {x:.2f} 倍（筆記本 05_roofline "
            f"會量這台機器的兩種限制）。"))
    verdict = verdict_of(x)
    en = {"pays": f"slots pay: {n} slots raised the total tokens/s by {(x - 1) * 100:.0f} %",
          "flat": f"slots barely change the total tokens/s ({_pct(x)} at {n} slots)",
          "lowers": f"slots lowered the total tokens/s by {(1 - x) * 100:.0f} % (at {n} slots)"}[verdict]
    zh = {"pays": f"槽位有用：{n} 個槽位讓總 tokens/s 增加了 {(x - 1) * 100:.0f} %",
          "flat": f"槽位幾乎沒有改變總 tokens/s（{n} 個槽位時 {_pct(x)}）",
          "lowers": f"槽位讓總 tokens/s 下降了 {(1 - x) * 100:.0f} %（{n} 個槽位時）"}[verdict]
    tt = float(top["ttft_p50_vs_1"])
    lines.append(pick(
        f"This run ({name}): {en}, while a request waited x{tt:.2f} as long for its first token.",
        f"這次的結果（{name}）：{zh}，而一個請求等第一個 token 的時間是 {tt:.2f} 倍。"))
    return lines


def reading_markdown(ws: pd.DataFrame, rows: pd.DataFrame | None = None) -> str:
    """The reading as worksheet.md and ``labkit bench`` show it: a heading and one bullet per
    sentence; empty when no configuration has a 1-slot run to stand beside."""
    lines = sentences(read(ws, rows))
    if not lines:
        return ""
    return ("\n" + pick("What this run shows", "這次的結果說明了什麼") + "\n\n"
            + "".join(f"- {line}\n" for line in lines))


#: A request whose server decode rate is under this fraction of its configuration's median
#: "stands out": its decode overlapped the reading of its neighbours' prompts.
OUTLIER = 0.7


def decode_speeds(rates: pd.DataFrame, workload: str = "short") -> list[str]:
    """What the server's own decode rates (``timings.predicted_per_second`` per request, as
    :func:`labkit.lessons.live.decode_rates` tables them) show for ``workload``: per KV mode, a
    request's decode at the most slots against 1 slot and what that many decoding together make;
    then whether a request of the most slots' first round stands out below its neighbours."""
    g = rates[(rates["workload"] == workload)].dropna(subset=["server_decode_tok_s"])
    out = []
    if not len(g):
        return out
    per = g.groupby(["kv_mode", "slots"])["server_decode_tok_s"].median()
    for kv in dict.fromkeys(g["kv_mode"]):
        counts = sorted(per[kv].index)
        if 1 not in counts or counts[-1] < 2:
            continue
        n, one, many = counts[-1], float(per[(kv, 1)]), float(per[(kv, counts[-1])])
        kv_zh = KV_ZH.get(kv, kv)
        total = n * many / one
        # Fewer tokens in all than one request alone: each decode span also held the steps that
        # read its neighbours' prompts, so the rate is not the decode step's own cost.
        held_en = (" Fewer than one alone: a request's decode span here also holds the steps "
                   "that read its neighbours' prompts, so this rate is not what a decode step "
                   "costs (the decode_heavy workload shows that).") if total < 1 else ""
        held_zh = ("比單獨一個還少：這裡一個請求的解碼時段也包含了讀鄰居提示的那幾步，所以這個速度"
                   "不是解碼一步本身的成本（decode_heavy 工作負載量的才是）。") if total < 1 else ""
        out.append(pick(
            f"{workload}, {kv}: a request decoded at {many:.1f} tok/s with {n} slots against "
            f"{one:.1f} alone (x{many / one:.2f}); {n} decoding at once make {n * many:.1f} tok/s "
            f"in all, x{total:.2f} of one alone.{held_en}",
            f"{workload}，{kv_zh} KV：{n} 個槽位時一個請求的解碼速度是 {many:.1f} tok/s，單獨時是 "
            f"{one:.1f}（{many / one:.2f} 倍）；{n} 個同時解碼，合計 {n * many:.1f} tok/s，"
            f"是單獨一個的 {total:.2f} 倍。{held_zh}"))
    top = g[(g["slots"] == g["slots"].max()) & (g["round"] == g["round"].min())]
    if len(top) > 1:
        slow, med = float(top["server_decode_tok_s"].min()), float(top["server_decode_tok_s"].median())
        x = slow / med
        if x < OUTLIER:
            out.append(pick(
                f"The slowest request of the {int(top['slots'].iloc[0])}-slot table decoded at "
                f"{slow:.1f} tok/s, x{x:.2f} of the median: its decode overlapped the reading of its "
                f"neighbours' prompts.",
                f"{int(top['slots'].iloc[0])} 個槽位那張表裡最慢的請求解碼速度是 {slow:.1f} tok/s，"
                f"是中位數的 {x:.2f} 倍：它解碼的時候，鄰居的提示正在被讀。"))
        else:
            out.append(pick(
                f"No request of the {int(top['slots'].iloc[0])}-slot table stands out (the slowest "
                f"decoded at x{x:.2f} of the median).",
                f"{int(top['slots'].iloc[0])} 個槽位那張表裡沒有特別慢的請求（最慢的是中位數的 "
                f"{x:.2f} 倍）。"))
    return out
