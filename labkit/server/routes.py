"""The route handlers: llama-server's requests in, :mod:`.shapes`' answers out.

Each handler reads the server's :class:`~.state.ServerState` from ``request.app.state.server``
(:func:`labkit.server.app.create_app` puts it there) and is wrapped by :func:`route`, which
turns an :class:`~.errors.ApiError` into its JSON error and any other exception into a JSON
500. Nothing slow runs on the event loop: parsing a body, applying the chat template,
tokenizing, detokenizing and serializing a big answer all run on worker threads
(:data:`off_loop`).
"""

from __future__ import annotations

import asyncio
import time
import uuid

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from ..engine import BadRequest, Engine
from ..engine.chat import prefill
from . import shapes, tools, validate
from .errors import ApiError, unexpected
from .generation import collect, stream, submit
from .state import ServerState
from .validate import MAX_BODY_BYTES, chat_request, parse_json_body

# Runs a blocking function on a worker thread and awaits its result: the event loop stays free.
off_loop = run_in_threadpool


def error_response(exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


def route(handler):
    """Wrap a handler: ApiError -> its JSON error; any other exception -> JSON 500."""
    async def endpoint(request: Request):
        try:
            return await handler(request)
        except ApiError as exc:
            return error_response(exc)
        except HTTPException:   # Starlette's own: answered by the app's exception handler
            raise
        except Exception as exc:
            return error_response(unexpected(request, exc))
    return endpoint


def state_of(request: Request) -> ServerState:
    return request.app.state.server


def ready(request: Request) -> Engine:
    """The engine, or llama-server's error while the model loads (503) or after it failed
    to load (500)."""
    state = state_of(request)
    if state.load_error:
        raise ApiError(500, f"the model failed to load: {state.load_error}", "server_error")
    if state.engine is None:
        raise ApiError(503, "Loading model", "unavailable_error")
    return state.engine


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


async def body_of(request: Request) -> dict:
    return await off_loop(parse_json_body, await read_body(request))


def check_tokens(state: ServerState, tokens: list[int]) -> None:
    bad = [t for t in tokens if not 0 <= t < state.n_vocab]
    if bad:
        raise ApiError(400, f"token id {bad[0]} is out of range (vocabulary has "
                            f"{state.n_vocab} tokens)")


def render(eng: Engine, req: validate.ChatRequest) -> str:
    """The prompt for a chat request's messages (and tools, which the template decides
    how to show); a conversation the template refuses is a 400."""
    try:
        if not req.tools:
            return eng.apply_template(req.messages)
        tools.check_template(eng.template.uses_tools, req.tools, req.tool_choice)
        return eng.apply_template(req.messages, tools=req.tools)
    except BadRequest as exc:
        raise ApiError(400, str(exc)) from None


# ---------------------------------------------------------------- plain GETs

async def health(request):
    ready(request)
    return JSONResponse({"status": "ok"})


async def props(request):
    eng, state = ready(request), state_of(request)
    return JSONResponse(shapes.props(eng.facts, state.alias, eng.template_source))


async def change_props(request):
    raise ApiError(501, "This server does not support changing global properties",
                   "not_supported_error")


async def slots(request):
    if not state_of(request).slots_enabled:
        raise ApiError(501, "This server does not support slots endpoint. Start it with "
                            "`--slots`", "not_supported_error")
    return JSONResponse(ready(request).slots())


async def metrics(request):
    if not state_of(request).metrics_enabled:
        raise ApiError(501, "This server does not support metrics endpoint. Start it with "
                            "`--metrics`", "not_supported_error")
    return PlainTextResponse(shapes.metrics(ready(request).metrics()),
                             media_type="text/plain; version=0.0.4")


async def models(request):
    eng, state = ready(request), state_of(request)
    return JSONResponse(shapes.models(state.alias, state.created, eng.facts["n_ctx_train"],
                                      state.n_vocab))


async def trace(request):
    """labkit's step trace: ?kind=steps (default) or slots, ?since=STEP."""
    eng = ready(request)
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
    eng, body = ready(request), await body_of(request)
    content, add_special, with_pieces = validate.tokenize_request(body)

    def answer() -> JSONResponse:   # a JSONResponse serializes when it is made
        ids = eng.tokenize(content, add_special=add_special, parse_special=True)
        return JSONResponse(shapes.tokens(ids, eng.token_pieces() if with_pieces else None))
    return await off_loop(answer)


async def detokenize(request):
    eng, body = ready(request), await body_of(request)
    tokens = validate.token_ids(body)
    check_tokens(state_of(request), tokens)
    return await off_loop(lambda: JSONResponse({"content": eng.detokenize(tokens)}))


async def apply_template(request):
    eng, body = ready(request), await body_of(request)
    req = chat_request({k: body[k] for k in ("messages", "tools", "tool_choice")
                        if k in body} | {"messages": body.get("messages")})
    return await off_loop(lambda: JSONResponse({"prompt": render(eng, req)}))


# ---------------------------------------------------------------- generation

async def chat_completions(request):
    eng, raw = ready(request), await read_body(request)
    state = state_of(request)
    loop = asyncio.get_running_loop()

    def prepare():
        # Like llama-server serving one model, any model name is answered by that model:
        # clients that hard-code a name (or forget --alias) still work.
        body = parse_json_body(raw)
        req, n = chat_request(body), validate.choices(body, eng.facts["n_slots"])
        prompt = render(eng, req)
        tokens = eng.tokenize(prompt, add_special=True, parse_special=True)
        return (req, *submit(eng, [tokens], req.params, n, loop, req.stream))
    req, handles, q = await off_loop(prepare)
    shape = shapes.ChatShape(
        shapes.head(f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time()), state.alias),
        include_usage=req.include_usage,
        json_content=req.params.chat_json and not req.params.grammar,
        prefilled=prefill(req.messages))
    if req.stream:
        return stream(request, handles, q, shape)
    return JSONResponse(shape.answer(await collect(request, handles, q)))


async def completion(request):
    """llama-server's native /completion (and the OpenAI-style /v1/completions)."""
    eng, raw = ready(request), await read_body(request)
    state = state_of(request)
    openai_style = request.url.path == "/v1/completions"
    loop = asyncio.get_running_loop()

    def prepare():
        creq = validate.completion_request(parse_json_body(raw), eng.facts["n_slots"])
        token_lists, texts = [], []
        for prompt in creq.prompts:
            tokens = validate.prompt_tokens(prompt, lambda text, special: eng.tokenize(
                text, add_special=special, parse_special=True))
            check_tokens(state, tokens)
            token_lists.append(tokens)
            texts.append(prompt if isinstance(prompt, str) else eng.detokenize(tokens))
        if openai_style:
            shape = shapes.OaiCompletionShape(f"cmpl-{uuid.uuid4().hex[:24]}",
                                              int(time.time()), state.alias)
        else:
            shape = native_shape(eng, state, creq, texts, token_lists)
        n = len(token_lists) * creq.n
        ids = [[] for _ in range(n)] if creq.return_tokens else None
        return (shape, creq.stream, ids,
                *submit(eng, token_lists, creq.params, creq.n, loop, creq.stream, ids))
    shape, streamed, ids, handles, q = await off_loop(prepare)
    if streamed:
        return stream(request, handles, q, shape)
    finals = await collect(request, handles, q)
    if openai_style:
        return JSONResponse(shape.answer(finals))
    return JSONResponse(shape.answer(finals, ids))


def native_shape(eng: Engine, state: ServerState, creq: validate.CompletionRequest,
                 texts: list[str], token_lists: list[list[int]]) -> shapes.CompletionShape:
    """/completion's answers: choice k of prompt p has index p * n + k, that prompt's text
    and token count, and its own settings (its seed is seed + k, as llama-server reports)."""
    n = creq.n

    def tokenize(text):
        return eng.tokenize(text, add_special=False, parse_special=True)
    settings = [shapes.generation_settings(validate.choice_params(creq.params, k), creq.stream,
                                           tokenize, state.eog) for k in range(n)]
    return shapes.CompletionShape(state.alias, [t for t in texts for _ in range(n)],
                                  [len(t) for t in token_lists for _ in range(n)], settings)
