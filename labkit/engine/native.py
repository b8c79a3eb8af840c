"""Thin, safe handles on llama.cpp's C API (through llama-cpp-python's ctypes layer).

The slot engine talks to llama.cpp directly rather than through
``llama_cpp.Llama``, because it needs what that class hides: several
sequences in one context (n_seq_max), the unified/split KV switch, one
llama_decode per step for all slots, and the per-sequence memory calls.

llama.cpp logs through one process-wide callback. labkit installs its own
once and routes each line to whoever is listening (a server's log file, a
test that wants to read the KV buffer size); with nobody listening, lines
are dropped so that notebooks stay clean.
"""

from __future__ import annotations

import ctypes
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import llama_cpp

# -ctk / -ctv names -> ggml type ids.
GGML_CACHE_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7,
                    "q8_0": 8, "iq4_nl": 20, "bf16": 30}
# -sm none|layer|row -> llama_split_mode.
SPLIT_MODES = {"none": llama_cpp.LLAMA_SPLIT_MODE_NONE, "layer": llama_cpp.LLAMA_SPLIT_MODE_LAYER,
               "row": llama_cpp.LLAMA_SPLIT_MODE_ROW}
# -fa on|off|auto -> llama_flash_attn_type.
FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}

_sinks: list = []
_sinks_lock = threading.Lock()
_installed = False


# ggml's log levels. DEBUG lines (thousands per model load: every tensor, every graph
# input) are dropped; a CONT line continues the previous line and shares its fate.
GGML_LOG_DEBUG, GGML_LOG_CONT = 1, 5
_last_level = 0


def _route(level, text, _user):
    global _last_level
    if level != GGML_LOG_CONT:
        _last_level = level
    if _last_level == GGML_LOG_DEBUG:
        return
    line = text.decode("utf-8", errors="replace") if text else ""
    with _sinks_lock:
        sinks = list(_sinks)
    for sink in sinks:
        sink(line)


_CALLBACK = llama_cpp.llama_log_callback(_route)  # kept alive for the process lifetime


def install_log_router() -> None:
    """Route llama.cpp's log lines through labkit (idempotent)."""
    global _installed
    if not _installed:
        llama_cpp.llama_log_set(_CALLBACK, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        _installed = True


def add_log_sink(sink) -> None:
    install_log_router()
    with _sinks_lock:
        _sinks.append(sink)


def remove_log_sink(sink) -> None:
    with _sinks_lock:
        if sink in _sinks:
            _sinks.remove(sink)


@dataclass
class LogCapture:
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def kv_bytes(self) -> float:
        """KV buffer bytes llama.cpp reported allocating ("KV buffer size = X MiB"), summed
        over devices. llama.cpp prints MiB with two decimals, so this is exact to +-0.005 MiB."""
        sizes = re.findall(r"KV buffer size =\s*([0-9.]+) MiB", self.text)
        if not sizes:
            raise LookupError("llama.cpp logged no KV buffer size")
        return sum(float(s) for s in sizes) * 2**20


@contextmanager
def quiet_llama():
    """Capture llama.cpp's log lines while the block runs (and keep them off the screen)."""
    cap = LogCapture()
    add_log_sink(cap.lines.append)
    try:
        yield cap
    finally:
        remove_log_sink(cap.lines.append)


class LlamaModel:
    """A loaded GGUF model (weights only; contexts are made from it)."""

    def __init__(self, path: str, n_gpu_layers: int = 0, use_mmap: bool = True, *,
                 split_mode: str = "layer", main_gpu: int = 0):
        install_log_router()
        # llama.cpp aborts the process on some impossible shapes (0 layers, a NaN epsilon):
        # labkit's reader refuses them first, naming the key (a GGUFError).
        from ..models.hparams import read_model
        read_model(path)
        if n_gpu_layers:    # refused before loading when the GPU has too little memory
            from .devices import refuse_if_too_large
            refuse_if_too_large(path, n_gpu_layers)
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = n_gpu_layers      # negative: every layer
        params.split_mode = SPLIT_MODES[split_mode]
        params.main_gpu = main_gpu
        params.use_mmap = use_mmap
        self.path = str(path)
        self.ptr = llama_cpp.llama_model_load_from_file(self.path.encode(), params)
        if not self.ptr:
            raise RuntimeError(f"{path}: llama.cpp could not load this model")
        self.vocab = llama_cpp.llama_model_get_vocab(self.ptr)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.n_ctx_train = llama_cpp.llama_model_n_ctx_train(self.ptr)

    def close(self) -> None:
        if self.ptr:
            llama_cpp.llama_model_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load_model(path, n_gpu_layers: int = 0) -> LlamaModel:
    return LlamaModel(str(path), n_gpu_layers)


class LlamaContext:
    """One llama_context: the KV cache plus the compute buffers, for n_seq_max sequences.

    ``n_outputs_max``: how many tokens of one ``llama_decode`` may ask for logits. 0, llama.cpp's
    default, is ``n_batch``, and llama.cpp sizes its compute buffer for a micro-batch of logits
    rows (SmolLM2 at ``-c 16384 -np 4``: 98.25 MiB, against 17.51 MiB for 4). llama-server passes
    ``n_parallel`` (``server_output_limits``: one output per sequence), which is all a slot
    engine asks; a batch asking for more then stops the process (an assertion in llama.cpp's
    ``output_reserve``), so only a caller that keeps to it may pass it."""

    def __init__(self, model: LlamaModel, *, n_ctx: int, n_seq_max: int = 1,
                 kv_unified: bool = False, n_batch: int = 2048, n_ubatch: int = 512,
                 type_k: str = "f16", type_v: str = "f16", flash_attn: bool | str = "auto",
                 n_threads: int | None = None, op_offload: bool = False,
                 n_outputs_max: int = 0):
        p = llama_cpp.llama_context_default_params()
        p.n_outputs_max = n_outputs_max
        p.op_offload = op_offload
        p.n_ctx = n_ctx
        p.n_seq_max = n_seq_max
        p.kv_unified = kv_unified
        p.n_batch = n_batch
        p.n_ubatch = n_ubatch
        p.type_k = GGML_CACHE_TYPES[type_k]
        p.type_v = GGML_CACHE_TYPES[type_v]
        if isinstance(flash_attn, bool):
            flash_attn = "on" if flash_attn else "off"
        p.flash_attn_type = FLASH_ATTN[flash_attn]
        if n_threads:
            p.n_threads = p.n_threads_batch = n_threads
        p.no_perf = True
        self.model = model
        self.ptr = llama_cpp.llama_init_from_model(model.ptr, p)
        if not self.ptr:
            raise RuntimeError(
                f"llama.cpp could not create a context (n_ctx={n_ctx}, n_seq_max={n_seq_max}, "
                f"kv_unified={kv_unified}, cache {type_k}/{type_v}); the log says why")
        self.n_ctx = llama_cpp.llama_n_ctx(self.ptr)
        self.n_ctx_seq = llama_cpp.llama_n_ctx_seq(self.ptr)
        self.n_seq_max = llama_cpp.llama_n_seq_max(self.ptr)
        self.n_batch = llama_cpp.llama_n_batch(self.ptr)
        self.n_ubatch = llama_cpp.llama_n_ubatch(self.ptr)
        self.memory = llama_cpp.llama_get_memory(self.ptr)

    def close(self) -> None:
        if self.ptr:
            llama_cpp.llama_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def new_context(model: LlamaModel, **kwargs) -> LlamaContext:
    """Create a context; use it as ``with new_context(model, n_ctx=...) as ctx:``."""
    return LlamaContext(model, **kwargs)


# ----------------------------------------------------------------------------
# Text <-> tokens
# ----------------------------------------------------------------------------

def tokenize(vocab, text: str, add_special: bool = True, parse_special: bool = True) -> list[int]:
    """llama_tokenize, growing the buffer when the first guess is too small."""
    data = text.encode("utf-8")
    n_max = len(data) + 8
    buf = (llama_cpp.llama_token * n_max)()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, n_max, add_special, parse_special)
    if n < 0:
        n_max = -n
        buf = (llama_cpp.llama_token * n_max)()
        n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, n_max, add_special, parse_special)
    return list(buf[:n])


def detokenize(vocab, tokens: list[int], remove_special: bool = False,
               unparse_special: bool = False) -> str:
    """llama_detokenize: the text of a whole token list."""
    if not tokens:
        return ""
    arr = (llama_cpp.llama_token * len(tokens))(*tokens)
    size = max(64, 8 * len(tokens))
    for _ in range(2):
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(tokens), buf, size,
                                       remove_special, unparse_special)
        if n >= 0:
            return buf.raw[:n].decode("utf-8", errors="replace")
        size = -n
    raise RuntimeError("llama_detokenize failed")


class PieceTable:
    """token id -> the bytes llama.cpp renders for it, cached on first use.

    Tokens are byte pieces, not characters: one emoji may span three tokens.
    Callers join the bytes and decode UTF-8 incrementally (see
    :class:`labkit.engine.sampling.TextStream`).
    """

    def __init__(self, vocab, special: bool = False):
        self.vocab = vocab
        self.special = special
        self._cache: dict[int, bytes] = {}
        self._buf = ctypes.create_string_buffer(256)

    def __getitem__(self, token: int) -> bytes:
        piece = self._cache.get(token)
        if piece is None:
            n = llama_cpp.llama_token_to_piece(self.vocab, token, self._buf, 256, 0, self.special)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, -n, 0, self.special)
                piece = buf.raw[:n]
            else:
                piece = self._buf.raw[:n]
            self._cache[token] = piece
        return piece


def eog_tokens(vocab) -> list[int]:
    """Every end-of-generation token of the vocabulary (llama_vocab_is_eog)."""
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    return [t for t in range(n) if llama_cpp.llama_vocab_is_eog(vocab, t)]


def template_source(model: LlamaModel) -> str:
    """The chat template text of the model's GGUF metadata ("" when it has none)."""
    tmpl = llama_cpp.llama_model_chat_template(model.ptr, None)
    return tmpl.decode("utf-8", errors="replace") if tmpl else ""


def chat_template(model: LlamaModel):
    """The model's own chat template (:class:`labkit.engine.chat.ChatTemplate`), with the
    texts of its BOS and EOS tokens, as llama-server reads them."""
    from .chat import ChatTemplate
    tmpl = template_source(model)
    if not tmpl:
        raise ValueError("this model has no chat template in its GGUF metadata")
    vocab, special = model.vocab, PieceTable(model.vocab, special=True)

    def text(token: int) -> str:
        return special[token].decode("utf-8", errors="replace") if token >= 0 else ""
    return ChatTemplate(tmpl, text(llama_cpp.llama_vocab_bos(vocab)),
                        text(llama_cpp.llama_vocab_eos(vocab)),
                        bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
                        bool(llama_cpp.llama_vocab_get_add_eos(vocab)))


# ----------------------------------------------------------------------------
# The batch: one llama_batch, allocated once, refilled every step
# ----------------------------------------------------------------------------

class Batch:
    """One ``llama_batch`` of up to ``capacity`` tokens, reused for every step.

    Each entry is (token, position, sequence id, want logits). The token,
    position and logits columns are also exposed as numpy views so that a
    prompt chunk is written with a few slice assignments.
    """

    def __init__(self, capacity: int, n_seq_max: int):
        import numpy as np

        self.capacity = capacity
        self.raw = llama_cpp.llama_batch_init(capacity, 0, n_seq_max)
        self.token = np.ctypeslib.as_array(self.raw.token, shape=(capacity,))
        self.pos = np.ctypeslib.as_array(self.raw.pos, shape=(capacity,))
        self.logits = np.ctypeslib.as_array(
            ctypes.cast(self.raw.logits, ctypes.POINTER(ctypes.c_int8)), shape=(capacity,))
        n_seq_id = np.ctypeslib.as_array(self.raw.n_seq_id, shape=(capacity,))
        n_seq_id[:] = 1  # every token belongs to exactly one sequence (its slot)
        self._seq = [self.raw.seq_id[i] for i in range(capacity)]
        self.n = 0

    def clear(self) -> None:
        self.n = 0

    def add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        """Append one token; returns its index in the batch."""
        i = self.n
        self.token[i] = token
        self.pos[i] = pos
        self._seq[i][0] = seq
        self.logits[i] = logits
        self.n = i + 1
        return i

    def add_chunk(self, tokens, pos0: int, seq: int, logits_last: bool) -> None:
        """Append a run of one sequence's tokens at positions pos0, pos0+1, ..."""
        i, n = self.n, len(tokens)
        self.token[i:i + n] = tokens
        self.pos[i:i + n] = range(pos0, pos0 + n)
        self.logits[i:i + n] = 0
        if logits_last:
            self.logits[i + n - 1] = 1
        seq_ptrs = self._seq
        for k in range(i, i + n):
            seq_ptrs[k][0] = seq
        self.n = i + n

    def view(self, start: int, n: int):
        """A llama_batch over entries [start, start + n) of this batch, for llama_decode."""
        if start == 0:
            self.raw.n_tokens = n
            return self.raw
        raw = self.raw

        def shift(ptr, size):
            return ctypes.cast(ctypes.cast(ptr, ctypes.c_void_p).value + start * size, type(ptr))

        return llama_cpp.llama_batch(
            n_tokens=n, token=shift(raw.token, 4), embd=None, pos=shift(raw.pos, 4),
            n_seq_id=shift(raw.n_seq_id, 4),
            seq_id=shift(raw.seq_id, ctypes.sizeof(ctypes.c_void_p)),
            logits=shift(raw.logits, 1))

    def close(self) -> None:
        if self.raw is not None:
            self.raw.n_tokens = 0
            llama_cpp.llama_batch_free(self.raw)
            self.raw = None
            self._seq = []
