"""labkit.engine.scheduler.micro_batches, held to llama.cpp itself: the number of times
llama.cpp runs its graph for a batch (one run per micro-batch, counted through its eval
callback) is the number of micro-batches the rule predicts."""

import ctypes
from pathlib import Path

import llama_cpp
import pytest

from labkit.engine.native import Batch, LlamaModel
from labkit.engine.scheduler import micro_batches

N_UBATCH = 16

# (sequence id, tokens) in batch order
LAYOUTS = [
    [(0, 1)],
    [(0, 1), (1, 1), (2, 1), (3, 1)],           # four decoding slots: one pass
    [(0, 1), (1, 1), (3, 1)],                   # a gap in the ids: two
    [(1, 1), (0, 1)],                           # ids falling: two
    [(0, 1), (1, 1), (3, 20), (2, 18)],         # prompts after decodes, not in id order
    [(0, 1), (1, 1), (2, 18), (3, 20)],         # the same work in id order
    [(0, 40), (1, 5)],                          # n_ubatch caps the tokens per pass
    [(2, 3), (3, 30), (0, 7)],
]


def test_the_rule_by_hand():
    assert micro_batches([(0, 1), (1, 1), (2, 1), (3, 1)], 512) == [4]
    assert micro_batches([(0, 1), (1, 1), (3, 1)], 512) == [2, 1]
    assert micro_batches([(0, 1), (1, 1), (3, 178), (2, 177)], 512) == [3, 178, 176]
    assert micro_batches([(0, 1), (1, 1), (2, 177), (3, 178)], 512) == [4, 352, 1]
    assert micro_batches([(0, 300), (1, 300)], 512) == [512, 88]
    assert micro_batches([(0, 5), (1, 600)], 512, unified=True) == [512, 93]
    with pytest.raises(ValueError, match="together"):
        micro_batches([(0, 1), (1, 1), (0, 3)], 512)


def _naive(batch, n_ubatch, unified=False):
    """A rule that looks right and is not: every sequence in every pass, ids ignored."""
    left, sizes = dict(batch), []
    while any(left.values()):
        live = [s for s in left if left[s]]
        k = max(1, min(min(left[s] for s in live), n_ubatch // len(live)))
        for s in live:
            left[s] -= k
        sizes.append(k * len(live))
    return sizes


@pytest.fixture(scope="module")
def model(model_path):
    with LlamaModel(model_path) as m:
        yield m


def _graph_runs(model, layouts, unified):
    """For each layout, how many graphs llama.cpp computed to decode it (fresh sequences)."""
    lib = next(Path(llama_cpp.__file__).parent.joinpath("lib").glob("libggml-base.so*"))
    ggml = ctypes.CDLL(str(lib))
    ggml.ggml_get_name.restype = ctypes.c_char_p
    ggml.ggml_get_name.argtypes = [ctypes.c_void_p]
    runs = [0]

    def seen(tensor, ask, _user):
        if ask and ggml.ggml_get_name(tensor) == b"attn_norm-0":
            runs[0] += 1
        return False   # observe nothing: only count

    callback = llama_cpp.ggml_backend_sched_eval_callback(seen)
    p = llama_cpp.llama_context_default_params()
    p.n_ctx, p.n_seq_max, p.kv_unified = 1024, 4, unified
    p.n_batch, p.n_ubatch, p.n_threads = 64, N_UBATCH, 1
    p.cb_eval = callback
    ctx = llama_cpp.llama_init_from_model(model.ptr, p)
    assert ctx
    try:
        mem = llama_cpp.llama_get_memory(ctx)
        counts = []
        for layout in layouts:
            llama_cpp.llama_memory_clear(mem, True)
            batch = Batch(64, 4)
            for seq, n in layout:
                batch.add_chunk([1 + seq] * n, 0, seq, True)
            runs[0] = 0
            assert llama_cpp.llama_decode(ctx, batch.view(0, batch.n)) == 0
            llama_cpp.llama_synchronize(ctx)
            counts.append(runs[0])
            batch.close()
        return counts
    finally:
        llama_cpp.llama_free(ctx)


@pytest.mark.slow
def test_split_kv_passes_are_llama_cpps(model):
    counted = _graph_runs(model, LAYOUTS, unified=False)
    predicted = [len(micro_batches(b, N_UBATCH)) for b in LAYOUTS]
    assert counted == predicted, list(zip(LAYOUTS, counted, predicted))
    # the check can say no: a plausible rule that ignores the ids disagrees with llama.cpp
    assert [len(_naive(b, N_UBATCH)) for b in LAYOUTS] != counted


@pytest.mark.slow
def test_unified_passes_are_llama_cpps(model):
    layouts = [[(0, 20), (1, 30)], [(0, 1), (1, 1), (3, 1)], [(2, 16)]]
    counted = _graph_runs(model, layouts, unified=True)
    assert counted == [len(micro_batches(b, N_UBATCH, unified=True)) for b in layouts]
    assert counted != [len(micro_batches(b, N_UBATCH)) for b in layouts]
