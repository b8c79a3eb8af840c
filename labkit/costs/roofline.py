"""Why batching pays, predicted from two figures of your machine and the size of your model.

Restaurant version: to cook one word for a guest, the cook walks the whole recipe book
(the weights) from the shelf to the stove. Walking it for one guest or for eight costs the
same walk; what grows with the guests is only the chopping (the arithmetic). So as long as
the walk is the slow part, serving eight guests at once is almost free. Reading a new
order (prefill) is all chopping: it gains nothing from company.

Engineer version: one llama_decode step costs whichever is slower, moving its bytes or
doing its arithmetic (a *roofline*)::

    step seconds = max(bytes read / memory bandwidth, FLOPs / arithmetic rate)
    bytes read   = weight bytes (once per step) + KV cells attended x KV bytes per cell
    FLOPs        = 2 x matrix parameters per token (+ attention: 4 x layers x heads x
                   head_dim per attended cell)

When the bytes are the slower side, **decode tok/s ~= bandwidth / weight bytes** at batch 1
(the speed formula). B sequences in one step read the weights once, so the aggregate rises
about B-fold until the arithmetic catches up, at :func:`crossover_batch`. Prefill carries
hundreds of tokens per step, so it is compute-bound at any batch: its rate stays flat.

The roofline assumes moving and computing overlap perfectly: the fastest a step can be. The
same figures added up (``overlap=False``: one waits for the other) give the slowest a step
would be if bytes and FLOPs were all it cost. Both count only those, at the two rates
measured with numpy; a real llama_decode also pays a fixed cost per step (building the
graph, handing the work to the threads and waiting for them, the logits) and runs
llama.cpp's quantized kernels, which reach their own share of numpy's arithmetic rate. So a
measured step lands between the two bounds only where those extras are small, and below
both where they are not, as on a small CPU: :func:`bounds_reading` says which, from a
sweep's own numbers.

The arithmetic is pure functions (:class:`ModelCost`, :func:`step_seconds`,
:func:`decode_tok_s`, :func:`prefill_tok_s`, :func:`crossover_batch`, :func:`predict`,
:func:`lockstep_gain`, :func:`prefill_share`, :func:`bounds_reading`). The measurements stand apart:
:func:`measure_bandwidth` (a streaming read of a large numpy array), :func:`measure_matmul`
(a float32 matrix product), :func:`nvml_peak_bandwidth` (a GPU's bus width x memory clock),
:func:`measure_machine` / :func:`machine`, :func:`model_cost` (the GGUF's own tensor table)
and :func:`sweep` (decode and prefill on the real engine, batch 1 to 16, next to both
predictions), shown by :func:`table` and :func:`plot`. docs/ROOFLINE.md has the method and
one machine's figures.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass

from ..machine.atomic import write_atomic
from ..machine.runenv import pick, usable_cores

GB = 1e9
MiB = 2 ** 20

#: Batch sizes of the measured sweep (quick mode: the first four).
BATCHES = (1, 2, 4, 8, 16)
QUICK_BATCHES = (1, 2, 4, 8)
#: Prompt tokens per sequence and tokens each sequence generates in the sweep.
PROMPT_TOKENS, QUICK_PROMPT_TOKENS = 128, 64
NEW_TOKENS, QUICK_NEW_TOKENS = 64, 16
#: The first ordinary token id the sweep's prompts use (low ids are special tokens).
FIRST_PROMPT_TOKEN = 1000


def sweep_sizes() -> tuple[tuple[int, ...], int, int]:
    """(batch sizes, prompt tokens, new tokens) of :func:`sweep` in this mode (quick or full)."""
    return (pick(QUICK_BATCHES, BATCHES), pick(QUICK_PROMPT_TOKENS, PROMPT_TOKENS),
            pick(QUICK_NEW_TOKENS, NEW_TOKENS))


# ---------------------------------------------------------------------------- the machine

@dataclass(frozen=True)
class Machine:
    """What the roofline needs from a machine: how fast it reads memory and how fast it
    multiplies, each with where the figure came from."""

    bandwidth: float            # bytes per second
    flops: float                # floating-point operations per second (inf: not known)
    bandwidth_source: dict | str    # where it came from: {"kind": ..., its figures}, or words
    flops_source: dict | str
    host: str = ""
    cores: int = 0
    measured_at: str = ""       # local time of the measurement
    load_before: float = math.nan   # 1-minute load average around the measurement
    load_after: float = math.nan

    def table(self):
        """A two-column summary for a notebook, in the language in use (where each figure came
        from too: :func:`source_text`)."""
        import pandas as pd

        from ..lang.i18n import t
        flops = (f"{self.flops / GB:,.1f} GFLOP/s" if math.isfinite(self.flops)
                 else t("roofline.machine.not_known"))
        return pd.DataFrame([
            (t("roofline.machine.bandwidth"), f"{self.bandwidth / GB:,.2f} GB/s"),
            (t("roofline.machine.from"), source_text(self.bandwidth_source)),
            (t("roofline.machine.flops"), flops),
            (t("roofline.machine.from"), source_text(self.flops_source)),
            (t("roofline.machine.host"), t("roofline.machine.host_line", host=self.host,
                                           cores=self.cores, when=self.measured_at)),
            (t("roofline.machine.load"), f"{self.load_before:.2f} / {self.load_after:.2f}"),
        ], columns=["", t("table.value")]).set_index("")


def measure_bandwidth(nbytes: int | None = None, repeats: int | None = None,
                      threads: int | None = None) -> float:
    """Bytes per second this machine reads from memory: the best of ``repeats`` sums of a
    ``nbytes`` integer array (default 1 GiB, quick mode 256 MiB, far larger than any CPU
    cache), split among ``threads`` threads (default: every usable core, as llama.cpp uses).
    numpy releases the interpreter lock inside a sum, so the threads read in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    nbytes = nbytes or pick(256 * MiB, 1024 * MiB)
    repeats = repeats or pick(3, 5)
    threads = threads or usable_cores()
    data = np.ones(nbytes // 8, dtype=np.int64)    # written once: every page really exists
    parts = np.array_split(data, threads)
    best = math.inf
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            t0 = time.perf_counter()
            list(pool.map(np.sum, parts))
            best = min(best, time.perf_counter() - t0)
    return data.nbytes / best


def measure_matmul(n: int | None = None, repeats: int = 3) -> float:
    """Floating-point operations per second of numpy's float32 matrix product (its BLAS,
    on the cores it uses): the best of ``repeats`` products of two n x n matrices (default
    n = 2048, quick mode 1024), counted as 2 n^3 operations each."""
    import numpy as np
    n = n or pick(1024, 2048)
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    a @ b                                   # the first product pays for starting the threads
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best


def source_text(source: dict | str, lang: str | None = None) -> str:
    """Where a machine's figure came from, in words: a source :func:`measure_machine` recorded
    (``{"kind": "numpy-sum", "repeats": 3, ...}``) as its catalogue message
    ``roofline.source.<kind>`` in ``lang``; words a caller gave, as they are."""
    if isinstance(source, str):
        return source
    from ..lang.i18n import t
    figures = {k: v for k, v in source.items() if k != "kind"}
    return t(f"roofline.source.{source['kind']}", lang, **figures)


def peak_bandwidth(bus_width_bits: int, max_memory_clock_mhz: float) -> float:
    """A GPU's peak memory bandwidth in bytes/s: bus width x memory clock x 2 (double data
    rate, the convention NVML's memory clock follows).

    >>> round(peak_bandwidth(5120, 2619) / 1e12, 3)     # an H100 SXM: 3.35 TB/s
    3.352
    """
    return bus_width_bits / 8 * max_memory_clock_mhz * 1e6 * 2


def nvml_peak_bandwidth(index: int = 0) -> tuple[float, dict]:
    """(peak bytes/s, where it came from) for GPU ``index``, from NVML's memory bus width and
    maximum memory clock. Raises RuntimeError, saying why, when NVML cannot tell."""
    try:
        import pynvml
    except ImportError:
        raise RuntimeError("the nvidia-ml-py package is not installed") from None
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        raise RuntimeError(f"no NVIDIA GPU found (NVML: {exc})") from None
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else str(name)
        bits = int(pynvml.nvmlDeviceGetMemoryBusWidth(h))
        mhz = float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM))
    except Exception as exc:
        raise RuntimeError(f"NVML could not read GPU {index}'s memory bus: {exc}") from None
    finally:
        pynvml.nvmlShutdown()
    return peak_bandwidth(bits, mhz), {"kind": "nvml-peak", "index": index, "name": name,
                                       "bits": bits, "mhz": f"{mhz:g}"}


def _software_gpu() -> str | None:
    """The name of the software GPU device llama.cpp would use (lavapipe's ``llvmpipe``), or
    None when its first GPU device is a real one or there is none."""
    try:
        from ..engine.devices import software_device
        found = software_device()
    except Exception:
        return None
    return f"{found.name} ({found.description})" if found else None


def measure_machine(*, gpu: bool = False, flops: float | None = None,
                    keep: bool = True) -> Machine:
    """Measure this machine and, unless ``keep=False``, keep the result as its latest
    figures (:func:`machine`).

    CPU (default): bandwidth from :func:`measure_bandwidth`, arithmetic from
    :func:`measure_matmul`. llama.cpp's quantized kernels reach a different share of that
    float32 rate than numpy's BLAS does (compare the measured prefill rate, :func:`sweep`).
    ``gpu=True``: the bandwidth is GPU 0's NVML peak (on a software device, lavapipe, the
    CPU's measured bandwidth, which is the memory it reads); numpy cannot measure a GPU's
    arithmetic, so give ``flops`` (the datasheet's figure) or the prediction is
    bandwidth-bound at every batch.
    """
    load_before = os.getloadavg()[0]
    if gpu:
        try:
            bandwidth, bw_source = nvml_peak_bandwidth()
        except RuntimeError:
            software = _software_gpu()
            if software is None:
                raise
            # A software device (lavapipe) computes on the CPU, out of the CPU's memory.
            threads, nbytes, repeats = usable_cores(), pick(256 * MiB, 1024 * MiB), pick(3, 5)
            bandwidth = measure_bandwidth(nbytes, repeats, threads)
            bw_source = {"kind": "software-device", "device": software, "repeats": repeats,
                         "mib": nbytes // MiB, "threads": threads}
        rate = flops if flops is not None else math.inf
        rate_source = {"kind": "given" if flops is not None else "gpu-flops-unknown"}
    else:
        threads, nbytes, repeats = usable_cores(), pick(256 * MiB, 1024 * MiB), pick(3, 5)
        bandwidth = measure_bandwidth(nbytes, repeats, threads)
        bw_source = {"kind": "numpy-sum", "repeats": repeats, "mib": nbytes // MiB,
                     "threads": threads}
        n = pick(1024, 2048)
        rate = flops if flops is not None else measure_matmul(n)
        rate_source = ({"kind": "given"} if flops is not None else
                       {"kind": "numpy-matmul", "n": n})
    m = Machine(bandwidth, rate, bw_source, rate_source, platform.node(), usable_cores(),
                time.strftime("%Y-%m-%d %H:%M:%S %Z"), load_before, os.getloadavg()[0])
    if keep:
        _save_record(m)
    return m


def machine() -> Machine:
    """This machine's latest measured figures (kept between sessions, so that a notebook, its
    exercise checks and a later session agree), measured now if there are none yet."""
    return latest_machine() or measure_machine()


def latest_machine() -> Machine | None:
    """The figures :func:`measure_machine` last recorded on this host (same name, same
    usable cores), or None."""
    try:
        m = Machine(**json.loads(record_path().read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return m if (m.host, m.cores) == (platform.node(), usable_cores()) else None


def record_path():
    """Where the latest figures are kept: beside labkit's other per-machine files
    (``$LABKIT_CACHE``, default ``~/.cache/labkit``)."""
    from ..models.synthetic import cache_dir
    return cache_dir().parent / "machine.json"


def _save_record(m: Machine) -> None:
    path = record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(asdict(m), indent=1) + "\n")


# ---------------------------------------------------------------------------- the model

@dataclass(frozen=True)
class ModelCost:
    """What one token costs a model, in bytes moved and arithmetic done."""

    name: str
    weight_bytes: int           # tensor bytes one decode step reads (the weights, once)
    file_tensor_bytes: int      # all tensor data in the file
    matrix_params: int          # parameters in the matrix products a token goes through
    output_params: int          # of which the output layer (only tokens whose logits are kept)
    kv_bytes_per_cell: float    # KV bytes one attended cell (token) holds, all layers
    attention_flops_per_cell: int   # 4 x layers x heads x head_dim (scores, then the mix)

    def flops(self, tokens: float, logits: float, attention_cells: float) -> float:
        """Arithmetic of a step: ``tokens`` through the layers, ``logits`` of them through the
        output layer, ``attention_cells`` (query token, cell) pairs attended."""
        return (2 * (self.matrix_params - self.output_params) * tokens
                + 2 * self.output_params * logits
                + self.attention_flops_per_cell * attention_cells)

    @property
    def flops_per_token(self) -> float:
        """A decoded token's arithmetic without attention: 2 x matrix parameters."""
        return 2 * self.matrix_params

    @property
    def prefill_flops_per_token(self) -> float:
        """A prompt token's arithmetic without attention (no logits but the last one's)."""
        return 2 * (self.matrix_params - self.output_params)


def cost_from_tensors(name: str, tensors, n_layer: int, n_head: int, head_dim: int,
                      kv_bytes_per_cell: float) -> ModelCost:
    """A :class:`ModelCost` from a GGUF tensor table (``TensorInfo``: name, shape, nbytes).

    A decode step reads every tensor but the token-embedding table, of which it only looks
    up one row per token; when the model has no ``output.weight`` the output layer *is* that
    table (tied embeddings), so it is read whole and multiplied. Matrix parameters are the
    2-D tensors a token is multiplied by: every 2-D tensor but the embedding lookup.
    """
    by_name = {t.name: t for t in tensors}
    tied = "output.weight" not in by_name
    output = by_name["token_embd.weight" if tied else "output.weight"]
    lookup_only = set() if tied else {"token_embd.weight"}
    unknown = [t.name for t in tensors if t.nbytes is None]
    if unknown:
        raise ValueError(f"{name}: tensor types of unknown size: {', '.join(unknown[:3])}")
    return ModelCost(
        name=name,
        weight_bytes=sum(t.nbytes for t in tensors if t.name not in lookup_only),
        file_tensor_bytes=sum(t.nbytes for t in tensors),
        matrix_params=sum(t.n_elements for t in tensors
                          if len(t.shape) == 2 and t.name not in lookup_only),
        output_params=output.n_elements,
        kv_bytes_per_cell=kv_bytes_per_cell,
        attention_flops_per_cell=4 * n_layer * n_head * head_dim)


def model_cost(model=None, kv_type: str = "f16") -> ModelCost:
    """The :class:`ModelCost` of a GGUF (default: the embedded model), read from its own
    header: tensor sizes from its tensor table, heads and layers from its metadata."""
    from ..models import kv
    from ..models.gguf import read_header
    from ..models.files import describe
    info = describe(model, with_hash=False)
    header = read_header(info.path)
    return cost_from_tensors(info.name, header.tensors, info.n_layer, info.n_head,
                             info.head_dim, kv.model_bytes_per_token(info, kv_type))


# ---------------------------------------------------------------------------- the arithmetic

def step_times(m: Machine, c: ModelCost, *, tokens: float, logits: float, kv_cells: float,
               attention_cells: float) -> tuple[float, float]:
    """(seconds moving bytes, seconds computing) of one llama_decode: the weights once plus
    ``kv_cells`` KV cells read at the machine's bandwidth, and the step's arithmetic
    (:meth:`ModelCost.flops`) at its arithmetic rate."""
    moving = (c.weight_bytes + kv_cells * c.kv_bytes_per_cell) / m.bandwidth
    return moving, c.flops(tokens, logits, attention_cells) / m.flops


def step_seconds(m: Machine, c: ModelCost, *, tokens: float, logits: float, kv_cells: float,
                 attention_cells: float, overlap: bool = True) -> float:
    """One llama_decode's time from :func:`step_times`. ``overlap=True``: the roofline, the
    slower of moving and computing (the two overlap perfectly, the fastest a step can be).
    ``overlap=False``: their sum (one waits for the other, the slowest it should be)."""
    moving, computing = step_times(m, c, tokens=tokens, logits=logits, kv_cells=kv_cells,
                                   attention_cells=attention_cells)
    return max(moving, computing) if overlap else moving + computing


def decode_step_seconds(m: Machine, c: ModelCost, batch: int, context: float = 0, *,
                        overlap: bool = True) -> float:
    """One decode step of ``batch`` sequences, each attending ``context`` cells."""
    cells = batch * context
    return step_seconds(m, c, tokens=batch, logits=batch, kv_cells=cells, attention_cells=cells,
                        overlap=overlap)


def decode_tok_s(m: Machine, c: ModelCost, batch: int, context: float = 0, *,
                 overlap: bool = True) -> float:
    """Aggregate decode tokens/s of ``batch`` sequences decoded together (per stream: divide
    by ``batch``). With the roofline at batch 1 and a short context this is the speed
    formula, bandwidth / weight bytes, unless the arithmetic is slower still."""
    return batch / decode_step_seconds(m, c, batch, context, overlap=overlap)


def decode_bound(m: Machine, c: ModelCost, batch: int, context: float = 0) -> str:
    """``"bandwidth"`` or ``"compute"``: which side of the roofline a decode step is on."""
    cells = batch * context
    moving, computing = step_times(m, c, tokens=batch, logits=batch, kv_cells=cells,
                                   attention_cells=cells)
    return "bandwidth" if moving >= computing else "compute"


def crossover_batch(m: Machine, c: ModelCost, context: float = 0) -> float:
    """The batch at which decode stops being bandwidth-bound: where reading the weights
    (plus each sequence's ``context`` KV cells) takes as long as the batch's arithmetic,

        (W + B k x) / bandwidth = B (f + a x) / rate
        =>  B = (W / bandwidth) / ((f + a x) / rate - k x / bandwidth)

    with W weight bytes, k KV bytes per cell, x the context, f FLOPs per token, a attention
    FLOPs per cell. ``inf`` when the arithmetic never catches up (an unknown arithmetic rate,
    or KV reads that grow as fast as the work)."""
    per_seq_kv, per_seq_compute = step_times(m, c, tokens=1, logits=1, kv_cells=context,
                                             attention_cells=context)
    per_seq_kv -= c.weight_bytes / m.bandwidth
    if per_seq_compute <= per_seq_kv:
        return math.inf
    return (c.weight_bytes / m.bandwidth) / (per_seq_compute - per_seq_kv)


def prefill_step_seconds(m: Machine, c: ModelCost, batch: int, prompt_tokens: int, *,
                         overlap: bool = True) -> float:
    """One step that reads ``batch`` whole prompts of ``prompt_tokens`` tokens (causal
    attention: token i attends i cells; logits only for each prompt's last token)."""
    tokens = batch * prompt_tokens
    pairs = batch * prompt_tokens * (prompt_tokens + 1) / 2
    return step_seconds(m, c, tokens=tokens, logits=batch, kv_cells=tokens,
                        attention_cells=pairs, overlap=overlap)


def prefill_tok_s(m: Machine, c: ModelCost, batch: int, prompt_tokens: int, *,
                  overlap: bool = True) -> float:
    """Prompt tokens/s when ``batch`` prompts are read in one step. Compute-bound: about
    the arithmetic rate / (2 x matrix parameters), whatever the batch."""
    return batch * prompt_tokens / prefill_step_seconds(m, c, batch, prompt_tokens,
                                                        overlap=overlap)


def predict(m: Machine, c: ModelCost, batches=BATCHES, context: float = 0,
            prompt_tokens: int = PROMPT_TOKENS):
    """The prediction, one row per batch size: decode tok/s per stream and in all (each
    sequence attending ``context`` cells) on the roofline and without overlap, which side of
    the roofline a step is on, and the prefill rate for prompts of ``prompt_tokens``."""
    import pandas as pd
    rows = []
    for b in batches:
        agg = decode_tok_s(m, c, b, context)
        rows.append({"batch": b, "decode_tok_s_per_stream": agg / b, "decode_tok_s": agg,
                     "decode_tok_s_no_overlap": decode_tok_s(m, c, b, context, overlap=False),
                     "decode_bound": decode_bound(m, c, b, context),
                     "prefill_tok_s": prefill_tok_s(m, c, b, prompt_tokens)})
    return pd.DataFrame(rows).set_index("batch")


def lockstep_seconds(prompt_tokens: float, answer_tokens: float, batch: int,
                     prefill_tok_s: float, decode_tok_s: float) -> float:
    """Seconds to serve ``batch`` requests together: their prompts read at the prefill rate
    (compute-bound, so batching does not shorten it), then their answers decoded in lockstep
    at ``decode_tok_s``, the aggregate decode rate at that batch."""
    return batch * prompt_tokens / prefill_tok_s + batch * answer_tokens / decode_tok_s


def lockstep_gain(prompt_tokens: float, answer_tokens: float, batch: int,
                  prefill_tok_s: float, decode_tok_s_1: float, decode_tok_s_b: float) -> float:
    """Output tokens/s of ``batch`` slots over one slot, for requests of ``prompt_tokens``
    in and ``answer_tokens`` out: only the decode part gets faster with company.

    >>> round(lockstep_gain(178, 35, 4, 352, 149, 202), 2)   # the extraction set
    1.09
    """
    one = lockstep_seconds(prompt_tokens, answer_tokens, 1, prefill_tok_s, decode_tok_s_1)
    together = lockstep_seconds(prompt_tokens, answer_tokens, batch, prefill_tok_s,
                                decode_tok_s_b)
    return batch * one / together


def prefill_share(prompt_tokens: float, answer_tokens: float, prefill_tok_s: float,
                  decode_tok_s: float) -> float:
    """The share of one request's time spent reading its prompt, served alone.

    >>> round(prefill_share(178, 35, 352, 149), 2)
    0.68
    """
    pre = prompt_tokens / prefill_tok_s
    return pre / (pre + answer_tokens / decode_tok_s)


# ---------------------------------------------------------------------------- the measurement

def sweep(batches=None, prompt_tokens: int | None = None, new_tokens: int | None = None, *,
          model=None, m: Machine | None = None, n_threads: int | None = None,
          n_gpu_layers: int = 0):
    """Decode and prefill on the real engine at each batch size, next to the prediction.

    For each batch B (default 1, 2, 4, 8, 16; quick mode 1-8) a fresh in-process
    :class:`~labkit.engine.Engine` with B split-KV slots gets B requests at once
    (:func:`lockstep_steps`), each a prompt of ``prompt_tokens`` ordinary tokens (default 128,
    quick 64) and exactly ``new_tokens`` answer tokens (default 64, quick 16;
    end-of-generation ignored), like llama-batched-bench. The engine's step trace times every
    llama_decode alone (no sampling, no streaming):

    - **decode**: the steps carrying one new token for each of the B sequences and no
      prompt: tokens / seconds of those steps;
    - **prefill**: the steps carrying prompt tokens only: prompt tokens / seconds
      (``seqs_per_step``: how many prompts shared a step).

    The predictions are :func:`step_seconds` of the very same steps (their tokens and the KV
    cells they attended) on machine ``m`` (default :func:`machine`): ``predicted_tok_s`` on
    the roofline, ``no_overlap_tok_s`` with moving and computing added up; ``ratio`` and
    ``ratio_no_overlap`` are measured / predicted. ``attrs`` keeps the machine, the model
    cost, the sizes, the measured steps themselves (``steps``: the engine's step rows with
    their ``batch``, ready for :func:`labkit.sim.fit.fit`), the 1-minute load average before
    and after, and the cores other processes used meanwhile.
    """
    import pandas as pd

    from ..models import kv
    from ..bench.harness import ForeignCPU
    from ..engine import EngineConfig
    from ..models.files import resolve_model
    default_batches, default_p, default_n = sweep_sizes()
    batches = tuple(batches or default_batches)
    p, n = prompt_tokens or default_p, new_tokens or default_n
    path = str(resolve_model(model))
    cost = model_cost(path)
    m = m or machine()
    prompt = list(range(FIRST_PROMPT_TOKEN, FIRST_PROMPT_TOKEN + p))
    rows, kept, configs = [], [], []
    load_before = os.getloadavg()[0]
    with ForeignCPU() as others:
        for b in batches:
            cfg = EngineConfig(path, n_ctx=b * kv.pad(p + n + 1), n_slots=b, kv_unified=False,
                               n_batch=max(2048, b * p), n_threads=n_threads,
                               n_gpu_layers=n_gpu_layers)
            configs.append(cfg)
            steps = _pure_steps(lockstep_steps(cfg, prompt, b, n), b)
            rows += _phase_rows(m, cost, b, steps)
            kept.append(steps.assign(batch=b))
    df = pd.DataFrame(rows)
    df["ratio"] = df["measured_tok_s"] / df["predicted_tok_s"]
    df["ratio_no_overlap"] = df["measured_tok_s"] / df["no_overlap_tok_s"]
    from ..bench.provenance import label
    df.attrs.update(measured_on=[label(c) for c in configs], machine=m, cost=cost,
                    prompt_tokens=p, new_tokens=n,
                    steps=pd.concat(kept, ignore_index=True),
                    load_before=load_before, load_after=os.getloadavg()[0],
                    other_cores=others.cores, threads=n_threads or usable_cores())
    return df


def lockstep_steps(config, prompt: list[int], batch: int, new_tokens: int):
    """The engine's step trace of ``batch`` requests that start together: each reads
    ``prompt`` and generates exactly ``new_tokens`` tokens, greedy, end-of-generation ignored.

    The engine starts a step as soon as one request is waiting, so requests submitted one
    after another can land in different steps. To hand it all ``batch`` prompts at once, a
    one-token request goes first and its event callback holds the engine thread until the
    others are queued; its own step is cleared from the trace before they start.
    """
    import threading

    from ..engine import Engine, SamplingParams
    from ..machine.runenv import log_to_file
    log_to_file()     # the engine's log goes to a file, not a notebook cell
    holding, queued = threading.Event(), threading.Event()

    def hold(event) -> None:        # on the engine thread, at the one-token request's events
        holding.set()
        queued.wait()

    with Engine(config) as eng:
        gate = eng.submit(prompt[:1], SamplingParams(max_tokens=1, temperature=0,
                                                     cache_prompt=False), on_event=hold)
        holding.wait()
        try:
            handles = [eng.submit(prompt, SamplingParams(max_tokens=new_tokens, temperature=0,
                                                         ignore_eos=True, cache_prompt=False))
                       for _ in range(batch)]
            eng.clear_trace()
        finally:
            queued.set()            # never leave the engine thread waiting
        gate.result()
        for h in handles:
            h.result()
        return eng.trace_df()


def _phase_masks(steps, batch: int):
    """(decode, prefill): the steps that decode one token for each of the ``batch`` sequences
    and nothing else, and the steps that read prompts only."""
    decode = (steps["n_prefill_tokens"] == 0) & (steps["n_decode"] == batch)
    prefill = (steps["n_decode"] == 0) & (steps["n_prefill_tokens"] > 0)
    return decode, prefill


def _pure_steps(steps, batch: int):
    """The steps of a trace that are pure decode of the whole batch or pure prefill."""
    decode, prefill = _phase_masks(steps, batch)
    return steps[decode | prefill]


def _phase_rows(m: Machine, c: ModelCost, batch: int, steps) -> list[dict]:
    """The decode row and the prefill row of one batch size, from its step trace."""
    decode, prefill = _phase_masks(steps, batch)
    rows = []
    for phase, part, column in (("decode", steps[decode], "n_decode"),
                                ("prefill", steps[prefill], "n_prefill_tokens")):
        seconds, n_tok = float(part["dur_s"].sum()), int(part[column].sum())
        rows.append({
            "batch": batch, "phase": phase, "steps": len(part), "tokens": n_tok,
            "seconds": seconds,
            "measured_tok_s": _rate(n_tok, seconds),
            "predicted_tok_s": _rate(n_tok, sum(_predicted_step(m, c, r) for r in
                                                part.itertuples())),
            "no_overlap_tok_s": _rate(n_tok, sum(_predicted_step(m, c, r, overlap=False)
                                                 for r in part.itertuples())),
            "seqs_per_step": (float(part["n_prefill_seqs"].mean()) if phase == "prefill"
                              else float(batch)) if len(part) else math.nan,
        })
    return rows


def _rate(tokens: int, seconds: float) -> float:
    return tokens / seconds if seconds > 0 else math.nan


def _predicted_step(m: Machine, c: ModelCost, r, overlap: bool = True) -> float:
    """:func:`step_seconds` of one traced decode-only or prefill-only step (a row of the
    engine's step table); a prefill step holds whole prompts, each from its first cell."""
    if r.n_prefill_tokens == 0:
        return step_seconds(m, c, tokens=r.n_decode, logits=r.n_decode, kv_cells=r.attended,
                            attention_cells=r.attended, overlap=overlap)
    per_seq = r.n_prefill_tokens / r.n_prefill_seqs
    return step_seconds(m, c, tokens=r.n_prefill_tokens, logits=r.n_prefill_seqs,
                        kv_cells=r.attended,
                        attention_cells=r.n_prefill_seqs * per_seq * (per_seq + 1) / 2,
                        overlap=overlap)


def _batch_list(batches, lang: str) -> str:
    """``batches`` (sorted ints) as a phrase: "every batch (1-16)" when they are all of the
    sweep's, else "batch 1, 2 and 4"."""
    b = [int(x) for x in batches]
    if lang == "zh":
        return "批次 " + "、".join(map(str, b))
    return "batch " + (str(b[0]) if len(b) == 1 else ", ".join(map(str, b[:-1])) + f" and {b[-1]}")


def _span(values) -> str:
    lo, hi = float(min(values)), float(max(values))
    return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"


def bounds_reading(df, phase: str = "decode") -> list[tuple[str, str]]:
    """Where a sweep's measured ``phase`` steps (``"decode"`` or ``"prefill"``) landed
    against the two predictions, in English and Chinese, one line per case that occurred:
    slower than even the no-overlap bound (``ratio_no_overlap`` < 1), between the bounds
    (``ratio`` <= 1 <= ``ratio_no_overlap``) or faster than the roofline (``ratio`` > 1),
    each with the batches and the ratios it rests on. It states the sweep's figures and
    asserts nothing about them."""
    rows = df[df["phase"] == phase].sort_values("batch")
    rows = rows[rows["ratio"].notna() & rows["ratio_no_overlap"].notna()]
    every = len(rows) == len(df[df["phase"] == phase]) and len(rows) > 1
    names = {"decode": ("decode", "解碼"), "prefill": ("prefill", "預填")}[phase]
    out = []
    cases = (("below", rows["ratio_no_overlap"] < 1), ("above", rows["ratio"] > 1),
             ("between", (rows["ratio"] <= 1) & (rows["ratio_no_overlap"] >= 1)))
    for case, mask in cases:
        part = rows[mask]
        if part.empty:
            continue
        if every and len(part) == len(rows):
            b_en = f"every batch ({int(part['batch'].min())}-{int(part['batch'].max())})"
            b_zh = f"每個批次（{int(part['batch'].min())}-{int(part['batch'].max())}）"
        else:
            b_en, b_zh = _batch_list(part["batch"], "en"), _batch_list(part["batch"], "zh")
        roof, no = _span(part["ratio"]), _span(part["ratio_no_overlap"])
        if case == "below":
            out.append((
                f"{names[0]}, {b_en}: slower than even the no-overlap bound (measured / "
                f"no-overlap {no}): a step cost more than its bytes and its arithmetic at the "
                f"measured rates added up, so what the bounds leave out (a fixed cost per "
                f"step, llama.cpp's kernels against numpy's arithmetic rate) weighs more here",
                f"{names[1]}，{b_zh}：比不重疊的界線還慢（實測 / 不重疊 {no}）：一個步驟花的時間，"
                f"比它的位元組和運算以量到的速率相加還多，所以界線沒算進去的東西（每步固定的成本、"
                f"llama.cpp 的核心對上 numpy 的運算速率）在這裡更重"))
        elif case == "above":
            out.append((
                f"{names[0]}, {b_en}: faster than the roofline (measured / roofline {roof}): "
                f"llama.cpp beat a rate measured here (its kernels against numpy's, or its "
                f"reads against the measured bandwidth)",
                f"{names[1]}，{b_zh}：比屋頂線還快（實測 / 屋頂線 {roof}）：llama.cpp 超過了這裡"
                f"量到的某個速率（它的核心對上 numpy 的，或它的讀取對上量到的頻寬）"))
        else:
            out.append((
                f"{names[0]}, {b_en}: between the roofline and the no-overlap bound (measured "
                f"/ roofline {roof}, measured / no-overlap {no}): a step cost about what its bytes "
                f"and its arithmetic predict, the two partly overlapping",
                f"{names[1]}，{b_zh}：落在屋頂線和不重疊的界線之間（實測 / 屋頂線 {roof}，"
                f"實測 / 不重疊 {no}）：一個步驟花的時間大約就是它的位元組和運算所預測的，兩者部分重疊"))
    return out


def gain_reading(df, batch: int = 4) -> tuple[str, str] | None:
    """The measured decode gain of ``batch`` over batch 1 against the gains the two predictions
    give (the roofline's and the no-overlap bound's), in English and Chinese: above both, below
    both, or between them, and what that says. ``None`` when the sweep lacks either batch."""
    dec = df[df["phase"] == "decode"].set_index("batch")
    if 1 not in dec.index or batch not in dec.index:
        return None
    gain = {c: float(dec.loc[batch, c] / dec.loc[1, c])
            for c in ("measured_tok_s", "predicted_tok_s", "no_overlap_tok_s")}
    x, roof, no = gain["measured_tok_s"], gain["predicted_tok_s"], gain["no_overlap_tok_s"]
    lo, hi = sorted((roof, no))
    head_en = (f"batch {batch} / batch 1: measured x{x:.2f} against the roofline's x{roof:.2f} "
               f"and the no-overlap bound's x{no:.2f}")
    head_zh = (f"批次 {batch} / 批次 1：實測 {x:.2f} 倍，屋頂線預測 {roof:.2f} 倍，不重疊界線預測 "
               f"{no:.2f} 倍")
    if x > hi:
        return (f"{head_en}: above both. Batching paid more than the bytes and the arithmetic "
                f"predict, so a cost the batch shares and the bounds leave out (a fixed cost per "
                f"step) weighs more in this machine's steps than the arithmetic each sequence adds",
                f"{head_zh}：比兩者都高。批次帶來的好處比位元組和運算預測的還多，所以這台機器的步驟裡，"
                f"有一個整批共用、界線沒算進去的成本（每步固定的成本），比每條序列多加的運算還重")
    if x < lo:
        return (f"{head_en}: below both. Each sequence added more to a step than its arithmetic "
                f"at the measured rate predicts (llama.cpp's kernels run below numpy's rate here), "
                f"so batching paid less than either bound",
                f"{head_zh}：比兩者都低。每多一條序列，一步多花的時間比它的運算以量到的速率算的還多"
                f"（llama.cpp 的核心在這裡比 numpy 的速率慢），所以批次帶來的好處比兩條界線都少")
    return (f"{head_en}: between the two, as the bounds predict for a step whose bytes and "
            f"arithmetic partly overlap",
            f"{head_zh}：落在兩者之間，正是界線對位元組和運算部分重疊的步驟所預測的")


def table(df):
    """The sweep as one line per batch: decode (in all and per stream) and prefill, measured
    next to both predictions, and the ratios. A table to read: under LABKIT_LANG=zh-TW its
    headings are Chinese."""
    values = {"measured_tok_s": "measured tok/s", "predicted_tok_s": "roofline tok/s",
              "ratio": "measured / roofline", "no_overlap_tok_s": "no-overlap tok/s",
              "ratio_no_overlap": "measured / no-overlap"}
    out = df.pivot(index="batch", columns="phase", values=list(values))
    out = out.swaplevel(axis=1)[[(ph, v) for ph in ("decode", "prefill") for v in values]]
    out.columns = [f"{phase} {values[v]}" for phase, v in out.columns]
    out.insert(1, "decode measured tok/s per stream",
               out["decode measured tok/s"] / out.index.to_numpy())
    from ..lang.i18n import show
    phases = {"decode": "解碼", "prefill": "預填"}
    words = {"measured tok/s": "實測 tok/s", "roofline tok/s": "屋頂線 tok/s",
             "measured / roofline": "實測 / 屋頂線", "no-overlap tok/s": "不重疊 tok/s",
             "measured / no-overlap": "實測 / 不重疊"}
    zh = {f"{ph} {en}": f"{phases[ph]} {cn}" for ph in phases for en, cn in words.items()}
    zh["decode measured tok/s per stream"] = "解碼 每條串流實測 tok/s"
    return show(out, zh)


def plot(df):
    """Measured against predicted, against batch size: decode in all (left) and prefill
    (right); the roofline (moving and computing overlap), the no-overlap line (they add up),
    the bandwidth-only line (B x bandwidth / weight bytes) and the arithmetic ceiling.
    Returns the figure."""
    import matplotlib.pyplot as plt

    from ..lang.fonts import label as _L
    m, c = df.attrs["machine"], df.attrs["cost"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for axis, phase, title in (
            (left, "decode", _L("decode: all streams together", "解碼：所有串流合計")),
            (right, "prefill", _L("prefill: prompt tokens", "預填：提示的 token"))):
        part = df[df["phase"] == phase].sort_values("batch")
        axis.plot(part["batch"], part["measured_tok_s"], "o-", color="#3a76c4", lw=2,
                  label=_L("measured", "實測"))
        axis.plot(part["batch"], part["predicted_tok_s"], "s--", color="#e6862a",
                  label=_L("roofline: max(memory, arithmetic)", "屋頂線：max(記憶體, 運算)"))
        axis.plot(part["batch"], part["no_overlap_tok_s"], "^:", color="#4a9a5b",
                  label=_L("no overlap: memory + arithmetic", "不重疊：記憶體 + 運算"))
        axis.set_xscale("log", base=2)
        axis.set_xticks(list(part["batch"]), [str(b) for b in part["batch"]])
        axis.set_xlabel(_L("batch (sequences in one step)", "批次中的序列數（一個步驟裡有幾個序列）"))
        axis.set_ylabel("tokens/s")
        axis.set_title(title, loc="left", fontsize=10)
    dec = df[df["phase"] == "decode"].sort_values("batch")
    b = dec["batch"].to_numpy()
    left.plot(b, b * m.bandwidth / c.weight_bytes, ":", color="#7f7f7f",
              label=_L("bandwidth only: B x bandwidth / weight bytes",
                       "只看頻寬：B × 頻寬 / 權重位元組"))
    if math.isfinite(m.flops):
        left.axhline(m.flops / c.flops_per_token, color="#b85450", lw=1,
                     label=_L("arithmetic ceiling: rate / (2 x parameters)",
                              "運算上限：算力 / (2 × 參數量)"))
    left.set_ylim(0, 1.6 * max(dec[["measured_tok_s", "predicted_tok_s"]].max()))
    right.set_ylim(0, None)
    for axis in (left, right):
        axis.legend(fontsize=8, loc="upper left")
    if df.attrs.get("measured_on"):
        from ..bench.provenance import caption
        fig.suptitle(caption(df, plot=True), fontsize=8, x=0.01, ha="left")
    fig.tight_layout()
    return fig
