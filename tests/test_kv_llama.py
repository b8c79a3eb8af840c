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


def _graph_runs(model, *, n_seq: int, unified: bool, n_ubatch: int, parts) -> int:
    """How many times one llama_decode runs the model's graph: llama.cpp's eval callback is asked
    about every node of every graph it computes; count the asks for the output tensor.
    ``parts``: (sequence, new tokens, tokens already in its KV) for each sequence in the batch."""
    import ctypes

    import llama_cpp
    lib = llama_cpp.llama_cpp._lib          # the loaded libllama, linked to ggml
    get_name = lib.ggml_get_name
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
    runs = [0]

    @llama_cpp.ggml_backend_sched_eval_callback
    def seen(tensor, ask, _):
        if ask and get_name(tensor) == b"result_output":
            runs[0] += 1
        return not ask                      # watch nothing; go on computing

    p = llama_cpp.llama_context_default_params()
    p.n_ctx, p.n_seq_max, p.kv_unified = 4096, n_seq, unified
    p.n_batch, p.n_ubatch = 2048, n_ubatch
    p.cb_eval, p.cb_eval_user_data = seen, None
    ctx = llama_cpp.llama_init_from_model(model.ptr, p)
    try:
        def batch_of(rows):
            b = llama_cpp.llama_batch_init(len(rows), 0, 1)
            for i, (seq, pos, last) in enumerate(rows):
                b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = 100 + pos % 50, pos, 1, last
                b.seq_id[i][0] = seq
            b.n_tokens = len(rows)
            return b

        for seq, _, past in parts:          # what each sequence already holds
            if past:
                b = batch_of([(seq, pos, pos == past - 1) for pos in range(past)])
                assert llama_cpp.llama_decode(ctx, b) == 0
                llama_cpp.llama_batch_free(b)
        b = batch_of([(seq, past + i, i == new - 1) for seq, new, past in parts for i in range(new)])
        runs[0] = 0
        assert llama_cpp.llama_decode(ctx, b) == 0
        llama_cpp.llama_batch_free(b)
        return runs[0]
    finally:
        llama_cpp.llama_free(ctx)


def test_one_llama_decode_runs_the_model_once_per_micro_batch(model):
    """A step reads the weights once per micro-batch, not once per llama_decode: a 1024-token
    prompt at -ub 256 runs the graph four times (as a 2048-token one at -ub 512 does). With
    split KV a micro-batch takes the same number of tokens from each sequence in it
    (llama_batch_allocr::split_equal), so one decode token beside a 35-token prompt runs twice
    (1 + 1, then 34); unified KV, once."""
    assert _graph_runs(model, n_seq=1, unified=False, n_ubatch=256, parts=[(0, 1024, 0)]) == 4
    assert _graph_runs(model, n_seq=1, unified=False, n_ubatch=1024, parts=[(0, 1024, 0)]) == 1
    mixed = [(0, 1, 10), (1, 35, 0)]
    assert _graph_runs(model, n_seq=2, unified=True, n_ubatch=512, parts=mixed) == 1
    assert _graph_runs(model, n_seq=2, unified=False, n_ubatch=512, parts=mixed) == 2
    assert _graph_runs(model, n_seq=2, unified=False, n_ubatch=512,
                       parts=[(0, 1, 10), (1, 1, 10)]) == 1
