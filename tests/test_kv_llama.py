"""labkit.models.kv's context arithmetic against what the installed llama.cpp really does."""

import pytest

from labkit.models import kv
from labkit.engine.native import load_model, new_context, quiet_llama

pytestmark = pytest.mark.slow          # loads the embedded model

CASES = [(16384, 1, False), (16384, 2, False), (16384, 4, False), (16384, 4, True),
         (1000, 3, False), (1000, 1, False), (1000, 3, True), (300, 2, False),
         (5000, 3, False), (4096, 4, True)]


@pytest.fixture(scope="module")
def model(model_path):
    m = load_model(model_path)
    yield m
    m.close()


@pytest.mark.parametrize("n_ctx,n_seq,unified", CASES)
def test_slot_context_matches_llama_cpp(model, n_ctx, n_seq, unified):
    predicted = kv.slot_context(n_ctx, n_seq, unified)
    with new_context(model, n_ctx=n_ctx, n_seq_max=n_seq, kv_unified=unified) as ctx:
        assert (ctx.n_ctx, ctx.n_ctx_seq) == (predicted.n_ctx, predicted.n_ctx_seq)


@pytest.mark.parametrize("type_k", ["f16", "q8_0", "q4_0"])
def test_formula_matches_allocated_kv_bytes(model, model_path, type_k):
    """The formula against the bytes llama.cpp reports allocating for its KV buffers."""
    from labkit.models.files import describe
    info = describe(model_path, with_hash=False)
    with quiet_llama() as log:
        with new_context(model, n_ctx=2048, type_k=type_k, type_v=type_k,
                         flash_attn=type_k != "f16"):
            pass
    allocated = log.kv_bytes()
    # llama.cpp prints MiB with two decimals: equal within that rounding.
    assert abs(allocated - kv.kv_cache_bytes(info, 2048, type_k)) <= 0.005 * 2**20
