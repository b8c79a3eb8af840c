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

The event loop serves every client, so nothing slow runs on it: parsing a
body, applying the chat template, tokenizing, detokenizing and serializing a
big answer all run on worker threads (:func:`off_loop`), and a 7 MB request
does not pause other clients' streams (benchmarks/event_loop_stall.py).

Every error is llama-server's JSON, ``{"error": {"code", "message", "type"}}``:
a refused request, an unknown route (404 ``not_found_error``), a missing API
key (401, on every route but /health, as in llama-server), and any
unexpected exception (500 ``server_error``, its traceback in the log).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import threading
import time
import uuid

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from ..engine import ContextExceeded, Engine, EngineConfig, FinalEvent, QueueFull
from ..engine import response_format
from ..engine.chat import prefill
from ..engine.native import eog_tokens
from . import fields, tools
from .validate import MAX_BODY_BYTES, ApiError, chat_request, parse_json_body, prompt_field, sampling_params

log = logging.getLogger("labkit.server")

METRIC_HELP = {
    "prompt_tokens_total": ("counter", "Number of prompt tokens processed."),
    "prompt_seconds_total": ("counter", "Prompt process time."),
    "tokens_predicted_total": ("counter", "Number of generation tokens processed."),
    "tokens_predicted_seconds_total": ("counter", "Predict process time."),
    "n_decode_total": ("counter", "Total number of llama_decode() calls."),
    "n_busy_slots_per_decode": ("gauge", "Average number of busy slots per llama_decode() call."),
    "prompt_tokens_seconds": ("gauge", "Average prompt throughput in tokens/s."),
    "predicted_tokens_seconds": ("gauge", "Average generation throughput in tokens/s."),
    "requests_processing": ("gauge", "Number of requests processing."),
    "requests_deferred": ("gauge", "Number of requests deferred."),
}

# Routes that answer without an API key, as in llama-server (which asks for the key on
# every other path, known or not, before it looks the path up).
PUBLIC = {"/health", "/v1/health"}

# The OpenAI answers' ``system_fingerprint``: llama-server writes its build ("b<number>-<commit>").
FINGERPRINT = "labkit"

# Runs a blocking function on a worker thread and awaits its result: the event loop stays free.
off_loop = run_in_threadpool


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
        self.eog: list[int] = []    # the end-of-generation tokens (ignore_eos bans them)
        self._close_lock = threading.Lock()

    def load(self) -> None:
        llama_lines = _LineCollector()
        llama_log = logging.getLogger("labkit.engine.llama")
        llama_log.addHandler(llama_lines)
        try:
            self.engine = Engine(self.config)
            import llama_cpp
            self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.engine.model.vocab)
            self.eog = eog_tokens(self.engine.model.vocab)
            log.info("model loaded: %s", self.config.model_path)
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            cause = llama_lines.first_error()
            if cause:
                self.load_error += f" (llama.cpp: {cause})"
            log.error("failed to load the model: %s", self.load_error)
        finally:
            llama_log.removeHandler(llama_lines)
            self.loaded.set()

    def close(self) -> None:
        """Stop the engine: requests still running end with finish_reason 'cancelled'."""
        self.loaded.wait()
        with self._close_lock:
            if self.engine is not None:
                self.engine.close()
                self.engine = None
                log.info("engine stopped")


class _LineCollector(logging.Handler):
    """Keeps the lines llama.cpp logs while the model loads, to name the cause of a failure."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def first_error(self) -> str | None:
        """llama.cpp's first line that reports an error: the cause (later ones are its
        consequences, such as "failed to load model")."""
        words = ("error", "failed", "invalid", "must be", "not within")
        return next((ln.strip() for ln in self.lines if any(w in ln.lower() for w in words)),
                    None)


def _error(exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


def _unexpected(request: Request, exc: Exception) -> ApiError:
    """An exception nothing expected: log its traceback; llama-server's 500 ``server_error``."""
    log.error("unexpected error on %s %s", request.method, request.url.path,
              exc_info=(type(exc), exc, exc.__traceback__))
    return ApiError(500, f"internal server error: {type(exc).__name__}: {exc}", "server_error")


class RequireApiKey:
    """ASGI middleware: every path but :data:`PUBLIC` needs ``Authorization: Bearer KEY`` (or
    ``X-Api-Key: KEY``), as in llama-server, which checks the key before routing."""

    def __init__(self, app, api_key: str):
        self.app, self.api_key = app, api_key

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] not in PUBLIC:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                       for k, v in scope.get("headers", [])}
            auth = headers.get("authorization", "")
            key = auth[7:] if auth.lower().startswith("bearer ") else headers.get("x-api-key", "")
            if key != self.api_key:
                response = _error(ApiError(401, "Invalid API Key", "authentication_error"))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


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
        """Wrap a handler: ApiError -> its JSON error; any other exception -> JSON 500."""
        async def endpoint(request: Request):
            try:
                return await handler(request)
            except ApiError as exc:
                return _error(exc)
            except HTTPException:   # Starlette's own: answered by http_error below
                raise
            except Exception as exc:
                return _error(_unexpected(request, exc))
        return endpoint

    async def body_of(request: Request) -> dict:
        return await off_loop(parse_json_body, await read_body(request))

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

        def rows() -> Response:
            df = eng.trace_df() if kind == "steps" else eng.slot_trace_df()
            df = df[df["step"] >= since]
            return Response(df.to_json(orient="records"), media_type="application/json")
        return await off_loop(rows)

    # ---------------------------------------------------------------- tokens

    async def tokenize(request):
        eng, body = ready(), await body_of(request)
        content = body.get("content")
        if not isinstance(content, str):
            raise ApiError(400, "'content' must be a string")
        add_special = body.get("add_special", False)
        if not isinstance(add_special, bool):
            raise ApiError(400, "'add_special' must be true or false")

        def answer() -> JSONResponse:   # a JSONResponse serializes when it is made
            tokens = eng.tokenize(content, add_special=add_special, parse_special=True)
            if body.get("with_pieces"):
                vocab = eng.model.vocab
                return JSONResponse({"tokens": [{"id": t, "piece": _piece(vocab, t)}
                                                for t in tokens]})
            return JSONResponse({"tokens": tokens})
        return await off_loop(answer)

    async def detokenize(request):
        eng, body = ready(), await body_of(request)
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool)
                                                   for t in tokens):
            raise ApiError(400, "'tokens' must be a list of token ids")
        _check_tokens(tokens)
        return await off_loop(lambda: JSONResponse({"content": eng.detokenize(tokens)}))

    async def apply_template(request):
        eng, body = ready(), await body_of(request)
        req = chat_request({k: body[k] for k in ("messages", "tools", "tool_choice")
                            if k in body} | {"messages": body.get("messages")})
        return await off_loop(lambda: JSONResponse({"prompt": render(eng, req)}))

    def render(eng: Engine, req) -> str:
        """The prompt for a chat request's messages (and tools, which the template decides
        how to show); a conversation the template refuses is a 400."""
        try:
            if not req.tools:
                return eng.apply_template(req.messages)
            tools.check_template(eng.template.uses_tools, req.tools, req.tool_choice)
            return eng.apply_template(req.messages, tools=req.tools)
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None

    def _check_tokens(tokens):
        bad = [t for t in tokens if not 0 <= t < state.n_vocab]
        if bad:
            raise ApiError(400, f"token id {bad[0]} is out of range (vocabulary has "
                                f"{state.n_vocab} tokens)")

    # ---------------------------------------------------------------- generation

    def submit(eng: Engine, prompts: list[list[int]], params, n: int, loop,
               streamed: bool, ids: list[list[int]] | None = None) -> tuple[list, asyncio.Queue]:
        """Start ``n`` requests (choices) per prompt, choice k seeded ``seed + k`` as in
        llama-server; their events arrive on one asyncio queue as ``(index, event)``, index
        ``prompt * n + k``: every event of a streamed answer, the final one of a plain one.
        With ``ids`` (a list per index), a plain answer's token ids are gathered there."""
        q: asyncio.Queue = asyncio.Queue()

        def forward(index):
            def on_event(ev):
                if ids is not None and type(ev) is not FinalEvent and ev.token >= 0:
                    ids[index].append(ev.token)
                if streamed or type(ev) is FinalEvent:
                    try:
                        loop.call_soon_threadsafe(q.put_nowait, (index, ev))
                    except RuntimeError:  # the event loop closed while we were generating
                        pass
            return on_event
        handles = []
        try:
            for tokens in prompts:
                for k in range(n):
                    handles.append(eng.submit(tokens, fields.choice_params(params, k),
                                              on_event=forward(len(handles))))
        except (ContextExceeded, QueueFull, ValueError) as exc:
            for h in handles:
                h.cancel()
            if isinstance(exc, ContextExceeded):
                raise ApiError(400, str(exc), "exceed_context_size_error",
                               n_prompt_tokens=exc.n_prompt_tokens, n_ctx=exc.n_ctx) from None
            if isinstance(exc, QueueFull):
                raise ApiError(503, str(exc), "unavailable_error") from None
            raise ApiError(400, str(exc)) from None   # empty prompt, a grammar llama.cpp rejects
        return handles, q

    async def client_left(request: Request) -> None:
        """Returns when the client closes its connection (the server's next receive says so)."""
        while (await request.receive())["type"] != "http.disconnect":
            pass

    async def collect(request: Request, handles, q) -> list[FinalEvent]:
        """Every answer's final event, in order; if the client goes away first, cancel them
        all (their slots free at the engine's next step)."""
        finals: list = [None] * len(handles)
        left = asyncio.ensure_future(client_left(request))
        try:
            for _ in handles:
                got = asyncio.ensure_future(q.get())
                await asyncio.wait({got, left}, return_when=asyncio.FIRST_COMPLETED)
                if not got.done():
                    got.cancel()
                    for h in handles:
                        h.cancel()
                    raise ApiError(499, "client disconnected")
                index, ev = got.result()
                finals[index] = ev
        finally:
            left.cancel()
        return finals

    def final_error(finals: list[FinalEvent]) -> ApiError | None:
        for ev in finals:
            if ev.finish_reason == "error":
                return ApiError(500, ev.error or "generation failed", "server_error")
            if ev.finish_reason == "cancelled":
                return ApiError(503, ev.error or "the request was cancelled",
                                "unavailable_error")
        return None

    def stream(request: Request, handles, q, first, piece_chunk, final_chunks, end_chunks,
               done_marker=True):
        """An SSE response: for each answer (index), ``first(index)`` with the event of its
        first token (none when that token ends inside a character, as in llama-server),
        ``piece_chunk(index, event)`` per token (None: nothing to send), ``final_chunks(index,
        final)`` at its end; ``end_chunks(finals)`` once all have ended, then ``data: [DONE]``
        (the OpenAI-style routes; llama-server's native /completion ends with its final
        chunk). An error ends the stream with its error chunk, as in llama-server."""
        async def events():
            finished = False
            finals = [None] * len(handles)
            try:
                while not finished:
                    index, ev = await q.get()
                    if isinstance(ev, FinalEvent):
                        err = final_error([ev])
                        if err is not None:
                            finished = True
                            for h in handles:
                                h.cancel()
                            yield _sse(err.body())
                            return
                        finals[index] = ev
                        for chunk in final_chunks(index, ev):
                            yield _sse(chunk)
                        finished = all(f is not None for f in finals)
                        continue
                    if ev.n_decoded == 1 and ev.token >= 0:
                        opening = first(index)
                        if opening is not None:
                            yield _sse(opening)
                    chunk = piece_chunk(index, ev)
                    if chunk is not None:
                        yield _sse(chunk)
                for chunk in end_chunks(finals):
                    yield _sse(chunk)
                if done_marker:
                    yield b"data: [DONE]\n\n"
            except Exception as exc:   # the status is sent already: end with an error chunk
                finished = True
                for h in handles:
                    h.cancel()
                yield _sse(_unexpected(request, exc).body())
            finally:
                if not finished:  # the client went away mid-stream: free the slots
                    for h in handles:
                        h.cancel()
        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    def choices_of(body: dict, eng: Engine) -> int:
        try:
            return fields.n_choices(body, eng.facts["n_slots"])
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None

    def whole_text(ev: FinalEvent) -> str:
        """A plain answer's text as llama-server gives it: a character cut off at the end
        shows as U+FFFD."""
        return ev.text + ev.partial.decode("utf-8", errors="replace")

    async def chat_completions(request):
        eng, raw = ready(), await read_body(request)
        loop = asyncio.get_running_loop()

        def prepare():
            # Like llama-server serving one model, any model name is answered by that model:
            # clients that hard-code a name (or forget --alias) still work.
            body = parse_json_body(raw)
            req, n = chat_request(body), choices_of(body, eng)
            prompt = render(eng, req)
            tokens = eng.tokenize(prompt, add_special=True, parse_special=True)
            return (req, *submit(eng, [tokens], req.params, n, loop, req.stream))
        req, handles, q = await off_loop(prepare)
        cid, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        base = {"id": cid, "created": created, "model": state.alias,
                "system_fingerprint": FINGERPRINT}
        if req.stream:
            def first(index):
                return {**base, "object": "chat.completion.chunk", "choices": [
                    {"index": index, "delta": {"role": "assistant", "content": None},
                     "finish_reason": None}]}

            # under response_format, the JSON alone, out of its fence (as the whole answer)
            fenced = ({} if req.params.chat_json and not req.params.grammar else None)

            def piece(index, ev):
                text = ev.text
                if fenced is not None:
                    text = fenced.setdefault(index, response_format.ContentStream()).push(text)
                if not text:
                    return None
                choice = {"index": index, "delta": {"content": text}, "finish_reason": None}
                if ev.probs is not None:
                    choice["logprobs"] = {"content": [ev.probs]}
                return {**base, "object": "chat.completion.chunk", "choices": [choice]}

            def final(index, ev):
                rest = fenced[index].finish() if fenced and index in fenced else ""
                if rest:
                    yield {**base, "object": "chat.completion.chunk", "choices": [
                        {"index": index, "delta": {"content": rest}, "finish_reason": None}]}
                # the timings go with the usage chunk when there is one, as in llama-server
                chunk = {**base, "object": "chat.completion.chunk", "choices": [
                    {"index": index, "delta": {}, "finish_reason": ev.finish_reason}]}
                yield chunk if req.include_usage else {**chunk, "timings": ev.timings}

            def end(finals):
                if req.include_usage:
                    yield {**base, "object": "chat.completion.chunk", "choices": [],
                           "usage": usage_of(finals[0]), "timings": finals[0].timings}
            return stream(request, handles, q, first, piece, final, end)
        finals = await collect(request, handles, q)
        err = final_error(finals)
        if err is not None:
            raise err
        choices = []
        start = prefill(req.messages)
        for index, ev in enumerate(finals):
            # llama-server's whole chat answer starts with the prefilled assistant text, and
            # drops a character cut off at the end unless that is all there is.
            text = ev.text or whole_text(ev)
            if req.params.chat_json and not req.params.grammar:
                text = response_format.content(text)   # the JSON, out of its fence
            content = start + text
            choice = {"index": index, "message": {"role": "assistant", "content": content},
                      "finish_reason": ev.finish_reason}
            if ev.probs:
                choice["logprobs"] = {"content": ev.probs}
            choices.append(choice)
        return JSONResponse({**base, "object": "chat.completion", "choices": choices,
                             "usage": usage_of(finals[0]), "timings": finals[0].timings})

    async def completion(request):
        """llama-server's native /completion (and the OpenAI-style /v1/completions)."""
        eng, raw = ready(), await read_body(request)
        openai_style = request.url.path == "/v1/completions"
        loop = asyncio.get_running_loop()

        def prepare():
            body = parse_json_body(raw)
            try:
                prompts = fields.completion_prompts(body, prompt_field)
            except ValueError as exc:
                raise ApiError(400, str(exc)) from None
            params, n = sampling_params(body), choices_of(body, eng)
            stream_ = body.get("stream", False)
            if not isinstance(stream_, bool):
                raise ApiError(400, "'stream' must be true or false")
            token_lists, texts = [], []
            for prompt in prompts:
                tokens = fields.prompt_tokens(prompt, lambda text, special: eng.tokenize(
                    text, add_special=special, parse_special=True))
                _check_tokens(tokens)
                token_lists.append(tokens)
                texts.append(prompt if isinstance(prompt, str) else eng.detokenize(tokens))
            # choice k of prompt p has index p * n + k, and that prompt's text
            texts = [t for t in texts for _ in range(n)]
            n_prompt = [len(t) for t in token_lists for _ in range(n)]
            ids = [[] for _ in texts] if body.get("return_tokens") is True else None
            # choice k's settings: its own seed (seed + k), as llama-server reports it
            settings = [fields.generation_settings(
                fields.choice_params(params, k), stream_,
                lambda text: eng.tokenize(text, add_special=False, parse_special=True),
                state.eog) for k in range(n)]
            return (texts, n_prompt, ids, settings, stream_,
                    *submit(eng, token_lists, params, n, loop, stream_, ids))
        texts, n_prompt, ids, settings, stream_, handles, q = await off_loop(prepare)
        cid, created = f"cmpl-{uuid.uuid4().hex[:24]}", int(time.time())

        def native_piece(index, ev):
            """A streamed token's chunk, as llama-server sends it (no model, no final fields)."""
            d = {"index": index, "content": ev.text, "tokens": [ev.token] if ev.token >= 0
                 else [], "stop": False, "id_slot": ev.id_slot, "tokens_predicted": ev.n_decoded,
                 "tokens_evaluated": n_prompt[index]}
            if ev.probs:
                d["completion_probabilities"] = [ev.probs]
            if ev.timings is not None:   # the token that completed a stop string
                d["timings"] = ev.timings
            return d

        def native(index, text, ev, probs=None):
            """The final answer (plain) or the last chunk (streamed)."""
            u = ev.usage
            d = {"index": index, "content": text,
                 "tokens": ids[index] if ids is not None and not stream_ else [],
                 "stop": True, "id_slot": ev.id_slot, "model": state.alias,
                 "tokens_predicted": u.get("completion_tokens", 0),
                 "tokens_evaluated": u.get("prompt_tokens", 0),
                 "generation_settings": settings[index % len(settings)],
                 "prompt": texts[index],
                 "has_new_line": "\n" in ev.text,
                 "stop_type": "word" if ev.stop_word else {
                     "stop": "eos", "length": "limit"}.get(ev.finish_reason, ev.finish_reason),
                 "stopping_word": ev.stop_word, "truncated": False,
                 # the slot's KV holds the prompt and every token but the last sampled one
                 "tokens_cached": max(0, u.get("prompt_tokens", 0)
                                      + u.get("completion_tokens", 0) - 1),
                 "timings": ev.timings}
            if probs:
                d["completion_probabilities"] = probs
            return d

        def oai(index, text, ev=None, probs=None):
            d = {"id": cid, "object": "text_completion", "created": created,
                 "model": state.alias, "system_fingerprint": FINGERPRINT, "choices": [{
                     "index": index, "text": text,
                     "logprobs": {"content": probs} if probs else None,
                     "finish_reason": ev.finish_reason if ev is not None else None}]}
            if ev is not None:
                d.update(usage=usage_of(ev), timings=ev.timings)
            return d
        if stream_:
            def piece(index, ev):   # both routes send every token's chunk, even an empty one
                if openai_style:
                    d = oai(index, ev.text, probs=[ev.probs] if ev.probs else None)
                    return d if ev.timings is None else {**d, "timings": ev.timings}
                return native_piece(index, ev)
            final = oai if openai_style else native
            return stream(request, handles, q, lambda index: None, piece,
                          lambda index, ev: [final(index, "", ev)], lambda finals: [],
                          done_marker=openai_style)
        finals = await collect(request, handles, q)
        err = final_error(finals)
        if err is not None:
            raise err
        shape = oai if openai_style else native
        answers = [shape(i, whole_text(ev), ev, ev.probs) for i, ev in enumerate(finals)]
        if openai_style:
            return JSONResponse({**answers[0], "choices": [a["choices"][0] for a in answers]})
        return JSONResponse(answers[0] if len(answers) == 1 else answers)

    async def change_props(request):
        raise ApiError(501, "This server does not support changing global properties",
                       "not_supported_error")

    routes = [
        Route("/health", route(health)), Route("/v1/health", route(health)),
        Route("/props", route(props)), Route("/props", route(change_props), methods=["POST"]),
        Route("/slots", route(slots)),
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
        # llama-server routes by method and path: a known path with another method is unknown.
        if exc.status_code in (404, 405):
            return _error(ApiError(404, "File Not Found", "not_found_error"))
        kind = "invalid_request_error" if exc.status_code < 500 else "server_error"
        return _error(ApiError(exc.status_code, str(exc.detail), kind))

    async def unexpected(request, exc: Exception):   # outside any route: a last resort
        return _error(_unexpected(request, exc))

    middleware = [Middleware(RequireApiKey, api_key=state.api_key)] if state.api_key else []
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                     exception_handlers={HTTPException: http_error, Exception: unexpected})


async def read_body(request: Request) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed MAX_BODY_BYTES."""
    declared = request.headers.get("content-length", "")
    too_big = ApiError(413, f"request body is over {MAX_BODY_BYTES} bytes, the limit")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _piece(vocab, token: int) -> str | list[int]:
    """A token's text as llama-server's /tokenize shows it: special tokens written out, and
    the raw bytes (a list of ints) when the piece alone is not valid UTF-8."""
    import llama_cpp
    buf = ctypes.create_string_buffer(256)
    n = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
    raw = buf.raw[:max(n, 0)]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return list(raw)


def usage_of(ev: FinalEvent) -> dict:
    """An answer's OpenAI ``usage``, with llama-server's count of the prompt tokens its slot
    already held (``prompt_tokens_details.cached_tokens``, the timings' ``cache_n``)."""
    return {**ev.usage, "prompt_tokens_details": {"cached_tokens": ev.timings.get("cache_n", 0)}}


def _sse(obj) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def _chat_template(eng: Engine) -> str:
    import llama_cpp
    t = llama_cpp.llama_model_chat_template(eng.model.ptr, None)
    return t.decode("utf-8", errors="replace") if t else ""
