"""``python -m labkit.server`` (also ``labkit serve``): run the slot server.

Takes llama-server's flags (see :mod:`labkit.server.args`), prints the same
startup lines llama-server does (n_ctx, n_ctx_seq, n_slots, n_ctx_slot,
kv_unified), and stops cleanly on SIGTERM or Ctrl-C: requests still in
flight get a few seconds to finish, then are cancelled.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

from .. import settings
from ..engine import EngineConfig
from ..models import resolve_model
from .args import parse_args

log = logging.getLogger("labkit.server")


def main(argv=None) -> int:
    args = parse_args(argv)
    handler = logging.FileHandler(args.log_file) if args.log_file else \
        logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    try:
        model = str(resolve_model(args.model, load=True, n_gpu_layers=args.n_gpu_layers))
        config = EngineConfig(model, **settings.values(args, settings.ENGINE))
    except (OSError, ValueError) as exc:
        log.error("%s", exc)
        return 2

    import uvicorn

    from .app import ServerState, create_app
    state = ServerState(config, alias=args.alias or model.rsplit("/", 1)[-1],
                        metrics=args.metrics, slots=args.slots_endpoint, api_key=args.api_key)
    app = create_app(state)
    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            # Stop generating at once: streams in flight get their final 'cancelled'
            # chunk and close, so the graceful shutdown does not wait on them.
            super().handle_exit(sig, frame)
            threading.Thread(target=state.close, daemon=True).start()

    server = Server(uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", access_log=False,
        timeout_graceful_shutdown=5, log_config=None))
    log.info("listening on http://%s:%d", args.host, args.port)
    # uvicorn re-raises SIGTERM after its graceful shutdown; by then everything is
    # closed, so that second delivery just ends the process with status 0.
    signal.signal(signal.SIGTERM, _exit_now)
    try:
        server.run()
    except SystemExit:
        pass
    log.info("server stopped")
    return 1 if state.load_error else 0


def _exit_now(signum, frame):
    raise SystemExit(0)


if __name__ == "__main__":
    raise SystemExit(main())
