"""The hyperparameters a model file declares, checked against what llama.cpp can load.

llama.cpp trusts a GGUF's numbers: a well-formed file whose ``block_count`` is 0 or 100000, or
whose norm epsilon is NaN, makes it abort the whole process (``GGML_ASSERT``, SIGABRT), and a
head count of 0 divides by zero. :func:`read_model` reads a model's header
(:func:`labkit.models.gguf.read_header`: not GGUF, truncated) and then checks each number
llama.cpp asserts on (:func:`hyperparameters`), raising a :class:`~labkit.models.gguf.GGUFError`
that names the path, the key and its value, in the learner's language. doctor, serve, bench
(through :func:`labkit.models.files.describe`) and the engine (before
``llama_model_load_from_file``) all read a model through it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from ..lang.i18n import pick
from .gguf import ArrayStub, GGUFError, GGUFHeader, read_header

# llama.cpp's fixed limits (src/llama-hparams.h): more layers or experts than these and it
# aborts (GGML_ASSERT) instead of refusing the file.
LLAMA_MAX_LAYERS = 512
LLAMA_MAX_EXPERTS = 512


@dataclass(frozen=True)
class Hyperparameters:
    """The shape a model file declares, checked against what llama.cpp can load.

    Head counts may be per layer in some architectures: ``n_head`` and ``n_head_kv`` are
    then the largest."""
    architecture: str
    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_embd: int
    n_ctx_train: int


def read_model(path: str | os.PathLike) -> tuple[GGUFHeader, Hyperparameters]:
    """Read a model file's header and check its hyperparameters (:func:`hyperparameters`):
    everything labkit knows to test before llama.cpp sees the file. Raises GGUFError."""
    header = read_header(path)
    return header, hyperparameters(header)


def hyperparameters(header: GGUFHeader) -> Hyperparameters:
    """The model's shape from its metadata, each number llama.cpp asserts on checked.

    Refused, with a :class:`GGUFError` naming the key and its value: a layer count outside
    1..LLAMA_MAX_LAYERS, a head count below 1, a KV head count that does not divide the head
    count, a head size that is not a whole number of at least 1 (``embedding_length /
    head_count``, or ``key_length`` and ``value_length`` where the file gives them), a norm
    epsilon that is not a finite number above 0, a context or embedding length below 1, and
    expert counts llama.cpp's assertions reject.
    """
    path, md = header.path, header.metadata
    arch = md.get("general.architecture")
    if not isinstance(arch, str):
        raise GGUFError(pick(f"{path}: GGUF file has no general.architecture; is it a model?",
                             f"{path}：這個 GGUF 檔沒有 general.architecture；它是模型嗎？"))
    check = _Check(path, arch, md)
    n_layer = check.count("block_count", high=LLAMA_MAX_LAYERS)
    n_embd = check.count("embedding_length")
    n_ctx_train = check.count("context_length")
    heads = check.per_layer("attention.head_count", n_layer)
    heads_kv = check.per_layer("attention.head_count_kv", n_layer, default=heads)
    per_layer = any(isinstance(check.raw(k), list)
                    for k in ("attention.head_count", "attention.head_count_kv"))
    for layer, (h, kv) in enumerate(zip(heads, heads_kv)):
        if kv and h % kv:
            where, where_zh = (f" of layer {layer}", f"第 {layer} 層的") if per_layer else ("", "")
            check.fail("attention.head_count_kv", _show(check.raw("attention.head_count_kv")),
                       f"{kv} KV heads do not divide the {h} query heads{where} "
                       f"({arch}.attention.head_count)",
                       f"{kv} 個 KV 頭無法整除{where_zh} {h} 個查詢頭"
                       f"（{arch}.attention.head_count）")
    n_head, n_head_kv = max(heads), max(heads_kv)
    head_dim = check.head_size("attention.key_length", n_embd, n_head)
    check.head_size("attention.value_length", n_embd, n_head)
    for name in ("attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon"):
        check.epsilon(name)
    n_expert = check.count("expert_count", low=0, high=LLAMA_MAX_EXPERTS, default=0)
    used = check.count("expert_used_count", low=0, default=0)
    if used > n_expert:
        check.fail("expert_used_count", used,
                   f"a token cannot use more experts than the model's {n_expert} "
                   f"({arch}.expert_count)",
                   f"每個 token 用的專家不能多於模型的 {n_expert} 個（{arch}.expert_count）")
    if n_expert and not used:
        check.fail("expert_used_count", used,
                   f"a model with {n_expert} experts must use at least 1 per token",
                   f"有 {n_expert} 個專家的模型每個 token 至少要用 1 個")
    return Hyperparameters(arch, n_layer, n_head, n_head_kv, head_dim, n_embd, n_ctx_train)


def _show(value) -> str:
    """A metadata value as the refusal prints it: short, NaN and infinities by name."""
    if isinstance(value, ArrayStub):
        return f"[{value.length} values]"
    if isinstance(value, list):
        return "[" + ", ".join(map(_show, value[:8])) + (", ...]" if len(value) > 8 else "]")
    if isinstance(value, str):
        return repr(value[:40] + ("..." if len(value) > 40 else ""))
    return repr(value)


class _Check:
    """One model's metadata, read key by key; each refusal names the key and its value."""

    def __init__(self, path: str, arch: str, md: dict[str, Any]):
        self.path, self.arch, self.md = path, arch, md

    def raw(self, name: str):
        return self.md.get(f"{self.arch}.{name}")

    def fail(self, name: str, shown, en: str, zh: str):
        key = f"{self.arch}.{name}"
        raise GGUFError(pick(f"{self.path}: {key} = {shown} is impossible: {en}; "
                             "the file is damaged or was written wrong",
                             f"{self.path}：{key} = {shown} 不可能成立：{zh}；"
                             "這個檔已損壞，或寫入時就錯了"))

    def missing(self, name: str):
        key = f"{self.arch}.{name}"
        raise GGUFError(pick(f"{self.path}: GGUF metadata lacks {key}",
                             f"{self.path}：GGUF 中繼資料缺少 {key}"))

    def whole(self, name: str, v, low: int, high: int | None):
        """``v`` (the key's value, or one layer's) as an int in low..high, else refused."""
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(name, _show(self.raw(name)), "it must be a whole number",
                      "必須是整數")
        if v < low or (high is not None and v > high):
            span = f"at least {low}" if high is None else f"{low} to {high}"
            span_zh = f"至少 {low}" if high is None else f"{low} 到 {high}"
            self.fail(name, _show(self.raw(name)), f"llama.cpp needs {span}",
                      f"llama.cpp 需要 {span_zh}")
        return v

    def count(self, name: str, *, low: int = 1, high: int | None = None, default=None) -> int:
        v = self.raw(name)
        if v is None:
            if default is None:
                self.missing(name)
            return default
        return self.whole(name, v, low, high)

    def per_layer(self, name: str, n_layer: int, default: list[int] | None = None) -> list[int]:
        """A count given once or per layer (an array of n_layer), as one value per layer;
        at least one layer has one (a layer without attention may say 0)."""
        v = self.raw(name)
        if v is None:
            if default is None:
                self.missing(name)
            return default
        if not isinstance(v, (list, ArrayStub)):
            return [self.whole(name, v, 1, None)] * n_layer
        if isinstance(v, ArrayStub) or len(v) != n_layer:   # a stub is longer than any model
            self.fail(name, _show(v), f"a per-layer array must have {n_layer} entries "
                      f"({self.arch}.block_count)",
                      f"每層一個值的陣列必須有 {n_layer} 個（{self.arch}.block_count）")
        values = [self.whole(name, x, 0, None) for x in v]
        if not max(values):
            self.fail(name, _show(v), "at least one layer needs a head", "至少要有一層有注意力頭")
        return values

    def head_size(self, name: str, n_embd: int, n_head: int) -> int:
        """A head's width: the key given, else embedding_length / head_count, a whole number."""
        if self.raw(name) is not None:
            return self.count(name)
        if n_embd % n_head:
            self.fail("embedding_length", n_embd,
                      f"it does not split into {n_head} heads of equal width "
                      f"({self.arch}.attention.head_count) and the file gives no "
                      f"{self.arch}.{name}",
                      f"無法平分成 {n_head} 個等寬的注意力頭（{self.arch}.attention.head_count），"
                      f"檔案也沒有給 {self.arch}.{name}")
        return n_embd // n_head

    def epsilon(self, name: str) -> None:
        v = self.raw(name)
        if v is None:
            return
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v <= 0:
            self.fail(name, _show(v), "a norm's epsilon must be a finite number above 0",
                      "正規化的 epsilon 必須是大於 0 的有限數")
