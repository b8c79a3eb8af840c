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
        raise _too_deep("") from None
    _check(value, "", 0, bool(_SURROGATE_ESCAPE.search(text)))
    return value


def dumps(value) -> str:
    """``value`` as JSON text, non-ASCII characters as they are; ``nan`` or ``inf`` anywhere
    raises ValueError rather than write ``NaN`` or ``Infinity``."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


# ------------------------------------------------------------------ the walk

def _place(path: str) -> str:
    """A path as the messages show it, any surrogate in a key written as its escape."""
    shown = path if len(path) <= 80 else path[:79] + "…"
    return "'" + _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", shown) + "'"


def _too_deep(path: str) -> ApiError:
    where = f" (at {_place(path)})" if path else ""
    return ApiError(400, f"{NOT_JSON}: arrays and objects nest more than {MAX_DEPTH} "
                         f"levels deep{where}")


def _refuse_number(path: str, shown: str | None) -> ApiError:
    """A number JSON cannot hold: a literal (``shown``), or one that overflowed (``None``
    when its text is gone: Python read it as inf)."""
    where = _place(path) if path else "the body"
    if shown in ("NaN", "Infinity", "-Infinity"):
        return ApiError(400, f"{NOT_JSON}: {where} is {shown}, which JSON does not have; "
                             "send a finite number")
    literal = f" parsing '{shown}'" if shown else ""
    return ApiError(400, f"{NOT_JSON}: {where}: number overflow{literal} (a JSON number "
                         f"must be within ±{MAX_NUMBER:.4g})")


def _refuse_string(path: str, s: str) -> ApiError:
    where = _place(path) if path else "the body"
    high = 0xD800 <= ord(_SURROGATE.search(s).group()) <= 0xDBFF
    reason = ("surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF" if high else
              "surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF")
    return ApiError(400, f"{NOT_JSON}: {where}: invalid string: {reason}")


def _shown(digits: str) -> str:
    """A long number's literal, cut: its first digits and how many it has."""
    n = len(digits.lstrip("-"))
    return digits if len(digits) <= 24 else f"{digits[:20]}... ({n} digits)"


def _check_scalar(v, path: str, surrogates: bool) -> None:
    t = type(v)
    if t is float:
        if not math.isfinite(v):   # only an overflowing literal reads as inf here
            raise _refuse_number(path, None)
    elif t is int:
        if not -MAX_NUMBER <= v <= MAX_NUMBER:
            raise _refuse_number(path, _shown(str(v)))
    elif t is str:
        if surrogates and _SURROGATE.search(v):
            raise _refuse_string(path, v)
    elif t is _Literal:
        raise _refuse_number(path, _shown(v.text))


def _check(v, path: str, depth: int, surrogates: bool) -> None:
    """Refuse what :func:`loads` refuses, naming its path. ``surrogates``: whether the text
    had a surrogate escape (else no string can hold one, and none is searched)."""
    t = type(v)
    if t is dict:
        if depth >= MAX_DEPTH:
            raise _too_deep(path)
        for key, item in v.items():
            sub = f"{path}.{key}" if path else key
            if surrogates and _SURROGATE.search(key):
                raise _refuse_string(sub, key)
            _check(item, sub, depth + 1, surrogates)
    elif t is list:
        if depth >= MAX_DEPTH:
            raise _too_deep(path)
        kinds = set(map(type, v))
        if kinds == {int} and -MAX_NUMBER <= min(v) and max(v) <= MAX_NUMBER:
            return   # token ids: the common long list, checked at C speed
        for i, item in enumerate(v):
            _check(item, f"{path}[{i}]", depth + 1, surrogates)
    else:
        _check_scalar(v, path, surrogates)
