"""A small, strict reader for the header of a GGUF file.

GGUF is llama.cpp's model format: a magic number, a version, a table of
key/value metadata (architecture, layer count, head counts, tokenizer, ...),
a table of tensor descriptions, then the tensor data. labkit reads only the
header, so describing a multi-gigabyte model costs a few milliseconds, and it
checks that the file is as long as its tensor table says it must be, so a
half-copied download is caught before llama.cpp tries to load it.

The numbers in the metadata (layer and head counts, epsilon) are checked against what
llama.cpp can load by :mod:`labkit.models.hparams`, which raises the same :class:`GGUFError`.

Layout (all little-endian), from llama.cpp's gguf documentation:

    "GGUF" u32:version u64:n_tensors u64:n_kv
    n_kv x (string:key u32:type value)
    n_tensors x (string:name u32:n_dims n_dims x u64:dim u32:ggml_type u64:offset)
    padding to general.alignment (default 32), then tensor data
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, BinaryIO


class GGUFError(ValueError):
    """The file is missing, is not GGUF, or is damaged. The message names the path."""


MAGIC = b"GGUF"

# Value types of the metadata table.
_SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i",
    6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}
_STRING, _ARRAY = 8, 9

# ggml tensor types: (name, elements per block, bytes per block).
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1),
    25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17),
}

# general.file_type: llama.cpp's llama_ftype, the "quantization" people name a file by.
FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
    16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
    22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
    28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
    37: "TQ2_0", 38: "MXFP4_MOE",
}

# Arrays longer than this (the tokenizer's 49k-entry vocabulary, say) are skipped
# and recorded by length only: labkit never needs their contents. Per-layer arrays
# (head counts, feed-forward widths) are kept: llama.cpp loads at most
# labkit.models.hparams.LLAMA_MAX_LAYERS layers (tests/test_model_validation.py holds the two).
_KEEP_ARRAY_MAX = 512


@dataclass
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int | None:
        """Bytes of data, or None for a ggml type this reader does not know."""
        if self.ggml_type not in GGML_TYPES:
            return None
        _, block, size = GGML_TYPES[self.ggml_type]
        return self.n_elements // block * size


@dataclass
class GGUFHeader:
    path: str
    version: int
    metadata: dict[str, Any]
    tensors: list[TensorInfo] = field(repr=False)
    data_start: int
    file_size: int

    @property
    def data_end(self) -> int:
        """Where the last tensor's data ends, as the tensor table promises it."""
        ends = [self.data_start + t.offset + (t.nbytes or 0) for t in self.tensors]
        return max(ends, default=self.data_start)


class _Reader:
    def __init__(self, f: BinaryIO, path: str, size: int):
        self.f, self.path, self.size = f, path, size

    def take(self, n: int) -> bytes:
        b = self.f.read(n)
        if len(b) != n:
            raise GGUFError(
                f"{self.path}: truncated GGUF header (needed {n} bytes at offset "
                f"{self.f.tell() - len(b)}, file is {self.size} bytes)")
        return b

    def need(self, n: int, what: str) -> None:
        """A length field promises n more bytes (at least); fail early if the file is shorter."""
        left = self.size - self.f.tell()
        if n > left:
            raise GGUFError(
                f"{self.path}: truncated or corrupt GGUF header (a {what} of length {n} at "
                f"offset {self.f.tell()}, but only {left} bytes remain)")

    def scalar(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.scalar("<Q")
        self.need(n, "string")
        return self.take(n).decode("utf-8", errors="replace")

    def value(self, vtype: int):
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            itype, n = self.scalar("<I"), self.scalar("<Q")
            self.need(n, "array")
            if n > _KEEP_ARRAY_MAX:
                self.skip_array(itype, n)
                return ArrayStub(itype, n)
            return [self.value(itype) for _ in range(n)]
        raise GGUFError(f"{self.path}: corrupt GGUF header (unknown value type {vtype})")

    def skip_array(self, itype: int, n: int) -> None:
        cut = GGUFError(f"{self.path}: truncated GGUF header (inside an array)")
        if itype in _SCALARS:
            self.f.seek(struct.calcsize(_SCALARS[itype]) * n, os.SEEK_CUR)
        elif itype == _STRING:     # a vocabulary: read each string's length, seek past its bytes
            length, read, seek = struct.Struct("<Q").unpack, self.f.read, self.f.seek
            for _ in range(n):
                b = read(8)
                if len(b) < 8:
                    raise cut
                seek(length(b)[0], os.SEEK_CUR)
        else:
            for _ in range(n):
                self.value(itype)
        if self.f.tell() > self.size:
            raise cut


@dataclass(frozen=True)
class ArrayStub:
    """A long metadata array recorded by its element type and length only."""
    item_type: int
    length: int


def read_header(path: str | os.PathLike) -> GGUFHeader:
    """Read and check a GGUF file's header. Raises GGUFError naming the path."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise GGUFError(f"{path}: no such file")
    if os.path.isdir(path):
        raise GGUFError(f"{path}: is a directory, not a GGUF file")
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        magic = f.read(4)
        if magic != MAGIC:
            if len(magic) < 4:
                raise GGUFError(f"{path}: not a GGUF file (only {size} bytes long)")
            raise GGUFError(f"{path}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")
        r = _Reader(f, path, size)
        version = r.scalar("<I")
        if version not in (2, 3):
            raise GGUFError(f"{path}: unsupported GGUF version {version}")
        n_tensors, n_kv = r.scalar("<Q"), r.scalar("<Q")
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string()
            metadata[key] = r.value(r.scalar("<I"))
        tensors = []
        for _ in range(n_tensors):
            name = r.string()
            n_dims = r.scalar("<I")
            if n_dims > 8:
                raise GGUFError(f"{path}: corrupt tensor table ({name!r} has {n_dims} dims)")
            shape = tuple(r.scalar("<Q") for _ in range(n_dims))
            tensors.append(TensorInfo(name, shape, r.scalar("<I"), r.scalar("<Q")))
        align = int(metadata.get("general.alignment", 32))
        data_start = -(-f.tell() // align) * align
    header = GGUFHeader(path, version, metadata, tensors, data_start, size)
    if header.data_end > size:
        raise GGUFError(
            f"{path}: truncated GGUF file: its tensor table needs {header.data_end} bytes "
            f"but the file has {size} (an interrupted download or copy?)")
    return header
