"""A chat answer in JSON (``response_format``), built the way llama-server builds it.

For ``/v1/chat/completions`` with ``response_format``, llama-server does not constrain
the answer with the schema alone: its chat parser (llama.cpp's common/chat, the
"differential autoparser" for a plain template such as SmolLM2's) builds one GBNF
grammar for the whole answer, and the JSON inside may come wrapped in a Markdown fence::

    root ::= <generation prompt> space space
             ("```json" space response-format space "```" | space response-format space)
    space ::= | " " | "\\n"{1,2} [ \\t]{0,20}

(``GET /slots`` does not show it; a request's ``__verbose.generation_settings.grammar``
does, on a server started with verbose logging.) The generation prompt
(``<|im_start|>assistant\\n``) is already in the prompt, so the grammar here starts after
it. ``json_object`` is the schema ``{"type": "object"}``. The schema's rules
(:func:`schema_rules`) come from llama-cpp-python's converter, rewritten to llama.cpp's
current layout: a value takes no whitespace after it (none before a comma), an object or
array may have whitespace before its closing bracket, and llama.cpp's ``space``,
``char`` and ``integral-part`` rules. The message's ``content`` is then the JSON alone
(:func:`content`): the fence and the whitespace around it are not part of it; a streamed
answer sends the same content piece by piece (:class:`ContentStream`).
"""

from __future__ import annotations

import json
import re

SPACE = 'space ::= | " " | "\\n"{1,2} [ \\t]{0,20}'
CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] | [\\\\] (["\\\\bfnrt] | "u" [0-9a-fA-F]{4})'
INTEGRAL = 'integral-part ::= [0] | [1-9] [0-9]{0,15}'
ROOT = ('root ::= space space ("```json" space response-format space "```" | '
        'space response-format space)')
_REPLACED = {"space": SPACE, "char": CHAR, "integral-part": INTEGRAL}
_CLOSERS = re.compile(r'(?<=\s)"([}\]])"')


def object_schema(schema: dict | None) -> dict:
    """The schema a chat request's answer follows (``json_object`` without one: any object)."""
    return {"type": "object"} if schema is None else schema


def schema_rules(schema: dict) -> str:
    """The GBNF rules of a schema, with ``response-format`` as the rule of the whole value.
    Raises what llama-cpp-python's converter raises for a schema it cannot read."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf
    out = []
    for line in json_schema_to_gbnf(json.dumps(schema)).splitlines():
        name, sep, body = line.partition(" ::= ")
        if not sep:
            continue
        if name in _REPLACED:
            out.append(_REPLACED[name])
            continue
        if body.endswith(" space"):
            body = body[:-len(" space")]
        body = _CLOSERS.sub(r'space "\1"', body)
        out.append(f"{'response-format' if name == 'root' else name} ::= {body}")
    return "\n".join(sorted(out)) + "\n"


def chat_grammar(schema: dict | None) -> str:
    """The GBNF grammar of a chat answer with ``response_format`` (after the generation
    prompt)."""
    return ROOT + "\n" + schema_rules(object_schema(schema))


_FENCE_OPEN = re.compile(r"\A[ \t\n]*```json[ \t\n]*")
_FENCE_CLOSE = re.compile(r"[ \t\n]*```\Z")


def content(text: str) -> str:
    """The JSON of an answer made under :func:`chat_grammar`, as llama-server's chat parser
    reports it: without the fence and the whitespace around the JSON (whitespace inside an
    unfinished JSON value stays)."""
    m = _FENCE_OPEN.match(text)
    if m:
        body = text[m.end():]
        closed = _FENCE_CLOSE.search(body)
        if closed:
            return body[:closed.start()]
    else:
        body = text.lstrip(" \t\n")
    stripped = body.rstrip(" \t\n")
    try:
        json.loads(stripped)
    except ValueError:
        return body
    return stripped


class ContentStream:
    """The content of a streamed answer made under :func:`chat_grammar`, piece by piece:
    :meth:`push` returns what is new of the JSON (nothing while a fence may be opening;
    trailing whitespace and backticks are held, they may be the closing fence), and
    :meth:`finish` the rest once the answer has ended (what :func:`content` gives)."""

    def __init__(self):
        self.text = ""
        self.sent = ""

    def _release(self, now: str) -> str:
        if not now.startswith(self.sent):
            return ""
        delta, self.sent = now[len(self.sent):], now
        return delta

    def push(self, piece: str) -> str:
        self.text += piece
        start = self.text.lstrip(" \t\n")
        if "```json".startswith(start):
            return ""
        m = _FENCE_OPEN.match(self.text)
        body = self.text[m.end():] if m else start
        return self._release(body.rstrip(" \t\n`"))

    def finish(self) -> str:
        return self._release(content(self.text))
