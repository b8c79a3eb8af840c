"""The grammar and content of a chat answer under response_format (no model needed)."""

import json

import pytest

from differential_cases import MORE_SCHEMAS, SCHEMA
from labkit.engine import SamplingParams
from labkit.engine.response_format import CHAR, ROOT, SPACE, chat_grammar, content, schema_rules
from labkit.server.validate import sampling_params


def rules(grammar: str) -> dict:
    return dict(line.split(" ::= ", 1) for line in grammar.splitlines())


def test_the_grammar_is_llama_servers_chat_answer():
    g = rules(chat_grammar(SCHEMA))
    assert "root ::= " + g["root"] == ROOT
    assert "space ::= " + g["space"] == SPACE and "char ::= " + g["char"] == CHAR
    # the schema's rules, laid out as llama.cpp lays them out (measured on llama-server)
    assert g["response-format"] == '"{" space colour-kv space "}"'
    assert g["colour-kv"] == '"\\"colour\\"" space ":" space colour'
    assert g["colour"].endswith('"\\""')          # no whitespace after a value


def test_no_whitespace_before_a_comma_and_some_before_a_closing_bracket():
    g = rules(chat_grammar(MORE_SCHEMAS["array"][0]))
    assert g["colours"] == ('"[" space colours-item "," space colours-item '
                            '("," space colours-item)? space "]"')
    g = rules(chat_grammar(MORE_SCHEMAS["nested"][0]))
    assert g["colour"] == '"{" space colour-name-kv "," space colour-hex-kv space "}"'


def test_json_object_is_any_object():
    g = rules(chat_grammar(None))
    assert g["response-format"] == "object"
    assert g["object"] == ('"{" space ( string ":" space value ("," space string ":" space '
                           'value)* )? space "}"')
    assert g["integral-part"] == "[0] | [1-9] [0-9]{0,15}"


def test_a_bad_schema_is_refused():
    with pytest.raises(Exception):
        schema_rules({"type": "bogus"})


@pytest.mark.parametrize("text,want", [
    ('```json\n\n{\n  "a": 1\n}\n\n```', '{\n  "a": 1\n}'),
    ('\n{"a": 1}\n\n', '{"a": 1}'),
    ('```json\n\n{\n  "name": "json",', '{\n  "name": "json",'),   # cut off by max_tokens
    ('{"a": [1, ', '{"a": [1, '),                                 # whitespace inside stays
    ('```json\n{"a": 1}\n', '{"a": 1}'),
    ("", ""),
])
def test_the_content_is_the_json_alone(text, want):
    assert content(text) == want


def test_the_chat_endpoint_takes_the_chat_grammar_and_completion_does_not():
    rf = {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}}
    chat = sampling_params(rf, chat=True)
    assert chat.chat_json and chat.gbnf() == chat_grammar(SCHEMA)
    plain = sampling_params(rf)
    assert not plain.chat_json and "```json" not in plain.gbnf()
    assert sampling_params({"response_format": {"type": "json_object"}},
                           chat=True).gbnf() == chat_grammar(None)
    assert SamplingParams(grammar='root ::= "a"', chat_json=True).gbnf() == 'root ::= "a"'
    assert json.loads(content('```json\n{"colour": "red"}\n```')) == {"colour": "red"}


@pytest.mark.parametrize("pieces", [
    ["`", "`", "`", "j", "son", "\n", "\n", "{", "\n ", ' "', "c", "ol", "our", '":', ' "', "j",
     "son", '"', "\n", "}", "\n", "\n", "```", ""],          # llama-server's tokens, measured
    ["\n", "{", '"a"', ": ", "1", "}", "\n"],
    ["```json", "\n", '{"a": [1, ', "2"],                 # cut off by max_tokens
    ["```", "json", "\n", '{"s": "x`', 'y"}', "\n```"],
])
def test_a_streamed_answer_sends_the_same_content(pieces):
    from labkit.engine.response_format import ContentStream
    s = ContentStream()
    deltas = [s.push(p) for p in pieces]
    assert "```" not in "".join(deltas).replace('x`y', '')
    assert "".join(deltas) + s.finish() == content("".join(pieces))
