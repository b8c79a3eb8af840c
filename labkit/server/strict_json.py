"""JSON as strict as llama-server's parser, both ways: request bodies in, answers out.

Python's ``json`` reads more than JSON: the literals ``NaN``, ``Infinity`` and ``-Infinity``,
numbers too large for a double (``1e400`` becomes ``inf``, an integer of any size is kept
exact until Python's 4,300-digit limit raises), and strings holding a lone UTF-16 surrogate
(``"\\ud800"``), which no UTF-8 answer can carry. It also recurses once per level of nesting,
until Python's recursion limit. llama-server (nlohmann's json) refuses all of these as it
parses; :func:`loads` refuses them too, each with a 400 that names where in the body it is
(``'presence_penalty'``, ``'messages[0].content'``):

- ``NaN``, ``Infinity``, ``-Infinity``: not JSON;
- a number beyond a double's range (about 1.8e308; nlohmann's "number overflow"), an
  integer included: every number a reader gets from here converts to a finite float;
- a lone surrogate in a string or a key (nlohmann's "invalid string: surrogate ...");
- arrays and objects nested deeper than :data:`MAX_DEPTH`.

:func:`dumps` writes an answer the same way the other direction: a value JSON cannot hold
(``nan``, ``inf``) raises instead of going out as ``NaN`` or ``Infinity``, which a strict
client (a browser's ``JSON.parse``) would refuse.
"""

from __future__ import annotations

import json
import math
import re
import sys

from .errors import ApiError

# How deep arrays and objects may nest in a request body. The deepest a real request goes is
# a JSON schema (response_format, tools), two levels per level of the schema.
MAX_DEPTH = 64
# The largest magnitude a JSON number may have: a double's (nlohmann's limit).
MAX_NUMBER = sys.float_info.max
# A \u escape of a UTF-16 surrogate in the body's text: only then can a string hold one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
NOT_JSON = "request body is not valid JSON"


class _Literal:
    """What a number JSON does not have was written as: ``NaN``, ``Infinity``, ``-Infinity``,
    or an integer too long for Python to read. The walk refuses it with its place."""

    def __init__(self, text: str):
        self.text = text


def _long_int(text: str):
    """An integer literal: read when it fits a double, else left as its text."""
    digits = len(text) - text.startswith("-")
    return int(text) if digits <= 309 else _Literal(text)


def loads(text: str):
    """``text`` as strict JSON (see the module docstring), or a 400 naming the place."""
    try:
        try:
            value = json.loads(text, parse_constant=_Literal)
        except ValueError as exc:
            if isinstance(exc, json.JSONDecodeError) or "integer string" not in str(exc):
                raise
            # an integer over Python's 4,300 digits: read again, keeping long ones as text
            value = json.loads(text, parse_constant=_Literal, parse_int=_long_int)
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"{NOT_JSON}: {exc.msg} at line {exc.lineno} "
                            f"column {exc.colno}") from None
    except RecursionError:
        raise _Refused("deep").error() from None
    try:
        _check(value, 0, bool(_SURROGATE_ESCAPE.search(text)))
    except _Refused as refused:
        raise refused.error() from None
    return value


def dumps(value) -> str:
    """``value`` as JSON text, non-ASCII characters as they are; ``nan`` or ``inf`` anywhere
    raises ValueError rather than write ``NaN`` or ``Infinity``."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


# ------------------------------------------------------------------ the walk

class _Refused(Exception):
    """What the walk refuses (``what``: a number's literal or None, a string, or "deep"),
    and where: the keys and indexes from the body down, each added on the way back up (so a
    body that passes builds no path at all)."""

    def __init__(self, kind: str, what=None):
        self.kind, self.what, self.path = kind, what, []

    def at(self, step) -> _Refused:
        self.path.append(step)
        return self

    def error(self) -> ApiError:
        path = "".join(f"[{s}]" if isinstance(s, int) else f".{s}"
                       for s in reversed(self.path)).removeprefix(".")
        where = _place(path) if path else "the body"
        if self.kind == "deep":
            where = f" (at {_place(path)})" if path else ""
            return ApiError(400, f"{NOT_JSON}: arrays and objects nest more than {MAX_DEPTH} "
                                 f"levels deep{where}")
        if self.kind == "string":
            high = 0xD800 <= ord(_SURROGATE.search(self.what).group()) <= 0xDBFF
            reason = ("surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF" if high
                      else "surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF")
            return ApiError(400, f"{NOT_JSON}: {where}: invalid string: {reason}")
        if self.what in ("NaN", "Infinity", "-Infinity"):
            return ApiError(400, f"{NOT_JSON}: {where} is {self.what}, which JSON does not "
                                 "have; send a finite number")
        literal = f" parsing '{self.what}'" if self.what else ""   # None: Python read inf
        return ApiError(400, f"{NOT_JSON}: {where}: number overflow{literal} (a JSON number "
                             f"must be within ±{MAX_NUMBER:.4g})")


def _place(path: str) -> str:
    """A path as the messages show it, cut, any surrogate in a key written as its escape."""
    shown = path if len(path) <= 80 else path[:79] + "…"
    return "'" + _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", shown) + "'"


def _shown(digits: str) -> str:
    """A long number's literal, cut: its first digits and how many it has."""
    n = len(digits.lstrip("-"))
    return digits if len(digits) <= 24 else f"{digits[:20]}... ({n} digits)"


_NUMBERS = {int, float}


def _check(v, depth: int, surrogates: bool) -> None:
    """Raise :class:`_Refused` for what :func:`loads` refuses. ``surrogates``: whether the
    text had a surrogate escape (else no string can hold one, and none is searched)."""
    t = type(v)
    if t is dict:
        if depth >= MAX_DEPTH:
            raise _Refused("deep")
        for key, item in v.items():
            if surrogates and _SURROGATE.search(key):
                raise _Refused("string", key).at(key)
            try:
                _check(item, depth + 1, surrogates)
            except _Refused as refused:
                raise refused.at(key) from None
    elif t is list:
        if depth >= MAX_DEPTH:
            raise _Refused("deep")
        kinds = set(map(type, v))
        if kinds <= _NUMBERS and (not v or -MAX_NUMBER <= min(v) and max(v) <= MAX_NUMBER):
            return   # token ids, a logit_bias pair: the common lists, checked at C speed
        if kinds == {str} and not surrogates:
            return
        for i, item in enumerate(v):
            try:
                _check(item, depth + 1, surrogates)
            except _Refused as refused:
                raise refused.at(i) from None
    elif t is float:
        if not math.isfinite(v):   # only a literal that overflowed reads as inf here
            raise _Refused("number")
    elif t is int:
        if not -MAX_NUMBER <= v <= MAX_NUMBER:
            raise _Refused("number", _shown(str(v)))
    elif t is str:
        if surrogates and _SURROGATE.search(v):
            raise _Refused("string", v)
    elif t is _Literal:
        raise _Refused("number", _shown(v.text))
