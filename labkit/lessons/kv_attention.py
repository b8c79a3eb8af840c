"""Split against unified KV, measured: how fast sequences decode while long caches are held.

In llama.cpp a unified KV buffer is one stream: the attention of every sequence in a batch
views the stream's first ``n_kv`` cells, where ``n_kv`` is the highest used cell plus one,
padded to 256 (``llama_kv_cache::get_n_kv`` in src/llama-kv-cache.cpp), and the cells of the
other sequences are masked out (``set_input_kq_mask``): without flash attention computed, then
thrown away; with it (ggml's CPU kernel) passed over, the loop still running over all ``n_kv``
cells. With split KV (``--no-kv-unified``) every sequence has its own stream, so its attention
runs over its own cells only. :func:`n_kv` is that rule as arithmetic.

:func:`measure` starts one server per (server kind, KV mode) with ``-np 4`` and
``cache_prompt`` on, and runs four phases in order on it, each request a ``/completion`` of
``prompt_tokens`` random token ids asking for ``max_tokens`` tokens (``ignore_eos``,
temperature 0). A phase's new prompts are read first (one token generated), and then every
sequence of the phase is sent again at once: its prompt is found cached but its last token, so
what is timed is decode alone, not decode slowed by another sequence's prompt:

- ``1``: one sequence decodes, the other slots empty;
- ``2``: two decode at once (the first prompt again and a new one);
- ``4``: four decode at once;
- ``idle``: the first prompt alone again, while the three other slots keep the caches their
  finished requests left (llama.cpp issue #25804: "an idle sequence's cache slows my
  decoding").

Each request's decode speed is the server's own ``timings.predicted_per_second`` (tokens
generated after the first, over the time it took); a phase's total is the sum over its
sequences, which decode side by side. :func:`summary` puts split and unified next to each
other, per server, with the unified / split ratio.
"""

from __future__ import annotations

import concurrent.futures as cf
import random
from dataclasses import dataclass

#: The phases, in the order one server runs them: (name, sequences decoding, caches kept idle).
PHASES = (("1", 1, 0), ("2", 2, 0), ("4", 4, 0), ("idle", 1, 3))
SLOTS = 4
#: llama.cpp pads n_kv to a multiple of max(n_pad, 256) (llama_kv_cache::get_n_kv).
N_KV_PAD = 256


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


def n_kv(cells: list[int], unified: bool, *, size: int | None = None, pad: int = N_KV_PAD) -> int:
    """The cells a decoding sequence's attention runs over, by llama.cpp's rule: ``cells`` are
    the cells each sequence holds (the decoding ones and the idle ones). Unified: one stream
    holding them all, so the used cells of every sequence (packed from cell 0), padded to
    ``pad``; split: the sequence's own stream, its own cells padded (for a batch of several
    streams, the largest of them). ``size`` caps the result at the stream's size."""
    if not cells or any(c < 0 for c in cells):
        raise ValueError("cells: one count >= 0 per sequence")
    used = sum(cells) if unified else max(cells)
    n = max(pad, _pad(used, pad))
    return min(n, size) if size else n


def attended_ratio(decoding: int, idle: int, cells: int) -> float:
    """Cells attended per decoded token, unified over split, with every sequence holding
    ``cells`` cells (padding left out): (decoding + idle) x cells against cells."""
    if decoding < 1 or idle < 0 or cells < 1:
        raise ValueError("decoding >= 1, idle >= 0, cells >= 1")
    return float(decoding + idle)


def prompts(n: int, n_tokens: int, *, seed: int = 0, low: int = 1000, high: int = 30000):
    """``n`` prompts of ``n_tokens`` token ids each, drawn at random (no two share a prefix)."""
    rng = random.Random(seed)
    return [[rng.randrange(low, high) for _ in range(n_tokens)] for _ in range(n)]


def read_timings(body: dict) -> dict:
    """Decode and prompt figures from a llama-server ``/completion`` answer's ``timings``."""
    t = body.get("timings") or {}
    if "predicted_per_second" not in t or "predicted_n" not in t:
        raise ValueError(f"no decode timings in the answer: {sorted(t)}")
    return {"decode_tok_s": float(t["predicted_per_second"]), "predicted_n": int(t["predicted_n"]),
            "prompt_n": int(t.get("prompt_n", 0)), "cache_n": int(t.get("cache_n", 0))}


@dataclass
class Setup:
    """One measurement's size: ``prompt_tokens`` per sequence, ``max_tokens`` generated each,
    server threads."""
    prompt_tokens: int = 480
    max_tokens: int = 32
    threads: int | None = 1

    @property
    def n_ctx(self) -> int:
        """A pool with room for every slot's prompt and answer (a multiple of 256 per slot)."""
        return SLOTS * _pad(self.prompt_tokens + self.max_tokens + 16, N_KV_PAD)


def config(kind: str, unified: bool, setup: Setup):
    """The server configuration of one run: ``-c`` for four long sequences, ``-np 4``."""
    from ..server.launch import ServerConfig
    return ServerConfig(kind=kind, n_ctx=setup.n_ctx, n_slots=SLOTS, kv_unified=unified,
                        n_threads=setup.threads)


def _complete(base_url: str, prompt, max_tokens: int) -> dict:
    import httpx
    body = {"prompt": prompt, "n_predict": max_tokens, "temperature": 0.0, "ignore_eos": True,
            "cache_prompt": True}
    r = httpx.post(base_url + "/completion", json=body, timeout=600)
    r.raise_for_status()
    return read_timings(r.json())


def run_one(kind: str, unified: bool, setup: Setup, *, seed: int = 0, phases=PHASES):
    """Start one server, run ``phases`` on it in order, stop it. One row per request."""
    from ..server.launch import launch
    from .llama_server import SERVER_NAMES, _resolve, flags
    kind = _resolve(kind)
    cfg = config(kind, unified, setup)
    texts = prompts(SLOTS, setup.prompt_tokens, seed=seed)
    rows = []
    primed: set = set()

    def together(batch, max_tokens):
        with cf.ThreadPoolExecutor(len(batch)) as pool:
            return list(pool.map(lambda p: _complete(srv.base_url, p, max_tokens), batch))

    with launch(cfg) as srv:
        # warm-up: a short prompt that shares no prefix with the measured ones
        _complete(srv.base_url, prompts(1, 16, seed=seed + 1, low=30000, high=40000)[0], 2)
        for name, decoding, idle in phases:
            # the new prompts are read first (one token generated), so that the decode measured
            # below is decode alone: each request then finds its prompt cached but one token
            new = [i for i in range(decoding) if i not in primed]
            if new:
                together([texts[i] for i in new], 1)
                primed.update(new)
            got = together(texts[:decoding], setup.max_tokens)
            for i, g in enumerate(got):
                rows.append({"server": SERVER_NAMES.get(kind, kind), "flags": flags(cfg),
                             "kv": "unified" if unified else "split", "phase": name,
                             "decoding": decoding, "idle caches": idle, "sequence": i, **g})
    return rows


def measure(kinds=("labkit", "xllamacpp"), setup: Setup | None = None, *, seed: int = 0,
            order=(False, True), phases=PHASES):
    """Every server kind in ``kinds`` (``"xllamacpp"`` stands for the llama-server there is
    here and is left out where none can start), split then unified (``order``), each on a
    fresh server. One row per request (see :func:`run_one`)."""
    import pandas as pd
    from ..bench.provenance import label
    from .llama_server import REFERENCE, _resolve, reference_installed
    setup = setup or Setup()
    rows, ran = [], []
    for kind in kinds:
        if kind == REFERENCE and not reference_installed():
            continue
        for unified in order:
            rows += run_one(kind, unified, setup, seed=seed, phases=phases)
            ran.append(label(config(_resolve(kind), unified, setup)))
    out = pd.DataFrame(rows)
    out.attrs["measured_on"] = ran        # labkit.bench.provenance.caption reads it
    return out


def summary(rows):
    """One row per (server, phase): per-sequence and total decode tok/s under split and unified,
    and unified / split of the total."""
    import pandas as pd
    g = rows.groupby(["server", "phase", "kv"], sort=False)
    per = g["decode_tok_s"].mean().unstack("kv")
    tot = g["decode_tok_s"].sum().unstack("kv")
    out = pd.DataFrame({"decoding": g["decoding"].first().unstack("kv")["split"],
                        "idle caches": g["idle caches"].first().unstack("kv")["split"],
                        "split tok/s per seq": per["split"], "unified tok/s per seq": per["unified"],
                        "split tok/s total": tot["split"], "unified tok/s total": tot["unified"]})
    out["unified / split"] = out["unified tok/s total"] / out["split tok/s total"]
    order = {name: i for i, (name, _, _) in enumerate(PHASES)}
    out = out.reset_index()
    out = out.sort_values(["server", "phase"], key=lambda s: s.map(order) if s.name == "phase" else s,
                          kind="stable")
    return out.reset_index(drop=True)


PHASE_WORDS = {"4": ("with four sequences decoding", "四個序列一起解碼時"),
               "idle": ("with one decoding beside three idle caches", "一個序列解碼、旁邊有三份閒置快取時"),
               "2": ("with two sequences decoding", "兩個序列一起解碼時"),
               "1": ("with one sequence decoding alone", "只有一個序列解碼時")}


#: How far below the first phase's ratio a phase must fall to count as slower in this run: the
#: first phase (one sequence, empty slots) attends over the same cells in both modes, so its gap
#: from 1.00 is this run's noise, and a difference of a few per cent more is still noise.
MARGIN = 0.05


def findings(table) -> list[tuple[str, str]]:
    """What one run shows, per server, in English and Chinese: unified's total decode speed
    against split's in the phases where other sequences hold cells (four decoding, one beside
    idle caches), judged against the first phase's ratio (one sequence alone, where the two
    modes attend over the same cells, so its gap is the run's noise; 1.00 when the table has no
    such phase): lower by more than :data:`MARGIN` is a cost this run shows, anything else is
    within its noise. It states the run's figures and asserts nothing about them."""
    out = []
    for server, rows in table.groupby("server", sort=False):
        alone = rows.loc[rows["phase"] == "1", "unified / split"]
        base = float(alone.iloc[0]) if len(alone) else 1.0
        yard_en = (f"{base:.2f} x with one sequence alone, where the two attend over the same "
                   f"cells" if len(alone) else "1.00, as this table has no phase of one alone")
        yard_zh = (f"只有一個序列、兩者看同樣格子時是 {base:.2f} 倍" if len(alone)
                   else "這張表沒有單獨一個序列的階段，所以跟 1.00 比")
        for _, r in rows[rows["phase"].isin(["4", "idle"])].iterrows():
            en, zh = PHASE_WORDS[r["phase"]]
            x = float(r["unified / split"])
            if x < base - MARGIN:
                out.append((f"{server}: {en}, unified decoded at {x:.2f} x split's speed, against "
                            f"{yard_en}: an attention cost this run shows\n",
                            f"{server}：{zh}，統一 KV 的解碼速度是分割的 {x:.2f} 倍，對照{yard_zh}："
                            f"這次量得到注意力的成本\n"))
            else:
                out.append((f"{server}: {en}, unified was not slower in this run ({x:.2f} x "
                            f"split, against {yard_en}): at this size the effect was smaller than "
                            f"this machine's noise\n",
                            f"{server}：{zh}，這一次統一 KV 並沒有比較慢（分割的 {x:.2f} 倍，對照"
                            f"{yard_zh}）：在這個大小下，效果比這台機器的雜訊還小\n"))
    return out


def plot(table, subtitle: dict | None = None):
    """Total decode tok/s per phase, split beside unified, one panel per server (``table``:
    :func:`summary`); ``subtitle`` maps a server's name to the line under its title (its version
    and flags). Returns the figure."""
    import numpy as np
    from matplotlib import pyplot as plt

    from ..lang.fonts import label
    servers = list(dict.fromkeys(table["server"]))
    fig, axes = plt.subplots(1, len(servers), figsize=(5.2 * len(servers), 3.6), squeeze=False)
    names = {"1": label("1 decoding", "1 個解碼"), "2": label("2 decoding", "2 個解碼"),
             "4": label("4 decoding", "4 個解碼"),
             "idle": label("1 decoding,\n3 idle caches", "1 個解碼，\n3 個閒置快取")}
    for ax, server in zip(axes[0], servers):
        t = table[table["server"] == server]
        x = np.arange(len(t))
        ax.bar(x - 0.2, t["split tok/s total"], 0.4, label=label("split KV", "分割 KV"))
        ax.bar(x + 0.2, t["unified tok/s total"], 0.4, label=label("unified KV", "統一 KV"))
        ax.set_xticks(x, [names.get(p, p) for p in t["phase"]], fontsize=8)
        ax.set_ylabel(label("decode tok/s, all sequences", "解碼 tok/s（所有序列合計）"))
        extra = (subtitle or {}).get(server)
        ax.set_title(server + (f"\n{extra}" if extra else ""), fontsize=9)
        ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
