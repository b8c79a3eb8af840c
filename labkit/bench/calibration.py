"""A calibration run for the simulator: a workload designed so every step-cost term shows.

The step cost (:mod:`labkit.sim.cost`) has five terms. A trace can only pin down a term
whose column varies in it, independently of the others:

- ``b`` (per prompt token) and ``e`` (prefill attention, growing with the square of the
  prompt) need prompts of very different lengths: here log-spaced from 64 to about 2048
  tokens, so short prompts fix b and long ones fix e;
- ``c`` (per decoding sequence) needs steps with 1, 2 and 4 sequences decoding: the same
  requests are sent with 1, 2 and 4 in flight;
- ``d`` (per attended cell) needs decode steps at small and large contexts: answers of
  spread lengths (``max_tokens`` with ``ignore_eos``, so every answer has exactly its
  length) after short and long prompts;
- ``a`` (per step) is what is left when all of them are small.

One labkit server with as many slots as the largest in-flight level (split KV, each slot
large enough for the longest prompt) serves the three phases one after the other; each
phase's step trace and slot trace are kept, and :func:`labkit.sim.fit` fits the cost on
their step periods (``llama_decode`` plus the host work up to the next step) with a
bootstrap over steps for each coefficient's uncertainty.

    from labkit.bench import calibration
    cal = calibration.run(quick=True)        # about 30 s on a 2-core CPU
    cal.fit.uncertainty()                    # a..e, standard errors, 95 % intervals
    cal.cost                                 # the StepCost for labkit.sim.simulate
    cal.rtt_s                                # per-request time outside the engine
    sim.plots.fit_check(cal.fit, cal.periods)  # measured against predicted, step by step

Quick mode (the test suite, a notebook): prompts from 64 to 1024 tokens, 1 and 2 in flight.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..lang.i18n import pick

FULL = {"prompts": (64, 2048), "n_prompts": 10, "outputs": (8, 160), "in_flight": (1, 2, 4)}
QUICK = {"prompts": (64, 1024), "n_prompts": 5, "outputs": (4, 48), "in_flight": (1, 2)}
SEED = 20261130


@dataclass(frozen=True)
class Plan:
    """What a calibration run sends: ``(prompt_tokens, answer_tokens)`` per request, the
    in-flight levels it is sent at (the same requests each time, in a rotated order)."""

    requests: tuple
    in_flight: tuple

    @property
    def prompt_tokens(self) -> int:
        return sum(p for p, _ in self.requests)


def plan(quick: bool = False, *, seed: int = SEED, prompts=None, n_prompts=None,
         outputs=None, in_flight=None) -> Plan:
    """The calibration requests: ``n_prompts`` prompt lengths log-spaced over ``prompts``
    (min, max), each paired with an answer length drawn log-uniformly from ``outputs``
    (min, max), in a seeded shuffled order."""
    d = QUICK if quick else FULL
    lo, hi = prompts or d["prompts"]
    n = n_prompts or d["n_prompts"]
    olo, ohi = outputs or d["outputs"]
    rng = random.Random(seed)
    lengths = [int(round(x)) for x in np.geomspace(lo, hi, n)]
    answers = [int(round(x)) for x in np.geomspace(olo, ohi, n)]
    rng.shuffle(answers)
    reqs = list(zip(lengths, answers))
    rng.shuffle(reqs)
    return Plan(tuple(reqs), tuple(in_flight or d["in_flight"]))


def _filler_words(n_words: int, seed: int) -> list[str]:
    from .workload import filler_paragraph
    rng = random.Random(seed)
    words: list[str] = []
    while len(words) < n_words:
        words += filler_paragraph(rng).split()
    return words[:n_words]


def prompt_messages(base_url: str, lengths, seed: int = SEED) -> list[list[dict]]:
    """Chat messages whose whole prompt (template applied) is each of ``lengths`` tokens or
    just under: unrelated filler sentences, a different stretch for every request, sized
    with the server's own tokenizer."""
    from .workload import Tokenizer, _fit_words
    tok = Tokenizer(base_url)
    out = []
    for i, n in enumerate(lengths):
        words = _filler_words(int(n * 1.2) + 40, seed + i)

        def msgs(text):
            return [{"role": "user", "content": text}]
        out.append(msgs(_fit_words(words, lambda t: tok.prompt_tokens(msgs(t)) <= n)))
    return out


def send_closed(base_url: str, bodies: list[dict], in_flight: int) -> pd.DataFrame:
    """Send the chat ``bodies`` with ``in_flight`` workers taking them in order (a closed
    loop, as :func:`labkit.bench.send_all` does), streaming; one row per request with the
    client's times (``ttft_s`` to the first streamed content)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from .client import RequestSpec, stream_one
    from .runner import finish_rows
    url = base_url.rstrip("/") + "/v1/chat/completions"
    rows: list = [None] * len(bodies)
    nxt = iter(range(len(bodies)))
    lock = threading.Lock()
    with httpx.Client(timeout=600, limits=httpx.Limits(max_connections=in_flight + 2)) as client:
        t0 = time.perf_counter()

        def worker():
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                spec = RequestSpec(i, f"cal-{i}", bodies[i]["messages"])
                rows[i] = stream_one(client, url, bodies[i], spec, t0)

        with ThreadPoolExecutor(max_workers=in_flight) as pool:
            for f in [pool.submit(worker) for _ in range(in_flight)]:
                f.result()
        wall = time.perf_counter() - t0
    df = finish_rows(rows)
    df["ttft_s"] = df["first_chunk_s"] - df["send_s"]     # random text: the first chunk counts
    df["wall_s"] = wall
    return df


#: Each coefficient's factor from seconds to the unit the table shows it in (ms, µs, ns).
UNIT_SCALE = {"a": 1e3, "b": 1e3, "c": 1e3, "d": 1e6, "e": 1e9}


@dataclass
class Calibration:
    """A finished calibration run: what was sent, what the engine did, the fitted cost."""

    plan: Plan
    rows: pd.DataFrame          # one row per request, with ``in_flight``
    steps: pd.DataFrame         # the step trace, with ``in_flight`` and ``prefill_attn``
    slots: pd.DataFrame         # the slot trace
    fit: object                 # labkit.sim.Fit on the step periods, with a bootstrap
    rtt_s: float                # per-request time outside the engine (1-in-flight phase)
    load1: list = field(default_factory=list)      # 1-minute load average before each phase
    foreign: list = field(default_factory=list)    # cores others used during each phase
    seconds: float = 0.0        # wall time of the whole run, server start included

    @property
    def cost(self):
        return self.fit.cost

    @property
    def periods(self) -> pd.DataFrame:
        """The steps the fit was made on (``sim.plots.fit_check(cal.fit, cal.periods)``)."""
        return periods(self.steps)

    def table(self) -> pd.DataFrame:
        """The coefficients with their bootstrap uncertainty, in readable units."""
        from ..lang.i18n import language
        from ..sim.cost import PER_ZH, TERMS_ZH
        u = self.fit.uncertainty()
        scale = UNIT_SCALE
        unit = {"a": "ms/step", "b": "ms/prompt token", "c": "ms/decoding seq",
                "d": "us/attended cell", "e": "ns/prefill pair"}
        if language() == "zh-TW":            # what people read; the numbers are the same
            prefix = {"a": "ms", "b": "ms", "c": "ms", "d": "µs", "e": "ns"}
            unit = {k: f"{prefix[k]}/{PER_ZH[k]}" for k in unit}
            u = u.assign(multiplies=[TERMS_ZH[k] for k in u.index])
        return pd.DataFrame({"value": [u.loc[k, "value"] * s for k, s in scale.items()],
                             "se": [u.loc[k, "se"] * s for k, s in scale.items()],
                             "lo95": [u.loc[k, "lo95"] * s for k, s in scale.items()],
                             "hi95": [u.loc[k, "hi95"] * s for k, s in scale.items()],
                             "unit": [unit[k] for k in scale],
                             "multiplies": [u.loc[k, "multiplies"] for k in scale]},
                            index=pd.Index(list(scale), name="coef"))

    def summary(self) -> dict:
        return {"requests": len(self.rows), "steps": len(self.steps), "r2": self.fit.r2,
                "rtt_ms": self.rtt_s * 1e3, "seconds": self.seconds,
                "load1_max": max(self.load1) if self.load1 else float("nan"),
                "foreign_cores_max": max(self.foreign) if self.foreign else float("nan")}


def periods(steps: pd.DataFrame, slots: pd.DataFrame | None = None) -> pd.DataFrame:
    """The step trace as the fit sees it: ``dur_s`` is each step's *period*
    (:func:`labkit.sim.calibrate.step_periods`: ``llama_decode`` plus the host work up to
    the next step), with the prefill attention from the slot trace; phase by phase."""
    from ..sim.calibrate import step_periods
    from ..sim.features import with_prefill_attention
    parts = []
    for _, g in (steps.groupby("in_flight") if "in_flight" in steps.columns else [(0, steps)]):
        parts.append(step_periods(with_prefill_attention(g, slots)))
    return pd.concat(parts, ignore_index=True)


def fit_traces(steps: pd.DataFrame, slots: pd.DataFrame | None = None, *, bootstrap: int = 200,
               terms=None, name: str = "calibrated", seed: int = 0, balance: str | None = None):
    """Fit the step cost on the step periods of a trace (:func:`periods`).
    ``balance="in_flight"`` makes each in-flight phase count the same in the fit, whatever
    its number of steps (:func:`labkit.sim.fit`); the default counts every step the same."""
    from ..sim.fit import fit
    return fit(periods(steps, slots), name=name, terms=terms, bootstrap=bootstrap, seed=seed,
               balance=balance)


def run(quick: bool = False, *, the_plan: Plan | None = None, n_threads: int = 2,
        n_batch: int = 2048, n_ubatch: int = 512, bootstrap: int = 200, quiet=None,
        log_dir: str | None = None, progress: bool = False) -> Calibration:
    """Run the calibration workload on a fresh labkit server (the embedded model, CPU) and
    fit the step cost. ``quiet``: a :class:`labkit.bench.harness.QuietMachine` to wait for
    before each phase, and to repeat a phase during which other processes used more than
    its ``max_foreign`` cores (None: start at once, keep everything). The load average
    before each phase and the CPU other processes used during it are recorded either way."""
    from ..server.launch import ServerConfig, launch
    from ..sim.calibrate import turnaround
    from .client import Sampling
    from .harness import ForeignCPU, fetch_trace, load1, trace_mark
    t_start = time.perf_counter()
    p = the_plan or plan(quick)
    n_slots = max(p.in_flight)
    longest = max(pr + out for pr, out in p.requests)
    per_slot = 256 * -(-(longest + 64) // 256)
    cfg = ServerConfig(kind="labkit", n_ctx=per_slot * n_slots, n_slots=n_slots,
                       kv_unified=False, n_batch=n_batch, n_ubatch=n_ubatch,
                       n_threads=n_threads, log_dir=log_dir)
    rows, steps, slots, loads, foreign = [], [], [], [], []
    with launch(cfg) as srv:
        messages = prompt_messages(srv.base_url, [pr for pr, _ in p.requests])
        bodies = [Sampling(max_tokens=out, extra={"ignore_eos": True}).body(m)
                  for m, (_, out) in zip(messages, p.requests)]
        send_closed(srv.base_url, bodies[:1], 1)                 # warm-up, not kept
        for k, n in enumerate(p.in_flight):
            order = bodies[k:] + bodies[:k]                      # a new mix at every level
            tries = 0
            while True:
                if quiet is not None:
                    quiet.wait()
                la = load1()
                mark = trace_mark(srv.base_url)
                monitor = ForeignCPU()
                with monitor:
                    r = send_closed(srv.base_url, order, n)
                if (quiet is None or not quiet.disturbed(monitor.cores)
                        or tries >= quiet.max_retries):
                    break
                tries += 1
                if progress:
                    print(pick(f"  {n} in flight: others used {monitor.cores:.2f} cores, again",
                               f"  在途 {n} 個：其他行程用了 {monitor.cores:.2f} 個核心，重來一次"),
                          flush=True)
            loads.append(la)
            foreign.append(monitor.cores)
            st = fetch_trace(srv.base_url, mark)
            sl = fetch_trace(srv.base_url, mark, kind="slots")
            rows.append(r.assign(in_flight=n))
            steps.append(st.assign(in_flight=n))
            slots.append(sl.assign(in_flight=n))
            if progress:
                print(pick(f"  {n} in flight: {len(r)} requests, {len(st)} steps, "
                           f"load {loads[-1]:.2f}, others {foreign[-1]:.2f} cores",
                           f"  在途 {n} 個：{len(r)} 個請求，{len(st)} 個步驟，"
                           f"負載 {loads[-1]:.2f}，其他行程 {foreign[-1]:.2f} 個核心"), flush=True)
    rows_df = pd.concat(rows, ignore_index=True)
    slots_df = pd.concat(slots, ignore_index=True)
    steps_df = pd.concat(steps, ignore_index=True)
    errors = rows_df["error"].notna().sum()
    if errors:
        raise RuntimeError(f"{errors} calibration request(s) failed: "
                           f"{rows_df['error'].dropna().iloc[0]}")
    from ..sim.features import with_prefill_attention
    steps_df = with_prefill_attention(steps_df, slots_df)
    f = fit_traces(steps_df, bootstrap=bootstrap)
    one = steps_df[steps_df["in_flight"] == min(p.in_flight)]
    rtt = turnaround(one) if min(p.in_flight) == 1 else 0.0
    return Calibration(p, rows_df, steps_df, slots_df, f, rtt, loads, foreign,
                       time.perf_counter() - t_start)
