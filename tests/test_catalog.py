"""The model catalogue: published shapes that add up, and the embedded model read from its file."""

import dataclasses

import pytest

from labkit.models import catalog, kv


def test_embedded_entry_matches_its_file():
    from labkit.models.files import describe
    info = describe(with_hash=False)
    entry = catalog.get("smollm2-135m")
    fields = ("n_layer", "n_head", "n_head_kv", "head_dim", "n_embd", "n_ctx_train")
    assert [getattr(entry, f) for f in fields] == [getattr(info, f) for f in fields]
    assert entry.arch == info.architecture and entry.n_params == info.n_params


def test_embedded_shape_read_from_the_file_equals_the_catalogue():
    from labkit.models.files import describe
    from_file = catalog.from_model_info(describe(with_hash=False))
    entry = catalog.get("smollm2-135m")
    assert dataclasses.replace(from_file, key=entry.key, name=entry.name) == entry


def test_kv_bytes_per_token():
    m = catalog.get("llama-3.1-8b")
    assert m.kv_bytes_per_token() == 131072 == 2 * 32 * 8 * 128 * 2
    assert m.kv_bytes_per_token("q8_0") == kv.bytes_per_token(32, 8, 128, "q8_0")
    assert m.kv_bytes_per_token("f16", "q4_0") == 32 * 8 * 128 * (2 + 18 / 32)
    assert catalog.get("smollm2-135m").kv_bytes_per_token() == 23040


@pytest.mark.parametrize("key", catalog.names(stand_ins=True))
def test_parameter_count_adds_up_from_the_shape(key):
    """The published parameter count agrees with the layer arithmetic (a typo in any width fails)."""
    m = catalog.SHAPES[key]
    q = m.n_head * m.head_dim
    kv_width = m.n_head_kv * m.head_dim
    attention = m.n_embd * q + 2 * m.n_embd * kv_width + q * m.n_embd
    mlp = 3 * m.n_embd * m.n_ff                         # gate, up, down
    per_layer = attention + mlp + 2 * m.n_embd           # two norms
    embeddings = m.n_vocab * m.n_embd * (1 if m.tied_embeddings else 2)
    total = m.n_layer * per_layer + embeddings + m.n_embd
    assert total == pytest.approx(m.n_params, rel=1e-3)   # Qwen's attention biases are the rest


def test_weight_bytes_follow_bits_per_weight():
    m = catalog.get("llama-3.1-8b")
    assert m.weight_bytes("f16") == 2 * m.n_params
    assert m.weight_bytes("q8_0") == m.n_params * 34 / 32
    assert m.weight_bytes("q4_0") < m.weight_bytes("q4_k_m") < m.weight_bytes("q4_1")
    # Llama-3.1-8B-Instruct Q4_K_M GGUFs are about 4.92 GB: the estimate is within 2 %.
    assert m.weight_bytes("q4_k_m") == pytest.approx(4.92e9, rel=0.02)
    with pytest.raises(ValueError, match="q4_k_m"):
        m.weight_bytes("q3_k_xl")


def test_unknown_key_lists_the_known_ones():
    with pytest.raises(ValueError) as e:
        catalog.get("gpt-5")
    for key in catalog.names():
        assert key in str(e.value)
    assert catalog.get("Llama-3.1-8B") is catalog.SHAPES["llama-3.1-8b"]


def test_shapes_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        catalog.get("llama-3.1-8b").n_layer = 1


def test_a_stand_in_is_marked_and_never_offered_as_a_model():
    from labkit.costs import capacity
    assert catalog.STAND_INS == ("gpu-speed-stand-in",)
    for key in catalog.STAND_INS:
        shape = catalog.get(key)
        assert shape.stand_in and "not a real model" in shape.name
        assert key not in catalog.names() and key in catalog.names(stand_ins=True)
        assert not any(m.startswith(key) for m in capacity.MODELS)
    assert not any(catalog.get(k).stand_in for k in catalog.names())
