"""Synthetic models: a real model's shape with random weights, for timing on your own machine.

"How would an 8B model batch on my card?" needs an 8B model's shape, not its knowledge.
``synthetic:NAME[:QUANT]`` is accepted wherever labkit takes a model path::

    labkit doctor --model synthetic:llama-3.1-8b         # writes the file once, loads it
    labkit bench --model synthetic:llama-3.2-1b          # timing only: answers are not graded
    labkit serve -m synthetic:smollm2-135m:f16

``NAME`` is a key of :mod:`labkit.models.catalog` (``smollm2-135m``, ``llama-3.2-1b``,
``llama-3.1-8b``, ``llama-3.1-70b``, ``qwen2.5-7b``, ...); ``QUANT`` is ``q4_0`` (the
default, for every shape), ``q8_0`` or ``f16``. Q4_0 is the default because it is what one
card serves a model in: 4.5 bits per weight, close to the 4-bit K-quants people download
(Q4_K_M, about 4.8), with fast llama.cpp kernels on CPUs and GPUs alike; an 8B model then
needs 4.2 GB instead of 15 GB in f16. The first use writes a GGUF file under
``$LABKIT_CACHE/synthetic/`` (default ``~/.cache/labkit/synthetic/``), named after the
model, the quantization and this writer's version; later uses find it there. The writer is
seeded, so a name gives the same bytes (the same sha256) on every machine. Writing costs
what the disk needs for the file's size, nothing more: the weights are random bytes in the
quantized format itself, one random buffer tiled over every tensor, never floats quantized
one by one (the 4.2 GB 8B Q4_0 file: 18.7 s on a disk where ``dd`` writes as much in 14.7 s,
of which 0.3 s is the writer's own CPU time).

What is real, and so measured faithfully:

- the architecture (``llama`` or ``qwen2``) with the model's published layer count, query
  and key/value heads, head size, hidden and feed-forward widths and training context
  (``config.json``, via the catalogue): the same matrix products per token, the same KV
  bytes per token, so the same KV cache size, slot arithmetic and attention cost;
- the transformer layers' weights, byte for byte the size of a real file of that
  quantization (every weight matrix in QUANT; norms in f32).

What is not:

- **The weights are random** (normal-like, standard deviation about 0.02; norms 1, biases
  0): activations stay finite, but the text is noise. Use a synthetic model for speed and
  memory, never for answers: ``labkit bench`` switches grading off for it.
- **The vocabulary is the embedded model's.** The tokenizer (SmolLM2's 49,152-token BPE,
  chat template included) is copied from the embedded model's GGUF, so prompts tokenize
  to exactly the lengths the workbook's workloads were sized with. The token-embedding and
  output matrices are therefore 49,152 rows, not the real model's vocabulary. For
  Llama-3.1-8B (128,256 tokens, untied embeddings) that drops 2 x 79,104 x 4,096 =
  648,019,968 weights, 8.07 % of its 8.03 B; the output layer, the one matrix product whose
  size is the vocabulary, costs 38 % of the real one per token. Llama-3.2-1B loses 13.1 %
  (its embeddings are a bigger share of a small model), Llama-3.1-70B 1.8 %, Qwen2.5-7B
  9.7 %; SmolLM2-135M nothing. :func:`vocabulary_gap` computes it for any name.

Before writing anything the free disk space is checked, and, when the file is about to be
loaded, the memory it will be loaded into (RAM, or the GPUs' free memory when layers are
offloaded): a model that cannot fit says how much it needs. Where the embedded model is
not installed (a GPU machine reached without the network), a tokenizer-only GGUF written
by :func:`write_tokenizer` stands in for it: point ``$LABKIT_SYNTHETIC_TOKENIZER`` at it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import time
import math
from dataclasses import dataclass
from pathlib import Path

from .gguf import GGML_TYPES

# The name that stands for a synthetic model wherever a model path goes.
PREFIX = "synthetic:"

WRITER_VERSION = 1
DEFAULT_QUANT = "q4_0"
ENV_CACHE = "LABKIT_CACHE"
ENV_TOKENIZER = "LABKIT_SYNTHETIC_TOKENIZER"

# Quantizations the writer makes: ggml type id, elements per block, bytes per block,
# and general.file_type (llama.cpp's llama_ftype).
QUANTS: dict[str, tuple[int, int, int, int]] = {
    "f16": (1, 1, 2, 1),
    "q8_0": (8, 32, 34, 7),
    "q4_0": (2, 32, 18, 2),
}
F32 = 0
ARCHS = ("llama", "qwen2")

WEIGHT_STD = 0.02        # standard deviation of every weight matrix's values
RMS_EPS = 1e-5
SEED = 20261201
PERIOD = 65537           # random blocks (or f16 values) before the pattern repeats: a prime,
#                          so consecutive rows start at different phases of it
DISK_MARGIN = 64 * 2**20          # on top of the file: the header, the filesystem
LOAD_HEADROOM = 2**30             # on top of the weights: KV cache, compute buffers, runtime


class SyntheticError(ValueError):
    """A synthetic model name that cannot be used: unknown, or too big for this machine."""


@dataclass(frozen=True)
class Spec:
    """A parsed ``synthetic:NAME[:QUANT]``."""

    key: str
    quant: str

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.key}:{self.quant}"

    @property
    def shape(self):
        from .catalog import get
        return get(self.key)

    @property
    def filename(self) -> str:
        return f"{self.key}-{self.quant}-w{WRITER_VERSION}.gguf"


def is_synthetic(name) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def parse(name: str) -> Spec:
    """``synthetic:llama-3.1-8b`` -> Spec("llama-3.1-8b", "q4_0"). Errors list what is known."""
    from .catalog import SHAPES
    if not is_synthetic(name):
        raise SyntheticError(f"{name!r} is not a synthetic model name ({PREFIX}NAME[:QUANT])")
    parts = name[len(PREFIX):].split(":")
    if len(parts) > 2 or not parts[0]:
        raise SyntheticError(f"{name!r}: expected {PREFIX}NAME[:QUANT], for example "
                             f"{PREFIX}llama-3.1-8b:q4_0")
    key = parts[0].lower()
    quant = (parts[1] if len(parts) == 2 else DEFAULT_QUANT).lower()
    if key not in SHAPES:
        raise SyntheticError(f"{name!r}: unknown model {parts[0]!r}; known: "
                             f"{', '.join(SHAPES)} (see labkit/models/catalog.py)")
    if quant not in QUANTS:
        raise SyntheticError(f"{name!r}: unknown quantization {parts[1]!r}; choose one of "
                             f"{', '.join(QUANTS)} (default {DEFAULT_QUANT})")
    if SHAPES[key].arch not in ARCHS:
        raise SyntheticError(f"{name!r}: the writer knows the {' and '.join(ARCHS)} "
                             f"architectures, not {SHAPES[key].arch!r}")
    return Spec(key, quant)


# ---------------------------------------------------------------------------- the tensors

@dataclass(frozen=True)
class Tensor:
    """One tensor to write. ``ne`` is ggml's order: the row length first."""

    name: str
    ne: tuple[int, ...]
    ggml_type: int
    fill: str            # "random", "ones" or "zeros"

    @property
    def n_elements(self) -> int:
        return math.prod(self.ne)

    @property
    def nbytes(self) -> int:
        _, block, size = GGML_TYPES[self.ggml_type]
        return self.n_elements // block * size


def tensors(shape, quant: str, n_vocab: int) -> list[Tensor]:
    """Every tensor llama.cpp's ``llama``/``qwen2`` loader reads, in file order."""
    wtype, block = QUANTS[quant][0], QUANTS[quant][1]
    e, ff = shape.n_embd, shape.n_ff
    q, kv = shape.n_head * shape.head_dim, shape.n_head_kv * shape.head_dim
    for width in (e, ff, q):
        if width % block:
            raise SyntheticError(f"{shape.key}: a row of {width} values is not a whole number "
                                 f"of {quant} blocks ({block}); use f16")

    def w(name, *ne):
        return Tensor(name, ne, wtype, "random")

    def vec(name, n, fill):
        return Tensor(name, (n,), F32, fill)

    out = [w("token_embd.weight", e, n_vocab), vec("output_norm.weight", e, "ones")]
    if not shape.tied_embeddings:
        out.append(w("output.weight", e, n_vocab))
    for i in range(shape.n_layer):
        b = f"blk.{i}."
        out += [vec(b + "attn_norm.weight", e, "ones"),
                w(b + "attn_q.weight", e, q), w(b + "attn_k.weight", e, kv),
                w(b + "attn_v.weight", e, kv)]
        if shape.arch == "qwen2":
            out += [vec(b + "attn_q.bias", q, "zeros"), vec(b + "attn_k.bias", kv, "zeros"),
                    vec(b + "attn_v.bias", kv, "zeros")]
        out += [w(b + "attn_output.weight", q, e), vec(b + "ffn_norm.weight", e, "ones"),
                w(b + "ffn_gate.weight", e, ff), w(b + "ffn_up.weight", e, ff),
                w(b + "ffn_down.weight", ff, e)]
    return out


def data_bytes(spec: Spec, n_vocab: int) -> int:
    """Bytes of tensor data in the file (each tensor padded to GGUF's 32-byte alignment)."""
    return sum(-(-t.nbytes // 32) * 32 for t in tensors(spec.shape, spec.quant, n_vocab))


def vocabulary_gap(name: str, n_vocab: int | None = None) -> dict:
    """How the synthetic file's vocabulary-sized matrices differ from the real model's.

    ``weights_missing_pct``: the real model's weights the synthetic file does not have, in
    percent of the real total; ``output_cost_ratio``: the output layer's size (and cost per
    token) against the real one's.
    """
    s = parse(name).shape
    n_vocab = n_vocab or tokenizer_vocab_size()
    copies = 1 if s.tied_embeddings else 2
    missing = copies * (s.n_vocab - n_vocab) * s.n_embd
    return {"model": s.key, "real_vocab": s.n_vocab, "synthetic_vocab": n_vocab,
            "real_params": s.n_params, "synthetic_params": s.n_params - missing,
            "weights_missing": missing, "weights_missing_pct": 100 * missing / s.n_params,
            "output_cost_ratio": n_vocab / s.n_vocab}


# ---------------------------------------------------------------------------- random blocks

def random_period(quant: str, seed: int = SEED):
    """One period of random weight data in ``quant``'s own layout, as a uint8 array.

    - f16: values drawn from normal(0, WEIGHT_STD);
    - q8_0 block: an f16 scale d, then 32 int8 q, value = q x d; q ~ normal(0, 32) clipped
      to +-127, d ~ WEIGHT_STD / 32 (+-20 % per block);
    - q4_0 block: an f16 scale d, then 16 bytes holding 32 nibbles q in 0..15, value =
      (q - 8) x d; q ~ 8 + normal(0, 2.5) clipped to 1..15 (symmetric about 8, so the
      weights have mean 0), d ~ WEIGHT_STD / 2.5 (+-20 % per block).
    """
    import numpy as np
    rng = np.random.default_rng(seed)
    n = PERIOD
    if quant == "f16":
        return rng.normal(0, WEIGHT_STD, n).astype("<f2").view(np.uint8)
    spread = {"q8_0": 32.0, "q4_0": 2.5}[quant]
    d = (WEIGHT_STD / spread * rng.uniform(0.8, 1.2, n)).astype("<f2").view(np.uint8)
    d = d.reshape(n, 2)
    if quant == "q8_0":
        q = np.clip(np.rint(rng.normal(0, spread, (n, 32))), -127, 127).astype(np.int8)
        return np.concatenate([d, q.view(np.uint8)], axis=1).reshape(-1)
    nib = np.clip(np.rint(8 + rng.normal(0, spread, (n, 32))), 1, 15).astype(np.uint8)
    packed = nib[:, :16] | (nib[:, 16:] << 4)      # ggml: element j low nibble, j+16 high
    return np.concatenate([d, packed], axis=1).reshape(-1)


class _Tiler:
    """Writes any number of bytes of an endless repetition of one period, from any phase."""

    def __init__(self, period, unit: int, chunk: int = 32 * 2**20):
        import numpy as np
        self.period_len = len(period)
        self.unit = unit                      # a phase is a whole block (or f16 value)
        reps = max(2, -(-chunk // self.period_len))
        self.buf = memoryview(np.tile(period, reps).tobytes())

    def write(self, f, nbytes: int, phase: int) -> None:
        pos = (phase * self.unit) % self.period_len
        while nbytes:
            take = min(nbytes, len(self.buf) - pos)
            f.write(self.buf[pos:pos + take])
            nbytes -= take
            pos = 0


# ---------------------------------------------------------------------------- the tokenizer

def tokenizer_source() -> Path:
    """The GGUF the tokenizer is copied from: $LABKIT_SYNTHETIC_TOKENIZER, else the embedded
    model."""
    env = os.environ.get(ENV_TOKENIZER)
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise SyntheticError(f"${ENV_TOKENIZER}={env}: no such file")
        return p
    from .embedded import ModelNotFound, default_model_path
    try:
        return default_model_path()
    except ModelNotFound as exc:
        raise SyntheticError(
            f"a synthetic model copies its tokenizer from the embedded model, which is "
            f"missing ({exc}); or set ${ENV_TOKENIZER} to a tokenizer GGUF written by "
            "labkit.models.synthetic.write_tokenizer") from exc


def tokenizer_fields(source: str | os.PathLike | None = None) -> list[tuple]:
    """Every ``tokenizer.*`` key of ``source``'s metadata as (key, value, type, sub_type),
    the GGUF value types kept exactly (llama.cpp checks them when it loads the vocabulary).

    A direct walk over the memory-mapped header: the 49,152 tokens and 48,900 merges are
    read in a fraction of a second (the ``gguf`` package's reader takes several). Cached
    per file and modification time.
    """
    path = os.path.realpath(source or tokenizer_source())
    return list(_tokenizer_fields(path, os.stat(path).st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _tokenizer_fields(path: str, mtime_ns: int) -> tuple:
    import mmap
    import struct
    scalars = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
               10: "<Q", 11: "<q", 12: "<d"}
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if m[:4] != b"GGUF":
            raise SyntheticError(f"{path}: not a GGUF file")
        pos = 24
        n_kv = struct.unpack_from("<Q", m, 16)[0]

        def string():
            nonlocal pos
            n = struct.unpack_from("<Q", m, pos)[0]
            text = m[pos + 8:pos + 8 + n].decode("utf-8", errors="surrogateescape")
            pos += 8 + n
            return text

        def value(vtype):
            nonlocal pos
            if vtype in scalars:
                v = struct.unpack_from(scalars[vtype], m, pos)[0]
                pos += struct.calcsize(scalars[vtype])
                return v
            if vtype == 8:
                return string()
            raise SyntheticError(f"{path}: unexpected GGUF value type {vtype}")

        out = []
        for _ in range(n_kv):
            key = string()
            vtype = struct.unpack_from("<I", m, pos)[0]
            pos += 4
            sub = None
            if vtype == 9:
                sub, n = struct.unpack_from("<IQ", m, pos)
                pos += 12
                if sub in scalars:        # numbers: one slice, not n reads
                    fmt = scalars[sub]
                    width = struct.calcsize(fmt)
                    v = list(struct.unpack_from(f"<{n}{fmt[1]}", m, pos))
                    pos += n * width
                else:
                    v = [value(sub) for _ in range(n)]
            else:
                v = value(vtype)
            if key.startswith("tokenizer."):
                out.append((key, v, vtype, sub))
    if not any(k == "tokenizer.ggml.tokens" for k, *_ in out):
        raise SyntheticError(f"{path}: holds no tokenizer (no tokenizer.ggml.tokens)")
    from gguf import GGUFValueType
    return tuple((k, v, GGUFValueType(t), None if s is None else GGUFValueType(s))
                 for k, v, t, s in out)


def tokenizer_vocab_size(source: str | os.PathLike | None = None) -> int:
    """Tokens in the tokenizer a synthetic model gets: the rows of its embedding matrix."""
    return next(len(v) for k, v, *_ in tokenizer_fields(source) if k == "tokenizer.ggml.tokens")


def write_tokenizer(path: str | os.PathLike, source: str | os.PathLike | None = None) -> Path:
    """A tokenizer-only GGUF (no tensors, about 2 MB) for a machine without the embedded
    model: ``LABKIT_SYNTHETIC_TOKENIZER=path`` then makes synthetic models there."""
    import gguf
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_name("tokenizer of the embedded model")
    for key, value, vtype, sub in tokenizer_fields(source):
        w.add_key_value(key, value, vtype, sub)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    return path


# ---------------------------------------------------------------------------- the file

def cache_dir() -> Path:
    base = os.environ.get(ENV_CACHE)
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "labkit") / "synthetic"


def path_for(spec: Spec) -> Path:
    return cache_dir() / spec.filename


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_disk(spec: Spec, folder: Path, n_vocab: int) -> None:
    need = data_bytes(spec, n_vocab) + DISK_MARGIN
    free = shutil.disk_usage(folder).free
    if need > free:
        raise SyntheticError(
            f"{spec.name} needs {_gib(need)} of disk in {folder}, which has {_gib(free)} free; "
            f"free some space or set ${ENV_CACHE} to a folder with room")


def check_memory(spec: Spec, n_gpu_layers=0, gpu_free_bytes: int | None = None) -> None:
    """Can the file be loaded? On the CPU its weights plus LOAD_HEADROOM must fit in the
    available RAM; with layers offloaded (``n_gpu_layers`` not 0) and a GPU device there, in
    ``gpu_free_bytes``: the GPU devices' free memory as llama.cpp sees it, on any backend
    (:func:`labkit.engine.devices.resolve_to_load` passes it; None means no GPU device).
    Raises :class:`SyntheticError` saying how much is needed."""
    path = path_for(spec)
    weights = path.stat().st_size if path.is_file() else data_bytes(spec, tokenizer_vocab_size())
    need = weights + LOAD_HEADROOM
    if n_gpu_layers not in (0, "0", None) and gpu_free_bytes is not None:
        if need > gpu_free_bytes:
            raise SyntheticError(
                f"{spec.name} needs about {_gib(need)} of GPU memory to load (weights + "
                f"{_gib(LOAD_HEADROOM)} for KV cache and buffers); the GPUs have "
                f"{_gib(gpu_free_bytes)} free. Try a smaller model or quantization (q4_0)")
        return
    import psutil
    free = psutil.virtual_memory().available
    if need > free:
        raise SyntheticError(
            f"{spec.name} needs about {_gib(need)} of memory to load on the CPU (weights + "
            f"{_gib(LOAD_HEADROOM)} for KV cache and buffers); this machine has {_gib(free)} "
            "available. Try a smaller model or quantization (q4_0)")


def write(spec: Spec, path: str | os.PathLike, tokenizer: str | os.PathLike | None = None
          ) -> Path:
    """Write the synthetic GGUF for ``spec`` to ``path`` (through a temporary file, so a
    crash never leaves a half-written model under the final name)."""
    import gguf
    import numpy as np
    shape = spec.shape
    fields = tokenizer_fields(tokenizer)
    n_vocab = tokenizer_vocab_size(tokenizer)
    plan = tensors(shape, spec.quant, n_vocab)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    arch = shape.arch
    w = gguf.GGUFWriter(str(tmp), arch=arch)
    try:
        w.add_name(f"synthetic {shape.name} ({spec.quant}, random weights)")
        w.add_type("model")
        w.add_file_type(QUANTS[spec.quant][3])
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)
        w.add_uint32(f"{arch}.context_length", shape.n_ctx_train)
        w.add_uint32(f"{arch}.embedding_length", shape.n_embd)
        w.add_uint32(f"{arch}.block_count", shape.n_layer)
        w.add_uint32(f"{arch}.feed_forward_length", shape.n_ff)
        w.add_uint32(f"{arch}.attention.head_count", shape.n_head)
        w.add_uint32(f"{arch}.attention.head_count_kv", shape.n_head_kv)
        w.add_uint32(f"{arch}.attention.key_length", shape.head_dim)
        w.add_uint32(f"{arch}.attention.value_length", shape.head_dim)
        w.add_uint32(f"{arch}.rope.dimension_count", shape.head_dim)
        w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", RMS_EPS)
        if shape.rope_theta:
            w.add_float32(f"{arch}.rope.freq_base", shape.rope_theta)
        w.add_uint32(f"{arch}.vocab_size", n_vocab)
        w.add_string("labkit.synthetic", f"{spec.key}:{spec.quant}")
        w.add_uint32("labkit.synthetic_writer", WRITER_VERSION)
        for key, value, vtype, sub in fields:
            w.add_key_value(key, value, vtype, sub)
        for t in plan:
            w.add_tensor_info(t.name, tuple(reversed(t.ne)), np.dtype(np.float32), t.nbytes,
                              raw_dtype=gguf.GGMLQuantizationType(t.ggml_type))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        f = w.fout[0]
        w.write_padding(f, f.tell())
        _, block, size = GGML_TYPES[QUANTS[spec.quant][0]]
        tiler = _Tiler(random_period(spec.quant), size)
        phase = 0
        for t in plan:
            if t.fill == "random":
                tiler.write(f, t.nbytes, phase)
                phase += t.nbytes // size + 7919      # the next tensor starts elsewhere
            else:
                value = 1.0 if t.fill == "ones" else 0.0
                f.write(np.full(t.n_elements, value, dtype="<f4").tobytes())
            w.write_padding(f, t.nbytes)
        w.close()
        os.replace(tmp, path)
    finally:
        w.close()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return path


@contextlib.contextmanager
def _locked(folder: Path):
    """One writer at a time in the cache folder, across processes (a lock on the folder)."""
    import fcntl
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure(name: str, *, load: bool = False, n_gpu_layers=0,
           gpu_free_bytes: int | None = None) -> Path:
    """The path of ``name``'s synthetic GGUF, written first if it is not in the cache yet.

    ``load=True`` says the caller is about to load it (with ``n_gpu_layers`` offloaded, into
    GPU devices with ``gpu_free_bytes`` free): the memory check then runs too, before
    anything is written.
    """
    spec = parse(name)
    path = path_for(spec)
    if load:
        check_memory(spec, n_gpu_layers, gpu_free_bytes)
    if path.is_file():
        return path
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder):
        if path.is_file():           # another process wrote it while this one waited
            return path
        source = tokenizer_source()
        check_disk(spec, folder, tokenizer_vocab_size(source))
        t0 = time.perf_counter()
        write(spec, path, source)
        logging.getLogger("labkit.models.synthetic").info(
            "wrote %s: %s, %.2f GB in %.1f s", spec.name, path, path.stat().st_size / 1e9,
            time.perf_counter() - t0)
    return path
