"""Run llama.cpp's real llama-server, from the prebuilt `xllamacpp` wheel, with llama-server's flags.

    python -m labkit.server.reference -m model.gguf -c 16384 -np 4 --no-kv-unified --port 8081

This is the reference labkit's own server is compared with (a dependency of labkit where PyPI
has a wheel for the platform: pyproject.toml). xllamacpp runs llama-server's C++ HTTP server inside this Python process; this
module maps the flags onto its parameters, waits until the process is told to stop
(SIGTERM or SIGINT), and exits. Its log (including llama-server's
"initializing, n_slots = ..." line) goes to stderr.
"""

from __future__ import annotations

import signal
import sys
import threading

from .. import settings
from ..models.files import resolve_model
from .args import parse_args

_FLASH_ATTN = {"on": "LLAMA_FLASH_ATTN_TYPE_ENABLED", "off": "LLAMA_FLASH_ATTN_TYPE_DISABLED",
               "auto": "LLAMA_FLASH_ATTN_TYPE_AUTO"}
_SPLIT_MODE = {"none": "LLAMA_SPLIT_MODE_NONE", "layer": "LLAMA_SPLIT_MODE_LAYER",
               "row": "LLAMA_SPLIT_MODE_ROW"}


def _threads(p, n):
    if n:
        p.cpuparams.n_threads = n
        p.cpuparams_batch.n_threads = n


# How each llama-server setting of labkit.settings.TABLE lands on xllamacpp's CommonParams
# (llama-server's own parameter struct). tests check that every setting has an entry.
# n_slots and kv_unified are applied together: "-np auto" is passed on as llama-server's own
# auto (-1), so llama-server applies its own rule and the differential suite can hold
# labkit's rule (labkit.settings.resolve_slots) against it.
APPLY = {
    "n_ctx": lambda p, v, xlc: setattr(p, "n_ctx", v),
    "kv_unified_per_slot": lambda p, v, xlc: v is not None and setattr(p, "kv_unified_per_slot", v),
    "n_batch": lambda p, v, xlc: setattr(p, "n_batch", v),
    "n_ubatch": lambda p, v, xlc: setattr(p, "n_ubatch", v),
    "type_k": lambda p, v, xlc: setattr(p, "cache_type_k", getattr(xlc.ggml_type, f"GGML_TYPE_{v.upper()}")),
    "type_v": lambda p, v, xlc: setattr(p, "cache_type_v", getattr(xlc.ggml_type, f"GGML_TYPE_{v.upper()}")),
    "flash_attn": lambda p, v, xlc: setattr(p, "flash_attn_type", getattr(xlc.llama_flash_attn_type, _FLASH_ATTN[v])),
    # -1 ("all") is llama_model_params' "every layer", but common's "use the default": ask
    # for more layers than any model has, which llama.cpp caps at every layer.
    "n_gpu_layers": lambda p, v, xlc: setattr(p, "n_gpu_layers", v if v >= 0 else 9999),
    "op_offload": lambda p, v, xlc: setattr(p, "no_op_offload", not v),
    "split_mode": lambda p, v, xlc: setattr(p, "split_mode", getattr(xlc.llama_split_mode, _SPLIT_MODE[v])),
    "main_gpu": lambda p, v, xlc: setattr(p, "main_gpu", v),
    "n_threads": lambda p, v, xlc: _threads(p, v),
    "cont_batching": lambda p, v, xlc: setattr(p, "cont_batching", v),
    "model": lambda p, v, xlc: setattr(p.model, "path", str(resolve_model(v))),
    "alias": lambda p, v, xlc: v and setattr(p, "model_alias", {v}),
    "api_key": lambda p, v, xlc: v and setattr(p, "api_keys", [v]),
    "context_shift": lambda p, v, xlc: setattr(p, "ctx_shift", v),
    "fit": lambda p, v, xlc: setattr(p, "fit_params", v == "on"),
    "host": lambda p, v, xlc: setattr(p, "hostnames", [v]),
    "port": lambda p, v, xlc: setattr(p, "port", v),
    "log_file": lambda p, v, xlc: None,   # the log goes to stderr, which the launcher keeps
    "metrics": lambda p, v, xlc: setattr(p, "endpoint_metrics", v),
    "slots_endpoint": lambda p, v, xlc: setattr(p, "endpoint_slots", v),
    "slot_prompt_similarity": lambda p, v, xlc: setattr(p, "slot_prompt_similarity", v),
    "cache_ram": lambda p, v, xlc: v is not None and setattr(p, "cache_ram_mib", v),
}
JOINT = ("n_slots", "kv_unified")


def params_from_args(args):
    import xllamacpp as xlc
    settings.refuse_labkit_only(args, "llama-server")
    p = xlc.CommonParams()
    for s in settings.table():
        if s.name in APPLY:
            APPLY[s.name](p, getattr(args, s.name), xlc)
    if args.n_slots == "auto":
        p.n_parallel = -1
        if args.kv_unified is not None:
            p.kv_unified = args.kv_unified
    else:
        p.n_parallel, p.kv_unified = args.n_slots, bool(args.kv_unified)
    return p


def main(argv=None) -> int:
    args = parse_args(argv, "python -m labkit.server.reference", llama_server=True)
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
