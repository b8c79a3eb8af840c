"""How long one step takes: the step-cost model and its first-principles presets.

One step is one call to ``llama_decode``: one batch holding a decode token for
every generating sequence plus some prompt tokens. The simulator charges

    step time = a + b * prefill_tokens + c * decode_seqs + d * attended + e * prefill_attn

where ``attended`` is the sum, over the sequences in the batch, of their
context length (KV cells) once this step's tokens are added, and ``prefill_attn``
is the attention work of the step's prompt chunks: a chunk of n tokens after h
cells already held counts n x (h + n/2) (query, key) pairs
(:mod:`labkit.sim.features`), so a P-token prompt costs about e x P^2 / 2 on top
of its b x P.

What each term stands for (restaurant version in brackets):

- ``a``, per step: reading every weight once from memory plus a fixed overhead
  (kernel launches, synchronisation). It does not depend on how many sequences
  share the step. [The cook walks once through the whole recipe book per round,
  however many tables order.] This shared cost is *why batching pays*: decode is
  memory-bound, so eight sequences cost little more than one.
- ``b``, per prompt token: the matrix multiplications, about 2 x parameters
  FLOPs per token, at the chip's attainable FLOP rate. Prefill is compute-bound.
- ``c``, per decoding sequence: the same ~2 x parameters FLOPs for its one
  token, plus host-side work per sequence (copying logits, sampling).
- ``d``, per attended token: reading that token's keys and values
  (KV bytes per token) from memory for attention. A decode token reads every
  cell of its sequence, so decode slows down as the context grows.
- ``e``, per (prompt token, earlier cell) pair: the attention arithmetic of
  prefill, about 4 x layers x heads x head size FLOPs per pair (the q.k
  products and the weighted sum of values). Every prompt token attends to all
  the tokens before it, so this term grows with the square of the prompt and
  makes a prompt token cost more in a long prompt than in a short one.

The presets below derive a, b, c, d, e from spec-sheet numbers. They are
order-of-magnitude starting points, not measurements: calibrate with
:func:`labkit.sim.fit` on a step trace from the real engine before trusting any
absolute time. Assumptions (all overridable through :class:`Hardware`):

- attainable bandwidth = ``bw_eff`` x peak (0.8 on GPUs, 0.7 on CPUs);
- attainable FLOP rate = ``flops_eff`` x dense FP16 peak (0.4 on GPUs: llama.cpp's
  quantized kernels rarely reach the tensor-core peak; 0.3 on CPUs);
- fixed overhead per step = ``overhead_per_layer_s`` x layers (launches scale
  with layer count; 20 us per layer on discrete GPUs, 10 us on CPUs and Apple);
- host-side per-sequence cost = ``sample_s_per_vocab`` x vocabulary size
  (1 ns per vocabulary entry: a pass over the logits);
- KV cache stored as f16;
- prefill attention at the same attainable FLOP rate as the matrix
  multiplications: e = 4 x layers x query heads x head size / (``flops_eff`` x peak).
  A model built by hand without ``attn_flops_per_pair`` gets e = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models import catalog


#: The coefficients, in the order StepCost takes them.
COEFS = ("a", "b", "c", "d", "e")
#: What each coefficient multiplies, and its unit.
TERMS = {
    "a": ("1 per step", "s/step"),
    "b": ("prompt tokens", "s/prompt token"),
    "c": ("decoding sequences", "s/decoding sequence"),
    "d": ("attended cells (all sequences, after the step)", "s/attended cell"),
    "e": ("prefill attention pairs, n (h + n/2) per chunk", "s/pair"),
}
# What each term multiplies, in Chinese (a table shown in the zh-TW edition).
TERMS_ZH = {
    "a": "每步 1", "b": "提示 token 數", "c": "正在解碼的序列數",
    "d": "注意到的格數（所有序列，這一步之後）", "e": "預填注意力配對數，每塊 n (h + n/2)",
}
# What each coefficient is paid per, in Chinese (its unit: ms/步, µs/提示 token ...).
PER_ZH = {"a": "步", "b": "提示 token", "c": "解碼序列", "d": "注意到的格", "e": "預填配對"}


@dataclass(frozen=True)
class StepCost:
    """Step time = a + b * prefill_tokens + c * decode_seqs + d * attended + e * prefill_attn
    (seconds). ``e`` defaults to 0: ``StepCost(a, b, c, d)`` is the model without prefill
    attention."""

    a: float
    b: float
    c: float
    d: float
    name: str = "custom"
    e: float = 0.0

    def __post_init__(self):
        for k in COEFS:
            v = getattr(self, k)
            if not v >= 0:
                raise ValueError(f"coefficient {k} must be a number >= 0, got {v!r}")

    def step_time(self, prefill_tokens: float = 0, decode_seqs: float = 0, attended: float = 0,
                  prefill_attn: float = 0) -> float:
        """Seconds for one step with this composition."""
        return (self.a + self.b * prefill_tokens + self.c * decode_seqs + self.d * attended
                + self.e * prefill_attn)

    def predict(self, steps, slots=None) -> np.ndarray:
        """Predicted ``dur_s`` for each row of a step trace (engine's or simulator's).

        The prefill attention comes from the trace's ``prefill_attn`` column, else from
        the engine's slot trace ``slots``, else is estimated from the step rows
        (:func:`labkit.sim.features.prefill_attention`)."""
        t = (self.a + self.b * np.asarray(steps["n_prefill_tokens"], dtype=float)
             + self.c * np.asarray(steps["n_decode"], dtype=float)
             + self.d * np.asarray(steps["attended"], dtype=float))
        if self.e:
            from .features import prefill_attention
            t = t + self.e * prefill_attention(steps, slots).to_numpy(dtype=float)
        return t

    def decode_tok_s(self, n_seqs: int = 1, context: int = 0) -> float:
        """Total generated tokens/s when ``n_seqs`` sequences of ``context`` cells decode together."""
        return n_seqs / self.step_time(0, n_seqs, n_seqs * (context + 1))

    def prefill_time(self, n_tokens: int, held: int = 0) -> float:
        """Seconds of one step that processes a chunk of ``n_tokens`` prompt tokens after
        ``held`` cells, alone."""
        return self.step_time(n_tokens, 0, held + n_tokens, n_tokens * (held + n_tokens / 2))

    def prefill_tok_s(self, n_tokens: int = 512) -> float:
        """Prompt tokens/s for one prompt of ``n_tokens`` processed in a single step."""
        return n_tokens / self.prefill_time(n_tokens)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in COEFS}

    def __str__(self):
        from ..lang.i18n import chinese
        if chinese():
            scale = {"a": (1e3, "ms"), "b": (1e6, "µs"), "c": (1e6, "µs"), "d": (1e9, "ns"),
                     "e": (1e9, "ns")}
            return f"{self.name}：" + "，".join(f"{k}={getattr(self, k) * x:.3g} {unit}/{PER_ZH[k]}"
                                               for k, (x, unit) in scale.items())
        return (f"{self.name}: a={self.a * 1e3:.3g} ms/step, b={self.b * 1e6:.3g} us/prompt tok, "
                f"c={self.c * 1e6:.3g} us/seq, d={self.d * 1e9:.3g} ns/attended tok, "
                f"e={self.e * 1e9:.3g} ns/prefill pair")


@dataclass(frozen=True)
class Hardware:
    """Spec-sheet numbers for one accelerator (or CPU) and how much of them llama.cpp gets."""

    name: str
    mem_bw: float                 # bytes/s, peak
    flops: float                  # FLOP/s, dense FP16 (CPU: FP32 SIMD) peak
    bw_eff: float = 0.8
    flops_eff: float = 0.4
    overhead_per_layer_s: float = 20e-6
    sample_s_per_vocab: float = 1e-9


@dataclass(frozen=True)
class ModelSpec:
    """What the cost depends on: parameter count, weight bytes, KV bytes per token.

    Built from a :mod:`labkit.models.catalog` shape with :meth:`from_catalog`; every field
    can be changed with :func:`dataclasses.replace` (a measured file size, say).
    """

    name: str
    params: float                 # number of parameters
    weight_bytes: float           # size of the quantized weights (the GGUF file, roughly)
    n_layer: int
    kv_bytes_per_token: float     # 2 x n_layer x n_head_kv x head_dim x bytes/value
    n_vocab: int
    attn_flops_per_pair: float = 0.0   # 4 x n_layer x n_head x head_dim (0: no prefill term)

    @classmethod
    def from_catalog(cls, key: str, quant: str = "q4_k_m", kv_type: str = "f16") -> "ModelSpec":
        """The catalogue's model ``key`` with ``quant`` weights and a ``kv_type`` KV cache."""
        m = catalog.get(key)
        return cls(f"{m.name} {quant.upper()}", m.n_params, m.weight_bytes(quant), m.n_layer,
                   m.kv_bytes_per_token(kv_type), m.n_vocab,
                   4.0 * m.n_layer * m.n_head * m.head_dim)


#: Peak numbers from vendor spec sheets.
HARDWARE: dict[str, Hardware] = {
    # H100 SXM: 3.35 TB/s HBM3, 989 TFLOPS dense FP16/BF16 tensor.
    "h100": Hardware("H100 SXM", 3.35e12, 989e12),
    # H200: 4.8 TB/s HBM3e, same compute as H100.
    "h200": Hardware("H200", 4.8e12, 989e12),
    # A100 80GB SXM: 2.04 TB/s HBM2e, 312 TFLOPS dense FP16 tensor.
    "a100": Hardware("A100 80GB", 2.039e12, 312e12),
    # RTX 4090: 1.008 TB/s GDDR6X, 165 TFLOPS FP16 tensor with FP32 accumulate.
    "rtx4090": Hardware("RTX 4090", 1.008e12, 165e12),
    # Apple M2 (base): 100 GB/s unified memory, about 3.6 TFLOPS GPU FP32.
    "m2": Hardware("Apple M2", 100e9, 3.6e12, bw_eff=0.75, flops_eff=0.4,
                   overhead_per_layer_s=10e-6),
    # A generic desktop CPU: dual-channel DDR5 (~60 GB/s), 8 cores x 2 FMA x 8 FP32 lanes
    # x 2 FLOP x 4 GHz ~ 1 TFLOPS.
    "cpu": Hardware("generic 8-core CPU", 60e9, 1.0e12, bw_eff=0.7, flops_eff=0.3,
                    overhead_per_layer_s=10e-6),
}

#: Models, from the catalogue (shapes and parameter counts: :mod:`labkit.models.catalog`;
#: weight bytes estimated from the quantization's bits per weight). KV cache in f16.
MODELS: dict[str, ModelSpec] = {
    "8b-q4": ModelSpec.from_catalog("llama-3.1-8b", "q4_k_m"),
    # The workbook's embedded model, in the quantization it ships in.
    "smollm2-135m": ModelSpec.from_catalog("smollm2-135m", "q4_1"),
}


def derive(hw: Hardware, model: ModelSpec) -> StepCost:
    """First-principles step cost for ``model`` on ``hw`` (see the module docstring)."""
    bw = hw.mem_bw * hw.bw_eff
    flops = hw.flops * hw.flops_eff
    per_token_compute = 2.0 * model.params / flops
    return StepCost(
        a=model.n_layer * hw.overhead_per_layer_s + model.weight_bytes / bw,
        b=per_token_compute,
        c=per_token_compute + model.n_vocab * hw.sample_s_per_vocab,
        d=model.kv_bytes_per_token / bw,
        name=f"{model.name} on {hw.name}",
        e=model.attn_flops_per_pair / flops,
    )


def preset(hardware: str = "rtx4090", model: str = "8b-q4") -> StepCost:
    """A first-principles :class:`StepCost`: ``preset("h100", "8b-q4")``.

    Hardware: ``h100``, ``h200``, ``a100``, ``rtx4090``, ``m2``, ``cpu``.
    Models: ``8b-q4``, ``smollm2-135m``. Also accepts ``"h100/8b-q4"`` as one string.
    """
    if "/" in hardware:
        hardware, model = hardware.split("/", 1)
    try:
        hw = HARDWARE[hardware.lower()]
    except KeyError:
        raise ValueError(f"unknown hardware {hardware!r}; choose one of {', '.join(HARDWARE)}") from None
    try:
        m = MODELS[model.lower()]
    except KeyError:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}") from None
    return derive(hw, m)


def presets_table():
    """All presets as a DataFrame: coefficients and what they imply."""
    import pandas as pd
    rows = []
    for h in HARDWARE:
        for m in MODELS:
            c = preset(h, m)
            rows.append({
                "hardware": h, "model": m,
                "a_ms": c.a * 1e3, "b_us": c.b * 1e6, "c_us": c.c * 1e6, "d_ns": c.d * 1e9,
                "e_ps": c.e * 1e12,
                "decode_tok_s_1": c.decode_tok_s(1, 512),
                "decode_tok_s_32": c.decode_tok_s(32, 512),
                "prefill_tok_s": c.prefill_tok_s(512),
                "prefill_tok_s_4096": c.prefill_tok_s(4096),
            })
    return pd.DataFrame(rows)


#: The cost used when a simulation is given none.
DEFAULT_COST = preset("rtx4090", "8b-q4")
