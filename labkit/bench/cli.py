"""``labkit bench``: measure 1/2/4 slots x split/unified KV on this machine and fill the worksheet.

Examples::

    labkit bench                                     # embedded model, short set, 3 rounds
    labkit bench --rounds 1 --workload short long    # one round, both sets
    labkit bench --server xllamacpp                  # the same runs on llama.cpp's llama-server
    labkit bench --server-cmd ./build/bin/llama-server -ngl 99
    labkit bench --base-url http://127.0.0.1:8080    # a server you started yourself, as it is
    labkit bench --rate 2 --burst 3                  # open-loop Poisson arrivals instead
    labkit bench --model synthetic:llama-3.2-1b --slots 1 2 4 8 16   # a 1B shape, timing only

With no options the pool is ``-c 4096`` (the seed tutorial uses 16384): the short set's
prompts are under 200 tokens, so 4096 cells leave every slot room even at 4 split slots
(1024 each), and the smaller pool keeps the default run short on a 2-core CPU. The server
gets the cores available minus one as threads (``--threads`` to change it): the client and
the HTTP front need the other. When llama.cpp can offload and sees a GPU device (CUDA, Metal,
HIP, Vulkan, SYCL) the model fits in, every layer goes there (``-ngl all``; ``-ngl 0`` measures
the CPU); the first line says where, and the worksheet's ``device`` and ``n_gpu_layers``
columns and environment.json record it.
``LABKIT_QUICK=1`` (set by the test suite) shrinks the run further: 1 round, 2 documents,
1 and 2 split slots.

Ctrl-C stops the server, saves every run that had finished (the worksheet of those runs),
says where, and exits with status 130.

The worksheet is printed before anything is saved, and every file is written whole or not at
all (worksheet.csv last); when the disk is full, one line says which files were not saved and
where, and bench exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..settings import get as setting

# The help's closing part in Chinese: the module's text above, after its first paragraph.
EPILOG_ZH = """範例：

    labkit bench                                     # 內建模型、short 工作負載、3 輪
    labkit bench --rounds 1 --workload short long    # 一輪，兩組工作負載
    labkit bench --server xllamacpp                  # 同樣的量測，跑在 llama.cpp 的 llama-server 上
    labkit bench --server-cmd ./build/bin/llama-server -ngl 99
    labkit bench --base-url http://127.0.0.1:8080    # 你自己啟動的伺服器，照它原本的設定
    labkit bench --rate 2 --burst 3                  # 改用開放迴路的卜瓦松到達
    labkit bench --model synthetic:llama-3.2-1b --slots 1 2 4 8 16   # 1B 的形狀，只量時間

不加任何選項時，KV 池是 ``-c 4096``（種子教學用 16384）：short 工作負載的提示都不到 200 個
token，所以就算分成 4 個分割 KV 的槽位（每個 1024 格），4096 格也夠每個槽位用；池小一點，
預設的量測在 2 核心的 CPU 上也跑得快。伺服器的執行緒數是可用核心數減一（用 ``--threads``
調整）：剩下的那個核心留給用戶端和 HTTP 前端。
``LABKIT_QUICK=1``（測試套件會設定）會再縮小：1 輪、2 份文件、1 與 2 個分割 KV 的槽位。

按 Ctrl-C 會停止伺服器，把已完成的每一輪存起來（工作表只含這幾輪），告訴你存在哪裡，
然後以狀態碼 130 結束。

工作表會先印出來再存檔，每個檔案要嘛完整寫入、要嘛完全不寫（worksheet.csv 最後寫）；
磁碟滿了的時候，會用一行說明哪些檔案沒存到、在哪裡，然後以狀態碼 2 結束。
"""

DEFAULT_N_CTX = 4096
DEFAULT_SLOTS = (1, 2, 4)
QUICK_DOCS = 2
EXIT_INTERRUPTED = 130   # the shell's status for a command stopped by Ctrl-C (128 + SIGINT)
EXIT_NOT_SAVED = 2       # measured, but the results could not all be written (as for a folder
                         # that cannot be made: 2 is bench's "could not do its work", 1 "errors")


def default_configs(kind: str = "labkit", n_ctx: int = DEFAULT_N_CTX, slots=DEFAULT_SLOTS,
                    kv_modes=("split", "unified"), model: str | None = None,
                    n_gpu_layers=0, binary: str | None = None, extra_args=(), **kw) -> list:
    """The default grid: ``slots`` x ``kv_modes`` on one pool of ``n_ctx`` cells."""
    from ..server.launch import ServerConfig
    return [ServerConfig(kind=kind, model=model, n_ctx=n_ctx, n_slots=n,
                         kv_unified=(m == "unified"), n_gpu_layers=n_gpu_layers,
                         binary=binary, extra_args=tuple(extra_args), **kw)
            for m in kv_modes for n in slots]


def _timing_only(workloads) -> list[str]:
    """The named workloads whose files mark them ``"timing_only"``: their answers are graded,
    but the grade says more about the prompt and the model than about batching."""
    from .workload import load_workload
    out = []
    for w in workloads:
        if isinstance(w, str):
            try:
                w = load_workload(w)
            except (FileNotFoundError, ValueError, KeyError):
                continue
        if getattr(w, "meta", {}).get("timing_only"):
            out.append(w.name)
    return out


def _prompt_path():
    from .workload import data_dir
    return data_dir() / "prompt.json"


def build_parser() -> argparse.ArgumentParser:
    from ..lang.i18n import pick as _, t
    p = argparse.ArgumentParser(
        prog="labkit bench",
        description=_("Measure a server on the 12-document workload: 1/2/4 slots x split/unified "
                      "KV, a fresh server every round; print the worksheet and write "
                      "results/<timestamp>/.",
                      "用 12 份文件的工作負載量測伺服器：1/2/4 個槽位 × 分割／統一 KV，每一輪都"
                      "重新啟動伺服器；印出工作表並寫入 results/<timestamp>/。"),
        formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False,
        epilog=_(__doc__.split("\n\n", 1)[1], EPILOG_ZH))
    p.add_argument("-h", "--help", action="help", help=t("cli.help"))
    p.add_argument("--workload", "-w", nargs="+", default=["short"],
                   help=_("workload names (short, long, overlong, shared_prefix, decode_heavy; "
                          "short-zh and long-zh: the same task in Traditional Chinese) "
                          "or JSON paths",
                          "工作負載名稱（short、long、overlong、shared_prefix、decode_heavy；"
                          "short-zh 與 long-zh：同樣的任務，以繁體中文撰寫）或 JSON 路徑"))
    p.add_argument("--rounds", "-r", type=int, default=None,
                   help=_("rounds (default 3; quick: 1)", "輪數（預設 3；快速模式：1）"))
    p.add_argument("--slots", type=int, nargs="+", default=None,
                   help=_("slot counts (default 1 2 4)", "槽位數（預設 1 2 4）"))
    p.add_argument("--kv", nargs="+", choices=["split", "unified"], default=None,
                   help=_("KV modes (default: split unified)", "KV 模式（預設：split unified）"))
    p.add_argument("-c", "--ctx-size", dest="n_ctx", type=int, default=DEFAULT_N_CTX,
                   help=_(f"the KV pool n_ctx (default {DEFAULT_N_CTX})",
                          f"KV 池的 n_ctx（預設 {DEFAULT_N_CTX}）"))
    p.add_argument("--in-flight", type=int, nargs="+", default=None,
                   help=_("client concurrency (default: equal to the slot count)",
                          "用戶端並行數（預設：等於槽位數）"))
    p.add_argument("--rate", type=float, default=None,
                   help=_("open loop: Poisson arrivals at this many requests/s",
                          "開放迴路：每秒這麼多個請求的卜瓦松到達"))
    p.add_argument("--burst", type=int, default=1,
                   help=_("open loop: requests per arrival", "開放迴路：每次到達的請求數"))
    p.add_argument("--cache-prompt", action="store_true",
                   help=_("let the server reuse cached prompt prefixes (off by default)",
                          "讓伺服器重用快取的提示前綴（預設關閉）"))
    p.add_argument("--json-schema", action="store_true",
                   help=_("constrain answers with response_format json_schema (llama.cpp's grammar "
                          "sampler); off by default: the prompt alone is measured",
                          "用 response_format json_schema（llama.cpp 的文法取樣器）限制回答；"
                          "預設關閉：只量測提示本身"))
    p.add_argument("--max-docs", type=int, default=None,
                   help=_("use the first N documents only", "只用前 N 份文件"))
    p.add_argument("--ttft-threshold", type=float, default=10.0,
                   help=_("your TTFT gate in seconds (default 10)",
                          "你的首字等待（TTFT）門檻，單位秒（預設 10）"))
    p.add_argument("--model", "-m", default=None,
                   help=_("GGUF file, or synthetic:NAME[:QUANT] for a timing-only run on a model "
                          "shape with random weights (default: the embedded model)",
                          "GGUF 檔，或 synthetic:NAME[:QUANT]：用隨機權重的模型形狀只量時間"
                          "（預設：內建的模型）"))
    ngl = setting("n_gpu_layers")
    p.add_argument(*ngl.flags, dest="n_gpu_layers", type=ngl.parse_cli, default=None,
                   help=_(f"{ngl.help} ({ngl.allowed}; default {ngl.bench_default})",
                          f"卸載到 GPU 的層數（大於等於 0 的整數，或用 'all' / 'auto' / -1 "
                          "表示每一層；預設：llama.cpp 看得到 GPU 裝置時為 all，否則為 0）"))
    p.add_argument("--threads", "-t", type=int, default=None,
                   help=_("CPU threads for the server (default: the cores available minus one)",
                          "伺服器的 CPU 執行緒數（預設：可用核心數減一）"))
    srv = p.add_mutually_exclusive_group()
    srv.add_argument("--server", choices=["labkit", "xllamacpp", "llama_cpp.server"],
                     default="labkit", help=_("which server the launcher starts (default labkit)",
                                              "要啟動哪一種伺服器（預設 labkit）"))
    srv.add_argument("--server-cmd", default=None,
                     help=_("a llama-server binary to start instead (llama-server's flags)",
                            "改啟動這個 llama-server 執行檔（參數同 llama-server）"))
    srv.add_argument("--base-url", nargs="+", default=None,
                     help=_("measure servers already running at these URLs (no restarts)",
                            "量測已在這些 URL 執行的伺服器（不重新啟動）"))
    p.add_argument("--out", default="results",
                   help=_("parent folder of the results (default results)",
                          "結果的上層資料夾（預設 results）"))
    p.add_argument("--no-progress", action="store_true",
                   help=_("no progress bar", "不顯示進度列"))
    return p


def main(argv: list[str] | None = None) -> int:
    from ..models.embedded import ModelNotFound
    from ..models.gguf import GGUFError
    from ..models.synthetic import SyntheticError
    args = build_parser().parse_args(argv)
    try:
        return _run(args, argv)
    except (ModelNotFound, GGUFError, SyntheticError) as exc:    # found before any server starts
        from ..lang.i18n import pick
        print(pick(f"labkit bench: the model cannot be used: {exc}",
                   f"labkit bench：無法使用這個模型：{exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:   # before any run started, or while saving
        from ..lang.i18n import t
        print("\n" + t("bench.interrupted"), file=sys.stderr)
        return EXIT_INTERRUPTED


def where_it_runs(n_gpu_layers=None, model: str | None = None) -> dict:
    """Where bench puts the model's layers: ``n_gpu_layers`` as given, else every layer (-1)
    when llama.cpp can offload and sees a GPU device the model fits in (doctor's compute
    path), else 0. Returns ``n_gpu_layers``, ``asked`` (given on the command line), ``gpu``
    (doctor's dict of the device, or None) and ``why`` (the reason for the CPU, or None)."""
    from ..tools.doctor import choose_path, collect
    report = collect(model=model, generate=False)
    path = choose_path(report)[0]
    gpu = report["gpus"][0] if report["gpus"] else None
    if n_gpu_layers is None:
        n_gpu_layers = -1 if path == "gpu" else 0
        return {"n_gpu_layers": n_gpu_layers, "asked": False,
                "gpu": gpu if path == "gpu" else None, "why": report["gpu_note"]}
    return {"n_gpu_layers": n_gpu_layers, "asked": True,
            "gpu": gpu if n_gpu_layers != 0 else None, "why": report["gpu_note"]}


def device_line(where: dict) -> str:
    """bench's first line: the device the layers go to, or why the CPU."""
    from ..lang.i18n import t
    g, ngl = where["gpu"], where["n_gpu_layers"]
    if g is None:
        if where["asked"] and ngl == 0:
            return t("bench.on_cpu_asked", ngl=ngl)
        return t("bench.on_cpu", why=where["why"] or "")
    device = f"{g['device']} ({g['name']})"
    layers = t("bench.every_layer") if ngl < 0 else t("bench.layers", n=ngl)
    line = t("bench.on_gpu_asked" if where["asked"] else "bench.on_gpu", layers=layers,
             device=device, backend=g["backend"])
    return line + (" " + t("bench.software_device") if g.get("software") else "")


def _run(args: argparse.Namespace, argv: list[str] | None) -> int:
    from ..machine import runenv
    from ..lang.i18n import t
    from .runner import BenchInterrupted, measure
    from .worksheet import to_markdown
    quick = runenv.quick()
    rounds = args.rounds or (1 if quick else 3)
    slots = args.slots or ((1, 2) if quick else DEFAULT_SLOTS)
    kv_modes = args.kv or (("split",) if quick else ("split", "unified"))
    max_docs = args.max_docs or (QUICK_DOCS if quick else None)
    threads = args.threads or runenv.server_threads_beside_client()
    where = None
    if args.base_url:
        configs = list(args.base_url)
    else:
        from ..models.files import describe
        # The model's header first: a file no server could load (missing, not GGUF, cut
        # short, an impossible shape) is main's one line, before any other line or server.
        describe(args.model, with_hash=False)
        where = where_it_runs(args.n_gpu_layers, args.model)
        ngl = where["n_gpu_layers"]
        print(device_line(where), file=sys.stderr)
        kind = "llama-server" if args.server_cmd else args.server
        if kind == "llama_cpp.server":
            # One request at a time: the serial baseline has no slots or KV modes to vary.
            configs = default_configs(kind, args.n_ctx, (1,), ("split",), args.model, ngl,
                                      n_threads=threads)
        else:
            configs = default_configs(kind, args.n_ctx, slots, kv_modes, args.model, ngl,
                                      binary=args.server_cmd, n_threads=threads)
    workloads = list(args.workload)
    from .timing import plan, synthetic_model
    synthetic = None if args.base_url else synthetic_model(args.model)
    if synthetic:   # random weights: fixed-length answers, timing only (labkit.bench.timing)
        workloads, max_docs = plan(workloads, args.model, slots, max_docs), None
    from .report import new_run_folder
    try:
        out = new_run_folder(Path(args.out))
    except OSError as exc:     # read-only, full, or not a folder: nothing has been measured yet
        from ..lang.i18n import pick
        print(pick(f"labkit bench: cannot create a results folder in {args.out} "
                   f"({exc.strerror or exc}); choose another with --out",
                   f"labkit bench：無法在 {args.out} 建立結果資料夾（{exc.strerror or exc}）；"
                   f"請用 --out 指定別的資料夾"), file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    print(t("bench.start", configs=len(configs), rounds=rounds, workloads=", ".join(args.workload),
            quick=t("bench.quick") if quick else "", logs=f"{out}/logs"), file=sys.stderr)
    if synthetic:
        print(t("bench.synthetic", model=synthetic, requests=len(workloads[0]),
                tokens=workloads[0].meta["max_tokens"]), file=sys.stderr)
    for name in _timing_only(workloads):
        print(t("bench.timing_only", name=name), file=sys.stderr)
    sampling = None
    if args.json_schema and not synthetic:
        from .client import Sampling
        from .prompt import Prompt, json_schema_format
        sampling = Sampling(max_tokens=Prompt.load(_prompt_path()).max_tokens,
                            response_format=json_schema_format())
    if args.server == "llama_cpp.server" and not (args.server_cmd or args.base_url):
        from .client import Sampling
        from .prompt import Prompt
        # llama_cpp.server streams no usage: count its content chunks instead (said per row).
        sampling = Sampling(max_tokens=Prompt.load(_prompt_path()).max_tokens,
                            require_usage=False)
    interrupted = False
    try:
        result = measure(configs, workloads, rounds, in_flight=args.in_flight, rate=args.rate,
                         sampling=sampling,
                         burst=args.burst, cache_prompt=args.cache_prompt,
                         ttft_threshold_s=args.ttft_threshold, progress=not args.no_progress,
                         log_dir=str(out / "logs"), max_docs=max_docs)
    except BenchInterrupted as stop:
        result, interrupted = stop.result, True
        if not result.runs:
            print("\n" + t("bench.nothing_saved"), file=sys.stderr)
            return EXIT_INTERRUPTED
    elapsed = time.perf_counter() - t0
    result.env["bench"] = {"argv": sys.argv[1:] if argv is None else argv, "quick": quick,
                           "elapsed_s": elapsed, "interrupted": interrupted}
    if where is not None:
        g = where["gpu"] or {}
        result.env["bench"].update(
            n_gpu_layers=where["n_gpu_layers"], n_gpu_layers_asked=where["asked"],
            device=f"{g['device']} ({g['name']})" if g else "CPU",
            backend=g.get("backend", "CPU"), software_device=bool(g.get("software")))
    ws = result.worksheet()
    cols = ["server", "device", "kv_mode", "pool_n_ctx", "slots", "n_ctx_slot", "in_flight",
            "workload",
            "wall_s", "output_tok_s", "ttft_p50_s", "ttft_p90_s", "ttft_max_s",
            "completion_p50_s", "completion_max_s", "errors", "correct", "n_requests",
            "sampled_peak_mib", "verdict"]
    from ..lang.i18n import show
    print(to_markdown(show(ws[[c for c in cols if c in ws]])))
    mem = ws["memory"].iloc[0] if len(ws) else ""
    sha = ws["model_sha256"].iloc[0] if len(ws) else ""
    print(t("bench.summary", sha=sha, memory=mem, rounds=rounds, gate=f"{args.ttft_threshold:g}"))
    from .reading import reading_markdown
    print(reading_markdown(ws, result.rows), end="")
    sys.stdout.flush()          # the table is out before the disk is asked for anything
    from .report import NotSaved
    try:
        result.save(out)        # each file whole or not at all, worksheet.csv last
    except NotSaved as exc:     # a full disk, a quota: say what is missing, where
        from ..lang.i18n import pick
        print(pick(f"labkit bench: {exc}; nothing half-written was left, and the worksheet "
                   "is the table printed above",
                   f"labkit bench：{exc}；沒有留下寫到一半的檔案，工作表就是上面印出的表格"),
              file=sys.stderr)
        return EXIT_NOT_SAVED
    print(t("bench.wrote", out=out, seconds=f"{elapsed:.0f}"))
    if interrupted:
        print(t("bench.saved_partial", runs=len(result.runs), out=out), file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0 if len(ws) and (ws["errors"] == 0).all() else 1


if __name__ == "__main__":
    sys.exit(main())
