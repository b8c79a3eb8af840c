"""The HTTP front of the slot engine, speaking llama-server's API.

Routes (llama-server's names and shapes, so the seed's recipe and any OpenAI
client work unchanged):

    GET  /health  /props  /slots  /metrics  /v1/models
    POST /v1/chat/completions  /completion  /v1/completions
    POST /tokenize  /detokenize  /apply-template
    GET  /trace   (labkit's own: the engine's step trace as JSON)

The engine runs on its own thread; each request's events cross into asyncio
through the loop's mailbox (:class:`.generation.Mailbox`, one wake-up per step).
The model loads in the background, and until it has, /health answers 503 as
llama-server's does.

The event loop serves every client, so nothing slow runs on it: parsing a
body, applying the chat template, tokenizing, detokenizing and serializing a
big answer all run on worker threads (:data:`.routes.off_loop`), and a 7 MB
request does not pause other clients' streams (benchmarks/event_loop_stall.py).

This module wires the app: the routes (:mod:`.routes`, whose handlers read the
:class:`~.state.ServerState` from ``app.state.server``), the API key, the
error handlers and the model's loading and closing. Requests are read by
:mod:`.validate`, answers shaped by :mod:`.shapes`, and generation runs
through :mod:`.generation`.

Every error is llama-server's JSON, ``{"error": {"code", "message", "type"}}``:
a refused request, an unknown route (404 ``not_found_error``), a missing API
key (401, on every route but /health, as in llama-server), and any
unexpected exception (500 ``server_error``, its traceback in the log).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import threading

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Route

from . import routes
from .errors import ApiError, unexpected
from .routes import error_response
from .state import ServerState

# Routes that answer without an API key, as in llama-server (which asks for the key on
# every other path, known or not, before it looks the path up).
PUBLIC = {"/health", "/v1/health"}

# (path, handler, methods): llama-server's routes and their aliases, and labkit's /trace.
ROUTES = [
    ("/health", routes.health, ["GET"]), ("/v1/health", routes.health, ["GET"]),
    ("/props", routes.props, ["GET"]), ("/props", routes.change_props, ["POST"]),
    ("/slots", routes.slots, ["GET"]), ("/metrics", routes.metrics, ["GET"]),
    ("/v1/models", routes.models, ["GET"]), ("/models", routes.models, ["GET"]),
    ("/trace", routes.trace, ["GET"]),
    ("/tokenize", routes.tokenize, ["POST"]), ("/detokenize", routes.detokenize, ["POST"]),
    ("/apply-template", routes.apply_template, ["POST"]),
    ("/v1/chat/completions", routes.chat_completions, ["POST"]),
    ("/chat/completions", routes.chat_completions, ["POST"]),
    ("/completion", routes.completion, ["POST"]), ("/completions", routes.completion, ["POST"]),
    ("/v1/completions", routes.completion, ["POST"]),
]


class RequireApiKey:
    """ASGI middleware: every path but :data:`PUBLIC` needs ``Authorization: Bearer KEY`` (or
    ``X-Api-Key: KEY``), as in llama-server, which checks the key before routing. The key is
    compared as bytes (the header's as sent, the key's in UTF-8) in constant time, so how
    long a refusal takes says nothing about how much of a guess was right."""

    def __init__(self, app, api_key: str):
        self.app, self.api_key = app, api_key
        self._key = api_key.encode("utf-8", "surrogateescape")   # as argv gave it

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] not in PUBLIC:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                       for k, v in scope.get("headers", [])}
            auth = headers.get("authorization", "")
            key = auth[7:] if auth.lower().startswith("bearer ") else headers.get("x-api-key", "")
            if not hmac.compare_digest(key.encode("latin-1"), self._key):
                response = error_response(ApiError(401, "Invalid API Key", "authentication_error"))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def http_error(request, exc: HTTPException):
    """Starlette's own errors in llama-server's shape. llama-server routes by method and
    path: a known path with another method is unknown."""
    if exc.status_code in (404, 405):
        return error_response(ApiError(404, "File Not Found", "not_found_error"))
    kind = "invalid_request_error" if exc.status_code < 500 else "server_error"
    return error_response(ApiError(exc.status_code, str(exc.detail), kind))


async def last_resort(request, exc: Exception):
    """An exception outside any route."""
    return error_response(unexpected(request, exc))


def create_app(state: ServerState, load_in_background: bool = True) -> Starlette:
    """The ASGI app. With ``load_in_background`` the model loads on a thread and /health
    says 503 until it is ready; otherwise it loads before the app is returned."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        if load_in_background:
            threading.Thread(target=state.load, name="labkit-load", daemon=True).start()
        try:
            yield
        finally:
            await asyncio.to_thread(state.close)

    if not load_in_background:
        state.load()
    middleware = [Middleware(RequireApiKey, api_key=state.api_key)] if state.api_key else []
    app = Starlette(routes=[Route(path, routes.route(handler), methods=methods)
                            for path, handler, methods in ROUTES],
                    lifespan=lifespan, middleware=middleware,
                    exception_handlers={HTTPException: http_error, Exception: last_resort})
    app.state.server = state
    return app
