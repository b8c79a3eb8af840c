"""llguidance grammars (``%llguidance ...``), as llama-server built with llguidance reads them."""

import json

import pytest

from differential_cases import MORE_SCHEMAS, SCHEMA
from labkit.engine.guidance import PREFIX, check, is_llguidance, schema_grammar

pytest.importorskip("llguidance")


def test_a_schema_becomes_llama_servers_llguidance_grammar():
    assert schema_grammar(SCHEMA) == (
        '%llguidance {}\nstart: %json {"type":"object","properties":{"colour":{"type":'
        '"string","maxLength":10}},"required":["colour"],"additionalProperties":false}')
    assert schema_grammar({}) == "%llguidance {}\nstart: %json {}"


def test_the_grammar_is_the_references():
    xlc = pytest.importorskip("xllamacpp")
    for schema in [SCHEMA, {}, *(s for s, _ in MORE_SCHEMAS.values())]:
        assert schema_grammar(schema) == xlc.json_schema_to_grammar(schema)


def test_only_a_grammar_that_starts_with_the_marker_goes_to_llguidance():
    assert is_llguidance(PREFIX + " {}\nstart: /a+/")
    assert not is_llguidance('root ::= "a"') and not is_llguidance(None)
    assert not is_llguidance(" " + PREFIX)


def test_llguidance_names_what_it_cannot_compile():
    assert check(schema_grammar(SCHEMA)) == ""
    assert "bogus" in check(schema_grammar({"type": "bogus"}))


@pytest.mark.slow
def test_an_llguidance_grammar_constrains_the_engine(model_path):
    from labkit.engine import Engine, EngineConfig, SamplingParams
    with Engine(EngineConfig(model_path, n_ctx=512, n_slots=1)) as eng:
        prompt = eng.tokenize(eng.apply_template([{"role": "user", "content": "A colour?"}]))
        f = eng.submit(prompt, SamplingParams(max_tokens=30, temperature=0,
                                              grammar=schema_grammar(SCHEMA))).result(120)
        assert f.finish_reason == "stop" and set(json.loads(f.text)) == {"colour"}
        with pytest.raises(ValueError, match="llguidance"):
            eng.submit(prompt, SamplingParams(grammar=schema_grammar({"type": "bogus"})))


def test_completions_json_schema_becomes_an_llguidance_grammar():
    from labkit.server.errors import ApiError
    from labkit.server.validate import sampling_params
    p = sampling_params({"json_schema": SCHEMA})
    assert p.grammar == schema_grammar(SCHEMA) and not p.chat_json
    assert sampling_params({"json_schema": SCHEMA, "grammar": 'root ::= "a"'}).grammar == \
        'root ::= "a"'
    with pytest.raises(ApiError, match="(?i)schema.*bogus"):
        sampling_params({"json_schema": {"type": "bogus"}})
    with pytest.raises(ApiError, match="json_schema"):
        sampling_params({"json_schema": "nope"})
