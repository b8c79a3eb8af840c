"""The model catalogue: the published shapes of the models the workbook talks about.

Restaurant version: before planning a kitchen you need the size of the recipe book
(the weights) and how many notes each guest leaves per word (the KV cache, 已讀筆記).
Both follow from a model's shape: how many layers, how many heads, how wide.

Engineer version: one :class:`ModelShape` per model, with the numbers from its
``config.json`` on the Hugging Face hub (the source is named next to each entry),
and two derived sizes:

- :meth:`ModelShape.kv_bytes_per_token`: ``2 x n_layer x n_head_kv x head_dim x
  bytes per value`` (:func:`labkit.models.kv.bytes_per_token`);
- :meth:`ModelShape.weight_bytes`: ``n_params x bits per weight / 8`` for a GGUF
  quantization (:data:`QUANT_BITS`), an estimate of the file's size.

The catalogue is for arithmetic about models this machine does not hold. The
model a notebook actually runs is described from its own file:
:func:`from_model_info` builds one from a GGUF's metadata (``labkit.models.files.describe``).

    >>> get("llama-3.1-8b").kv_bytes_per_token()
    131072.0
"""

from __future__ import annotations

from dataclasses import dataclass

from . import kv

#: Bits per weight of GGUF weight types, averaged over a whole file.
#: The block types store 32 weights per block: q8_0 = 32 int8 + one f16 scale
#: (34 bytes), q4_0 = 32 nibbles + one f16 scale (18 bytes), q4_1 = 32 nibbles +
#: an f16 scale and an f16 minimum (20 bytes) (ggml's block_q8_0, block_q4_0,
#: block_q4_1). q4_k_m is a mix (most tensors in 4.5-bit Q4_K, some in 6.5625-bit
#: Q6_K); 4.84 is llama.cpp's measured average for Llama 2 7B
#: (tools/quantize/README.md). Real files differ a little: a few small tensors
#: (norms) stay in f32, and some quantizations keep the output layer wider.
QUANT_BITS: dict[str, float] = {
    "f32": 32.0,
    "f16": 16.0,
    "bf16": 16.0,
    "q8_0": 34 * 8 / 32,     # 8.5
    "q4_1": 20 * 8 / 32,     # 5.0
    "q4_0": 18 * 8 / 32,     # 4.5
    "q4_k_m": 4.84,
}


def bits_per_weight(quant: str) -> float:
    try:
        return QUANT_BITS[quant.lower()]
    except KeyError:
        raise ValueError(f"unknown weight quantization {quant!r}; "
                         f"choose one of {', '.join(QUANT_BITS)}") from None


@dataclass(frozen=True)
class ModelShape:
    """A transformer's shape, as llama.cpp reads it from a GGUF (names follow llama.cpp)."""

    key: str                # the catalogue's name for it
    name: str               # the human name
    arch: str               # GGUF general.architecture: "llama", "qwen2", ...
    n_layer: int            # transformer blocks
    n_head: int             # query heads
    n_head_kv: int          # key/value heads (fewer than n_head: grouped-query attention)
    head_dim: int           # numbers per head vector
    n_embd: int             # hidden size
    n_ff: int               # feed-forward (MLP) width
    n_ctx_train: int        # longest context the model was trained for
    n_vocab: int            # vocabulary size
    n_params: int           # total parameters
    rope_theta: float | None = None
    tied_embeddings: bool = False   # the output layer reuses the token embeddings
    stand_in: bool = False          # an invented shape, not a published model (STAND_INS)

    @property
    def gqa_group(self) -> float:
        """Query heads per KV head (1 for classic multi-head attention)."""
        return self.n_head / self.n_head_kv

    def kv_bytes_per_token(self, type_k: str = "f16", type_v: str | None = None) -> float:
        """KV-cache bytes one token takes across all layers (keys plus values)."""
        return kv.bytes_per_token(self.n_layer, self.n_head_kv, self.head_dim, type_k, type_v)

    def weight_bytes(self, quant: str = "q4_k_m") -> float:
        """Estimated weight bytes in a GGUF of this quantization (:data:`QUANT_BITS`)."""
        return self.n_params * bits_per_weight(quant) / 8


SHAPES: dict[str, ModelShape] = {s.key: s for s in (
    # HuggingFaceTB/SmolLM2-135M-Instruct config.json; 134,515,008 parameters
    # (tied embeddings). The workbook's embedded model, in Q4_1.
    ModelShape("smollm2-135m", "SmolLM2-135M", "llama", n_layer=30, n_head=9, n_head_kv=3,
               head_dim=64, n_embd=576, n_ff=1536, n_ctx_train=8192, n_vocab=49152,
               n_params=134_515_008, rope_theta=100_000.0, tied_embeddings=True),
    # meta-llama/Llama-3.2-1B-Instruct config.json; 1,235,814,400 parameters (tied embeddings).
    ModelShape("llama-3.2-1b", "Llama-3.2-1B", "llama", n_layer=16, n_head=32, n_head_kv=8,
               head_dim=64, n_embd=2048, n_ff=8192, n_ctx_train=131072, n_vocab=128256,
               n_params=1_235_814_400, rope_theta=500_000.0, tied_embeddings=True),
    # meta-llama/Llama-3.1-8B-Instruct config.json; 8,030,261,248 parameters.
    ModelShape("llama-3.1-8b", "Llama-3.1-8B", "llama", n_layer=32, n_head=32, n_head_kv=8,
               head_dim=128, n_embd=4096, n_ff=14336, n_ctx_train=131072, n_vocab=128256,
               n_params=8_030_261_248, rope_theta=500_000.0),
    # meta-llama/Llama-3.1-70B-Instruct config.json; 70,553,706,496 parameters.
    ModelShape("llama-3.1-70b", "Llama-3.1-70B", "llama", n_layer=80, n_head=64, n_head_kv=8,
               head_dim=128, n_embd=8192, n_ff=28672, n_ctx_train=131072, n_vocab=128256,
               n_params=70_553_706_496, rope_theta=500_000.0),
    # Qwen/Qwen2.5-7B-Instruct config.json; 7,615,616,512 parameters.
    ModelShape("qwen2.5-7b", "Qwen2.5-7B", "qwen2", n_layer=28, n_head=28, n_head_kv=4,
               head_dim=128, n_embd=3584, n_ff=18944, n_ctx_train=32768, n_vocab=152064,
               n_params=7_615_616_512, rope_theta=1_000_000.0),
    # Qwen/Qwen2.5-32B-Instruct config.json; 32,763,876,352 parameters.
    ModelShape("qwen2.5-32b", "Qwen2.5-32B", "qwen2", n_layer=64, n_head=40, n_head_kv=8,
               head_dim=128, n_embd=5120, n_ff=27648, n_ctx_train=32768, n_vocab=152064,
               n_params=32_763_876_352, rope_theta=1_000_000.0),
    # Not a real model: see STAND_INS.
    ModelShape("gpu-speed-stand-in", "GPU-speed stand-in (not a real model)", "llama",
               n_layer=4, n_head=2, n_head_kv=1, head_dim=64, n_embd=128, n_ff=384,
               n_ctx_train=8192, n_vocab=49152, n_params=7_079_040, rope_theta=10_000.0,
               tied_embeddings=True, stand_in=True),
)}

#: Shapes no model has, for measuring something a real model hides on this machine.
#: ``gpu-speed-stand-in`` (``synthetic:gpu-speed-stand-in``) is a tiny llama: 4 layers 128
#: wide, SmolLM2's vocabulary, 7.1 M weights. On a 2-core CPU one decode step of it takes
#: about a millisecond (1.1 ms at 1 slot, 1.5 ms at 4: ``benchmarks/engine_overhead.py``,
#: 2026-12-03, with another process busy on one core), what a step of a small model takes on
#: a GPU. The host's work between steps (sampling, streaming, building the next batch) is
#: then as large a share of a step as it would be there: labkit's was 16 % of a step at 1 slot
#: and 42 % at 16. Its text is noise and its speed says nothing about any real model.
STAND_INS = tuple(k for k, shape in SHAPES.items() if shape.stand_in)


def names(stand_ins: bool = False) -> list[str]:
    """The catalogue's keys: the published models, and with ``stand_ins`` the invented
    shapes of :data:`STAND_INS` too (never offered where a real model is meant: the capacity
    calculator, the planners)."""
    return [k for k, shape in SHAPES.items() if stand_ins or not shape.stand_in]


def get(key: str) -> ModelShape:
    """The shape called ``key``; a ValueError lists the known keys."""
    try:
        return SHAPES[key.lower()]
    except KeyError:
        raise ValueError(f"unknown model {key!r}; the catalogue knows {', '.join(SHAPES)}") from None


def from_model_info(info) -> ModelShape:
    """A shape from :func:`labkit.models.files.describe` of a GGUF, completed from the same file.

    ``describe`` gives layers, heads, widths, context and parameters; the
    feed-forward width, vocabulary and RoPE base are read here from the file's own
    metadata (the vocabulary from the token-embedding tensor's shape).
    """
    from .gguf import read_header
    header = read_header(info.path)
    md = header.metadata
    arch = info.architecture
    tensors = {t.name: t for t in header.tensors}
    n_ff = md.get(f"{arch}.feed_forward_length")
    n_vocab = md.get(f"{arch}.vocab_size") or tensors["token_embd.weight"].shape[1]
    rope = md.get(f"{arch}.rope.freq_base")
    return ModelShape(
        key=_slug(info.name), name=info.name, arch=arch, n_layer=info.n_layer,
        n_head=info.n_head, n_head_kv=info.n_head_kv, head_dim=info.head_dim,
        n_embd=info.n_embd, n_ff=int(max(n_ff) if isinstance(n_ff, list) else n_ff),
        n_ctx_train=info.n_ctx_train, n_vocab=int(n_vocab), n_params=info.n_params,
        rope_theta=None if rope is None else float(rope),
        tied_embeddings="output.weight" not in tensors)


def _slug(name: str) -> str:
    return "-".join("".join(c if c.isalnum() or c == "." else " " for c in name.lower()).split())
