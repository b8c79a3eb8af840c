"""The HTTP front of the slot engine, speaking llama-server's API.

Routes (llama-server's names and shapes, so the seed's recipe and any OpenAI
client work unchanged):

    GET  /health  /props  /slots  /metrics  /v1/models
    POST /v1/chat/completions  /completion  /v1/completions
    POST /tokenize  /detokenize  /apply-template
    GET  /trace   (labkit's own: the engine's step trace as JSON)

The engine runs on its own thread; each request's events cross into asyncio
with ``loop.call_soon_threadsafe``. The model loads in the background, and
until it has, /health answers 503 as llama-server's does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
import uuid

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from ..engine import ContextExceeded, Engine, EngineConfig, FinalEvent, QueueFull
from .validate import MAX_BODY_BYTES, ApiError, chat_request, parse_json_body, prompt_field, sampling_params

log = logging.getLogger("labkit.server")

METRIC_HELP = {
    "prompt_tokens_total": ("counter", "Number of prompt tokens processed."),
    "prompt_seconds_total": ("counter", "Prompt process time."),
    "tokens_predicted_total": ("counter", "Number of generation tokens processed."),
    "tokens_predicted_seconds_total": ("counter", "Predict process time."),
    "n_decode_total": ("counter", "Total number of llama_decode() calls."),
    "n_busy_slots_per_decode": ("counter", "Average number of busy slots per llama_decode() call."),
    "prompt_tokens_seconds": ("gauge", "Average prompt throughput in tokens/s."),
    "predicted_tokens_seconds": ("gauge", "Average generation throughput in tokens/s."),
    "requests_processing": ("gauge", "Number of requests processing."),
    "requests_deferred": ("gauge", "Number of requests deferred."),
}

# Routes that answer without an API key, as in llama-server.
PUBLIC = {"/health", "/v1/health", "/models", "/v1/models"}


class ServerState:
    """The engine (once loaded) and the settings the routes need."""

    def __init__(self, config: EngineConfig, alias: str, metrics: bool = True,
                 slots: bool = True, api_key: str | None = None):
        self.config, self.alias = config, alias
        self.metrics_enabled, self.slots_enabled, self.api_key = metrics, slots, api_key
        self.engine: Engine | None = None
        self.load_error: str | None = None
        self.loaded = threading.Event()
        self.created = int(time.time())
        self.n_vocab = 0
        self._close_lock = threading.Lock()

    def load(self) -> None:
        try:
            self.engine = Engine(self.config)
            import llama_cpp
            self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.engine.model.vocab)
            log.info("model loaded: %s", self.config.model_path)
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.error("failed to load the model: %s", self.load_error)
        finally:
            self.loaded.set()

    def close(self) -> None:
        """Stop the engine: requests still running end with finish_reason 'cancelled'."""
        self.loaded.wait()
        with self._close_lock:
            if self.engine is not None:
                self.engine.close()
                self.engine = None
                log.info("engine stopped")


def _error(exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


def create_app(state: ServerState, load_in_background: bool = True) -> Starlette:
    """The ASGI app. With ``load_in_background`` the model loads on a thread and /health
    says 503 until it is ready; otherwise it loads before the app is returned."""

    def ready() -> Engine:
        if state.load_error:
            raise ApiError(500, f"the model failed to load: {state.load_error}", "server_error")
        if state.engine is None:
            raise ApiError(503, "Loading model", "unavailable_error")
        return state.engine

    def route(handler):
        """Wrap a handler: API key, readiness, ApiError -> JSON error response."""
        async def endpoint(request: Request):
            try:
                if state.api_key and request.url.path not in PUBLIC:
                    auth = request.headers.get("authorization", "")
                    key = auth[7:] if auth.lower().startswith("bearer ") else \
                        request.headers.get("x-api-key", "")
                    if key != state.api_key:
                        raise ApiError(401, "Invalid API Key", "authentication_error")
                return await handler(request)
            except ApiError as exc:
                return _error(exc)
        return endpoint

    async def body_of(request: Request) -> dict:
        return parse_json_body(await request.body())

    # ---------------------------------------------------------------- plain GETs

    async def health(request):
        ready()
        return JSONResponse({"status": "ok"})

    async def props(request):
        eng = ready()
        f = eng.facts
        return JSONResponse({
            "default_generation_settings": {
                "n_ctx": f["n_ctx_slot"], "id_slot": -1,
                "params": {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05,
                           "n_predict": -1, "cache_prompt": True},
            },
            "total_slots": f["n_slots"],
            "model_alias": state.alias,
            "model_path": f["model_path"],
            "chat_template": _chat_template(eng),
            "build_info": "labkit slot engine",
            "labkit": {k: v for k, v in f.items() if k != "model_path"},
        })

    async def slots(request):
        if not state.slots_enabled:
            raise ApiError(501, "This server does not support slots endpoint. Start it with "
                                "`--slots`", "not_supported_error")
        return JSONResponse(ready().slots())

    async def metrics(request):
        if not state.metrics_enabled:
            raise ApiError(501, "This server does not support metrics endpoint. Start it with "
                                "`--metrics`", "not_supported_error")
        m = ready().metrics()
        lines = []
        for name, (kind, help_) in METRIC_HELP.items():
            lines += [f"# HELP llamacpp:{name} {help_}", f"# TYPE llamacpp:{name} {kind}",
                      f"llamacpp:{name} {m.get(name, 0)}"]
        return PlainTextResponse("\n".join(lines) + "\n",
                                 media_type="text/plain; version=0.0.4")

    async def models(request):
        eng = ready()
        return JSONResponse({"object": "list", "data": [{
            "id": state.alias, "object": "model", "created": state.created,
            "owned_by": "labkit",
            "meta": {"n_ctx_train": eng.facts["n_ctx_train"], "n_vocab": state.n_vocab},
        }]})

    async def trace(request):
        """labkit's step trace: ?kind=steps (default) or slots, ?since=STEP."""
        eng = ready()
        kind = request.query_params.get("kind", "steps")
        if kind not in ("steps", "slots"):
            raise ApiError(400, "'kind' must be steps or slots")
        try:
            since = int(request.query_params.get("since", 0))
        except ValueError:
            raise ApiError(400, "'since' must be an integer step number") from None
        df = eng.trace_df() if kind == "steps" else eng.slot_trace_df()
        df = df[df["step"] >= since]
        return Response(df.to_json(orient="records"), media_type="application/json")

    # ---------------------------------------------------------------- tokens

    async def tokenize(request):
        eng, body = ready(), await body_of(request)
        content = body.get("content")
        if not isinstance(content, str):
            raise ApiError(400, "'content' must be a string")
        add_special = body.get("add_special", False)
        if not isinstance(add_special, bool):
            raise ApiError(400, "'add_special' must be true or false")
        tokens = eng.tokenize(content, add_special=add_special, parse_special=True)
        if body.get("with_pieces"):
            return JSONResponse({"tokens": [{"id": t, "piece": eng.detokenize([t])}
                                            for t in tokens]})
        return JSONResponse({"tokens": tokens})

    async def detokenize(request):
        eng, body = ready(), await body_of(request)
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool)
                                                   for t in tokens):
            raise ApiError(400, "'tokens' must be a list of token ids")
        _check_tokens(tokens)
        return JSONResponse({"content": eng.detokenize(tokens)})

    async def apply_template(request):
        eng, body = ready(), await body_of(request)
        req = chat_request({"messages": body.get("messages")})
        return JSONResponse({"prompt": eng.apply_template(req.messages)})

    def _check_tokens(tokens):
        bad = [t for t in tokens if not 0 <= t < state.n_vocab]
        if bad:
            raise ApiError(400, f"token id {bad[0]} is out of range (vocabulary has "
                                f"{state.n_vocab} tokens)")

    # ---------------------------------------------------------------- generation

    def submit(eng: Engine, tokens: list[int], params, loop) -> tuple:
        """Start a request on the engine; its events arrive on an asyncio queue."""
        q: asyncio.Queue = asyncio.Queue()

        def on_event(ev):
            try:
                loop.call_soon_threadsafe(q.put_nowait, ev)
            except RuntimeError:  # the event loop closed while we were generating
                pass
        try:
            handle = eng.submit(tokens, params, on_event=on_event)
        except ContextExceeded as exc:
            raise ApiError(400, str(exc), "exceed_context_size_error",
                           n_prompt_tokens=exc.n_prompt_tokens, n_ctx=exc.n_ctx) from None
        except QueueFull as exc:
            raise ApiError(503, str(exc), "unavailable_error") from None
        except ValueError as exc:  # empty prompt, a grammar llama.cpp rejects
            raise ApiError(400, str(exc)) from None
        return handle, q

    async def collect(request: Request, handle, q) -> tuple[str, FinalEvent]:
        """Wait for the final event; cancel the request if the client goes away."""
        while True:
            try:
                ev = await asyncio.wait_for(q.get(), timeout=0.5)
            except asyncio.TimeoutError:
                if await request.is_disconnected():
                    handle.cancel()
                    raise ApiError(499, "client disconnected") from None
                continue
            if isinstance(ev, FinalEvent):
                return ev.text, ev

    def final_error(ev: FinalEvent) -> ApiError | None:
        if ev.finish_reason == "error":
            return ApiError(500, ev.error or "generation failed", "server_error")
        if ev.finish_reason == "cancelled":
            return ApiError(503, ev.error or "the request was cancelled", "unavailable_error")
        return None

    def stream(request: Request, handle, q, first, piece_chunk, final_chunks):
        """An SSE response: optional first chunk, one chunk per text piece, final chunks."""
        async def events():
            done = False
            try:
                if first is not None:
                    yield _sse(first)
                while True:
                    ev = await q.get()
                    if isinstance(ev, FinalEvent):
                        done = True
                        err = final_error(ev)
                        if err is not None:
                            yield _sse(err.body())
                        else:
                            for chunk in final_chunks(ev):
                                yield _sse(chunk)
                        yield b"data: [DONE]\n\n"
                        return
                    if ev.text:
                        yield _sse(piece_chunk(ev.text))
            finally:
                if not done:  # the client went away mid-stream: free the slot
                    handle.cancel()
        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    async def chat_completions(request):
        eng, body = ready(), await body_of(request)
        # Like llama-server serving one model, any model name is answered by that model:
        # clients that hard-code a name (or forget --alias) still work.
        req = chat_request(body)
        prompt = eng.apply_template(req.messages)
        tokens = eng.tokenize(prompt, add_special=True, parse_special=True)
        loop = asyncio.get_running_loop()
        handle, q = submit(eng, tokens, req.params, loop)
        cid, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        base = {"id": cid, "created": created, "model": state.alias}
        if req.stream:
            def piece(text):
                return {**base, "object": "chat.completion.chunk", "choices": [
                    {"index": 0, "delta": {"content": text}, "finish_reason": None}]}

            def final(ev):
                yield {**base, "object": "chat.completion.chunk", "choices": [
                    {"index": 0, "delta": {}, "finish_reason": ev.finish_reason}],
                    "timings": ev.timings}
                if req.include_usage:
                    yield {**base, "object": "chat.completion.chunk", "choices": [],
                           "usage": ev.usage, "timings": ev.timings}
            first = {**base, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": None},
                 "finish_reason": None}]}
            return stream(request, handle, q, first, piece, final)
        text, ev = await collect(request, handle, q)
        err = final_error(ev)
        if err is not None:
            raise err
        return JSONResponse({**base, "object": "chat.completion", "choices": [{
            "index": 0, "message": {"role": "assistant", "content": text},
            "finish_reason": ev.finish_reason}], "usage": ev.usage, "timings": ev.timings})

    async def completion(request):
        """llama-server's native /completion (and the OpenAI-style /v1/completions)."""
        eng, body = ready(), await body_of(request)
        openai_style = request.url.path == "/v1/completions"
        prompt = prompt_field(body)
        params = sampling_params(body)
        stream_ = body.get("stream", False)
        if not isinstance(stream_, bool):
            raise ApiError(400, "'stream' must be true or false")
        if isinstance(prompt, str):
            tokens = eng.tokenize(prompt, add_special=True, parse_special=True)
        else:
            _check_tokens(prompt)
            tokens = prompt
        loop = asyncio.get_running_loop()
        handle, q = submit(eng, tokens, params, loop)
        cid, created = f"cmpl-{uuid.uuid4().hex[:24]}", int(time.time())

        def native(text, ev=None):
            d = {"content": text, "stop": ev is not None, "id_slot": -1, "model": state.alias}
            if ev is not None:
                d.update(tokens_predicted=ev.usage.get("completion_tokens", 0),
                         tokens_evaluated=ev.usage.get("prompt_tokens", 0),
                         stop_type={"stop": "eos", "length": "limit"}.get(ev.finish_reason,
                                                                          ev.finish_reason),
                         truncated=False, timings=ev.timings)
            return d

        def oai(text, ev=None):
            d = {"id": cid, "object": "text_completion", "created": created,
                 "model": state.alias, "choices": [{
                     "index": 0, "text": text,
                     "finish_reason": ev.finish_reason if ev is not None else None}]}
            if ev is not None:
                d.update(usage=ev.usage, timings=ev.timings)
            return d
        shape = oai if openai_style else native
        if stream_:
            return stream(request, handle, q, None, shape,
                          lambda ev: [shape("", ev)])
        text, ev = await collect(request, handle, q)
        err = final_error(ev)
        if err is not None:
            raise err
        return JSONResponse(shape(text, ev))

    routes = [
        Route("/health", route(health)), Route("/v1/health", route(health)),
        Route("/props", route(props)), Route("/slots", route(slots)),
        Route("/metrics", route(metrics)), Route("/v1/models", route(models)),
        Route("/models", route(models)), Route("/trace", route(trace)),
        Route("/tokenize", route(tokenize), methods=["POST"]),
        Route("/detokenize", route(detokenize), methods=["POST"]),
        Route("/apply-template", route(apply_template), methods=["POST"]),
        Route("/v1/chat/completions", route(chat_completions), methods=["POST"]),
        Route("/chat/completions", route(chat_completions), methods=["POST"]),
        Route("/completion", route(completion), methods=["POST"]),
        Route("/completions", route(completion), methods=["POST"]),
        Route("/v1/completions", route(completion), methods=["POST"]),
    ]

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
    async def http_error(request, exc: HTTPException):
        kind = "invalid_request_error" if exc.status_code < 500 else "server_error"
        return _error(ApiError(exc.status_code, str(exc.detail), kind))

    return Starlette(routes=routes, lifespan=lifespan, max_body_size=MAX_BODY_BYTES,
                     exception_handlers={HTTPException: http_error})


def _sse(obj) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def _chat_template(eng: Engine) -> str:
    import llama_cpp
    t = llama_cpp.llama_model_chat_template(eng.model.ptr, None)
    return t.decode("utf-8", errors="replace") if t else ""
