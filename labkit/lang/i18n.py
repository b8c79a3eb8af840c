"""labkit's messages in English and in Traditional Chinese as written in Taiwan.

One setting chooses the language: ``LABKIT_LANG`` (read by :func:`labkit.lang.choice.lang`),
``en`` by default, ``zh-TW`` for Traditional Chinese. Code that prints to a learner asks
:func:`t` for the text by key instead of writing it inline::

    from labkit.lang.i18n import t
    print(t("bench.wrote", out=out, seconds=12))

Every key has both languages with the same ``{placeholders}`` (a test fails otherwise).

Texts used once are written in place, side by side, with :func:`pick` (a printed line, a
widget's label) or :func:`labkit.lang.fonts.label` (a plot's title, axis or legend: English when no
Chinese font is installed). Tables keep the program's column names, which code goes on using;
:func:`show` gives them Chinese headings for display (:data:`HEADINGS`,
:data:`HEADING_PATTERNS`), and a table built only to be read comes with Chinese headings
already under zh-TW.

Terms follow :mod:`labkit.lang.glossary` (槽位, 上下文, KV 快取, 首字等待 …); names of flags, files,
columns and units stay as the program writes them, so a line can be pasted into a shell or
searched for in either language ("READY" and "NOT READY" stay in both).
"""

from __future__ import annotations

from string import Formatter

from .choice import LANGUAGES, lang

# key -> {language: text}
CATALOGUE: dict[str, dict[str, str]] = {
    # ---- labkit doctor
    "doctor.title": {"en": "labkit {version} doctor", "zh-TW": "labkit {version} 環境檢查"},
    "doctor.not_installed": {"en": "NOT INSTALLED", "zh-TW": "未安裝"},
    "doctor.llama_via": {"en": "via llama-cpp-python {version}, GPU offload: {offload}",
                         "zh-TW": "透過 llama-cpp-python {version}，GPU 卸載：{offload}"},
    "doctor.offload_yes": {"en": "yes", "zh-TW": "有"},
    "doctor.offload_no": {"en": "no (CPU build)", "zh-TW": "無（僅 CPU 的建置）"},
    "doctor.build": {"en": "llama.cpp commit {commit}, {compiler}, {target}",
                     "zh-TW": "llama.cpp 提交 {commit}，{compiler}，{target}"},
    "doctor.gpu": {"en": "{name}: {used} used of {total}, driver {driver}",
                   "zh-TW": "{name}：已用 {used}，共 {total}，驅動程式 {driver}"},
    "doctor.no_gpu": {"en": "{note}; labkit will run on the CPU",
                      "zh-TW": "{note}；labkit 會改用 CPU 執行"},
    "doctor.advice_cpu_build": {
        "en": "an NVIDIA GPU is present but llama-cpp-python was built for the CPU only; "
              "reinstall it with CMAKE_ARGS=\"-DGGML_CUDA=on\" (see README)",
        "zh-TW": "偵測到 NVIDIA GPU，但 llama-cpp-python 是只支援 CPU 的建置；請以 "
                 "CMAKE_ARGS=\"-DGGML_CUDA=on\" 重新安裝（見 README）"},
    "doctor.model": {"en": "{name} ({arch}, {ftype}, {params}M params, {size})",
                     "zh-TW": "{name}（{arch}，{ftype}，{params}M 參數，{size}）"},
    "doctor.synthetic": {"en": "random weights in {shape}'s shape: for timing, not answers "
                               "(labkit.models.synthetic)",
                         "zh-TW": "{shape} 形狀的隨機權重：只能量時間，答案沒有意義"
                                  "（labkit.models.synthetic）"},
    "doctor.generation": {"en": "{n} tokens in {wall} s = {tps} tok/s (load {load} s, "
                                "n_gpu_layers={ngl}): {text}",
                          "zh-TW": "{wall} 秒生成 {n} 個 token = {tps} tok/s（載入 {load} 秒，"
                                   "n_gpu_layers={ngl}）：{text}"},
    "doctor.skipped": {"en": "skipped ({why})", "zh-TW": "已略過（{why}）"},
    # the roofline's machine figures (labkit.costs.roofline.Machine.table) and their sources
    "roofline.machine.bandwidth": {"en": "memory bandwidth", "zh-TW": "記憶體頻寬"},
    "roofline.machine.flops": {"en": "arithmetic rate", "zh-TW": "運算速率"},
    "roofline.machine.from": {"en": "  from", "zh-TW": "  來源"},
    "roofline.machine.host": {"en": "machine", "zh-TW": "機器"},
    "roofline.machine.host_line": {"en": "{host}, {cores} usable cores, {when}",
                                   "zh-TW": "{host}，{cores} 個可用核心，{when}"},
    "roofline.machine.load": {"en": "load average (1 min) before / after",
                              "zh-TW": "量測前 / 後的負載平均（1 分鐘）"},
    "roofline.machine.not_known": {"en": "not known", "zh-TW": "未知"},
    "table.value": {"en": "value", "zh-TW": "值"},
    # the capacity calculator's summary (labkit.costs.capacity.Capacity.table)
    "capacity.model": {"en": "model", "zh-TW": "模型"},
    "capacity.bytes_per_token": {"en": "KV bytes per token", "zh-TW": "每個 token 的 KV 位元組"},
    "capacity.bytes_per_token_value": {"en": "{bytes} B ({kv_type})", "zh-TW": "{bytes} B（{kv_type}）"},
    "capacity.configured": {"en": "configured", "zh-TW": "設定"},
    "capacity.configured_value": {"en": "-c {n_ctx} -np {slots} {mode}: {n_ctx_slot} tokens per slot",
                                  "zh-TW": "-c {n_ctx} -np {slots}，{mode}：每個槽位 {n_ctx_slot} 個 token"},
    "capacity.unified": {"en": "unified", "zh-TW": "統一 KV"},
    "capacity.split": {"en": "split", "zh-TW": "分割 KV"},
    "capacity.kv_for_c": {"en": "KV cache for -c", "zh-TW": "-c 的 KV 快取"},
    "capacity.weights": {"en": "weights + overhead", "zh-TW": "權重 + 額外開銷"},
    "capacity.needed": {"en": "needed / GPU", "zh-TW": "所需 / GPU"},
    "capacity.fits": {"en": "fits", "zh-TW": "放得下"},
    "capacity.does_not_fit": {"en": "does NOT fit", "zh-TW": "放不下"},
    "capacity.budget": {"en": "KV budget", "zh-TW": "KV 預算"},
    "capacity.budget_value": {"en": "{gib} GiB = {cells} tokens", "zh-TW": "{gib} GiB = {cells} 個 token"},
    "capacity.conversations": {"en": "conversations of {tokens} tokens", "zh-TW": "{tokens} token 的對話數"},
    "roofline.source.numpy-sum": {
        "en": "measured: best of {repeats} sums of a {mib} MiB numpy array on {threads} thread(s)",
        "zh-TW": "實測：用 {threads} 個執行緒對 {mib} MiB 的 numpy 陣列求和 {repeats} 次，取最快的一次"},
    "roofline.source.numpy-matmul": {
        "en": "measured: numpy float32 matrix product, {n} x {n}, best of 3",
        "zh-TW": "實測：numpy float32 矩陣乘法，{n} × {n}，3 次取最快"},
    "roofline.source.software-device": {
        "en": "{device} is a software device running on the CPU: numpy's sum over {mib} MiB "
              "with {threads} threads, best of {repeats} (the CPU's memory, which it reads)",
        "zh-TW": "{device} 是在 CPU 上執行的軟體裝置：以 {threads} 個執行緒對 {mib} MiB 做 numpy "
                 "加總，取 {repeats} 次中最好的一次（它讀的是 CPU 的記憶體）"},
    "roofline.source.given": {"en": "given", "zh-TW": "由呼叫者給定"},
    "roofline.source.gpu-flops-unknown": {
        "en": "not known (numpy measures the CPU only; pass flops= from the GPU's datasheet)",
        "zh-TW": "未知（numpy 只能量 CPU；請用 flops= 傳入 GPU 規格表上的數字）"},
    "roofline.source.nvml-peak": {
        "en": "NVML peak for GPU {index} ({name}): {bits}-bit bus x {mhz} MHz max memory clock "
              "x 2 (double data rate)",
        "zh-TW": "NVML 峰值，GPU {index}（{name}）：{bits} 位元匯流排 × 最高記憶體時脈 {mhz} MHz "
                 "× 2（雙倍資料速率）"},
    "doctor.cjk_font": {"en": "{family} (plots can show Chinese labels)",
                        "zh-TW": "{family}（圖表可顯示中文標籤）"},
    "doctor.no_cjk_font": {"en": "none: plots keep English labels; install one with "
                                 "`apt-get install fonts-noto-cjk` (Debian/Ubuntu)",
                           "zh-TW": "沒有：圖表維持英文標籤；可用 `apt-get install fonts-noto-cjk`"
                                    "（Debian/Ubuntu）安裝"},
    "doctor.python": {"en": "{version} on {platform} ({cpus} CPUs)",
                      "zh-TW": "{version}，{platform}（{cpus} 個 CPU）"},
    "doctor.no_llama_cpp": {"en": "cannot import llama_cpp: {error}",
                            "zh-TW": "無法匯入 llama_cpp：{error}"},
    "doctor.fix_llama_cpp": {"en": "pip install llama-cpp-python (it compiles llama.cpp; see README)",
                             "zh-TW": "pip install llama-cpp-python（會編譯 llama.cpp；見 README）"},
    "doctor.fix_model": {"en": "check that the model file is a complete GGUF that this llama.cpp "
                               "build supports; `labkit doctor --model PATH` tries another",
                         "zh-TW": "確認模型檔是完整、且這個 llama.cpp 建置支援的 GGUF；"
                                  "可用 `labkit doctor --model PATH` 改試另一個"},
    "doctor.no_tokens": {"en": "no tokens", "zh-TW": "沒有生成任何 token"},
    # the row names of doctor's report
    "doctor.row.build": {"en": "build", "zh-TW": "建置"},
    "doctor.row.devices": {"en": "devices", "zh-TW": "裝置"},
    "doctor.row.features": {"en": "features", "zh-TW": "功能"},
    "doctor.row.advice": {"en": "advice", "zh-TW": "建議"},
    "doctor.row.model": {"en": "model", "zh-TW": "模型"},
    "doctor.row.path": {"en": "path", "zh-TW": "路徑"},
    "doctor.row.synthetic": {"en": "synthetic", "zh-TW": "合成模型"},
    "doctor.row.shape": {"en": "shape", "zh-TW": "形狀"},
    "doctor.row.generation": {"en": "generation", "zh-TW": "生成測試"},
    "doctor.row.fonts": {"en": "fonts", "zh-TW": "字型"},
    "doctor.ready": {"en": "READY: the model loads and generates.",
                     "zh-TW": "READY 就緒：模型可以載入並生成文字。"},
    "doctor.not_ready": {"en": "NOT READY:", "zh-TW": "NOT READY 尚未就緒："},
    # ---- the commands' --help
    "cli.help": {"en": "show this help message and exit", "zh-TW": "顯示這段說明，然後結束"},
    # ---- the GPU llama.cpp uses (labkit.engine.devices, read by doctor and the notebooks)
    "doctor.gpu_device": {"en": "{device} {name}: {used} used of {total} ({backend}; memory "
                                "read by {source})",
                          "zh-TW": "{device} {name}：已用 {used}，共 {total}（{backend}；記憶體由 "
                                   "{source} 讀取）"},
    "doctor.driver": {"en": "driver {driver}", "zh-TW": "驅動程式 {driver}"},
    "doctor.software_device": {"en": " (a software device running on the CPU: its figures are "
                                     "not a GPU's)",
                               "zh-TW": "（在 CPU 上執行的軟體裝置：它的數字不代表 GPU）"},
    "doctor.row.compute_path": {"en": "compute", "zh-TW": "運算路徑"},
    "doctor.path_gpu": {"en": "llama.cpp offloads every layer to {device} (-ngl -1)",
                        "zh-TW": "llama.cpp 把每一層都卸載到 {device}（-ngl -1）"},
    "gpu.too_large": {"en": "the model needs {need} on the GPU but {devices} has {free} free; "
                            "use a smaller model or quantization, or fewer layers with -ngl",
                      "zh-TW": "模型在 GPU 上需要 {need}，但 {devices} 只剩 {free}；請改用較小的"
                               "模型或量化，或用 -ngl 少放幾層"},
    "gpu.no_device": {"en": "this llama.cpp can offload ({backends}) but sees no GPU device: "
                            "{fix}",
                      "zh-TW": "這個 llama.cpp 可以卸載（{backends}），但看不到任何 GPU 裝置：{fix}"},
    "gpu.fix_vulkan": {"en": "check the Vulkan driver with `vulkaninfo --summary` (Debian's "
                             "vulkan-tools); a software "
                             "driver (lavapipe, llvmpipe) is used only with "
                             "GGML_VK_VISIBLE_DEVICES=0",
                       "zh-TW": "請用 `vulkaninfo --summary`（Debian 的 vulkan-tools）檢查 Vulkan "
                                "驅動程式；軟體驅動程式"
                                "（lavapipe、llvmpipe）要設 GGML_VK_VISIBLE_DEVICES=0 才會使用"},
    "gpu.fix_driver": {"en": "check the GPU's driver (nvidia-smi, rocm-smi, sycl-ls) and that "
                             "this process may use the GPU",
                       "zh-TW": "請檢查 GPU 的驅動程式（nvidia-smi、rocm-smi、sycl-ls），以及這個"
                                "行程是否有權使用 GPU"},
    "gpu.no_nvml": {"en": "{note}; the GPU's memory is read from llama.cpp (ggml) instead",
                    "zh-TW": "{note}；GPU 記憶體改由 llama.cpp（ggml）讀取"},
    "gpu.refused": {"en": "{model}: {need} would go to the GPU but {devices} has {free} free; "
                          "not loaded. Use a smaller model or quantization, or fewer layers "
                          "with -ngl (-ngl 0: the CPU)",
                    "zh-TW": "{model}：要放上 GPU 的有 {need}，但 {devices} 只剩 {free}；沒有載入。"
                             "請改用較小的模型或量化，或用 -ngl 少放幾層（-ngl 0：用 CPU）"},
    # ---- labkit bench
    "bench.start": {"en": "labkit bench: {configs} configs x {rounds} round(s) x {workloads}"
                          "{quick}; logs in {logs}",
                    "zh-TW": "labkit bench：{configs} 組配置 × {rounds} 輪 × {workloads}"
                             "{quick}；日誌在 {logs}"},
    "bench.on_gpu": {"en": "labkit bench: {layers} on {device} ({backend}), as llama.cpp sees "
                           "a GPU device; -ngl 0 measures the CPU",
                     "zh-TW": "labkit bench：{layers}放在 {device}（{backend}），因為 llama.cpp "
                              "看得到 GPU 裝置；-ngl 0 則量測 CPU"},
    "bench.on_gpu_asked": {"en": "labkit bench: {layers} on {device} ({backend}), as asked",
                           "zh-TW": "labkit bench：依指定，{layers}放在 {device}（{backend}）"},
    "bench.every_layer": {"en": "every layer (-ngl all)", "zh-TW": "每一層（-ngl all）"},
    "bench.layers": {"en": "{n} layers (-ngl {n})", "zh-TW": "{n} 層（-ngl {n}）"},
    "bench.software_device": {"en": "[a software device running on the CPU: its figures are not "
                                    "a GPU's and are not to be compared with one]",
                              "zh-TW": "［在 CPU 上執行的軟體裝置：它的數字不代表 GPU，也不該拿來"
                                       "和 GPU 比較］"},
    "bench.on_cpu": {"en": "labkit bench: on the CPU (-ngl 0): {why}",
                     "zh-TW": "labkit bench：在 CPU 上執行（-ngl 0）：{why}"},
    "bench.on_cpu_asked": {"en": "labkit bench: on the CPU (-ngl {ngl}, as asked)",
                           "zh-TW": "labkit bench：依指定在 CPU 上執行（-ngl {ngl}）"},
    "bench.quick": {"en": " (quick mode)", "zh-TW": "（快速模式）"},
    "bench.synthetic": {"en": "synthetic model {model} (random weights): timing only, "
                              "{requests} requests per run, answers of {tokens} tokens, not graded",
                        "zh-TW": "合成模型 {model}（隨機權重）：只量時間，每輪 {requests} 個請求，"
                                 "每個回答 {tokens} 個 token，不評分"},
    "bench.nothing_saved": {"en": "labkit bench: interrupted before any run finished; "
                                  "nothing to save",
                            "zh-TW": "labkit bench：在任何一輪完成前就中斷了，沒有可儲存的結果"},
    "bench.interrupted": {"en": "labkit bench: interrupted", "zh-TW": "labkit bench：已中斷"},
    "bench.summary": {"en": "model sha256 {sha}; memory: {memory}; medians of {rounds} round(s); "
                            "TTFT gate {gate} s",
                      "zh-TW": "模型 sha256 {sha}；記憶體：{memory}；{rounds} 輪的中位數；"
                               "首字等待（TTFT）門檻 {gate} 秒"},
    "bench.wrote": {"en": "wrote {out}/ (worksheet.csv, worksheet.md, requests.csv, plots/, "
                          "environment.json) in {seconds} s",
                    "zh-TW": "已寫入 {out}/（worksheet.csv、worksheet.md、requests.csv、plots/、"
                             "environment.json），費時 {seconds} 秒"},
    "bench.saved_partial": {"en": "labkit bench: interrupted; saved the {runs} finished run(s) "
                                  "in {out}/",
                            "zh-TW": "labkit bench：已中斷；已完成的 {runs} 輪存在 {out}/"},
    "bench.timing_only": {"en": "workload {name}: timing only, answers are not a measure of "
                                "this model (see data/README.md)",
                          "zh-TW": "工作負載 {name}：只用來量時間，答對率不代表這個模型的能力"
                                   "（見 data/README.md）"},
    # ---- a classroom submission left out of the merge (labkit.lessons.submission_check)
    "classroom.refused.not_found": {"en": "no such folder or file", "zh-TW": "沒有這個資料夾或檔案"},
    "classroom.refused.symlink": {
        "en": "{name} is a symbolic link (to {target}): a submission's files must be its own, "
              "not another learner's",
        "zh-TW": "{name} 是符號連結（指向 {target}）：繳交的檔案必須是自己的，不能連到別的學員的"},
    "classroom.refused.too_many_files": {
        "en": "more than {limit} files: not a results folder of labkit bench",
        "zh-TW": "超過 {limit} 個檔案：不是 labkit bench 的結果資料夾"},
    "classroom.refused.no_worksheet": {
        "en": "no {name} (export one with labkit bench or result.save(folder) in notebook 05)",
        "zh-TW": "沒有 {name}（用 labkit bench 或筆記本 05 的 result.save(folder) 匯出一份）"},
    "classroom.refused.no_environment": {
        "en": "no {name} beside the worksheet: labkit bench writes both, so this run was not "
              "saved or copied whole",
        "zh-TW": "工作表旁邊沒有 {name}：labkit bench 會兩個一起寫，所以這一次的結果沒有完整存下或複製"},
    "classroom.refused.unreadable": {"en": "{name} cannot be read ({error})",
                                     "zh-TW": "{name} 無法讀取（{error}）"},
    "classroom.refused.not_a_file": {"en": "{name} is not a plain file",
                                     "zh-TW": "{name} 不是一般檔案"},
    "classroom.refused.too_large": {
        "en": "{name} is {size}, larger than a labkit bench run writes (at most {limit} here)",
        "zh-TW": "{name} 有 {size}，比 labkit bench 一次量測會寫的還大（這裡最多 {limit}）"},
    "classroom.refused.not_utf8": {"en": "{name} is not UTF-8 text (byte {offset})",
                                   "zh-TW": "{name} 不是 UTF-8 文字（第 {offset} 個位元組）"},
    "classroom.refused.bad_json": {"en": "{name} is not valid JSON (line {line}: {error})",
                                   "zh-TW": "{name} 不是有效的 JSON（第 {line} 行：{error}）"},
    "classroom.refused.not_an_object": {"en": "{name} does not hold a JSON object",
                                        "zh-TW": "{name} 裡不是 JSON 物件"},
    "classroom.refused.bad_field": {"en": "{name}: {field} is not a JSON {expected}",
                                    "zh-TW": "{name}：{field} 不是 JSON 的{expected}"},
    "classroom.refused.empty": {"en": "the worksheet is empty", "zh-TW": "工作表是空的"},
    "classroom.refused.no_lines": {"en": "the worksheet has its header but no line",
                                   "zh-TW": "工作表只有標題列，沒有任何一行資料"},
    "classroom.refused.cut": {
        "en": "the worksheet is cut: line {line} ends the file without a newline (labkit bench "
              "ends every line with one), so its last number may be short",
        "zh-TW": "工作表被截斷了：第 {line} 行結束了檔案卻沒有換行（labkit bench 每一行都以換行結尾），"
                 "所以最後一個數字可能少了幾位"},
    "classroom.refused.fields": {
        "en": "the worksheet is cut or not labkit's: line {line} has {found} fields where the "
              "header has {expected}",
        "zh-TW": "工作表被截斷了，或不是 labkit 的：第 {line} 行有 {found} 個欄位，標題列卻有 {expected} 個"},
    "classroom.refused.too_many_lines": {
        "en": "the worksheet has {lines} lines, more than a labkit bench run writes (one per "
              "configuration, at most {limit} here)",
        "zh-TW": "工作表有 {lines} 行，比 labkit bench 一次量測會寫的還多（每個配置一行，這裡最多 "
                 "{limit} 行）"},
    "classroom.refused.not_csv": {"en": "the worksheet is not readable CSV (line {line}: {error})",
                                  "zh-TW": "工作表不是可讀的 CSV（第 {line} 行：{error}）"},
    "classroom.refused.columns_twice": {"en": "the worksheet has the column(s) {columns} twice",
                                        "zh-TW": "工作表的欄位 {columns} 出現了兩次"},
    "classroom.refused.missing_columns": {
        "en": "not a labkit worksheet: missing column(s) {columns}",
        "zh-TW": "不是 labkit 的工作表：缺少欄位 {columns}"},
    "classroom.refused.unknown_columns": {
        "en": "not a labkit worksheet: column(s) {columns} that labkit bench does not write",
        "zh-TW": "不是 labkit 的工作表：有 labkit bench 不會寫的欄位 {columns}"},
    "classroom.refused.empty_cell": {"en": "line {line}: {column} is empty",
                                     "zh-TW": "第 {line} 行：{column} 是空的"},
    "classroom.refused.not_number": {"en": "line {line}: {column} \"{value}\" is not a number",
                                     "zh-TW": "第 {line} 行：{column} 「{value}」不是數字"},
    "classroom.refused.not_flag": {"en": "line {line}: {column} \"{value}\" is not True or False",
                                   "zh-TW": "第 {line} 行：{column} 「{value}」不是 True 或 False"},
    "classroom.refused.bad_slots": {
        "en": "line {line}: {column} \"{value}\" is not a whole number of slots (1 or more)",
        "zh-TW": "第 {line} 行：{column} 「{value}」不是槽位數（1 以上的整數）"},
    "classroom.refused.bad_verdict": {
        "en": "line {line}: {column} \"{value}\" is not a verdict labkit writes (pass, fail: ...)",
        "zh-TW": "第 {line} 行：{column} 「{value}」不是 labkit 會寫的判定（pass、fail: ...）"},
    "classroom.refused.duplicate_line": {
        "en": "lines {first} and {second} are the same configuration ({config}) twice",
        "zh-TW": "第 {first} 行和第 {second} 行是重複的同一個配置（{config}）"},
    "classroom.refused.same_config": {
        "en": "lines {first} and {second} are both {config} and differ only in {columns}: the "
              "classroom compares one line per configuration, so submit one run each",
        "zh-TW": "第 {first} 行和第 {second} 行都是 {config}，只差在 {columns}：教室的比較每個配置"
                 "只取一行，請每種各交一次量測"},
    "classroom.refused.same_worksheet": {
        "en": "the same worksheet as {other} (a copy or a link of it, not another run)",
        "zh-TW": "和 {other} 是同一份工作表（複製或連結過來的，不是另一次量測）"},
    # ---- labkit sim
    "sim.error": {"en": "error: {error}", "zh-TW": "錯誤：{error}"},
    "sim.workload": {"en": "workload: {n} requests, {rate}/s, mean prompt {prompt}, "
                           "mean output {output} tokens",
                     "zh-TW": "工作負載：{n} 個請求，每秒 {rate} 個，提示平均 {prompt} 個 token，"
                              "輸出平均 {output} 個 token"},
    "sim.workload_named": {"en": "workload: {workload}", "zh-TW": "工作負載：{workload}"},
    "sim.cost": {"en": "cost: {cost}", "zh-TW": "步驟成本：{cost}"},
    "sim.goodput": {"en": "goodput: requests/s with TTFT <= {ttft}s and TPOT <= {tpot}s",
                    "zh-TW": "有效吞吐（goodput）：每秒首字等待 <= {ttft}s 且每 token 時間 <= {tpot}s "
                             "的請求數"},
    "sim.wrote": {"en": "wrote {path}", "zh-TW": "已寫入 {path}"},
    # ---- exercise verdicts (labkit.exercises.CheckResult), ready for its owner to use
    "check.exercise": {"en": "Exercise {id}", "zh-TW": "練習 {id}"},
    "check.correct": {"en": "✔ correct", "zh-TW": "✔ 正確"},
    "check.wrong": {"en": "✘ not yet", "zh-TW": "✘ 還不對"},
    "check.unanswered": {"en": "… not answered yet", "zh-TW": "… 尚未作答"},
    "check.answered": {"en": "✎ answered", "zh-TW": "✎ 已作答"},
    # ---- fonts
    "fonts.install": {"en": "no CJK font found for matplotlib, so plots keep English labels. "
                            "Install one (Debian/Ubuntu: `sudo apt-get install fonts-noto-cjk`), "
                            "then restart the kernel.",
                      "zh-TW": "matplotlib 找不到中日韓（CJK）字型，圖表會維持英文標籤。請安裝一套"
                               "（Debian/Ubuntu：`sudo apt-get install fonts-noto-cjk`），"
                               "再重新啟動核心（kernel）。"},
}


def language() -> str:
    """The language in use: ``"en"`` or ``"zh-TW"`` (from LABKIT_LANG, English by default)."""
    return lang()


def chinese() -> bool:
    """Whether the language in use is zh-TW: for code that builds a whole table or text
    differently in Chinese rather than choosing between two strings (:func:`pick`)."""
    return language() == "zh-TW"


def t(key: str, lang: str | None = None, **fmt) -> str:
    """The message ``key`` in ``lang`` (default: :func:`language`), formatted with ``fmt``.
    An unknown key is a KeyError; a language a key lacks falls back to English."""
    try:
        entry = CATALOGUE[key]
    except KeyError:
        raise KeyError(f"no message {key!r} in labkit.lang.i18n.CATALOGUE") from None
    text = entry.get(lang or language()) or entry["en"]
    return text.format(**fmt) if fmt else text


def pick(english: str, chinese: str, lang: str | None = None) -> str:
    """One of two texts written side by side (a plot title, a widget label): ``chinese`` when
    the language is zh-TW. For plots use :func:`labkit.lang.fonts.label`, which also checks that a
    Chinese font is installed."""
    return chinese if (lang or language()) == "zh-TW" else english


class Both:
    """A text in both languages, chosen when it is shown: ``str()`` and f-strings give the
    language in use at that moment. For texts defined once and shown later (an exercise's
    question, an open question's model answer)::

        question = Both("How many slots?", "有幾個槽位？")
        print(f"{question}")       # English, or Chinese under LABKIT_LANG=zh-TW
    """

    __slots__ = ("en", "zh")

    def __init__(self, en: str, zh: str):
        if not en or not zh:
            raise ValueError("Both needs the English and the Chinese text")
        self.en, self.zh = en, zh

    def __str__(self) -> str:
        return pick(self.en, self.zh)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return f"Both({self.en!r}, {self.zh!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Both) and (self.en, self.zh) == (other.en, other.zh)

    def __hash__(self) -> int:
        return hash((self.en, self.zh))


def text(value, lang: str | None = None) -> str:
    """``value`` as shown in ``lang`` (default: the language in use): a :class:`Both` picks
    its language, anything else is ``str(value)``."""
    if isinstance(value, Both):
        return pick(value.en, value.zh, lang)
    return str(value)


# Column headings of the tables the notebooks show (the worksheet's, the engine trace's), in
# Chinese; :func:`show` renames a table's columns with them for display only.
HEADINGS: dict[str, str] = {
    "slots": "槽位數", "n_slots": "槽位數", "slot": "槽位", "kv_unified": "統一 KV",
    "requests": "請求數", "request": "請求", "prompt_tokens": "提示 token 數",
    "completion_tokens": "生成 token 數", "ttft_s": "首字等待 (s)", "ttft_p50_s": "首字等待 p50 (s)",
    "ttft_p90_s": "首字等待 p90 (s)", "latency_s": "延遲 (s)", "tok_per_s": "tok/s",
    "aggregate_tok_s": "總吞吐 (tok/s)", "per_request_tok_s": "每請求 tok/s",
    "correct": "正確", "fits": "放得下", "in_time": "準時", "right": "答對",
    # the benchmark's worksheet (labkit.bench.worksheet) and its per-request rows
    "server": "伺服器", "model_sha256": "模型 sha256", "kv_mode": "KV 模式",
    "pool_n_ctx": "KV 池 n_ctx", "n_ctx_slot": "每槽位 n_ctx", "in_flight": "在途請求數",
    "load": "負載", "workload": "工作負載", "cache_prompt": "提示快取", "round": "輪次",
    "rounds": "輪數", "run_id": "執行 id", "wall_s": "總耗時 (s)", "output_tok_s": "輸出 tok/s",
    "ttft_max_s": "首字等待最大值 (s)", "completion_p50_s": "完成時間 p50 (s)",
    "completion_max_s": "完成時間最大值 (s)", "completion_s": "完成時間 (s)", "errors": "錯誤數",
    "n_requests": "請求數", "sampled_peak_mib": "取樣峰值 (MiB)", "memory": "記憶體",
    "output_tok_s_rounds": "各輪輸出 tok/s", "fits_context": "放得進上下文",
    "ttft_ok": "首字等待達標", "all_correct": "全部答對", "verdict": "判定",
    "doc_id": "文件 id", "error": "錯誤", "answer": "回答", "finish_reason": "結束原因",
    "device": "裝置", "backend": "後端", "gpu_layers": "GPU 上的層數", "n_gpu_layers": "-ngl",
    # the simulator's summary (labkit.sim) and its per-request table
    "label": "設定", "ok": "完成", "length": "達長度上限", "refused": "被拒絕", "failed": "失敗",
    "preemptions": "搶占次數", "duration_s": "時長 (s)", "throughput_tok_s": "吞吐 (tok/s)",
    "requests_per_s": "每秒請求數", "ttft_p50": "首字等待 p50 (s)", "ttft_p90": "首字等待 p90 (s)",
    "ttft_p99": "首字等待 p99 (s)", "tpot_p50": "每 token 時間 p50 (s)",
    "tpot_p90": "每 token 時間 p90 (s)", "e2e_mean": "端到端平均 (s)", "e2e_p50": "端到端 p50 (s)",
    "e2e_p99": "端到端 p99 (s)", "queue_wait_mean": "平均排隊 (s)", "queue_wait_max": "最長排隊 (s)",
    "starved": "餓死數", "goodput_req_s": "有效吞吐 (req/s)", "goodput_tok_s": "有效吞吐 (tok/s)",
    "slo_attainment": "SLO 達成率", "steps": "步驟數", "mean_decode_batch": "平均解碼批次",
    "slot_occupancy": "槽位占用率", "peak_queue": "佇列峰值", "peak_kv": "KV 峰值（格）",
    "kv_use": "KV 使用率（峰值）",
    "kv_capacity": "KV 容量（格）", "served": "已服務", "tokens": "token 數", "rate": "到達率 (req/s)",
    "arrival": "到達時間 (s)", "ttft": "首字等待 (s)", "e2e": "端到端 (s)", "tpot": "每 token 時間 (s)",
    "queue_wait": "排隊 (s)", "output_tokens": "輸出 token 數", "generated": "已生成 token 數",
    "status": "狀態", "policy": "排程策略", "mode": "模式", "batching": "批次方式",
    # the waste of each KV scheme (labkit.sim.waste)
    "scheme": "方案", "reserved_unused": "已保留未使用", "free": "空閒", "waste": "浪費比例",
    "mean_busy": "平均忙碌槽位", "cut short or refused": "截斷或拒絕",
    # planning (labkit.costs.planning): saturation, reading a worksheet, a day, rent or buy, services
    "per_stream_tok_s": "每條串流 tok/s", "saturated": "已飽和",
    "tok_s_vs_1_slot": "tok/s（1 槽位的倍數）", "completion_p50_vs_1_slot": "完成時間 p50（1 槽位的倍數）",
    "single_requests_slower": "單一請求變慢",
    # the reading of a bench run (labkit.bench.reading)
    "tok_s_vs_1": "tok/s（1 槽位的倍數）", "ttft_p50_vs_1": "首字等待 p50（1 槽位的倍數）",
    "completion_p50_vs_1": "完成時間 p50（1 槽位的倍數）", "prompt_share_1": "讀提示占比（1 槽位）",
    "token_interval_vs_1": "token 間隔（1 槽位的倍數）", "ceiling": "上限（倍）",
    "explained": "可解釋（倍）", "ttft_p50_1_s": "1 槽位首字等待 p50 (s)",
    "quantity": "量", "measured": "實測",
    "predicted": "預測", "hour": "時", "max_queue": "最深佇列", "total_tok_s": "總 tok/s",
    "source": "來源", "service": "服務", "context per slot": "每槽位上下文", "kv_mib": "KV 快取 (MiB)",
    "memory_mib": "記憶體 (MiB)", "answer_s": "回答時間 (s)", "tok_s_needed": "所需 tok/s",
    "machines": "機器數",
    # rent or buy (labkit.costs.rentbuy): its options, their summary and the seed's arithmetic
    "option": "方案", "own": "自己買機器", "always on": "租用，一直開著",
    "stopped when idle": "租用，閒置就關機", "serverless": "無伺服器",
    "busy hours a month": "每月忙碌時數", "fixed USD/month": "固定成本（美元/月）",
    "USD per busy hour": "每忙碌小時（美元）", "USD/month at your hours": "你的時數下每月（美元）",
    "crossover h/month": "交叉點（小時/月）", "owning cheaper": "自己買較便宜的範圍",
    "card USD": "顯示卡（美元）", "rent USD/h": "租金（美元/小時）",
    "hours to break even": "回本所需時數", "in the seed's 300-1,000": "落在種子文章的 300-1,000 內",
    # live and in-process runs (labkit.lessons.live, labkit.lessons.llama_server)
    "first difference": "第一個差異", "compared": "比較的文件數", "identical": "完全相同",
    "server_decode_tok_s": "伺服器端解碼 tok/s", "client_decode_tok_s": "用戶端解碼 tok/s",
    "client_tok_s": "用戶端 tok/s", "prefill_and_wait_share": "預填與等待占比",
    "outcome": "結果", "first_token_s": "首字等待 (s)", "finish_s": "完成時間 (s)",
    "task_id": "任務 id", "start_s": "開始 (s)", "end_s": "結束 (s)", "file": "檔案",
    "owner": "負責人", "deadline": "截止日期", "doc": "文件", "KV flag": "KV 旗標",
    "match": "相符", "flags": "旗標", "log": "日誌", "error type": "錯誤類型",
    "predicted pool": "預測的池大小", "step": "步驟",
    # split against unified KV's attention (labkit.lessons.kv_attention)
    "phase": "階段", "decoding": "解碼序列數", "idle caches": "閒置快取數",
    "split tok/s per seq": "分割 每序列 tok/s", "unified tok/s per seq": "統一 每序列 tok/s",
    "split tok/s total": "分割 總 tok/s", "unified tok/s total": "統一 總 tok/s",
    "unified / split": "統一 / 分割",
    # the engine's step trace (labkit.engine.trace) and a request's sampling
    "t_start": "開始 (s)", "t_end": "結束 (s)", "dur_s": "耗時 (s)", "n_tokens": "token 數",
    "n_prefill_tokens": "預填 token 數", "n_prefill_seqs": "預填序列數", "n_decode": "解碼序列數",
    "attended": "注意力讀取格數", "kv_used": "已用 KV 格數", "n_busy": "忙碌槽位數",
    "prefill_attn": "預填注意力配對數", "max_tokens": "回答上限",
    # capacity, tokens, the seed's tables (labkit.costs.capacity, labkit.engine.vocabulary, labkit.lessons.seed_tables)
    "KV type": "KV 型別", "cells (padded)": "格數（補齊後）", "formula MiB": "公式 MiB",
    "n_ctx asked": "要求的 n_ctx",
    "llama.cpp MiB": "llama.cpp MiB", "characters": "字元數", "bytes": "位元組數",
    "chars_per_token": "每 token 字元數", "text": "文字", "source (seed or sim)": "來源",
    "arithmetic busy": "運算忙碌比例", "bandwidth busy": "頻寬忙碌比例", "decode tok/s": "解碼 tok/s",
    "cost per token": "每 token 成本", "batch": "批次中的序列數",
    # the classroom's tables (labkit.lessons.classroom)
    "learner": "學員", "config": "配置", "machine": "機器", "note": "備註",
    "GPU (GiB)": "GPU 記憶體 (GiB)", "llama_cpp": "llama.cpp 版本", "same_model": "同一個模型",
    "configs": "配置數", "all_pass": "全部通過", "same_server": "同一個伺服器", "submission": "繳交",
    # the roofline's prediction (labkit.costs.roofline.predict)
    "decode_tok_s_per_stream": "解碼 tok/s（每條串流）", "decode_tok_s": "解碼 tok/s（合計）",
    "decode_tok_s_no_overlap": "解碼 tok/s（不重疊）", "decode_bound": "解碼受限於",
    "prefill_tok_s": "預填 tok/s",
    # the simulator's per-request table, the rest of its columns
    "id": "id", "user": "使用者", "priority": "優先級", "admitted": "入座時間 (s)",
    "first_token": "首字等待 (s)", "finish": "完成時間 (s)", "reason": "原因",
    "cached_tokens": "快取命中 token 數", "prefix_id": "前綴 id",
}

# Headings made from a pattern (a slot's column, a count of tokens): (regex, Chinese).
HEADING_PATTERNS: list[tuple[str, str]] = [
    (r"^slot (\d+)$", r"槽位 \1"),
    (r"^predicted (.+)$", r"預測 \1"),
    (r"^log (.+)$", r"日誌 \1"),
    (r"^later with (.+)$", r"\1 較晚"),
    (r"^characters in ([\d,]+) tokens$", r"\1 個 token 可容納的字元數"),
    (r"^calc @ (\d+)k tokens$", r"計算：\1k token"),
    (r"^MiB per (\d+)k conversation$", r"每段 \1k 對話的 MiB"),
]


def heading(name: str, headings: dict[str, str] | None = None) -> str:
    """The Chinese heading of a column named ``name`` (:data:`HEADINGS`, ``headings``, then
    :data:`HEADING_PATTERNS`), or ``name`` itself when none applies."""
    import re
    for names in (headings or {}, HEADINGS):
        if name in names:
            return names[name]
    for pattern, chinese in HEADING_PATTERNS:
        if re.match(pattern, name):
            return re.sub(pattern, chinese, name)
    return name


# ---------------------------------------------------------------------------- table cells

#: The worksheet's column titles in English (its Markdown table, and the gates a verdict names);
#: their Chinese are in :data:`HEADINGS`.
TITLES = {
    "server": "server / version", "model_sha256": "model sha256", "kv_mode": "KV mode",
    "pool_n_ctx": "pool n_ctx", "slots": "slots", "n_ctx_slot": "per-slot cap (actual)",
    "in_flight": "in-flight", "load": "load", "workload": "workload",
    "cache_prompt": "cache_prompt", "rounds": "rounds", "wall_s": "wall s",
    "output_tok_s": "output tok/s", "ttft_p50_s": "TTFT p50 s", "ttft_p90_s": "TTFT p90 s",
    "ttft_max_s": "TTFT max s", "completion_p50_s": "completion p50 s",
    "completion_max_s": "completion max s", "errors": "errors", "correct": "correct",
    "n_requests": "requests", "sampled_peak_mib": "sampled peak MiB", "memory": "memory",
    "fits_context": "fits context", "ttft_ok": "TTFT ok", "all_correct": "all correct",
    "verdict": "verdict", "output_tok_s_rounds": "output tok/s per round",
    "device": "device", "backend": "backend", "n_gpu_layers": "-ngl",
}

#: Words a worksheet writes in its cells, and their Chinese.
WORKSHEET_WORDS = {
    "not graded (timing only)": "不評分（只量時間）",
    "not graded (synthetic weights)": "不評分（合成權重）",
    "sampled peak RSS of the server process (no GPU in use; psutil)":
        "伺服器行程的取樣峰值 RSS（沒有使用 GPU；psutil）",
    "sampled peak GPU memory of the server process (NVML)": "伺服器行程的取樣峰值 GPU 記憶體（NVML）",
    "sampled peak GPU memory.used, whole device (NVML)": "整張 GPU 的取樣峰值 memory.used（NVML）",
    "sampled peak GPU memory in use, total - free (ggml_backend_dev_memory)":
        "取樣峰值 GPU 記憶體用量，總量減可用量（ggml_backend_dev_memory）",
    "GPU memory in use, total - free (ggml_backend_dev_memory): 0 in every sample, this driver "
    "reports none in use": "GPU 記憶體用量，總量減可用量（ggml_backend_dev_memory）：每次取樣都是 0，"
                           "這個驅動程式不回報用量",
    "not measured": "未測量",
}

#: Cell values people read, by column: the program's value -> its Chinese. The data keeps the
#: program's words (code, CSV files and the classroom compare them); :func:`show` and
#: :func:`value` put these in their place, on a copy.
CELL_WORDS = {
    "decode_bound": {"bandwidth": "頻寬", "compute": "運算"},
    **{column: WORKSHEET_WORDS for column in ("verdict", "correct", "all_correct", "memory")},
    # the two services of notebooks 07 and 08 (labkit.sim.experiments, labkit.costs.planning)
    "service": {"solo assistant": "一人程式助理", "30-user chat": "30 人聊天"},
    # where notebook 08's speeds come from (labkit.costs.planning.learner_speeds)
    "source": {"notebook 05's worksheet": "筆記本 05 的工作表",
               "this notebook's held-out run": "這本筆記本保留驗證的那一輪"},
    # rent or buy (labkit.costs.rentbuy.summary): the options, and where owning costs less
    "option": {"own": "自己買機器", "always on": "租用，一直開著",
               "stopped when idle": "租用，閒置就關機", "serverless": "無伺服器"},
    "owning cheaper": {"above": "超過交叉點", "below": "低於交叉點", "always": "任何時數",
                       "never": "任何時數都不會", "": ""},
    # what notebook 08 measures and predicts (labkit.costs.planning.prediction_error)
    # the phases of labkit.lessons.kv_attention
    "phase": {"1": "1", "2": "2", "4": "4", "idle": "1 個解碼、3 個閒置"},
    "quantity": {"TTFT p50 s": HEADINGS["ttft_p50_s"], "TTFT mean s": "首字等待平均 (s)",
                 "TTFT p90 s": HEADINGS["ttft_p90_s"]},
}

#: Cell values made from a pattern, by column: (regex, Chinese), as in :data:`HEADING_PATTERNS`.
CELL_PATTERNS = {
    # seed 001's table beside the simulator's and the roofline's (labkit.lessons.seed_tables)
    "source": [(r"^seed (\d+): 7B on a GPU$", r"種子文章 \1：GPU 上的 7B 模型"),
               (r"^simulator: (.+)$", r"模擬器：\1"),
               (r"^roofline: the embedded model on this machine$", "屋頂線：這台機器上的內建模型"),
               (r"^roofline: (.+) on this machine$", r"屋頂線：這台機器上的 \1")],
    # a classroom submission's machine, and the note of the samples labkit ships
    # (labkit.lessons.classroom; data/classroom/*/about.json)
    "machine": [(r"^(\S+) CPUs, no GPU$", r"\1 個 CPU，沒有 GPU"), (r"^(\S+) CPUs, (.+)$", r"\1 個 CPU，\2"),
                (r"^unknown machine \(not in environment.json\)$", "機器不明（environment.json 沒有記錄）")],
    "note": [(r"^SAMPLE made with labkit bench \((\d+) thread, (\d+) documents, (\w+) KV\), "
              r"not a learner's result$",
              r"範例（SAMPLE）：用 labkit bench 做的（\1 個執行緒、\2 份文件、\3 KV），不是學員的結果")],
    # the KV schemes compared at equal memory (labkit.sim.waste.schemes)
    "scheme": [(r"^split, (\d+) slots x (\d+)$", r"分割 KV，\1 個槽位 × \2"),
               (r"^unified, (\d+) slots$", r"統一 KV，\1 個槽位"),
               (r"^paged, (\d+) slots, blocks of (\d+)$", r"分頁 KV，\1 個槽位，每塊 \2 格")],
}

UNGRADED_NOTE = " (fits context and TTFT only: answers not graded)"


def verdict_text(verdict: str, lang: str | None = None) -> str:
    """A worksheet's verdict ("pass", "fail: TTFT ok, all correct", with its note on ungraded
    answers) as people read it in ``lang`` (default: the language in use)."""
    if (lang or language()) != "zh-TW" or not isinstance(verdict, str):
        return verdict
    by_title = {title: HEADINGS.get(key, title) for key, title in TITLES.items()}
    text, note = verdict, ""
    if text.endswith(UNGRADED_NOTE):
        text, note = text[: -len(UNGRADED_NOTE)], "（只看上下文與首字等待：答案未評分）"
    if text == "pass":
        return "通過" + note
    if text.startswith("fail: "):
        gates = [by_title.get(g.strip(), g.strip()) for g in text[len("fail: "):].split(",")]
        return "未通過：" + "、".join(gates) + note
    return verdict


def worksheet_value(v, lang: str | None = None):
    """A worksheet cell as people read it: a verdict, "not graded (...)" or the memory label in
    Chinese under zh-TW; anything else as it is."""
    if (lang or language()) != "zh-TW" or not isinstance(v, str):
        return v
    if v.startswith("pass") or v.startswith("fail: "):
        return verdict_text(v, "zh-TW")
    return WORKSHEET_WORDS.get(v, v)


def value(column: str, v, lang: str | None = None):
    """One cell of ``column`` as people read it in ``lang`` (see :data:`CELL_WORDS` and
    :data:`CELL_PATTERNS`)."""
    import re
    if (lang or language()) != "zh-TW" or not isinstance(v, str):
        return v
    if column == "verdict":
        return worksheet_value(v, "zh-TW")
    if v in CELL_WORDS.get(column, {}):
        return CELL_WORDS[column][v]
    for pattern, chinese in CELL_PATTERNS.get(column, ()):
        if re.match(pattern, v):
            return re.sub(pattern, chinese, v)
    return v


def _with_words(index):
    """``index`` with the values of each level named in :data:`CELL_WORDS` or
    :data:`CELL_PATTERNS` in Chinese (a service's name, a source's)."""
    names = list(index.names)
    if not any(n in CELL_WORDS or n in CELL_PATTERNS for n in names if isinstance(n, str)):
        return index
    if index.nlevels == 1:
        return index.map(lambda v: value(names[0], v, "zh-TW"))
    return index.map(lambda key: tuple(value(n, v, "zh-TW") if isinstance(n, str) else v
                                       for n, v in zip(names, key)))


def show(table, headings: dict[str, str] | None = None, lang: str | None = None):
    """``table`` (a pandas DataFrame) as a notebook shows it: in zh-TW its columns (and the
    names of its index and column levels) renamed with :func:`heading` (``headings`` first,
    then :data:`HEADINGS` and :data:`HEADING_PATTERNS`) and its cells' words with
    :func:`value`, those of its index too (a service's name); unchanged in English. The
    data and the original table are untouched, so code keeps using the program's names."""
    if (lang or language()) != "zh-TW":
        return table
    table = table.set_axis(_with_words(table.index), axis=0)
    if not hasattr(table, "columns"):                  # a Series: its name and its index's
        out = table.rename(heading(table.name, headings)) if isinstance(table.name, str) \
            else table
        if any(isinstance(n, str) for n in out.index.names):
            out = out.rename_axis([heading(n, headings) if isinstance(n, str) else n
                                   for n in out.index.names])
        return out
    words = [c for c in table.columns
             if isinstance(c, str) and (c in CELL_WORDS or c in CELL_PATTERNS)]
    if words:
        table = table.assign(**{c: table[c].map(lambda v, c=c: value(c, v, "zh-TW"))
                                for c in words})
    out = table.rename(columns=lambda c: heading(c, headings) if isinstance(c, str) else c)
    if out.columns.names and any(isinstance(n, str) for n in out.columns.names):
        out.columns = out.columns.set_names([heading(n, headings) if isinstance(n, str) else n
                                             for n in out.columns.names])
    if any(isinstance(n, str) for n in out.index.names):
        out = out.rename_axis([heading(n, headings) if isinstance(n, str) else n
                               for n in out.index.names])
    return out


def placeholders(text: str) -> set[str]:
    """The ``{names}`` a message expects."""
    return {name for _, name, _, _ in Formatter().parse(text) if name is not None}


def missing() -> list[str]:
    """``key/language`` for every message that lacks a language or whose placeholders differ
    from the English text's (empty when the catalogue is complete)."""
    out = []
    for key, entry in CATALOGUE.items():
        for language_ in LANGUAGES:
            text = entry.get(language_)
            if not text:
                out.append(f"{key}/{language_}: missing")
            elif placeholders(text) != placeholders(entry["en"]):
                out.append(f"{key}/{language_}: placeholders {sorted(placeholders(text))} "
                           f"differ from English {sorted(placeholders(entry['en']))}")
    return out
