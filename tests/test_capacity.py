"""The capacity calculator: hand-checked arithmetic, the source's table, and the KV bytes
llama.cpp really allocates."""

import pytest

from labkit.costs import capacity
from labkit.models import catalog, kv
from labkit.costs.capacity import GiB, MiB


def test_seed_8b_example():
    m = capacity.MODELS["llama-3.1-8b-q4"]
    assert m.bytes_per_token("f16") == 131072
    assert m.bytes_per_token("f16") * 2048 == 256 * MiB
    assert m.name == "Llama-3.1-8B Q4_K_M"


def test_models_are_the_catalogue_in_q4_k_m():
    assert set(capacity.MODELS) == {f"{k}-q4" for k in catalog.names()}
    for key in catalog.names():
        m = capacity.MODELS[f"{key}-q4"]
        assert m.shape is catalog.get(key)
        assert m.weights_bytes == catalog.get(key).weight_bytes("q4_k_m")


def test_plan_by_hand():
    c = capacity.plan(24, "llama-3.1-8b-q4", n_ctx=16384, slots=4, overhead_gib=1.0)
    weights = 8_030_261_248 * 4.84 / 8                  # parameters x bits per weight / 8
    budget = 24 * GiB - weights - 1 * GiB
    assert c.kv_budget_bytes == pytest.approx(budget)
    assert c.cells_that_fit == int(budget // 131072)
    assert c.n_ctx_slot == 4096 and c.tokens_per_conversation == 4096
    assert c.conversations == c.cells_that_fit // 4096
    assert c.kv_bytes == 16384 * 131072 and c.fits


def test_plan_does_not_fit_and_never_goes_negative():
    c = capacity.plan(4, "llama-3.1-8b-q4", n_ctx=65536)
    assert not c.fits and c.kv_budget_bytes == 0 and c.conversations == 0


def test_unified_slot_cap_is_the_pool():
    c = capacity.plan(24, "llama-3.1-8b-q4", n_ctx=16384, slots=4, kv_unified=True)
    assert c.n_ctx_slot == 16384


def test_quantized_kv_holds_more_conversations():
    n = [capacity.plan(24, "llama-3.1-8b-q4", kv_type=t, tokens_per_conversation=8192).conversations
         for t in ("f16", "q8_0", "q4_0")]
    assert n[0] < n[1] < n[2]


def test_model_from_the_embedded_model():
    from labkit.models.files import describe
    info = describe(with_hash=False)
    m = capacity.quantized_model(info)
    assert m.bytes_per_token() == kv.model_bytes_per_token(info)
    assert m.weights_bytes == info.size_bytes and m.quant == info.file_type
    assert capacity.plan(8, info).conversations > 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="unknown model"):
        capacity.plan(24, "gpt-5")
    with pytest.raises(ValueError):
        capacity.plan(0, "llama-3.1-8b-q4")
    with pytest.raises(ValueError, match="unknown KV cache type"):
        capacity.plan(24, "llama-3.1-8b-q4", kv_type="q3")
    with pytest.raises(TypeError, match="from_catalog"):
        capacity.plan(24, catalog.get("llama-3.1-8b"))
    assert capacity.plan(24, capacity.QuantizedModel.from_catalog("llama-3.1-8b", "q8_0")).fits


def test_seed_comparison_and_levers_tables():
    t = capacity.seed_comparison()
    assert list(t["source says"]) == ["1-3", "10-30", "3-8", "5-15"]
    assert (t["calc @ 2k tokens"] >= t["calc @ 8k tokens"]).all()
    lv = capacity.levers()
    gqa = lv[(lv["attention"] == "GQA (as shipped)") & (lv["KV type"] == "f16")]["bytes/token"].item()
    mha = lv[(lv["attention"] == "MHA (no grouping)") & (lv["KV type"] == "f16")]["bytes/token"].item()
    assert mha == 4 * gqa
    assert capacity.plan(24, "llama-3.1-8b-q4").table().shape[1] == 1


@pytest.mark.slow
def test_kv_match_table_compares_with_llama_cpp_allocation():
    t = capacity.kv_match_table(n_ctxs=(300,), kv_types=("f16", "q4_0"))
    assert list(t["cells (padded)"]) == [512, 512]
    assert t["match"].all()
    # The measured column is llama.cpp's own log, not the formula: it is rounded to 0.01 MiB.
    assert all(round(v, 2) == v for v in t["llama.cpp MiB"])
