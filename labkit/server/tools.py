"""A chat request's ``tools`` and ``tool_choice``, read as llama-server reads them.

llama-server (with ``--jinja``, its default) hands the tools to the model's chat template,
which decides whether and how they appear in the prompt. SmolLM2's template never mentions
them, so its prompt is the same with or without tools, and the answer is plain text
(llama-server's "Content-only" chat format), even with ``tool_choice: "required"``.

What llama-server refuses, labkit refuses with the same status and words:

- ``tools`` that is not a list, a tool without ``type`` or ``function``, a type other than
  ``"function"``, a function without a ``name``: 500 ``server_error``, "Failed to parse
  tools: ...; tools = <the tools, indented>" (llama-server's own status for these);
- ``tool_choice`` other than ``auto``, ``none`` or ``required`` (a string; any other JSON
  value counts as ``auto``): 400 "Invalid tool_choice: ...";
- tools together with a ``grammar`` (unless ``tool_choice`` is ``none``): 400 "Cannot use
  custom grammar constraints with tools.".

A template that does use ``tools`` makes llama-server parse the model's tool calls out of
its answer (a chat format per model family). labkit renders the tools into such a prompt
but does not parse the calls, so it refuses tools for such a model unless ``tool_choice``
is ``none`` (:func:`check_template`), rather than answer with the calls left as text.
"""

from __future__ import annotations

import json

from .errors import ApiError

TOOL_CHOICES = ("auto", "none", "required")


def _dump(value, indent: int | None = None) -> str:
    """JSON as llama.cpp's json library writes it (no spaces, or ``indent`` spaces)."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _json_type(value) -> str:
    """The type name llama.cpp's json library uses in its messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def _string(obj: dict, key: str, default: str | None = None) -> str:
    """``obj.at(key)`` (``default is None``) or ``obj.value(key, default)``, read as a string
    the way llama.cpp's json library does, with its exception texts."""
    if key not in obj:
        if default is not None:
            return default
        raise ValueError(f"[json.exception.out_of_range.403] key '{key}' not found")
    v = obj[key]
    if not isinstance(v, str):
        raise ValueError(f"[json.exception.type_error.302] type must be string, but is "
                         f"{_json_type(v)}")
    return v


def parse_tools(tools) -> list[dict]:
    """The tools, each as ``{"type": "function", "function": {"name", "description",
    "parameters"}}`` (what llama-server hands the template), or [] for none."""
    if tools is None:
        return []
    out = []
    try:
        if not isinstance(tools, list):
            raise ValueError(f"Expected 'tools' to be an array, got {_dump(tools)}")
        for tool in tools:
            if not isinstance(tool, dict) or "type" not in tool:
                raise ValueError(f"Missing tool type: {_dump(tool)}")
            if tool["type"] != "function":
                raise ValueError(f"Unsupported tool type: {_dump(tool)}")
            if "function" not in tool:
                raise ValueError(f"Missing tool function: {_dump(tool)}")
            fn = tool["function"]
            if not isinstance(fn, dict):
                raise ValueError(f"[json.exception.type_error.304] cannot use at() with "
                                 f"{_json_type(fn)}")
            out.append({"type": "function", "function": {
                "name": _string(fn, "name"),
                "description": _string(fn, "description", ""),
                "parameters": fn.get("parameters", {}),
            }})
    except ValueError as exc:
        raise ApiError(500, f"Failed to parse tools: {exc}; tools = {_dump(tools, 2)}",
                       "server_error") from None
    return out


def parse_tool_choice(value) -> str:
    """``auto``, ``none`` or ``required``; a value that is not a string is ``auto``."""
    if not isinstance(value, str):
        return "auto"
    if value not in TOOL_CHOICES:
        raise ApiError(400, f"Invalid tool_choice: {value}")
    return value


def read(body: dict) -> tuple[list[dict], str]:
    """A chat body's tools and tool choice, refused as llama-server refuses them."""
    tools = parse_tools(body.get("tools"))
    choice = parse_tool_choice(body.get("tool_choice", "auto"))
    if tools and choice != "none" and "grammar" in body:
        raise ApiError(400, "Cannot use custom grammar constraints with tools.")
    return tools, choice


def check_template(uses_tools: bool, tools: list[dict], choice: str) -> None:
    """Refuse tools for a template that renders them (llama-server would parse the model's
    tool calls, which labkit does not), unless the client turned tool calls off."""
    if tools and choice != "none" and uses_tools:
        raise ApiError(400, "this model's chat template uses 'tools', and labkit does not "
                            "parse tool calls out of an answer; leave 'tools' out or set "
                            "'tool_choice' to \"none\"")
