"""``python -m labkit.server`` (also ``labkit serve``): run the slot server.

Takes llama-server's flags (see :mod:`labkit.server.args`), prints the same
startup lines llama-server does (n_ctx, n_ctx_seq, n_slots, n_ctx_slot,
kv_unified), and stops cleanly on SIGTERM or Ctrl-C: requests still in
flight get a few seconds to finish, then are cancelled.

A server that cannot serve exits at once with status 1 and one error line
saying why, as llama-server does: a model file that is missing, not GGUF or
truncated (read from its header before anything else), a port already in use
(bound before the server says "listening"), or a model llama.cpp cannot load
or a context it cannot create (the model loads in the background while
/health answers 503, then the server exits).

A server that other machines can reach (``--host 0.0.0.0``, any address but
loopback) with no ``--api-key`` logs a security warning line when it starts,
as llama-server warns when it has no key. An unreadable ``LABKIT_LANG`` or
``LABKIT_QUICK`` stops it before anything starts, with the one line the
``labkit`` command prints (exit status 2).
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import sys
import threading

from .. import settings
from ..lang.i18n import pick
from ..machine.unreadable import unreadable_setting
from ..models.files import describe
from .args import parse_args

log = logging.getLogger("labkit.server")

# llama-server's exit status when it cannot start (a model it cannot load, a port it cannot bind).
EXIT_FAILED_TO_START = 1
# the labkit command's, for an unreadable LABKIT_LANG or LABKIT_QUICK
EXIT_UNREADABLE_SETTING = 2


def main(argv=None) -> int:
    problem = unreadable_setting()   # as the labkit command: before anything starts
    if problem:
        print(problem, file=sys.stderr)
        return EXIT_UNREADABLE_SETTING
    args = parse_args(argv)
    handler = logging.FileHandler(args.log_file) if args.log_file else \
        logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    from ..engine.devices import resolve_to_load
    try:
        model = str(resolve_to_load(args.model, args.n_gpu_layers))
        describe(model, with_hash=False)   # reads the header alone: not GGUF, truncated
    except (OSError, ValueError) as exc:
        log.error("cannot load the model: %s", exc)
        return EXIT_FAILED_TO_START
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        log.error("couldn't bind HTTP server socket, hostname: %s, port: %d: %s",
                  args.host, args.port, exc.strerror or exc)
        return EXIT_FAILED_TO_START

    warning = exposure_warning(*sock.getsockname()[:2], args.api_key)   # what was bound
    if warning:
        log.warning("%s", warning)

    import uvicorn

    from ..engine import EngineConfig
    from .app import create_app
    from .state import ServerState
    config = EngineConfig(model, **settings.values(args, settings.ENGINE))
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

    def exit_if_the_model_fails():
        state.loaded.wait()
        if state.load_error:
            server.should_exit = True
    threading.Thread(target=exit_if_the_model_fails, name="labkit-load-watch",
                     daemon=True).start()
    log.info("listening on http://%s:%d", args.host, args.port)
    # uvicorn re-raises SIGTERM after its graceful shutdown; by then everything is
    # closed, so that second delivery just ends the process with status 0.
    signal.signal(signal.SIGTERM, _exit_now)
    status = 0
    try:
        server.run(sockets=[sock])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    if state.load_error:
        log.info("server stopped: the model failed to load")
        return EXIT_FAILED_TO_START
    log.info("server stopped")
    return status


def exposure_warning(address: str, port: int, api_key: str | None) -> str | None:
    """The warning line for a server that other machines can reach with no API key: bound
    to an address that is not loopback (0.0.0.0, ::, a network interface's). llama-server
    warns ("security: no API key is set and CORS allows all origins") whenever it has no key,
    because its CORS lets any web page read its answers; labkit sends no CORS headers, so
    what a key guards here is the network. None when bound to loopback or given a key."""
    ip = ipaddress.ip_address(address.split("%")[0])   # an IPv6 address may name its zone
    ip = getattr(ip, "ipv4_mapped", None) or ip          # ::ffff:127.0.0.1 is loopback too
    if api_key or ip.is_loopback:
        return None
    return pick(f"security: no API key is set and the server listens on {address}, which other "
                f"machines can reach: anyone who reaches port {port} can use it "
                f"(set --api-key KEY, or --host 127.0.0.1)",
                f"安全：沒有設定 API 金鑰，而伺服器在 {address} 上接受連線，其他機器連得到："
                f"連得到 {port} 連接埠的人都能用它（請設定 --api-key KEY，或改用 --host 127.0.0.1）")


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6), or OSError (e.g. the port is
    already in use). Bound here, before anything says "listening", and handed to uvicorn."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _exit_now(signum, frame):
    raise SystemExit(0)


if __name__ == "__main__":
    raise SystemExit(main())
