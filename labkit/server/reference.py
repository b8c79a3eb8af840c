"""Run llama.cpp's real llama-server, from the prebuilt `xllamacpp` wheel, with llama-server's flags.

    python -m labkit.server.reference -m model.gguf -c 16384 -np 4 --no-kv-unified --port 8081

This is the reference labkit's own server is compared with (the `ref` extra installs
it). xllamacpp runs llama-server's C++ HTTP server inside this Python process; this
module maps the flags onto its parameters, waits until the process is told to stop
(SIGTERM or SIGINT), and exits. Its log (including llama-server's
"initializing, n_slots = ..." line) goes to stderr.
"""

from __future__ import annotations

import signal
import sys
import threading

from ..models import resolve_model
from .args import build_parser, n_gpu_layers, resolve_slots


def params_from_args(args):
    import xllamacpp as xlc
    p = xlc.CommonParams()
    p.model.path = str(resolve_model(args.model))
    if args.alias:
        p.model_alias = {args.alias}
    p.hostnames = [args.host]
    p.port = args.port
    p.n_ctx = args.n_ctx
    n_slots, unified = resolve_slots(args.n_slots, args.kv_unified)
    p.n_parallel = n_slots
    p.kv_unified = unified
    if args.kv_unified_per_slot is not None:
        p.kv_unified_per_slot = args.kv_unified_per_slot
    p.n_batch = args.n_batch
    p.n_ubatch = args.n_ubatch
    p.cache_type_k = getattr(xlc.ggml_type, f"GGML_TYPE_{args.type_k.upper()}")
    p.cache_type_v = getattr(xlc.ggml_type, f"GGML_TYPE_{args.type_v.upper()}")
    p.flash_attn_type = getattr(xlc.llama_flash_attn_type, {
        "on": "LLAMA_FLASH_ATTN_TYPE_ENABLED", "off": "LLAMA_FLASH_ATTN_TYPE_DISABLED",
        "auto": "LLAMA_FLASH_ATTN_TYPE_AUTO"}[args.flash_attn])
    p.n_gpu_layers = n_gpu_layers(args.n_gpu_layers)
    if args.n_threads:
        p.cpuparams.n_threads = args.n_threads
        p.cpuparams_batch.n_threads = args.n_threads
    p.cont_batching = args.cont_batching
    p.ctx_shift = False
    p.fit_params = False
    p.endpoint_metrics = args.metrics
    p.endpoint_slots = args.slots_endpoint
    if args.api_key:
        p.api_keys = [args.api_key]
    return p


def main(argv=None) -> int:
    args = build_parser("python -m labkit.server.reference").parse_args(argv)
    import xllamacpp as xlc
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xlc.Server(params_from_args(args))
    print(f"reference llama-server listening at {server.listening_address}", file=sys.stderr,
          flush=True)
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
