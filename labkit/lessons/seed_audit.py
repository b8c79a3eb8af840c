"""The seed audit: every claim, procedure, figure and FAQ item of the three seed articles in
``shared/seeds/`` (000: the llama.cpp 1/2/4-slot tutorial; 001: batching and scheduling; 002:
capacity planning), with how the workbook shows it and the cells that show it.

One source of truth: :data:`ROWS`. ``python -m labkit.lessons.seed_audit`` renders them into
notebooks/README.md between the two markers (``--check`` says whether the README is current);
``tests/test_seed_audit.py`` opens every named cell and requires the row's calls in its code and
the claim's key words in its text: English in the English notebook, Traditional Chinese in the
zh-TW twin of each prose cell. A row therefore cannot outlive its cell.

Statuses:

- ``live on llama-server``: a named cell runs llama.cpp's own llama-server (and labkit's beside it);
- ``live on labkit``: a named cell runs labkit's engine or server, on llama.cpp through
  llama-cpp-python, on this machine;
- ``simulated``: labkit's simulator (``labkit.sim``);
- ``computed``: arithmetic, a tokenizer or a GGUF header on this machine's files;
- ``prose only``: said, with its source, not run;
- ``partial``: part of the item is shown; ``note`` says what is missing;
- ``missing``: not shown; ``note`` says why.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

STATUSES = ("live on llama-server", "live on labkit", "simulated", "computed", "prose only",
            "partial", "missing")
SEEDS = {"000": "000_7ca7d4cd839f7038.txt", "001": "001_027e2139b87c0d3a.txt",
         "002": "002_d3d53c3c703d85c8.txt"}


@dataclass(frozen=True)
class Row:
    seed: str
    claim: str
    status: str
    cells: tuple[str, ...] = ()          # "NN:cell-id", in chapter NN's English notebook or parts (and twins)
    calls: tuple[str, ...] = ()          # each appears in a named code cell
    words: tuple[str, ...] = ()          # each appears in a named cell (English edition)
    words_zh: tuple[str, ...] = ()       # each appears in the zh-TW twin of a named prose cell
    note: str = ""                       # partial: what is missing; missing: why; else a source
    kind: str = "claim"                  # claim, procedure, figure, faq


def R(seed, claim, status, cells=(), calls=(), words=(), words_zh=(), note="", kind="claim"):
    return Row(seed, claim, status, tuple(cells), tuple(calls), tuple(words), tuple(words_zh),
               note, kind)


ROWS: tuple[Row, ...] = (
    # ---- seed 000: the llama.cpp 1/2/4-slot tutorial --------------------------------------
    R("000", "usable concurrency is three gates passed together: the context fits, the wait is "
      "acceptable, the answers are correct", "live on labkit",
      ["05:cea41e41", "05:1c561639"], ["gates_panel"], ["fits", "acceptable", "correct"],
      ["三關"]),
    R("000", "continuous batching seats a waiting request in a freed slot between steps; each "
      "agent's facts still travel in its own request", "live on labkit",
      ["02:5b0eda8d", "06:a5a35699", "06:t06stepb"], ["llama_memory_seq_rm", "step_b"],
      ["llama_decode", "Slots do not hand results over"], ["槽位之間不會交接結果"]),
    R("000", "the five parts: request, slot, context, KV cache, continuous batching",
      "prose only", ["01:c02", "01:c03"], ["nb.terms"], ["order", "slot"], ["槽位"],
      note="the seed's five parts, told as the restaurant; the terms are labkit.lang.glossary's"),
    R("000", "a token is not a character, least of all a Chinese one", "computed",
      ["03:62336985"], ["vocabulary.count"], ["English"]),
    R("000", "prefill reads the prompt, decode writes one token per step; the first token and "
      "the stream are measured apart", "simulated", ["01:c04", "01:c05"], ["prefill_tok_s"],
      ["Prefill", "decode"], ["先讀提示"]),
    R("000", "memory is weights + KV cache + compute buffers; the model's quantization and the KV "
      "type are separate knobs", "computed", ["03:c12"], ["capacity.plan"], ["kv_type"]),
    R("000", "the model's training context caps every slot", "computed", ["04:c03"],
      ["n_ctx_train"], ["slot_context"]),
    R("000", "split KV: n_ctx_seq = n_ctx / slots, padded; -c 16384 gives 16384, 8192, 4096 at 1, "
      "2 and 4 slots (FAQ 3)", "computed", ["04:c03", "04:c05"], ["slot_context"], ["16384", "pad256"],
      kind="faq"),
    R("000", "unified KV: every slot may use the whole pool, capped by the training context and "
      "the per-slot cap; read n_ctx, n_ctx_seq, n_ctx_slot, n_slots, kv_unified from the log",
      "live on labkit", ["04:f7bd0a2c"], ["startup"], ["kv_unified"]),
    R("000", "-np auto is four slots with unified KV, so leaving out -np is not -np 4",
      "live on llama-server", ["04:472f9760"], ["llama_server.compare", 'n_slots="auto"'],
      ["kv_unified"]),
    R("000", "--kv-unified-per-slot keeps a written -c and sizes the pool from the slots without "
      "one (FAQ 5)", "live on llama-server", ["04:4d772cd6", "04:b6087503"],
      ["kv_unified_per_slot", "llama_server.compare"], ["n_ctx=0", "n_ctx=4096", "sizing KV pool"],
      kind="faq"),
    R("000", "-b is the logical batch in tokens, -ub the physical one, -np the slots (FAQ 6)",
      "live on labkit", ["04:58c52082", "04:2ffdf4ef"], ["n_ubatch", "launch("], ["n_batch"],
      kind="faq"),
    R("000", "build llama.cpp at the seed's pinned commit (git checkout 7d7f0287530b, cmake with "
      "the GPU backend, --target llama-server, then --version), and record the commit, build "
      "options, GPU/driver and the model's SHA-256", "prose only", ["00:seedbld0", "00:c10"],
      ["nb.recipe"], ["7d7f0287530bc8981690f361d8c1627dbae1c99a", "cmake", "--version"],
      ["7d7f0287530b", "建置"], kind="procedure",
      note="the commands are given, not run: the workbook's llama.cpp comes as wheels "
           "(llama-cpp-python, xllamacpp), whose versions the recipe records"),
    R("000", "start one slot, wait for /health, keep /props and /slots, read the startup log",
      "live on labkit", ["00:c12"], ["srv.props()"], ["launch"], kind="procedure"),
    R("000", "the seed's llama-server command with every flag written out (--alias local "
      "--split-mode none -ngl all --fit off -c -np 1 --no-kv-unified --cont-batching "
      "--no-context-shift -b 512 -ub 128 -ctk f16 -ctv f16 --metrics --slots)",
      "live on llama-server", ["00:seedcmd0", "00:seedcmd1"],
      ["llama_server.seed_server", "llama_server.typed"], ["--no-context-shift", "-ub 128"],
      ["--no-context-shift", "-ub 128"], kind="procedure",
      note="run with this notebook's -c 2048 and -ngl (the seed has -c 16384 and -ngl all); "
           "labkit.lessons.llama_server.SEED_FLAGS holds the rest"),
    R("000", "when every layer does not fit on the GPU: record the failure, then a smaller model "
      "or fewer layers (-ngl N) for every configuration; --fit off keeps unset arguments from "
      "being adjusted", "prose only", ["00:seedngl0"], [],
      ["-ngl", "--fit", "smaller model"], ["-ngl", "--fit", "較小的模型"], kind="procedure",
      note="llama.cpp common/arg.cpp: -ngl/--gpu-layers (a number, auto or all), -fit/--fit "
           "on|off (adjust unset arguments to fit in device memory)"),
    R("000", "twelve documents with id, owner and deadline, an answer key, and a long set with "
      "the same answers", "live on labkit", ["05:9bdc6821"], ['"short"', '"long"'],
      ["workloads"], kind="procedure"),
    R("000", "estimate a prompt's length with /apply-template and /tokenize before running, "
      "keep room for the template and the answer, and check it against the answer's token count",
      "live on llama-server", ["03:seedtokm", "03:seedtokc"], ["llama_server.prompt_estimate"],
      ["/apply-template", "/tokenize", "room"], ["/apply-template", "/tokenize", "空間"],
      kind="procedure"),
    R("000", "the stopwatch: TTFT is the first visible non-blank text; errors are kept, never "
      "retried", "live on labkit", ["05:9afef745", "05:02b1c0ad", "05:f936e146"],
      ["piece.strip()", "launch("],
      ["first_token_s"], kind="procedure"),
    R("000", "the limits of the seed's stopwatch script: no cancellation, retry policy or tenant "
      "isolation; elapsed_s leaves out the wait for a free worker thread; a timed-out request "
      "may still run on the server", "prose only", ["05:seedwatch"], [],
      ["cancellation", "retry", "elapsed_s", "wall_s"], ["取消", "重試", "elapsed_s", "wall_s"],
      note="the seed's own caveats, beside the stopwatch in 05_slots_live §2"),
    R("000", "change the server's slots and the client's requests in flight together; a "
      "warm-up, a restart and three rotated rounds per configuration; cache_prompt false",
      "live on labkit", ["05:9bdc6821"], ["rounds"], ["configs"], kind="procedure"),
    R("000", "the procedure on its own server: llama-server started with -np 1, then 2, then 4, "
      "the same documents with as many requests in flight as slots, each figure labelled with "
      "its server, version and flags", "live on llama-server",
      ["05:6cf9b930", "05:1837b11b", "05:9033d930"], ["llama_server.seed_slots"],
      ["-np 1", "llama-server"], ["-np 1", "llama-server"], kind="procedure"),
    R("000", "throughput is the sum of completion_tokens over the batch's wall time; the "
      "worksheet's columns and the median of the rounds", "live on labkit", ["05:771afc71"],
      ["result.worksheet"], ["output_tok_s"], kind="figure"),
    R("000", "predicted_per_second (the server's decode rate) is not completion_tokens / "
      "elapsed_s (the client's, with waiting)", "live on labkit", ["05:6c6589d1"],
      ["server_decode_tok_s"], ["client_tok_s"]),
    R("000", "twelve questions are a start: their slow end is a clue, not a production P95",
      "computed", ["01:seedp95m", "01:seedp95c"], ["seed_tables.tail_from_samples"],
      ["P95", "12", "59"], ["P95", "十二"],
      note="the arithmetic is in 01 §5; 05's worksheet (05_slots_live §4), where the twelve documents are "
           "timed, does not repeat it"),
    R("000", "unified KV at 1, 2 and 4 slots, and a per-slot cap run apart and labelled",
      "computed", ["05:a8e9fcbc"], ["SEED_CAP"], ["slot_context"],
      note="the seed's -c 16384 grid is computed with kv.slot_context; the live runs are at "
           "-c 4096"),
    R("000", "memory is a sampled peak of the whole device, labelled as such", "live on labkit",
      ["05:31859886"], ["kv_cache_bytes"], ["KV cache", "sampled_peak_mib"]),
    R("000", "your own TTFT limit, for example 10 s, decides the wait gate", "live on labkit",
      ["05:771afc71"], ["ttft_threshold_s"], ["TTFT_LIMIT_S = 10.0"]),
    R("000", "higher total tokens/s does not make one answer faster (FAQ 2)", "live on labkit",
      ["05:4c00386f"], ["findings"], ["single_requests_slower"], kind="faq"),
    R("000", "with cache_prompt off the same prompt may still give a different text at 1 and 4 "
      "slots (FAQ 7)", "live on labkit", ["05:2f0ba4be"], ["text_agreement"], ["identical"],
      kind="faq"),
    R("000", "if throughput rises but long documents fail, lower the requests in flight or add "
      "capacity; if the context suffices but TTFT is long, look at long prompts and queueing",
      "partial", ["05:4c00386f"], ["findings"], ["read_worksheet"],
      note="the findings read the worksheet; the seed's two remedies are not said as such"),
    R("000", "long and short mixed, with --cont-batching and --no-cont-batching",
      "live on labkit", ["06:369a80b4"], ["cont_batching"], ["long_tokens"], kind="procedure"),
    R("000", "an over-long input is refused with a status and a message; an accepted one is not "
      "cut (--no-context-shift)", "live on labkit", ["06:72a6d3a1", "06:a5db137b"],
      ["exceed_context_size_error"], ["400"]),
    R("000", "dependent tasks: extractions in parallel, each to its own file by task id, the sort "
      "after them", "live on labkit", ["06:t06stepa", "06:t06stepb", "06:cfb47046"], ["ThreadPoolExecutor", "step_b(tasks"], ["task_id"]),
    R("000", "a shared system prompt is a prefix the server can reuse", "live on labkit",
      ["06:d38036d2"], ["cache_prompt"], ["shared_prefix"]),
    R("000", "a unified pool does not let four slots each use the whole pool at once: when it "
      "runs out, every request in flight fails (FAQ 4)", "live on llama-server",
      ["04:b913d505", "04:54b61f73"], ["llama_server.fill_pool", "== 500"],
      ["Context size has been exceeded."], kind="faq"),
    R("000", "recurrent, hybrid and sliding-window models keep other state: avoid them in a "
      "first round; llama-server keeps context checkpoints for them and may reprocess the whole "
      "prompt", "prose only", ["03:seedswa0"], [],
      ["sliding-window", "recurrent", "--ctx-checkpoints", "--swa-full"],
      ["滑動視窗", "循環", "--ctx-checkpoints", "--swa-full"],
      note="llama.cpp common/arg.cpp (--swa-full, -ctxcp/--ctx-checkpoints) and "
           "tools/server/server-context.cpp (checkpoints for SWA, hybrid and recurrent memory; "
           "'forcing full prompt re-processing')"),
    R("000", "KV does not move between workers: a second server has its own cache", "prose only",
      ["08:seedkvmv"], [], ["--slot-save-path", "own KV"], ["--slot-save-path", "自己的 KV"],
      note="llama.cpp common/arg.cpp (--slot-save-path) and the server's /slots/{id}?action="
           "save|restore"),
    R("000", "four slots are not four agents: a slot serves model requests, the harness holds "
      "tools, files and dependencies (FAQ 1)", "prose only", ["08:cd9ff672"], [],
      ["four complete agents", "tools, files and task order"], ["完整的 Agent", "工具、檔案和任務順序"],
      kind="faq", note="the seed's answer, printed by 08 §7; 06 §3 runs the harness's side "
                       "(extractions, then the sort, each task to its own file)"),
    R("000", "one, two or four slots is the configuration that passes all three gates; one "
      "dependent long task, one slot; many independent short documents, two then four (FAQ 8)",
      "live on labkit", ["05:cea41e41", "05:1c561639", "08:cd9ff672", "08:seedfaq8"],
      ["gates_panel", "ok_slots"], ["fits", "correct", "two slots, then four"],
      ["三關", "兩個槽位"], kind="faq",
      note="the three gates are measured in 05 §8 for the configurations run there; 08 §7 "
           "predicts the wait gate alone"),

    # ---- seed 001: batching and scheduling ----------------------------------------------------
    R("001", "why batching pays: one request leaves the GPU idle; the seed's batch-1 against "
      "batch-32 table", "computed", ["01:8352c363"], ["why_batching_pays"], ["batch=32"],
      kind="figure"),
    R("001", "when to batch: offline work yes, many similar requests yes, real-time chat with "
      "care, a single interaction no", "computed", ["01:seedwhen", "01:seedwhe1"],
      ["seed_tables.when_to_batch"], ["offline", "single"], ["離線", "單一互動"], kind="figure"),
    R("001", "static, dynamic and continuous batching, side by side", "simulated",
      ["01:c07", "01:c08"], ["restaurant_runs"], ["static", "continuous"], ["靜態", "連續"]),
    R("001", "continuous batching step by step: a finished request leaves, a waiting one joins "
      "at the next step", "live on labkit", ["02:35b02333"], ["engine_run"], ["engine_run"]),
    R("001", "a continuous-batching engine written out in Python", "live on labkit",
      ["02:5b0eda8d"], ["llama_decode"], ["llama_memory_seq_rm"]),
    R("001", "'continuous batching needs PagedAttention': llama.cpp batches continuously without "
      "pages", "live on labkit", ["01:021eaca2"], ["kv_unified"], ["n_ctx_seq"]),
    R("001", "PagedAttention lifts KV memory use from 20-40 % to over 90 %", "simulated",
      ["03:2099307f"], ["waste.equal_memory"], ["equal_memory"],
      kind="figure"),
    R("001", "FIFO, shortest job first, priority and fair share, as code", "simulated",
      ["07:fe98b5c8"], ["inspect.getsource"], ["FIFO"]),
    R("001", "shortest job first and priority can starve long requests; the hybrid policy: "
      "priority first, then arrival time", "simulated", ["07:0063292f"], ["rush_run"],
      ["hybrid", "-r.priority, r.arrival"]),
    R("001", "a bigger batch raises the total and slows each stream", "simulated",
      ["07:8421138e"], ["per_stream_tok_s"], ["throughput_tok_s"]),
    R("001", "the batch-size table (1 to 128) and the rule of thumb: 1-8 for latency, 8-32 "
      "balanced, 32-128 for throughput", "partial", ["07:8421138e"], ["per_stream_tok_s"],
      ["16"], kind="figure",
      note="slots 1 to 16 are simulated; the seed's rows at 32-128 and its rule of thumb are "
           "not recomputed"),
    R("001", "measure throughput against batch size before choosing one", "live on labkit",
      ["05:907bdfb1"], ["measure_machine", "sweep"],
      ["speed_"], kind="procedure"),
    R("001", "the largest batch memory allows: free memory / KV per request", "computed",
      ["03:c14"], ["capacity_panel"], ["gpu_gib"], kind="figure"),
    R("001", "a bounded waiting queue refuses requests when full", "live on labkit",
      ["07:73d0b1be"], ["max_queue"], ["queue_burst"]),
    R("001", "requests need a timeout so none waits forever", "partial", ["07:57d5e2ed"], [],
      ["timeout"], ["逾時"],
      note="said beside the bounded queue (a client's patience); no cell times a request out"),
    R("001", "watch batch size, queue length, KV use and throughput", "simulated",
      ["07:aceff85b", "07:c3f0a661", "07:f6f57789"], ["saturation_signals"],
      ["mean_decode_batch", "kv_use", "n_busy_slots_per_decode"],
      ["mean_decode_batch", "kv_use", "n_busy_slots_per_decode"]),
    R("001", "vLLM's knobs: --max-num-seqs and --gpu-memory-utilization, and what to monitor "
      "there (running and waiting requests, KV cache use, preemptions)", "prose only",
      ["08:seedvllm"], [], ["--max-num-seqs", "--gpu-memory-utilization",
                            "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"],
      ["--max-num-seqs", "--gpu-memory-utilization", "vllm:num_requests_waiting"],
      note="vLLM docs: engine arguments; production metrics (vllm:num_requests_running, "
           "vllm:num_requests_waiting, vllm:kv_cache_usage_perc, formerly "
           "vllm:gpu_cache_usage_perc, vllm:num_preemptions_total)"),
    R("001", "prefix caching saves the prefill of a shared prefix", "live on labkit",
      ["06:d38036d2"], ["cache_prompt"], ["prefix_cache_rows"]),
    R("002", "prefix caching is the closest thing to a free lunch for agents repeating a long "
      "prompt", "live on llama-server", ["06:a7c31e90", "06:b81e4d52", "06:d4e8b0c3"],
      ["prompt_cache.compare"], ["free lunch", "--cache-ram"], ["免費午餐", "--cache-ram"],
      note="more teams than slots: llama-server's cache in RAM restores each team's prompt into "
           "whichever slot it gets; labkit's server, and llama-server with --cache-ram 0, do not"),

    # ---- seed 002: capacity planning -----------------------------------------------------------
    R("002", "the speed formula: each decoded token reads every weight once, so extra streams are "
      "nearly free until bandwidth or KV memory run out", "live on labkit", ["05:907bdfb1"],
      ["measure_machine"], ["model_cost"]),
    R("002", "static against continuous batching: when a batch forms, who may join, head-of-line "
      "blocking", "simulated", ["01:c09"], ["static"], ["continuous"]),
    R("002", "PagedAttention cuts the KV pool's waste from 60-80 % to a few per cent",
      "simulated", ["03:6b9719e9"], ["paged"], ["waste.plot"], kind="figure"),
    R("002", "which engine for which workload: Ollama or LM Studio, llama-server with slots, vLLM, "
      "SGLang", "prose only", ["08:74a05f6a", "08:seedvllm"], [],
      ["Ollama", "LM Studio", "SGLang"], ["Ollama", "LM Studio", "SGLang"],
      note="the engines' roles as the seed gives them; only llama-server is run here"),
    R("002", "Ollama's knob: OLLAMA_NUM_PARALLEL", "prose only", ["08:seedvllm"], [],
      ["OLLAMA_NUM_PARALLEL"], ["OLLAMA_NUM_PARALLEL"], note="the seed's command, not run"),
    R("002", "a solo assistant keeps 1-2 streams; a 30-user chat fills the batch", "simulated",
      ["07:aca84f78"], ["service_runs"], ["30-user chat"]),
    R("002", "a solo assistant and a 30-user chat in slots, memory and tokens/s, from your own "
      "speeds", "computed", ["08:c395a9a7"], ["learner_speeds"], ["worksheet.csv"]),
    R("002", "llama-server -c 32768 -np 4 splits the context across the slots", "computed",
      ["04:c03"], ["slot_context(32768, 4, False"], ["for slots in (1, 2, 4)"]),
    R("002", "limit upstream: a reverse proxy with a connection limit fails fast and honestly, a "
      "deep queue fails slowly", "partial", ["07:a87faa9a", "07:73d0b1be"], ["max_queue"],
      ["reverse proxy", "limit_conn"], ["nginx"],
      note="the fail-fast side runs on labkit's own --max-queue (llama-server has no such "
           "setting); the reverse proxy is an nginx configuration shown, not run"),
    R("002", "llama-server itself does not refuse: it defers requests until a slot frees",
      "live on llama-server", ["07:a58c1baa"], ["llama_server.llama_server_burst"],
      ["requests_deferred"]),
    R("002", "KV bytes per token = 2 x layers x KV heads x head size x bytes per value; 8B: "
      "131 KB, 2k tokens 256 MiB, ten conversations 2.5 GB", "computed", ["03:c10"],
      ["bytes_per_token(32, 8, 128"], ["2048"], kind="figure"),
    R("002", "the rough table of conversations per GPU and model", "computed", ["03:c17"],
      ["seed_comparison"], ["capacity"], kind="figure"),
    R("002", "the levers, cheapest first: limit context, quantize the KV cache, add GPUs",
      "partial", ["03:c19", "03:c20"], ["levers"], ["q8_0", "q4_0"], ["q8_0"],
      note="the cell computes the KV types (f16, q8_0, q4_0) and what fewer KV heads saved, at "
           "8,192 tokens; limiting the context and adding GPUs are in the capacity panel "
           "(03 §5), not in this order"),
    R("002", "the four saturation signals: TTFT climbing, queue depth above zero, per-stream "
      "tok/s sagging, preemptions in vLLM's log", "simulated", ["07:c3f0a661", "07:f6f57789"],
      ["saturation_signals"], ["ttft_p99", "requests_deferred", "preemptions"],
      ["requests_deferred", "搶占"],
      note="the simulator's paged pool preempts; llama-server preempts nothing (07 §5's table)"),
    R("002", "a day of TTFT and queue depth: a steady climb is too little capacity, a saw-tooth "
      "is bursts a queue absorbs", "simulated", ["08:e571c2d7"], ["queue_depth"], ["ttft"],
      kind="figure"),
    R("002", "rent or buy: $0.50-2 an hour against a used card, break-even after 300-1,000 hours "
      "of generation", "computed", ["08:554dd3b1"], ["seed_case"], ["seed_range"],
      kind="figure"),
    R("002", "measure a real week before deciding: most people overestimate their hours",
      "partial", ["08:c3a4a2a0"], ["busy_hours_per_day"], ["simulated day"],
      note="the hours come from a simulated day, not a measured week of your own traffic"),
)


def counts(rows=ROWS) -> dict[str, int]:
    return {s: sum(r.status == s for r in rows) for s in STATUSES}


START = "<!-- seed-audit: generated by python -m labkit.lessons.seed_audit; edit labkit/lessons/seed_audit.py -->"
END = "<!-- /seed-audit -->"


NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def parts(nb: str, folder: Path = NOTEBOOKS) -> list[Path]:
    """Chapter ``nb``'s notebooks in ``folder``, in order ("05": 05_roofline, 05_slots_live)."""
    return sorted(folder.glob(f"{nb}_*.ipynb"))


@lru_cache(maxsize=None)
def _cell_ids(path: Path) -> frozenset:
    return frozenset(c.get("id") for c in json.loads(path.read_text(encoding="utf-8"))["cells"])


def part_of(nb: str, cell_id: str, folder: Path = NOTEBOOKS) -> str:
    """The notebook of chapter ``nb`` ("05") that holds ``cell_id``, by its name
    ("05_roofline"), or ``nb`` itself when no part holds it (the test names such a row).
    Each notebook is read once per process."""
    return next((path.stem for path in parts(nb, folder) if cell_id in _cell_ids(path)), nb)


def _where(row: Row) -> str:
    by_nb: dict[str, list[str]] = {}
    for ref in row.cells:
        nb, cid = ref.split(":")
        by_nb.setdefault(part_of(nb, cid), []).append(cid)
    return "; ".join(f"{nb} ({', '.join(ids)})" for nb, ids in by_nb.items()) or "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(rows=ROWS) -> str:
    """The README's audit section, between its markers."""
    c = counts(rows)
    lines = [START, "",
             f"{len(rows)} items: " + ", ".join(f"{n} {s}" for s, n in c.items()) + ".", "",
             "| seed | kind | what the seed says | status | cells (notebook: cell ids) | shown by | note |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        calls = ", ".join(f"`{c}`" for c in r.calls) or "-"
        lines.append(f"| {r.seed} | {r.kind} | {_cell(r.claim)} | {r.status} | {_where(r)} | "
                     f"{_cell(calls)} | {_cell(r.note) or '-'} |")
    lines += ["", END]
    return "\n".join(lines)


README = NOTEBOOKS / "README.md"


def current_section(text: str) -> str:
    return text[text.index(START):text.index(END) + len(END)]


def write(path: Path = README) -> bool:
    """Render into ``path``; True when it changed."""
    from ..machine.atomic import write_atomic
    text = path.read_text(encoding="utf-8")
    new = text.replace(current_section(text), render())
    if new != text:
        write_atomic(path, new)
    return new != text


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--check"]:
        ok = current_section(README.read_text(encoding="utf-8")) == render()
        print("seed audit in notebooks/README.md is current" if ok else
              "notebooks/README.md's seed audit is stale: python -m labkit.lessons.seed_audit")
        return 0 if ok else 1
    print("rewritten" if write() else "already current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
