"""The seed audit: every claim, procedure, figure and FAQ item of the three seed articles in
``shared/seeds/`` (000: the llama.cpp 1/2/4-slot tutorial; 001: batching and scheduling; 002:
capacity planning), with how the workbook shows it and the cells that show it.

One source of truth: :data:`ROWS`. ``python -m authoring.seed_audit`` renders them into
notebooks/README.md between the two markers (``--check`` says whether the README is current);
``tests/test_seed_audit.py`` opens every named cell and requires the row's calls in its code and
the claim's key words in its text: English in the English notebook, Traditional Chinese in the
zh-TW twin of each prose cell. A row therefore cannot outlive its cell.

What the learner sees is the output, so each row also names (``shown``) the code cell whose
committed output shows the item and the ``evidence`` that output holds: a regular expression
searched in :func:`output_text`, one for both editions or a pair (English, zh-TW). The README says
who produced it (:func:`server_of`: llama-server, labkit, both, simulator, arithmetic) and the size
of the reference run it comes from (:func:`size_of`, from ``metadata.labkit.reference_run``). The
test requires the output in both editions' committed notebooks; a row that cannot show its item
is partial or missing, and a procedure shown only by a quick run is partial. After a new run, a
row is updated by changing its ``evidence`` (and status), nothing else.

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
from dataclasses import dataclass
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
    shown: str = ""                      # "NN:cell-id": the code cell whose committed OUTPUT shows it
    evidence: tuple[str, str] = ("", "") # regexes its output must match: (English, zh-TW edition)
    server: str = ""                     # who produced that output (SERVERS); "" = from the status


def R(seed, claim, status, cells=(), calls=(), words=(), words_zh=(), note="", kind="claim",
      shown="", evidence="", server=""):
    """One row. ``evidence`` is one regular expression for both editions (numbers, flags, table
    rows that read the same in both) or a pair (English, Chinese); it is searched in the named
    cell's output text (:func:`output_text`: HTML tags dropped, whitespace collapsed)."""
    ev = (evidence, evidence) if isinstance(evidence, str) else tuple(evidence)
    return Row(seed, claim, status, tuple(cells), tuple(calls), tuple(words), tuple(words_zh),
               note, kind, shown, ev, server)


#: Who produced a row's output: llama.cpp's own llama-server, labkit's server or engine (on
#: llama.cpp through llama-cpp-python), both side by side, labkit's simulator, or arithmetic
#: (a formula, a tokenizer, a GGUF header; printed code counts here too); "-" for prose.
SERVERS = ("llama-server", "labkit", "llama-server and labkit", "simulator", "arithmetic", "-")
_SERVER_OF = {"live on llama-server": "llama-server", "live on labkit": "labkit",
              "simulated": "simulator", "computed": "arithmetic", "prose only": "-", "missing": "-"}


def server_of(row: Row) -> str:
    return row.server or _SERVER_OF.get(row.status, "")


ROWS: tuple[Row, ...] = (
    # ---- seed 000: the llama.cpp 1/2/4-slot tutorial --------------------------------------
    R("000", "usable concurrency is three gates passed together: the context fits, the wait is "
      "acceptable, the answers are correct", "live on labkit",
      ["05:cea41e41", "05:1c561639"], ["gates_panel"], ["fits", "acceptable", "correct"],
      ["三關"],
      shown="05:1c561639",
      evidence=(r"fits_context ttft_ok all_correct verdict", r"放得進上下文 首字等待達標 全部答對 判定")),
    R("000", "continuous batching seats a waiting request in a freed slot between steps; each "
      "agent's facts still travel in its own request", "partial",
      ["02:5b0eda8d", "06:a5a35699", "06:t06stepb"], ["llama_memory_seq_rm", "step_b"],
      ["llama_decode", "Slots do not hand results over"], ["槽位之間不會交接結果"],
      note="01_slot_engine's engine run prints the steps where a waiting prompt was read while other slots decoded; 02's written-out engine and 06's harness (each agent's facts in its own request) print nothing, so no output shows the second half",
      shown="01:021eaca2",
      evidence=(r"[1-9]\d* of \d+ steps read a prompt while other slots decoded", r"\d+ 步之中，有 [1-9]\d* 步在其他槽位解碼的同時讀進提示"),
      server="labkit"),
    R("000", "the five parts: request, slot, context, KV cache, continuous batching",
      "prose only", ["01:c02", "01:c03"], ["nb.terms"], ["order", "slot"], ["槽位"],
      note="the seed's five parts, told as the restaurant; the terms are labkit.lang.glossary's",
      shown="01:c03",
      evidence=(r"continuous batching", r"連續批次"),
      server="-"),
    R("000", "a token is not a character, least of all a Chinese one", "computed",
      ["03:62336985"], ["vocabulary.count"], ["English"],
      shown="03:62336985",
      evidence=(r"Traditional Chinese \d+ \d+ \d+ 0\.\d+", r"繁體中文 \d+ \d+ \d+ 0\.\d+")),
    R("000", "prefill reads the prompt, decode writes one token per step; the first token and "
      "the stream are measured apart", "simulated", ["01:c04", "01:c05"], ["prefill_tok_s"],
      ["Prefill", "decode"], ["先讀提示"],
      shown="01:c05",
      evidence=(r"prefill of a \d+-token prompt: +\d+ tokens/s .*decode with +1 sequence", r"預填一段 \d+ token 的提示.*1 個序列一起解碼")),
    R("000", "memory is weights + KV cache + compute buffers; the model's quantization and the KV "
      "type are separate knobs", "computed", ["03:c12"], ["capacity.plan"], ["kv_type"],
      shown="03:c12",
      evidence=(r"KV cache for -c .*weights \+ overhead", r"-c 的 KV 快取 .*權重 \+ 額外開銷")),
    R("000", "the model's training context caps every slot", "computed", ["04:c03"],
      ["n_ctx_train"], ["slot_context"],
      shown="04:c03",
      evidence=(r"model trained on 8192 tokens", r"模型訓練時的上下文是 8192")),
    R("000", "split KV: n_ctx_seq = n_ctx / slots, padded; -c 16384 gives 16384, 8192, 4096 at 1, "
      "2 and 4 slots (FAQ 3)", "computed", ["04:c03", "04:c05"], ["slot_context"], ["16384", "pad256"],
      kind="faq",
      shown="04:c03",
      evidence=r"1 split 16384 16384 8192 .*2 split 16384 8192 8192 .*4 split 16384 4096 4096"),
    R("000", "unified KV: every slot may use the whole pool, capped by the training context and "
      "the per-slot cap; read n_ctx, n_ctx_seq, n_ctx_slot, n_slots, kv_unified from the log",
      "live on labkit", ["04:f7bd0a2c"], ["startup"], ["kv_unified"],
      shown="04:f7bd0a2c",
      evidence=r"4 --kv-unified 16384 16384 8192 8192 8192 4 True True"),
    R("000", "-np auto is four slots with unified KV, so leaving out -np is not -np 4",
      "live on llama-server", ["04:472f9760"], ["llama_server.compare", 'n_slots="auto"'],
      ["kv_unified"],
      shown="04:472f9760",
      evidence=r"-c 16384 -np auto llama-server \(xllamacpp\) 4 4 True True"),
    R("000", "--kv-unified-per-slot keeps a written -c and sizes the pool from the slots without "
      "one (FAQ 5)", "live on llama-server", ["04:4d772cd6", "04:b6087503"],
      ["kv_unified_per_slot", "llama_server.compare"], ["n_ctx=0", "n_ctx=4096", "sizing KV pool"],
      kind="faq",
      shown="04:b6087503",
      evidence=r"capping per-slot context \(4096\) to --kv-unified-per-slot \(1024\)"),
    R("000", "-b is the logical batch in tokens, -ub the physical one, -np the slots (FAQ 6)",
      "live on labkit", ["04:58c52082", "04:2ffdf4ef"], ["n_ubatch", "launch("], ["n_batch"],
      kind="faq",
      shown="04:2ffdf4ef",
      evidence=r"n_batch = 512; llama_context: n_ubatch = 128"),
    R("000", "build llama.cpp at the seed's pinned commit (git checkout 7d7f0287530b, cmake with "
      "the GPU backend, --target llama-server, then --version), and record the commit, build "
      "options, GPU/driver and the model's SHA-256", "prose only", ["00:seedbld0", "00:c10"],
      ["nb.recipe"], ["7d7f0287530bc8981690f361d8c1627dbae1c99a", "cmake", "--version"],
      ["7d7f0287530b", "建置"], kind="procedure",
      note="the commands are given, not run: the workbook's llama.cpp comes as wheels "
           "(llama-cpp-python, xllamacpp), whose versions the recipe records"),
    R("000", "start one slot, wait for /health, keep /props and /slots, read the startup log",
      "live on labkit", ["00:c12", "00:health00"], ["srv.props()"], ["launch"], kind="procedure",
      shown="00:health00",
      evidence=r'GET /health .*\{"status": "ok"\} GET /slots .*"id": 0, "n_ctx": 2048'),
    R("000", "the seed's llama-server command with every flag written out (--alias local "
      "--split-mode none -ngl all --fit off -c -np 1 --no-kv-unified --cont-batching "
      "--no-context-shift -b 512 -ub 128 -ctk f16 -ctv f16 --metrics --slots)",
      "live on llama-server", ["00:seedcmd0", "00:seedcmd1"],
      ["llama_server.seed_server", "llama_server.typed"], ["--no-context-shift", "-ub 128"],
      ["--no-context-shift", "-ub 128"], kind="procedure",
      note="run with this notebook's -c 2048 and -ngl (the seed has -c 16384 and -ngl all); "
           "labkit.lessons.llama_server.SEED_FLAGS holds the rest",
      shown="00:seedcmd1",
      evidence=r"llama-server -m \S+ .*--cont-batching .*--no-context-shift --fit off .*--metrics --slots",
      server="llama-server and labkit"),
    R("000", "when every layer does not fit on the GPU: record the failure, then a smaller model "
      "or fewer layers (-ngl N) for every configuration; --fit off keeps unset arguments from "
      "being adjusted", "prose only", ["00:seedngl0"], [],
      ["-ngl", "--fit", "smaller model"], ["-ngl", "--fit", "較小的模型"], kind="procedure",
      note="llama.cpp common/arg.cpp: -ngl/--gpu-layers (a number, auto or all), -fit/--fit "
           "on|off (adjust unset arguments to fit in device memory)"),
    R("000", "twelve documents with id, owner and deadline, an answer key, and a long set with "
      "the same answers", "live on labkit", ["05:9bdc6821"], ['"short"', '"long"'],
      ["workloads"], kind="procedure",
      shown="05:9bdc6821",
      evidence=(r"\['short', 'long'\] x 3 round\(s\), 12 documents each",
                r"\['short', 'long'\] × 3 輪，每輪 12 份文件"),
      server="labkit"),
    R("000", "estimate a prompt's length with /apply-template and /tokenize before running, "
      "keep room for the template and the answer, and check it against the answer's token count",
      "live on llama-server", ["03:seedtokm", "03:seedtokc"], ["llama_server.prompt_estimate"],
      ["/apply-template", "/tokenize", "room"], ["/apply-template", "/tokenize", "空間"],
      kind="procedure",
      shown="03:seedtokc",
      evidence=(r"room for the answer .*llama-server \(xllamacpp\) long document \d+ \d+ \d+ 400", r"留給回答的空間 .*llama-server \(xllamacpp\) 長文件 \d+ \d+ \d+ 400"),
      server="llama-server and labkit"),
    R("000", "the stopwatch: TTFT is the first visible non-blank text; errors are kept, never "
      "retried", "partial", ["05:9afef745", "05:02b1c0ad", "05:f936e146"],
      ["piece.strip()", "launch("],
      ["first_token_s"], kind="procedure",
      note="the output prints the stopwatch's own lines (TTFT at the first non-blank piece) and 05:f936e146 times it against labkit.bench; no output shows an error kept and not retried",
      shown="05:02b1c0ad",
      evidence=r'if row\["first_token_s"\] is None and piece\.strip\(\)',
      server="labkit"),
    R("000", "the limits of the seed's stopwatch script: no cancellation, retry policy or tenant "
      "isolation; elapsed_s leaves out the wait for a free worker thread; a timed-out request "
      "may still run on the server", "prose only", ["05:seedwatch"], [],
      ["cancellation", "retry", "elapsed_s", "wall_s"], ["取消", "重試", "elapsed_s", "wall_s"],
      note="the seed's own caveats, beside the stopwatch in 05_slots_live §2"),
    R("000", "change the server's slots and the client's requests in flight together; a "
      "warm-up, a restart and three rotated rounds per configuration; cache_prompt false",
      "partial", ["05:9bdc6821"], ["rounds"], ["configs"], kind="procedure",
      note="three rounds of six configurations are on screen; the rotation, the warm-up, the "
           "restart and cache_prompt false are in the code (bench.measure), not in the output",
      shown="05:9bdc6821",
      evidence=(r"6 configurations x \['short', 'long'\] x 3 round\(s\)",
                r"6 組配置 × \['short', 'long'\] × 3 輪"),
      server="labkit"),
    R("000", "the procedure on its own server: llama-server started with -np 1, then 2, then 4, "
      "the same documents with as many requests in flight as slots, each figure labelled with "
      "its server, version and flags", "partial",
      ["05:6cf9b930", "05:1837b11b", "05:9033d930"], ["llama_server.seed_slots"],
      ["-np 1", "llama-server"], ["-np 1", "llama-server"], kind="procedure",
      note="the short set, split KV, three rounds; the long set and unified KV run on labkit's "
           "server (§3) and, on llama-server, in 04's unified pool",
      shown="05:9033d930",
      evidence=(r"llama-server \(xllamacpp [\d.]+\): total tok/s against its own 1 slot: 1 slot 1\.00x, 2 slots [\d.]+x, 4 slots [\d.]+x",
                r"llama-server \(xllamacpp [\d.]+\)：總 tok/s 對自己的 1 槽：1 槽 1\.00 倍，2 槽 [\d.]+ 倍，4 槽"),
      server="llama-server and labkit"),
    R("000", "throughput is the sum of completion_tokens over the batch's wall time; the "
      "worksheet's columns and the median of the rounds", "partial", ["05:771afc71"],
      ["result.worksheet"], ["output_tok_s"], kind="figure",
      note="the lines are medians of three rounds (the prose says so); the rounds' own values "
           "are in worksheet.csv, not on screen",
      shown="05:771afc71",
      evidence=(r"output_tok_s ttft_p50_s ttft_max_s", r"輸出 tok/s 首字等待 p50 \(s\) 首字等待最大值 \(s\)"),
      server="labkit"),
    R("000", "predicted_per_second (the server's decode rate) is not completion_tokens / "
      "elapsed_s (the client's, with waiting)", "live on labkit", ["05:6c6589d1"],
      ["server_decode_tok_s"], ["client_tok_s"],
      shown="05:6c6589d1",
      evidence=(r"server_decode_tok_s client_decode_tok_s client_tok_s", r"伺服器解碼 tok/s 用戶端解碼 tok/s 用戶端 tok/s")),
    R("000", "twelve questions are a start: their slow end is a clue, not a production P95",
      "computed", ["01:seedp95m", "01:seedp95c"], ["seed_tables.tail_from_samples"],
      ["P95", "12", "59"], ["P95", "十二"],
      note="the arithmetic is in 01 §5; 05's worksheet (05_slots_live §4), where the twelve documents are "
           "timed, does not repeat it",
      shown="01:seedp95c",
      evidence=(r"with 95 % confidence: 59", r"95% 把握超過真實 P95 需要的樣本數：59")),
    R("000", "unified KV at 1, 2 and 4 slots, and a per-slot cap run apart and labelled",
      "computed", ["05:a8e9fcbc"], ["SEED_CAP"], ["slot_context"],
      note="the seed's -c 16384 grid is computed with kv.slot_context; the live runs are at "
           "-c 4096",
      shown="05:a8e9fcbc",
      evidence=(r"4 unified, --kv-unified-per-slot 4096", r"4 統一, --kv-unified-per-slot 4096")),
    R("000", "memory is a sampled peak of the whole device, labelled as such", "partial",
      ["05:31859886"], ["kv_cache_bytes"], ["KV cache", "sampled_peak_mib"],
      note="on this CPU the sampled peak is the server process's RSS; no committed output shows a device-wide view (nvidia-smi, rocm-smi, Activity Monitor)",
      shown="05:31859886",
      evidence=(r"sampled peak RSS of the server process", r"伺服器行程的取樣峰值 RSS"),
      server="labkit"),
    R("000", "your own TTFT limit, for example 10 s, decides the wait gate", "partial",
      ["05:771afc71"], ["ttft_threshold_s"], ["TTFT_LIMIT_S = 10.0"],
      note='the verdict column applies the limit, but the output does not print the 10 s it used',
      shown="05:771afc71",
      evidence=(r"verdict 0 short split 1 .* pass", r"判定 0 short split 1 .* 通過"),
      server="labkit"),
    R("000", "higher total tokens/s does not make one answer faster (FAQ 2)", "live on labkit",
      ["05:4c00386f"], ["reading.sentences"], ["ttft_p50_vs_1"], kind="faq",
      shown="05:4c00386f",
      evidence=(r"ttft_p50_vs_1 .*short split 4 [\d.]+ (?:[2-9]|\d{2,})\.\d+", r"首字等待 p50（1 槽位的倍數） .*short split 4 [\d.]+ (?:[2-9]|\d{2,})\.\d+"),
      server="labkit"),
    R("000", "with cache_prompt off the same prompt may still give a different text at 1 and 4 "
      "slots (FAQ 7)", "partial", ["05:2f0ba4be"], ["text_agreement"], ["identical"],
      kind="faq",
      note="the committed run compares the texts at 1 and 4 slots and finds them identical: the seed's 'may differ' is said, not shown",
      shown="05:2f0ba4be",
      evidence=(r"compared identical first difference", r"比較的文件數 完全相同 第一個差異"),
      server="labkit"),
    R("000", "if throughput rises but long documents fail, lower the requests in flight or add "
      "capacity; if the context suffices but TTFT is long, look at long prompts and queueing",
      "live on labkit", ["05:4c00386f"], ["reading.sentences"], ["reading.read"],
      shown="05:4c00386f",
      evidence=(r"What to try \(the seed's advice when long documents fail\).*What to try \(the seed's "
                r"advice when the context suffices but first tokens come too late\)",
                r"可以怎麼做（種子文章對長文件失敗的建議）.*可以怎麼做（種子文章對容量足夠但首字等太久的建議）"),
      server="labkit"),
    R("000", "long and short mixed, with --cont-batching and --no-cont-batching",
      "live on llama-server", ["06:369a80b4", "06:nocbrun"], ["cont_batching", "mixed_burst"],
      ["long_tokens"], kind="procedure",
      shown="06:nocbrun",
      evidence=(r"--no-cont-batching.*llama-server \(xllamacpp [\d.]+\): slowest short request "
                r"finished at [\d.]+ s with continuous batching, [\d.]+ s without",
                r"--no-cont-batching.*llama-server \(xllamacpp [\d.]+\)：最慢的短請求，有連續批次時在 "
                r"[\d.]+ 秒完成，沒有時在 [\d.]+ 秒"),
      server="llama-server and labkit"),
    R("000", "an over-long input is refused with a status and a message; an accepted one is not "
      "cut (--no-context-shift)", "live on labkit", ["06:72a6d3a1", "06:a5db137b"],
      ["exceed_context_size_error"], ["400"],
      shown="06:72a6d3a1",
      evidence=(r"HTTP 400: .*exceed_context_size_error.*nothing cut", r"HTTP 400：.*exceed_context_size_error")),
    R("000", "dependent tasks: extractions in parallel, each to its own file by task id, the sort "
      "after them", "live on labkit", ["06:t06stepa", "06:t06stepb", "06:cfb47046"], ["ThreadPoolExecutor", "step_b(tasks"], ["task_id"],
      shown="06:cfb47046",
      evidence=r"DEMO-01 \d+\.\d+ \d+\.\d+ True results/06_tasks/DEMO-01\.json"),
    R("000", "a shared system prompt is a prefix the server can reuse", "live on labkit",
      ["06:d38036d2"], ["cache_prompt"], ["shared_prefix"],
      shown="06:d38036d2",
      evidence=r"DEMO-\d+ True 200 \d+ \d+ [1-9]\d* "),
    R("000", "a unified pool does not let four slots each use the whole pool at once: when it "
      "runs out, every request in flight fails (FAQ 4)", "live on llama-server",
      ["04:b913d505", "04:54b61f73"], ["llama_server.fill_pool", "== 500"],
      ["Context size has been exceeded."], kind="faq",
      shown="04:b913d505",
      evidence=(r"llama-server \(xllamacpp\) +-c 512 -np 2 --kv-unified: 2 x HTTP 500", r"llama-server \(xllamacpp\) +-c 512 -np 2 --kv-unified: 2 個 HTTP 500"),
      server="llama-server and labkit"),
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
                       "(extractions, then the sort, each task to its own file)",
      shown="08:cd9ff672",
      evidence=(r"Are four slots four complete agents\? A: No", r"四個槽位就是四個完整的 Agent嗎？ 答：不是")),
    R("000", "one, two or four slots is the configuration that passes all three gates; one "
      "dependent long task, one slot; many independent short documents, two then four (FAQ 8)",
      "partial", ["05:cea41e41", "05:1c561639", "08:cd9ff672", "08:seedfaq8"],
      ["gates_panel", "ok_slots"], ["fits", "correct", "two slots, then four"],
      ["三關", "兩個槽位"], kind="faq",
      note='quick run: the gates for 1 and 4 slots on the short set; 2 slots and the long set are not in the committed output; 08 §7 predicts the wait gate alone',
      shown="05:1c561639",
      evidence=(r"split 1 short .* pass .* split 4 short", r"split 1 short .* 通過 .* split 4 short"),
      server="labkit"),

    # ---- seed 001: batching and scheduling ----------------------------------------------------
    R("001", "why batching pays: one request leaves the GPU idle; the seed's batch-1 against "
      "batch-32 table", "computed", ["01:8352c363"], ["why_batching_pays"], ["batch=32"],
      kind="figure",
      shown="01:8352c363",
      evidence=(r"seed 001: 7B on a GPU 1 0\.150 0\.300 30\.000", r"種子文章 001：GPU 上的 7B 模型 1 0\.150 0\.300 30\.000")),
    R("001", "when to batch: offline work yes, many similar requests yes, real-time chat with "
      "care, a single interaction no", "computed", ["01:seedwhen", "01:seedwhe1"],
      ["seed_tables.when_to_batch"], ["offline", "single"], ["離線", "單一互動"], kind="figure",
      shown="01:seedwhe1",
      evidence=(r"offline batch work very suitable .*single interaction", r"離線批次處理 非常適合 .*單一互動 不適合")),
    R("001", "static, dynamic and continuous batching, side by side", "simulated",
      ["01:c07", "01:c08"], ["restaurant_runs"], ["static", "continuous"], ["靜態", "連續"],
      shown="01:c07",
      evidence=(r"static [\d.]+ .*dynamic [\d.]+ .*continuous [\d.]+", r"靜態批次 [\d.]+ .*動態批次 [\d.]+ .*連續批次 [\d.]+")),
    R("001", "continuous batching step by step: a finished request leaves, a waiting one joins "
      "at the next step", "partial", ["02:35b02333"], ["engine_run"], ["engine_run"],
      note='the output shows that answers batched by the engine equal those made alone; the step where a finished request leaves and a waiting one joins is not printed (01:021eaca2 counts such steps)',
      shown="02:35b02333",
      evidence=(r"labkit engine .* #0 same", r"labkit engine .* #0 "),
      server="labkit"),
    R("001", "a continuous-batching engine written out in Python", "live on labkit",
      ["02:5b0eda8d"], ["llama_decode"], ["llama_memory_seq_rm"],
      note="02:5b0eda8d is the engine's code (no output); 02:35b02333 runs it",
      shown="02:35b02333",
      evidence=(r"measured on: labkit engine", r"量測於：labkit engine")),
    R("001", "'continuous batching needs PagedAttention': llama.cpp batches continuously without "
      "pages", "live on labkit", ["01:021eaca2"], ["kv_unified"], ["n_ctx_seq"],
      shown="01:021eaca2",
      evidence=(r"a fixed stripe of \d+ cells per slot, no pages", r"每個槽位固定一段 \d+ 格，沒有分頁")),
    R("001", "PagedAttention lifts KV memory use from 20-40 % to over 90 %", "simulated",
      ["03:2099307f"], ["waste.equal_memory"], ["equal_memory"],
      kind="figure",
      shown="03:2099307f",
      evidence=(r"split, 4 slots x 2048 [\d.]+ [\d.]+ [\d.]+ 0\.[2-9]\d* .*paged, 16 slots, blocks of 16 [\d.]+ [\d.]+ [\d.]+ 0\.0\d", r"分割 KV，4 個槽位 × 2048 [\d.]+ [\d.]+ [\d.]+ 0\.[2-9]\d* .*分頁 KV，16 個槽位，每塊 16 格 [\d.]+ [\d.]+ [\d.]+ 0\.0\d")),
    R("001", "FIFO, shortest job first, priority and fair share, as code", "simulated",
      ["07:fe98b5c8"], ["inspect.getsource"], ["FIFO"],
      note="the output prints FIFO's class; the other policies' code is printed the same way",
      shown="07:fe98b5c8",
      evidence=r"self\._q\.popleft\(\)"),
    R("001", "shortest job first and priority can starve long requests; the hybrid policy: "
      "priority first, then arrival time", "simulated", ["07:0063292f"], ["rush_run"],
      ["hybrid", "-r.priority, r.arrival"],
      shown="07:0063292f",
      evidence=r"sjf \d+ [1-9]\d* .*hybrid \d+ \d+"),
    R("001", "a bigger batch raises the total and slows each stream", "simulated",
      ["07:8421138e"], ["per_stream_tok_s"], ["throughput_tok_s"],
      shown="07:8421138e",
      evidence=(r"1 slots [\d.]+ [\d.]+ .*16 slots [\d.]+ [\d.]+", r"1 個槽位 [\d.]+ [\d.]+ .*16 個槽位 [\d.]+ [\d.]+")),
    R("001", "the batch-size table (1 to 128) and the rule of thumb: 1-8 for latency, 8-32 "
      "balanced, 32-128 for throughput", "partial", ["07:8421138e"], ["per_stream_tok_s"],
      ["16"], kind="figure",
      note="slots 1 to 16 are simulated (07:8421138e); the seed's rows at 32-128 and its rule of "
           "thumb (1-8 latency-sensitive, 8-32 balanced, 32-128 throughput first; seed 001, "
           "'經驗法則') are not printed beside this machine's own knee (05_roofline)",
      shown="07:8421138e",
      evidence=(r"16 slots [\d.]+ [\d.]+", r"16 個槽位 [\d.]+ [\d.]+"),
      server="simulator"),
    R("001", "measure throughput against batch size before choosing one", "live on labkit",
      ["05:907bdfb1"], ["measure_machine", "sweep"],
      ["speed_"], kind="procedure",
      shown="05:907bdfb1",
      evidence=(r"decode_tok_s_per_stream decode_tok_s .*batch 1 [\d.]+ [\d.]+ .* 16 [\d.]+ [\d.]+", r"每串流解碼 tok/s 解碼總 tok/s .*批次 1 [\d.]+ [\d.]+ .* 16 [\d.]+ [\d.]+")),
    R("001", "the largest batch memory allows: free memory / KV per request", "computed",
      ["03:c14"], ["capacity_panel"], ["gpu_gib"], kind="figure",
      shown="03:c14",
      evidence=(r"conversations of 4,096 tokens \d+", r"4,096 token 的對話數 \d+")),
    R("001", "a bounded waiting queue refuses requests when full", "live on labkit",
      ["07:73d0b1be"], ["max_queue"], ["queue_burst"],
      shown="07:73d0b1be",
      evidence=(r"refused at once \(503\) [1-9]", r"立刻拒絕（503） [1-9]")),
    R("001", "requests need a timeout so none waits forever", "partial", ["07:57d5e2ed"], [],
      ["timeout"], ["逾時"],
      note="said beside the bounded queue (a client's patience); no cell times a request out",
      server="-"),
    R("001", "watch batch size, queue length, KV use and throughput", "simulated",
      ["07:aceff85b", "07:c3f0a661", "07:f6f57789"], ["saturation_signals"],
      ["mean_decode_batch", "kv_use", "n_busy_slots_per_decode"],
      ["mean_decode_batch", "kv_use", "n_busy_slots_per_decode"],
      shown="07:c3f0a661",
      evidence=(r"peak_queue per_stream_tok_s preemptions mean_decode_batch kv_use", r"佇列峰值 每條串流 tok/s 搶占次數 平均解碼批次 KV 使用率")),
    R("001", "vLLM's knobs: --max-num-seqs and --gpu-memory-utilization, and what to monitor "
      "there (running and waiting requests, KV cache use, preemptions)", "prose only",
      ["08:seedvllm"], [], ["--max-num-seqs", "--gpu-memory-utilization",
                            "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"],
      ["--max-num-seqs", "--gpu-memory-utilization", "vllm:num_requests_waiting"],
      note="vLLM docs: engine arguments; production metrics (vllm:num_requests_running, "
           "vllm:num_requests_waiting, vllm:kv_cache_usage_perc, formerly "
           "vllm:gpu_cache_usage_perc, vllm:num_preemptions_total)"),
    R("001", "prefix caching saves the prefill of a shared prefix", "live on labkit",
      ["06:d38036d2"], ["cache_prompt"], ["prefix_cache_rows"],
      shown="06:d38036d2",
      evidence=r"DEMO-\d+ True 200 \d+ \d+ [1-9]\d* "),
    R("002", "prefix caching is the closest thing to a free lunch for agents repeating a long "
      "prompt", "live on llama-server", ["06:a7c31e90", "06:b81e4d52", "06:d4e8b0c3"],
      ["prompt_cache.compare"], ["free lunch", "--cache-ram"], ["免費午餐", "--cache-ram"],
      note="more teams than slots: llama-server's cache in RAM restores each team's prompt into "
           "whichever slot it gets; labkit's server, and llama-server with --cache-ram 0, do not",
      shown="06:b81e4d52",
      evidence=r"llama-server \(xllamacpp [\d.]+\) · -c 4096 -np 2 .*--cache-ram 0",
      server="llama-server and labkit"),

    # ---- seed 002: capacity planning -----------------------------------------------------------
    R("002", "the speed formula: each decoded token reads every weight once, so extra streams are "
      "nearly free until bandwidth or KV memory run out", "partial", ["05:907bdfb1"],
      ["measure_machine"], ["model_cost"],
      note="05_roofline's output on this CPU: batch 4 gains about 1.3x, not 'nearly free', and its GPU cell is skipped; the formula is printed, the seed's GPU case is not shown",
      shown="05:907bdfb1",
      evidence=(r"speed formula: [\d.]+ GB/s / [\d.]+ MB = \d+ tok/s for one stream.*decode stops being bandwidth-bound at batch [\d.]+", r"速度公式：[\d.]+ GB/s ÷ [\d.]+ MB = 單一串流 \d+ tok/s.*批次到 [\d.]+ 時，解碼就不再受頻寬限制"),
      server="labkit"),
    R("002", "static against continuous batching: when a batch forms, who may join, head-of-line "
      "blocking", "partial", ["01:c09"], ["static"], ["continuous"],
      note="01:c07's table shows the waits (static against continuous); the rules of when a batch forms and who may join are checked by 01:c09, an assert with no output",
      shown="01:c07",
      evidence=(r"queue_wait_mean .*static .*continuous", r"平均排隊 \(s\) .*靜態批次 .*連續批次"),
      server="simulator"),
    R("002", "PagedAttention cuts the KV pool's waste from 60-80 % to a few per cent",
      "simulated", ["03:6b9719e9"], ["paged"], ["waste.plot"], kind="figure",
      shown="03:6b9719e9",
      evidence=(r"waste: split \d+%, paged [\d.]+%", r"split \d+%.*paged [\d.]+%|分割 \d+%.*分頁 [\d.]+%")),
    R("002", "which engine for which workload: Ollama or LM Studio, llama-server with slots, vLLM, "
      "SGLang", "prose only", ["08:74a05f6a", "08:seedvllm"], [],
      ["Ollama", "LM Studio", "SGLang"], ["Ollama", "LM Studio", "SGLang"],
      note="the engines' roles as the seed gives them; only llama-server is run here"),
    R("002", "Ollama's knob: OLLAMA_NUM_PARALLEL", "prose only", ["08:seedvllm"], [],
      ["OLLAMA_NUM_PARALLEL"], ["OLLAMA_NUM_PARALLEL"], note="the seed's command, not run"),
    R("002", "a solo assistant keeps 1-2 streams; a 30-user chat fills the batch", "simulated",
      ["07:aca84f78"], ["service_runs"], ["30-user chat"],
      shown="07:aca84f78",
      evidence=(r"solo: \d+ slots.*chat: \d+ slots", r"一人助手：\d+ 個槽位.*聊天：\d+ 個槽位")),
    R("002", "a solo assistant and a 30-user chat in slots, memory and tokens/s, from your own "
      "speeds", "computed", ["08:c395a9a7"], ["learner_speeds"], ["worksheet.csv"],
      note="the speeds are read from 05's worksheet, which is at present the quick run's",
      shown="08:c395a9a7",
      evidence=(r"speeds from notebook 05's worksheet.*30-user chat \d+", r"速度的來源：筆記本 05 的工作表.*30 人聊天 \d+")),
    R("002", "llama-server -c 32768 -np 4 splits the context across the slots", "computed",
      ["04:c03"], ["slot_context(32768, 4, False"], ["for slots in (1, 2, 4)"],
      shown="04:c03",
      evidence=(r"-c 32768 -np 4, split: 32768 cells cut into 4 stripes of 8192", r"-c 32768 -np 4、分割：32768 格切成 4 段、每段 8192 格")),
    R("002", "limit upstream: a reverse proxy with a connection limit fails fast and honestly, a "
      "deep queue fails slowly", "partial", ["07:a87faa9a", "07:73d0b1be"], ["max_queue"],
      ["reverse proxy", "limit_conn"], ["nginx"],
      note="the fail-fast side runs on labkit's own --max-queue (llama-server has no such "
           "setting); the reverse proxy is an nginx configuration shown, not run",
      shown="07:73d0b1be",
      evidence=(r"refused at once \(503\) [1-9]", r"立刻拒絕（503） [1-9]"),
      server="labkit"),
    R("002", "llama-server itself does not refuse: it defers requests until a slot frees",
      "live on llama-server", ["07:a58c1baa"], ["llama_server.llama_server_burst"],
      ["requests_deferred"],
      shown="07:a58c1baa",
      evidence=(r"at most [1-9]\d* deferred", r"最多 [1-9]\d* 個被延後")),
    R("002", "KV bytes per token = 2 x layers x KV heads x head size x bytes per value; 8B: "
      "131 KB, 2k tokens 256 MiB, ten conversations 2.5 GB", "computed", ["03:c10"],
      ["bytes_per_token(32, 8, 128"], ["2048"], kind="figure",
      shown="03:c10",
      evidence=r"2 x 32 x 8 x 128 x 2 B = (?:每個 token )?131,072 B"),
    R("002", "the rough table of conversations per GPU and model", "computed", ["03:c17"],
      ["seed_comparison"], ["capacity"], kind="figure",
      shown="03:c17",
      evidence=r"24 8B Q4 Llama-3.1-8B Q4_K_M 10-30"),
    R("002", "the levers, cheapest first: limit context, quantize the KV cache, add GPUs",
      "partial", ["03:c19", "03:c20"], ["levers"], ["q8_0", "q4_0"], ["q8_0"],
      note="the cell computes the KV types (f16, q8_0, q4_0) and what fewer KV heads saved, at "
           "8,192 tokens; limiting the context and adding GPUs are in the capacity panel "
           "(03 §5), not in this order",
      shown="03:c19",
      evidence=r"q8_0 69632",
      server="arithmetic"),
    R("002", "the four saturation signals: TTFT climbing, queue depth above zero, per-stream "
      "tok/s sagging, preemptions in vLLM's log", "simulated", ["07:c3f0a661", "07:f6f57789"],
      ["saturation_signals"], ["ttft_p99", "requests_deferred", "preemptions"],
      ["requests_deferred", "搶占"],
      note="the simulator's paged pool preempts; llama-server preempts nothing (07 §5's table)",
      shown="07:c3f0a661",
      evidence=(r"ttft_p99 peak_queue per_stream_tok_s preemptions", r"首字等待 p99 \(s\) 佇列峰值 每條串流 tok/s 搶占次數")),
    R("002", "a day of TTFT and queue depth: a steady climb is too little capacity, a saw-tooth "
      "is bursts a queue absorbs", "simulated", ["08:e571c2d7"], ["queue_depth"], ["ttft"],
      kind="figure",
      shown="08:e571c2d7",
      evidence=(r"hours with TTFT p99 over 10 s", r"首字等待 p99 超過 10 秒的時段")),
    R("002", "rent or buy: $0.50-2 an hour against a used card, break-even after 300-1,000 hours "
      "of generation", "computed", ["08:554dd3b1"], ["seed_case"], ["seed_range"],
      kind="figure",
      shown="08:554dd3b1",
      evidence=(r"a \$600 card alone at \$2 an hour: 300 hours of generation", r"單一張 \$600 的卡、每小時 \$2：生成 300 小時")),
    R("002", "measure a real week before deciding: most people overestimate their hours",
      "partial", ["08:c3a4a2a0"], ["busy_hours_a_month"], ["MY_BUSY_HOURS"],
      note="a measured week is an input (MY_BUSY_HOURS) the learner fills in; the committed output "
           "prices the hours of a simulated day",
      shown="08:c3a4a2a0",
      evidence=(r"[\d.]+ busy hours a (?:day|month)", r"忙碌 ?[\d.]+ ?小時"),
      server="simulator"),
    R("002", "continuous (iteration-level) batching is vLLM's and SGLang's default: nothing turns it "
      "on", "prose only", ["08:seedvllm"], [], ["iteration-level", "--no-cont-batching"],
      ["迭代級", "--no-cont-batching"],
      note="sources: seed 002 ('連續（迭代級）批次——vLLM 與 SGLang 的預設'), seed 001 ('vLLM 已經內建了"
           "連續批次'); only llama-server's side (--no-cont-batching) runs here, in 06"),
    R("001", "vLLM's max_num_batched_tokens (4096-16384) and swap_space (4-16 GB) beside "
      "--max-num-seqs and --gpu-memory-utilization", "prose only", ["08:seedvllm"], [],
      ["max_num_batched_tokens", "swap_space", "4096-16384", "4-16 GB"],
      ["max_num_batched_tokens", "swap_space", "4096-16384", "4-16 GB"], kind="figure",
      note="seed 001's vLLM configuration table; vLLM's optimization guide (V1 recomputes a "
           "preempted sequence); mapped to llama.cpp's -b, not run"),
    R("000", "when a run fails its gates, the seed's own remedies: long documents failing, fewer "
      "requests in flight or more room; first tokens too late with room to spare, long prompts "
      "and queueing", "live on labkit", ["05:4c00386f", "05:d1de1c80"], ["reading"],
      ["what the seed advises"], ["種子文章建議"],
      kind="procedure", shown="05:4c00386f",
      evidence=(r"request\(s\) failed, so its tokens/s is not a result; fail: fits context.*What to "
                r"try \(the seed's advice when long documents fail\): fewer requests in flight",
                r"個請求失敗，所以它的 tokens/s 不算結果；.*可以怎麼做（種子文章對長文件失敗的建議）：先減少在途數"),
      note="labkit.bench.reading prints the seed's advice under each configuration that failed a "
           "gate; the committed full run's long set fails the context gate at 2 and 4 split slots"),

)


def counts(rows=ROWS) -> dict[str, int]:
    return {s: sum(r.status == s for r in rows) for s in STATUSES}


START = "<!-- seed-audit: generated by python -m authoring.seed_audit; edit authoring/seed_audit.py -->"
END = "<!-- /seed-audit -->"


NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


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


# ------------------------------------------------------------------ what the outputs show

def output_text(cell: dict) -> str:
    """What a cell's committed outputs put on screen, as one line of text: streams, plain text,
    HTML with its tags and styles dropped (a table's headings and cells stay), ``[image]`` for a
    picture, ``[error NAME]`` for a traceback. Empty when the cell has no output."""
    import html as _html
    import re
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            parts.append(f"[error {out.get('ename', '')}]")
        if "text" in out:
            parts.append("".join(out["text"]))
        data = out.get("data", {})
        if "text/html" in data:
            h = "".join(data["text/html"])
            h = re.sub(r"<style.*?</style>", " ", h, flags=re.S)
            h = re.sub(r"<img[^>]*>", " [image] ", h)
            parts.append(_html.unescape(re.sub(r"<[^>]+>", " ", h)))
        elif "text/plain" in data:
            parts.append("".join(data["text/plain"]))
        if any(k.startswith("image/") for k in data):
            parts.append("[image]")
    return re.sub(r"\s+", " ", " ".join(parts)).strip()


@lru_cache(maxsize=None)
def _notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def shown_cell(row: Row, edition: str = "en", folder: Path = NOTEBOOKS):
    """(notebook stem, cell dict, reference-run size) for the row's ``shown`` cell in one
    edition ("en" or "zh-TW"); (stem, None, size) when the notebook lacks it."""
    nb, cid = row.shown.split(":")
    where = folder if edition == "en" else folder / "zh-TW"
    stem = part_of(nb, cid, folder)
    path = where / f"{stem}.ipynb"
    if not path.exists():
        return stem, None, "?"
    book = _notebook(path)
    size = book.get("metadata", {}).get("labkit", {}).get("reference_run", {}).get("size", "?")
    return stem, next((c for c in book["cells"] if c.get("id") == cid), None), size


def evidence_problems(row: Row, cell_en: dict | None, cell_zh: dict | None) -> list[str]:
    """What is wrong with the output a row names, given the named cell of each edition (the
    committed notebooks, or a copy a test altered); [] when both show the row's evidence."""
    import re
    if not row.shown:
        return []
    out = []
    if not all(row.evidence):
        out.append("a row naming an output cell gives its evidence for both editions")
    for edition, cell, pattern in (("en", cell_en, row.evidence[0]),
                                   ("zh-TW", cell_zh, row.evidence[1])):
        if cell is None:
            out.append(f"{edition}: no cell {row.shown}")
            continue
        if cell.get("cell_type") != "code":
            out.append(f"{edition}: {row.shown} is not a code cell")
            continue
        text = output_text(cell)
        if not text:
            out.append(f"{edition}: {row.shown} has no output")
        elif pattern and not re.search(pattern, text):
            out.append(f"{edition}: {row.shown}'s output does not show {pattern!r}")
    return out


def size_of(row: Row) -> str:
    """"full" or "quick": the size of the reference run whose outputs the row names ("-" when it
    names none)."""
    return shown_cell(row)[2] if row.shown else "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _shown(row: Row) -> str:
    return f"{shown_cell(row)[0]} ({row.shown.split(':')[1]})" if row.shown else "-"


def _evidence(row: Row) -> str:
    en, zh = row.evidence
    if not row.shown:
        return "-"
    return f"`{en}`" if en == zh else f"`{en}` / `{zh}`"


def render(rows=ROWS) -> str:
    """The README's audit section, between its markers."""
    c = counts(rows)
    runs = {s: sum(size_of(r) == s for r in rows) for s in ("full", "quick")}
    lines = [START, "",
             f"{len(rows)} items: " + ", ".join(f"{n} {s}" for s, n in c.items()) + ". "
             f"{sum(bool(r.shown) for r in rows)} name the cell whose committed output shows "
             f"them ({runs['full']} from a full-size reference run, {runs['quick']} from a quick "
             "one); tests/test_seed_audit.py checks that output, in both editions, for the "
             "evidence given here. A row that cannot show its item says partial or missing.", "",
             "| seed | kind | what the seed says | status | output shown in (notebook: cell) | "
             "produced by | run | evidence in the output | text and code (notebook: cells) | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.seed} | {r.kind} | {_cell(r.claim)} | {r.status} | {_shown(r)} | "
                     f"{server_of(r)} | {size_of(r)} | {_cell(_evidence(r))} | {_where(r)} | "
                     f"{_cell(r.note) or '-'} |")
    lines += ["", END]
    return "\n".join(lines)


README = NOTEBOOKS / "README.md"


def current_section(text: str) -> str:
    return text[text.index(START):text.index(END) + len(END)]


def write(path: Path = README) -> bool:
    """Render into ``path``; True when it changed."""
    from labkit.machine.atomic import write_atomic
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
              "notebooks/README.md's seed audit is stale: python -m authoring.seed_audit")
        return 0 if ok else 1
    print("rewritten" if write() else "already current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
