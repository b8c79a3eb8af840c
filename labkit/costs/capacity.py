"""How many conversations fit on a GPU: the capacity calculator, and the KV bytes llama.cpp
really allocates.

Restaurant version: the kitchen's floor space (GPU memory) holds the recipe books
(the weights, shared by every table), some working space for the cooks (compute
buffers), and the notes each guest leaves on their table top (the KV cache,
已讀筆記). Once the recipes are in, what is left decides how many table tops of
a given size fit.

Engineer version::

    KV budget      = GPU memory - weights - overhead
    cells that fit = KV budget / (2 x n_layer x n_head_kv x head_dim x bytes per value)
    conversations  = cells that fit // tokens per conversation

``overhead`` stands for everything that is neither weights nor KV (compute
buffers, the CUDA context, fragmentation); 1 GiB is a rough allowance, not a
measurement. The answer is a ceiling for memory only: whether each guest is
served in acceptable time is a separate question (notebook 01).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..models import catalog, kv
from ..models.catalog import ModelShape

GiB = 2 ** 30
MiB = 2 ** 20


@dataclass(frozen=True)
class QuantizedModel:
    """A model as the calculator sees it: its shape and the bytes its weights take."""

    shape: ModelShape
    quant: str                  # the weights' GGUF type: "q4_k_m", "q8_0", "Q4_1", ...
    weights_bytes: float

    @classmethod
    def from_catalog(cls, key: str, quant: str = "q4_k_m") -> "QuantizedModel":
        """A catalogue shape, with weight bytes estimated from the quantization's bits per weight."""
        shape = catalog.get(key)
        return cls(shape, quant, shape.weight_bytes(quant))

    @classmethod
    def from_info(cls, info) -> "QuantizedModel":
        """From :func:`labkit.models.files.describe` (the file size stands in for the weights)."""
        return cls(catalog.from_model_info(info), info.file_type, float(info.size_bytes))

    @property
    def name(self) -> str:
        return f"{self.shape.name} {self.quant.upper()}"

    def bytes_per_token(self, kv_type: str = "f16") -> float:
        return self.shape.kv_bytes_per_token(kv_type)


#: Every catalogue model (:mod:`labkit.models.catalog`, published shapes) in Q4_K_M, the
#: quantization most GGUFs are shared in. The weight bytes are estimates from the
#: parameter count: inputs to arithmetic, not measurements on this machine.
MODELS: dict[str, QuantizedModel] = {
    f"{key}-q4": QuantizedModel.from_catalog(key, "q4_k_m") for key in catalog.names()}


def quantized_model(model) -> QuantizedModel:
    """A QuantizedModel from itself, a ``ModelInfo`` or a key of :data:`MODELS`."""
    if isinstance(model, QuantizedModel):
        return model
    if isinstance(model, str):
        try:
            return MODELS[model]
        except KeyError:
            from ..lang.i18n import pick
            raise ValueError(pick(f"unknown model {model!r}; choose one of {', '.join(MODELS)} "
                                  "or pass a QuantizedModel",
                                  f"不認識的模型 {model!r}；請從 {', '.join(MODELS)} 中選一個，"
                                  "或傳入 QuantizedModel")) from None
    if hasattr(model, "n_head_kv") and hasattr(model, "size_bytes"):
        return QuantizedModel.from_info(model)
    if isinstance(model, ModelShape):
        raise TypeError(f"{model.key} is a shape without weights: pass "
                        f"QuantizedModel.from_catalog({model.key!r}, quant)")
    raise TypeError(f"cannot describe {model!r} as a model")


@dataclass(frozen=True)
class Capacity:
    """The calculator's answer (bytes throughout; see :meth:`table` for a readable view)."""

    model: str
    gpu_bytes: float
    weights_bytes: float
    overhead_bytes: float
    kv_type: str
    bytes_per_token: float
    n_ctx: int                  # KV cells llama.cpp allocates (after padding)
    slots: int
    kv_unified: bool
    n_ctx_slot: int             # the most one conversation may hold
    kv_bytes: float             # the KV cache for n_ctx cells
    needed_bytes: float         # weights + overhead + KV
    fits: bool                  # does this configuration fit in GPU memory?
    kv_budget_bytes: float      # GPU memory left for KV after weights and overhead
    cells_that_fit: int         # KV cells the budget holds
    tokens_per_conversation: int
    conversations: int          # conversations of that size that fit at once

    def to_dict(self) -> dict:
        return asdict(self)

    def _repr_html_(self) -> str:
        """Jupyter shows the readable table, not the raw fields."""
        return self.table().to_html(header=False)

    def table(self):
        """A two-column summary for a notebook, in the language in use."""
        import pandas as pd

        from ..lang.i18n import t
        gib = lambda n: f"{n / GiB:,.2f}"           # noqa: E731
        rows = [
            (t("capacity.model"), self.model),
            (t("capacity.bytes_per_token"),
             t("capacity.bytes_per_token_value", bytes=f"{self.bytes_per_token:,.0f}",
               kv_type=self.kv_type)),
            (t("capacity.configured"),
             t("capacity.configured_value", n_ctx=self.n_ctx, slots=self.slots,
               mode=t("capacity.unified" if self.kv_unified else "capacity.split"),
               n_ctx_slot=self.n_ctx_slot)),
            (t("capacity.kv_for_c"), f"{gib(self.kv_bytes)} GiB"),
            (t("capacity.weights"), f"{gib(self.weights_bytes)} + {gib(self.overhead_bytes)} GiB"),
            (t("capacity.needed"), f"{gib(self.needed_bytes)} / {gib(self.gpu_bytes)} GiB -> "
                                   + t("capacity.fits" if self.fits else "capacity.does_not_fit")),
            (t("capacity.budget"), t("capacity.budget_value", gib=gib(self.kv_budget_bytes),
                                     cells=f"{self.cells_that_fit:,}")),
            (t("capacity.conversations", tokens=f"{self.tokens_per_conversation:,}"),
             f"{self.conversations:,}"),
        ]
        return pd.DataFrame(rows, columns=["", t("table.value")]).set_index("")


def plan(gpu_gib: float, model, *, n_ctx: int = 4096, slots: int = 1, kv_type: str = "f16",
         kv_unified: bool = False, overhead_gib: float = 1.0,
         tokens_per_conversation: int | None = None) -> Capacity:
    """How many conversations fit on a GPU of ``gpu_gib`` GiB.

    ``model``: a :class:`QuantizedModel`, a ``ModelInfo`` or a key of :data:`MODELS`.
    ``n_ctx``/``slots``/``kv_unified``: the server's -c, -np and KV mode, used to size
    the configured KV cache and the per-slot cap (llama.cpp's rules, :func:`labkit.models.kv.slot_context`).
    ``tokens_per_conversation``: how many tokens one conversation holds; default: the
    per-slot cap, i.e. every slot filled to the brim.
    """
    m = quantized_model(model)
    if gpu_gib <= 0:
        raise ValueError("gpu_gib must be positive")
    if overhead_gib < 0:
        raise ValueError("overhead_gib must be >= 0")
    sc = kv.slot_context(n_ctx, slots, kv_unified)
    bpt = m.bytes_per_token(kv_type)
    tokens = int(tokens_per_conversation or sc.n_ctx_slot)
    if tokens < 1:
        raise ValueError("tokens_per_conversation must be at least 1")
    gpu = gpu_gib * GiB
    overhead = overhead_gib * GiB
    kv_bytes = bpt * sc.n_ctx
    needed = m.weights_bytes + overhead + kv_bytes
    budget = max(0.0, gpu - m.weights_bytes - overhead)
    cells = int(budget // bpt)
    return Capacity(m.name, gpu, m.weights_bytes, overhead, kv_type, bpt, sc.n_ctx, slots,
                    kv_unified, sc.n_ctx_slot, kv_bytes, needed, needed <= gpu, budget, cells,
                    tokens, cells // tokens)


# The rough comfort table of the capacity-planning source (light, chat-length conversations,
# "order of magnitude only"): GPU memory, model, conversations it claims.
SEED_TABLE = [
    (8, "llama-3.1-8b-q4", "7-8B Q4", (1, 3)),
    (24, "llama-3.1-8b-q4", "8B Q4", (10, 30)),
    (24, "qwen2.5-32b-q4", "32B Q4", (3, 8)),
    (48, "llama-3.1-70b-q4", "70B Q4", (5, 15)),
]


def seed_comparison(conversation_tokens=(2048, 4096, 8192), *, kv_type: str = "f16",
                    overhead_gib: float = 1.0):
    """The source's rough table next to what :func:`plan` says for conversations of a few sizes.
    A table to read: under LABKIT_LANG=zh-TW its headings are Chinese."""
    import pandas as pd

    from ..lang.i18n import show
    rows = []
    for gpu, key, label, (lo, hi) in SEED_TABLE:
        row = {"GPU (GiB)": gpu, "model": label, "stand-in": MODELS[key].name,
               "source says": f"{lo}-{hi}"}
        for t in conversation_tokens:
            c = plan(gpu, key, kv_type=kv_type, overhead_gib=overhead_gib,
                     tokens_per_conversation=t)
            row[f"calc @ {t // 1024}k tokens"] = c.conversations
        rows.append(row)
    return show(pd.DataFrame(rows), {"model": "模型（種子文章的寫法）", "stand-in": "代表模型",
                                     "source says": "種子文章說"})


def levers(model="llama-3.1-8b-q4", *, gpu_gib: float = 24, tokens: int = 8192,
           overhead_gib: float = 1.0, kv_types=("f16", "q8_0", "q4_0")):
    """GQA and KV quantization as levers: bytes per token and conversations that fit,
    for the model as it is (grouped-query attention) and as if every query head kept its
    own keys and values (n_head_kv = n_head, classic multi-head attention). A table to read:
    under LABKIT_LANG=zh-TW its headings and its attention names are Chinese."""
    import pandas as pd

    from ..lang.i18n import pick, show
    m = quantized_model(model)
    variants = [(pick("GQA (as shipped)", "GQA（模型原樣）"), m)]
    if m.shape.n_head != m.shape.n_head_kv:
        mha = replace(m.shape, n_head_kv=m.shape.n_head)
        variants.append((pick("MHA (no grouping)", "MHA（不分組）"), replace(m, shape=mha)))
    rows = []
    for attn, variant in variants:
        for t in kv_types:
            c = plan(gpu_gib, variant, kv_type=t, overhead_gib=overhead_gib,
                     tokens_per_conversation=tokens)
            rows.append({"attention": attn, "KV heads": variant.shape.n_head_kv, "KV type": t,
                         "bytes/token": c.bytes_per_token,
                         f"MiB per {tokens // 1024}k conversation": c.bytes_per_token * tokens / MiB,
                         "conversations": c.conversations})
    return show(pd.DataFrame(rows), {"attention": "注意力", "KV heads": "KV 頭數",
                                     "bytes/token": "位元組/token", "conversations": "對話數"})


# ---------------------------------------------------------------------------- measured side

def measure_kv_bytes(model, n_ctx: int, kv_type: str = "f16", *, n_seq_max: int = 1,
                     kv_unified: bool = False) -> float:
    """Create a llama.cpp context and return the KV buffer bytes llama.cpp reports allocating.

    ``model``: a loaded :class:`labkit.engine.native.LlamaModel`. Quantized V caches need
    flash attention in llama.cpp, so it is switched on for them.
    """
    from ..engine.native import new_context, quiet_llama
    with quiet_llama() as log:
        with new_context(model, n_ctx=n_ctx, n_seq_max=n_seq_max, kv_unified=kv_unified,
                         type_k=kv_type, type_v=kv_type,
                         flash_attn="on" if kv_type != "f16" else "auto", n_batch=512):
            pass
    return log.kv_bytes()


def kv_match_table(model_path=None, n_ctxs=(512, 1000, 2048), kv_types=("f16", "q8_0", "q4_0"),
                   n_gpu_layers: int = 0):
    """The formula next to llama.cpp's real allocation, one row per (n_ctx, KV type).

    ``match`` is True when they agree within llama.cpp's printing precision (it logs
    MiB with two decimals, so +-0.005 MiB; a value ending in exactly 5 in the third decimal,
    such as 50.625, is printed as 50.62 or 50.63, hence the extra byte of slack).
    """
    import pandas as pd

    from ..engine.native import load_model
    from ..models.files import describe, resolve_model
    path = resolve_model(model_path)
    info = describe(path, with_hash=False)
    rows = []
    with load_model(path, n_gpu_layers=n_gpu_layers) as model:
        for n_ctx in n_ctxs:
            cells = kv.slot_context(n_ctx, 1, False).n_ctx
            for t in kv_types:
                formula = kv.kv_cache_bytes(info, cells, t)
                real = measure_kv_bytes(model, n_ctx, t)
                rows.append({"n_ctx asked": n_ctx, "cells (padded)": cells, "KV type": t,
                             "formula MiB": formula / MiB, "llama.cpp MiB": real / MiB,
                             "match": abs(formula - real) <= 0.005 * MiB + 1})
    from ..bench.provenance import SEP, libllama_name
    out = pd.DataFrame(rows)
    ngl = f" -ngl {n_gpu_layers}" if n_gpu_layers else ""
    out.attrs["measured_on"] = [f"{libllama_name()}{SEP}{Path(str(path)).name}, "
                                f"-c {'/'.join(map(str, n_ctxs))} -np 1{ngl}"]
    return out
