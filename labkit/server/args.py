"""llama-server's command-line flags, parsed once for every server labkit starts.

labkit's own server and the reference llama-server (from the xllamacpp wheel)
take the same flags, so the seed tutorial's command lines work on both:

    -m MODEL --alias local --host 127.0.0.1 --port 8080 -c 16384 -np 4 --no-kv-unified
    -b 512 -ub 128 -ctk f16 -ctv f16 -fa auto -ngl 0 --metrics --slots
"""

from __future__ import annotations

import argparse

CACHE_TYPES = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"]


def _slots(text: str):
    if text == "auto":
        return "auto"
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"-np must be a positive number or 'auto', got {text}")
    return n


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return n


def build_parser(prog: str = "labkit serve") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="A continuous-batching slot server that speaks llama-server's API.")
    p.add_argument("-m", "--model", help="GGUF file (default: the embedded SmolLM2-135M)")
    p.add_argument("-a", "--alias", default=None, help="the model name the API reports")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("-c", "--ctx-size", dest="n_ctx", type=int, default=4096,
                   help="total KV cells (0: the model's training context)")
    p.add_argument("-np", "--parallel", dest="n_slots", type=_slots, default="auto",
                   help="slots; 'auto' means 4 slots with unified KV, as llama-server does")
    kvu = p.add_mutually_exclusive_group()
    kvu.add_argument("-kvu", "--kv-unified", dest="kv_unified", action="store_true", default=None)
    kvu.add_argument("--no-kv-unified", dest="kv_unified", action="store_false")
    p.add_argument("--kv-unified-per-slot", type=_positive, default=None,
                   help="cap each slot's context (n_ctx_slot) at N tokens")
    p.add_argument("-b", "--batch-size", dest="n_batch", type=_positive, default=2048)
    p.add_argument("-ub", "--ubatch-size", dest="n_ubatch", type=_positive, default=512)
    p.add_argument("-ctk", "--cache-type-k", dest="type_k", choices=CACHE_TYPES, default="f16")
    p.add_argument("-ctv", "--cache-type-v", dest="type_v", choices=CACHE_TYPES, default="f16")
    p.add_argument("-fa", "--flash-attn", dest="flash_attn", choices=["on", "off", "auto"],
                   default="auto")
    p.add_argument("-ngl", "--n-gpu-layers", "--gpu-layers", dest="n_gpu_layers", default="0",
                   help="layers to offload to the GPU (a number, 'all' or 'auto')")
    p.add_argument("-t", "--threads", dest="n_threads", type=_positive, default=None)
    cb = p.add_mutually_exclusive_group()
    cb.add_argument("-cb", "--cont-batching", dest="cont_batching", action="store_true",
                    default=True)
    cb.add_argument("-nocb", "--no-cont-batching", dest="cont_batching", action="store_false")
    p.add_argument("--max-queue", type=_positive, default=None,
                   help="answer 503 at once when N requests already wait for a slot")
    p.add_argument("--reserve", action="store_true",
                   help="admit a request only when prompt + max_tokens cells are free")
    p.add_argument("--metrics", action="store_true", help="enable /metrics")
    p.add_argument("--slots", dest="slots_endpoint", action="store_true", default=True)
    p.add_argument("--no-slots", dest="slots_endpoint", action="store_false")
    p.add_argument("--log-file", default=None)
    p.add_argument("--api-key", default=None)
    # Accepted for compatibility with the seed's llama-server command line; labkit's engine
    # never shifts context and never auto-fits, so these change nothing here.
    p.add_argument("--no-context-shift", action="store_true")
    p.add_argument("--fit", choices=["on", "off"], default=None)
    return p


def n_gpu_layers(value: str) -> int:
    """llama-server's -ngl accepts 'all' and 'auto'; llama.cpp's API wants a number.

    Both become -1 (every layer): a CPU-only build of llama.cpp ignores the setting.
    """
    return -1 if value in ("all", "auto") else int(value)


def resolve_slots(n_slots, kv_unified):
    """llama-server's rule: -np auto means 4 slots AND unified KV; an explicit -np N keeps
    split KV unless --kv-unified is given. Returns (n_slots, kv_unified)."""
    if n_slots == "auto":
        return 4, True if kv_unified is None else kv_unified
    return n_slots, bool(kv_unified)
