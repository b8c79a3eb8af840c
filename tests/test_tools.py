"""A chat request's tools, read as llama-server reads them (no server: the messages compared
with llama-server's live are in tests/differential_cases.py, ``tools-*``)."""

from __future__ import annotations

import pytest

from labkit.engine.chat import ChatTemplate
from labkit.server import tools
from labkit.server.validate import ApiError, chat_request

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object"}}}
USER = [{"role": "user", "content": "Hi"}]


def refusal(fn) -> ApiError:
    with pytest.raises(ApiError) as info:
        fn()
    return info.value


def test_tools_reach_the_request_in_the_shape_the_template_gets():
    req = chat_request({"messages": USER, "tools": [WEATHER], "tool_choice": "required"})
    assert req.tools == [{"type": "function", "function": {
        "name": "get_weather", "description": "", "parameters": {"type": "object"}}}]
    assert req.tool_choice == "required"
    assert chat_request({"messages": USER}).tools == []


@pytest.mark.parametrize("value,message", [
    ("x", 'Failed to parse tools: Expected \'tools\' to be an array, got "x"; tools = "x"'),
    ([{"function": {"name": "f"}}], 'Missing tool type: {"function":{"name":"f"}}'),
    ([{"type": "fn"}], 'Unsupported tool type: {"type":"fn"}'),
    ([{"type": "function"}], 'Missing tool function: {"type":"function"}'),
    ([{"type": "function", "function": {}}], "key 'name' not found"),
    ([{"type": "function", "function": {"name": 5}}], "type must be string, but is number"),
])
def test_bad_tools_are_refused_as_llama_server_refuses_them(value, message):
    err = refusal(lambda: chat_request({"messages": USER, "tools": value}))
    assert (err.status, err.type) == (500, "server_error")
    assert message in err.message and "; tools = " in err.message


def test_tool_choice():
    assert tools.parse_tool_choice(5) == "auto"
    err = refusal(lambda: chat_request({"messages": USER, "tool_choice": "bogus"}))
    assert (err.status, err.message) == (400, "Invalid tool_choice: bogus")


def test_tools_and_a_grammar_do_not_mix_unless_tool_calls_are_off():
    body = {"messages": USER, "tools": [WEATHER], "grammar": 'root ::= "a"'}
    err = refusal(lambda: chat_request(body))
    assert err.message == "Cannot use custom grammar constraints with tools."
    assert chat_request({**body, "tool_choice": "none"}).params.grammar == 'root ::= "a"'


def test_a_template_that_renders_tools_gets_them():
    aware = ChatTemplate("{% for t in tools %}[{{ t.function.name }}]{% endfor %}"
                         "{% for m in messages %}{{ m.content }}{% endfor %}")
    plain = ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}")
    assert aware.uses_tools and not plain.uses_tools
    req = chat_request({"messages": USER, "tools": [WEATHER]})
    assert aware.render(req.messages, tools=req.tools) == "[get_weather]Hi"
    assert plain.render(req.messages, tools=req.tools) == "Hi"


def test_tools_for_a_template_that_renders_them_are_refused_unless_turned_off():
    parsed = tools.parse_tools([WEATHER])
    err = refusal(lambda: tools.check_template(True, parsed, "auto"))
    assert err.status == 400 and "tool_choice" in err.message
    tools.check_template(True, parsed, "none")
    tools.check_template(False, parsed, "required")
    tools.check_template(True, [], "auto")
