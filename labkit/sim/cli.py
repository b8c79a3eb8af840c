"""``labkit sim`` / ``python -m labkit.sim``: compare batching modes and policies on one workload.

Examples::

    python -m labkit.sim                                  # batching modes, default workload
    python -m labkit.sim --compare policy --users 4 --rate 6
    python -m labkit.sim --compare kv --kv unified:16384 --slots 8
    python -m labkit.sim --arrivals closed --clients 16 --compare batching
    python -m labkit.sim --cost h100/8b-q4 --compare all --csv out.csv
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from . import arrivals, cost as cost_mod, kv as kv_mod, requests
from .engine import BATCHING
from .experiments import compare
from .policies import POLICIES


def _lengths(text: str):
    """``256`` (fixed), ``64:1024`` (uniform), ``exp:256`` (exponential mean), ``lognormal:200``."""
    if ":" not in text:
        return int(text)
    kind, _, rest = text.partition(":")
    if kind == "exp":
        return requests.Exponential(float(rest))
    if kind == "lognormal":
        return requests.LogNormal(float(rest))
    return requests.Uniform(int(kind), int(rest))


def _kv(text: str):
    """``unlimited``, ``split:16384`` (n_ctx shared by the slots), ``unified:16384``,
    ``unified-reserve:16384``, ``unified-preempt:16384``, ``paged:1024x16`` (blocks x size)."""
    kind, _, rest = text.partition(":")
    if kind == "unlimited":
        return None
    if kind == "split":
        return ("split", int(rest))
    if kind.startswith("unified"):
        opts = {"unified": {}, "unified-reserve": {"admission": "reserve"},
                "unified-preempt": {"on_full": "preempt"}}[kind]
        return kv_mod.UnifiedKV(int(rest), **opts)
    if kind == "paged":
        n, _, b = rest.partition("x")
        return kv_mod.PagedKV(int(n), int(b or 16))
    raise argparse.ArgumentTypeError(f"unknown KV spec {text!r}")


def _resolve_kv(spec, slots):
    if isinstance(spec, tuple):
        return kv_mod.SplitKV.from_n_ctx(spec[1], slots)
    return spec


def build_parser() -> argparse.ArgumentParser:
    from ..lang.i18n import pick as _, t
    examples = __doc__.split("Examples::\n", 1)[1]          # the command lines, for both
    examples_zh = examples.replace("# batching modes, default workload", "# 各種批次方式，預設的工作負載")
    p = argparse.ArgumentParser(prog="labkit sim", add_help=False,
                                description=_(__doc__.splitlines()[0],
                                              "``labkit sim`` / ``python -m labkit.sim``：在同一個"
                                              "工作負載上比較批次方式與排程策略。"),
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=_(f"\nExamples::\n{examples}", f"\n範例：\n{examples_zh}"))
    p.add_argument("-h", "--help", action="help", help=t("cli.help"))
    w = p.add_argument_group(_("workload", "工作負載"))
    w.add_argument("--requests", type=int, default=400,
                   help=_("number of requests (default 400)", "請求數（預設 400）"))
    w.add_argument("--arrivals", choices=["poisson", "gamma", "burst", "closed"], default="poisson")
    w.add_argument("--rate", type=float, default=1.0,
                   help=_("requests/s for poisson and gamma (default 1)",
                          "poisson 與 gamma 的每秒請求數（預設 1）"))
    w.add_argument("--cv", type=float, default=3.0,
                   help=_("burstiness of gamma arrivals (default 3)", "gamma 到達的爆發程度（預設 3）"))
    w.add_argument("--clients", type=int, default=8,
                   help=_("closed loop: clients in flight (default 8)",
                          "封閉迴路：在途的用戶端數（預設 8）"))
    w.add_argument("--think", type=float, default=0.0,
                   help=_("closed loop: think time in s", "封閉迴路：思考時間，單位秒"))
    w.add_argument("--prompt", type=_lengths, default=_lengths("64:1024"),
                   help=_("prompt tokens: N, LO:HI, exp:MEAN or lognormal:MEDIAN (default 64:1024)",
                          "提示 token 數：N、LO:HI、exp:MEAN 或 lognormal:MEDIAN（預設 64:1024）"))
    w.add_argument("--output", type=_lengths, default=_lengths("exp:256"),
                   help=_("output tokens, same forms (default exp:256)",
                          "輸出 token 數，寫法同上（預設 exp:256）"))
    w.add_argument("--users", type=int, default=1,
                   help=_("users the requests are spread over", "請求分給幾位使用者"))
    w.add_argument("--priorities", type=int, default=None,
                   help=_("draw priorities 0..K-1", "抽出 0..K-1 的優先級"))
    w.add_argument("--seed", type=int, default=0)
    s = p.add_argument_group(_("server", "伺服器"))
    s.add_argument("--slots", type=int, default=4)
    s.add_argument("--batching", choices=BATCHING, default="continuous")
    s.add_argument("--policy", choices=list(POLICIES), default="fifo")
    s.add_argument("--kv", type=_kv, default=None,
                   help="unlimited | split:N_CTX | unified[-reserve|-preempt]:N_CELLS | paged:BLOCKSxSIZE")
    s.add_argument("--n-batch", type=int, default=2048)
    s.add_argument("--kv-cells", type=int, default=None,
                   help=_("pool size for --compare kv (default 1536 x slots)",
                          "--compare kv 用的池大小（預設 1536 × 槽位數）"))
    s.add_argument("--cost", default="rtx4090/8b-q4",
                   help=_(f"HARDWARE/MODEL preset; hardware: {', '.join(cost_mod.HARDWARE)}; "
                          f"models: {', '.join(cost_mod.MODELS)}",
                          f"HARDWARE/MODEL 預設組合；硬體：{', '.join(cost_mod.HARDWARE)}；"
                          f"模型：{', '.join(cost_mod.MODELS)}"))
    o = p.add_argument_group(_("output", "輸出"))
    o.add_argument("--compare", choices=["batching", "policy", "kv", "all", "none"], default="batching")
    o.add_argument("--ttft-slo", type=float, default=2.0,
                   help=_("goodput TTFT limit in s (default 2)",
                          "有效吞吐的首字等待上限，單位秒（預設 2）"))
    o.add_argument("--tpot-slo", type=float, default=0.2,
                   help=_("goodput TPOT limit in s (default 0.2)",
                          "有效吞吐的每 token 時間上限，單位秒（預設 0.2）"))
    o.add_argument("--csv", help=_("also write the table to this CSV file", "也把表格寫進這個 CSV 檔"))
    return p


def _workload(a):
    common = dict(prompt=a.prompt, output=a.output, seed=a.seed)
    if a.arrivals == "closed":
        return arrivals.closed_loop(a.clients, a.requests, think_time=a.think,
                                    priority=a.priorities, **common)
    common.update(users=a.users, priority=a.priorities)
    if a.arrivals == "poisson":
        return arrivals.poisson(a.requests, a.rate, **common)
    if a.arrivals == "gamma":
        return arrivals.gamma(a.requests, a.rate, cv=a.cv, **common)
    return arrivals.burst(a.requests, **common)


def _variants(a) -> dict:
    base = {"batching": a.batching, "policy": a.policy, "kv": _resolve_kv(a.kv, a.slots)}
    v = {}
    if a.compare in ("batching", "all"):
        for b in BATCHING:
            v[f"batching={b}"] = {**base, "batching": b}
    if a.compare in ("policy", "all"):
        for name in POLICIES:
            v[f"policy={name}"] = {**base, "policy": name}
    if a.compare in ("kv", "all"):
        cells = a.kv_cells or 1536 * a.slots
        v[f"kv=split:{cells}"] = {**base, "kv": kv_mod.SplitKV.from_n_ctx(cells, a.slots)}
        v[f"kv=unified:{cells}"] = {**base, "kv": kv_mod.UnifiedKV(cells)}
        v[f"kv=unified-preempt:{cells}"] = {**base, "kv": kv_mod.UnifiedKV(cells, on_full="preempt")}
        v[f"kv=unified-reserve:{cells}"] = {**base, "kv": kv_mod.UnifiedKV(cells, admission="reserve")}
        v[f"kv=paged:{cells // 16}x16"] = {**base, "kv": kv_mod.PagedKV(cells // 16, 16)}
    if not v:
        v["run"] = base
    return v


def main(argv=None) -> int:
    from ..lang.i18n import language, show as shown, t
    a = build_parser().parse_args(argv)
    try:
        cost = cost_mod.preset(a.cost)
    except ValueError as e:
        print(t("sim.error", error=e), file=sys.stderr)
        return 2
    wl = _workload(a)
    table = compare(wl, _variants(a), ttft_slo=a.ttft_slo, tpot_slo=a.tpot_slo,
                    slots=a.slots, cost=cost, n_batch=a.n_batch)
    if isinstance(wl, list):
        ol = arrivals.offered_load(wl)
        print(t("sim.workload", n=ol["n"], rate=f"{ol['rate']:.2f}",
                prompt=f"{ol['mean_prompt']:.0f}", output=f"{ol['mean_output']:.0f}"))
    else:
        print(t("sim.workload_named", workload=wl))
    print(t("sim.cost", cost=cost))
    show = table[["label", "ok", "length", "refused", "failed", "preemptions", "throughput_tok_s",
                  "ttft_p50", "ttft_p99", "tpot_p50", "e2e_mean", "queue_wait_max", "starved",
                  "goodput_req_s"]]
    if language() == "zh-TW":
        show = shown(show)
    else:
        show = show.rename(columns={
            "throughput_tok_s": "tok/s", "ttft_p50": "TTFT p50", "ttft_p99": "TTFT p99",
            "tpot_p50": "TPOT p50", "e2e_mean": "e2e mean", "queue_wait_max": "max wait",
            "goodput_req_s": "goodput/s", "preemptions": "preempt"})
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.float_format", "{:.3f}".format,
                           "display.unicode.east_asian_width", language() == "zh-TW"):
        print(show.to_string(index=False))
    print(t("sim.goodput", ttft=f"{a.ttft_slo:g}", tpot=f"{a.tpot_slo:g}"))
    if a.csv:
        from ..machine.atomic import write_csv
        try:
            write_csv(a.csv, table, index=False)    # whole or not at all
        except OSError as e:                        # names the file; the old one stays
            print(t("sim.error", error=e), file=sys.stderr)
            return 2
        print(t("sim.wrote", path=a.csv))
    return 0
