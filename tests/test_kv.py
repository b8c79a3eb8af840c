import pytest

from labkit.models import kv


def test_seed_8b_example():
    # 32 layers, 8 KV heads, head dim 128, f16: 131,072 B/token; 2k tokens = 256 MiB.
    bpt = kv.bytes_per_token(32, 8, 128, "f16")
    assert bpt == 131_072
    assert bpt * 2048 == 256 * 2**20


def test_quantized_cache_types():
    assert kv.bytes_per_token(1, 1, 32, "q8_0") == 2 * 34
    assert kv.bytes_per_token(1, 1, 32, "q4_0") == 2 * 18
    assert kv.bytes_per_token(1, 1, 32, "f16", "q4_0") == 64 + 18


def test_unknown_cache_type_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown KV cache type 'q3'"):
        kv.bytes_per_token(1, 1, 32, "q3")


@pytest.mark.parametrize("slots,expected", [(1, 16384), (2, 8192), (4, 4096)])
def test_split_16k(slots, expected):
    s = kv.slot_context(16384, slots, kv_unified=False)
    assert s.n_ctx_seq == expected and s.n_ctx == 16384
    # SmolLM2 trains at 8192: llama-server caps the slot there.
    assert kv.slot_context(16384, slots, False, n_ctx_train=8192).n_ctx_slot == min(expected, 8192)


def test_unified_pool_and_per_slot_cap():
    s = kv.slot_context(16384, 4, kv_unified=True, n_ctx_train=8192)
    assert (s.n_ctx, s.n_ctx_seq, s.n_ctx_slot) == (16384, 16384, 8192)
    assert kv.slot_context(16384, 4, True, per_slot=4096).n_ctx_slot == 4096


def test_padding_grows_the_total():
    # 1000 -> 1024 cells; 1024 / 3 = 341 -> 512 per sequence; 3 x 512 = 1536 in all.
    s = kv.slot_context(1000, 3, kv_unified=False)
    assert (s.n_ctx, s.n_ctx_seq) == (1536, 512)


def test_bad_arguments():
    with pytest.raises(ValueError):
        kv.slot_context(4096, 0, False)
    with pytest.raises(ValueError):
        kv.slot_context(0, 1, False)
