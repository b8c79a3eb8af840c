"""A scripted streaming server: it answers ``POST /v1/chat/completions`` the way llama-server
streams an answer (server-sent events, one chunk per token, the usage and timings in the last
chunk, then ``data: [DONE]``), but on a timetable fixed in advance and with no model behind it.
A stopwatch pointed at it can therefore be checked against the true times; exercise 5.7 checks
a learner's TTFT timer this way, in a thread of the same process, in well under a second.

    from labkit.lessons.scripted_server import Script, ScriptedServer
    with ScriptedServer(Script.default()) as srv:
        print(srv.base_url, srv.script.ttft_s, srv.script.n_tokens)

The default script holds the three things a careless stopwatch trips on: a first chunk that
only names the role (no text), a reasoning token (``reasoning_content``, never the answer's
first token), and a whitespace-only token before the first visible text; :meth:`Script.drawn`
draws a timetable with the same traps and other times, so a check cannot be passed by
returning the default's figures. Only the standard library is used.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Script:
    """What the server sends and when (seconds after it has read the request).

    ``tokens``: ``(time, field, text)`` with field ``"content"`` or ``"reasoning_content"``,
    one token each; ``end_s``: when the final chunk (finish_reason, usage, timings) and
    ``[DONE]`` go out."""

    tokens: tuple[tuple[float, str, str], ...]
    end_s: float
    prompt_tokens: int = 12

    @staticmethod
    def default() -> "Script":
        return Script(tokens=(
            (0.05, "reasoning_content", "Thinking"),
            (0.10, "content", "\n"),
            (0.40, "content", "Table"),
            (0.45, "content", " 4"),
            (0.50, "content", " ordered"),
            (0.55, "content", " tea"),
            (0.60, "content", "."),
        ), end_s=0.70)

    @staticmethod
    def drawn(rng) -> "Script":
        """A timetable drawn from ``rng`` (a :class:`random.Random`) with the default's traps
        (1 to 3 reasoning tokens, then 1 or 2 whitespace-only tokens, before the first visible
        text) but none of its times: the first visible text at 0.5 to 0.8 s (the default's
        at 0.40), 8 to 14 tokens in all (the default's 7), the end 0.05 to 0.15 s after the
        last token. A stopwatch that returns the default's figures, or that does not read
        the stream, is wrong on it."""
        words = ("Table", "Tea", "Soup", "Rice", "Noodles", "Guest")
        tail = (" 2", " 4", " ordered", " asked", " for", " tea", " soup", " again", ".")
        at = rng.uniform(0.03, 0.08)
        tokens = []
        for _ in range(rng.randint(1, 3)):
            tokens.append((round(at, 3), "reasoning_content", rng.choice(("Think", "ing", " ..."))))
            at += rng.uniform(0.02, 0.05)
        for _ in range(rng.randint(1, 2)):
            tokens.append((round(at, 3), "content", rng.choice(("\n", " ", "\n\n"))))
            at += rng.uniform(0.02, 0.05)
        at = rng.uniform(0.5, 0.8)
        visible = rng.randint(8, 14) - len(tokens)
        for i in range(visible):
            tokens.append((round(at, 3), "content", rng.choice(tail if i else words)))
            at += rng.uniform(0.02, 0.05)
        return Script(tokens=tuple(tokens),
                      end_s=round(tokens[-1][0] + rng.uniform(0.05, 0.15), 3),
                      prompt_tokens=rng.randint(8, 40))

    @property
    def ttft_s(self) -> float:
        """The first token of visible, non-whitespace answer text (the seed's definition)."""
        return next(t for t, f, text in self.tokens if f == "content" and text.strip())

    @property
    def last_token_s(self) -> float:
        return self.tokens[-1][0]

    @property
    def n_tokens(self) -> int:
        """Every generated token, reasoning and whitespace included (usage.completion_tokens)."""
        return len(self.tokens)

    @property
    def text(self) -> str:
        return "".join(text for _, f, text in self.tokens if f == "content")


def _chunk(delta: dict, finish_reason=None, **extra) -> dict:
    return {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
            "model": "local", "choices": [{"index": 0, "delta": delta,
                                           "finish_reason": finish_reason}], **extra}


@dataclass
class ScriptedServer:
    """Serves ``script`` on a free loopback port from a daemon thread while the ``with`` block
    lasts. ``requests`` keeps every chat request body it received (parsed JSON), ``misses``
    the method and path of every other request (a client that knocked on the wrong door)."""

    script: Script = field(default_factory=Script.default)
    requests: list = field(default_factory=list)
    misses: list = field(default_factory=list)

    def __enter__(self) -> "ScriptedServer":
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):       # quiet: nothing lands in a notebook cell
                pass

            def _json(self, status: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                self._json(status, {"error": {"code": status, "message": message,
                                              "type": "invalid_request_error"}})

            def do_GET(self):
                if self.path == "/health":
                    return self._json(200, {"status": "ok"})
                server.misses.append(("GET", self.path))
                self._error(404, f"File Not Found: {self.path} (send POST {CHAT_PATH})")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.rstrip("/") != CHAT_PATH:
                    server.misses.append(("POST", self.path))
                    return self._error(404, f"File Not Found: {self.path} (send POST {CHAT_PATH})")
                try:
                    body = json.loads(raw or b"null")
                    assert isinstance(body, dict) and isinstance(body.get("messages"), list)
                except (ValueError, AssertionError):
                    return self._error(400, "the body must be JSON with a 'messages' list")
                server.requests.append(body)
                t0 = time.perf_counter()
                if body.get("stream"):
                    self._stream(t0)
                else:
                    self._whole(t0)

            def _wait(self, t0: float, at: float) -> None:
                delay = at - (time.perf_counter() - t0)
                if delay > 0:
                    time.sleep(delay)

            def _final_fields(self) -> dict:
                s = server.script
                gen_ms = (s.last_token_s - s.tokens[0][0]) * 1e3
                return {"usage": {"prompt_tokens": s.prompt_tokens,
                                  "completion_tokens": s.n_tokens,
                                  "total_tokens": s.prompt_tokens + s.n_tokens},
                        "timings": {"prompt_n": s.prompt_tokens, "prompt_ms": s.tokens[0][0] * 1e3,
                                    "predicted_n": s.n_tokens, "predicted_ms": gen_ms,
                                    "predicted_per_second": (s.n_tokens - 1) / gen_ms * 1e3}}

            def _whole(self, t0: float) -> None:
                s = server.script
                self._wait(t0, s.end_s)
                reasoning = "".join(text for _, f, text in s.tokens if f != "content")
                self._json(200, {"id": "chatcmpl-scripted", "object": "chat.completion",
                                 "created": 0, "model": "local",
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": s.text,
                                                          "reasoning_content": reasoning}}],
                                 **self._final_fields()})

            def _send(self, text: str) -> None:
                data = text.encode()
                self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _stream(self, t0: float) -> None:
                s = server.script
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    self._send("data: " + json.dumps(_chunk({"role": "assistant",
                                                             "content": None})) + "\n\n")
                    for at, fld, text in s.tokens:
                        self._wait(t0, at)
                        self._send("data: " + json.dumps(_chunk({fld: text})) + "\n\n")
                    self._wait(t0, s.end_s)
                    self._send("data: " + json.dumps(_chunk({}, "stop", **self._final_fields()))
                               + "\n\n")
                    self._send("data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):   # the client hung up early
                    pass

        return Handler
