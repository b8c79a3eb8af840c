"""llama-server's generation fields read as it reads them (labkit/server/validate.py): pure
logic, no model. What llama-server does with each was measured on the xllamacpp wheel; the
same requests sent to both servers are in tests/test_differential_engine.py."""

import pytest

from labkit.engine import SamplingParams
from labkit.server import validate
from labkit.server.validate import ApiError, chat_request, prompt_field, sampling_params

USER = [{"role": "user", "content": "x"}]
INF = float("inf")


@pytest.mark.parametrize("value,want", [
    ({"29": -100}, [(29, -100.0)]),
    ({"29": False}, [(29, -INF)]),
    ({"Hello": 1.5, "": 2}, [("Hello", 1.5), (0, 2.0)]),       # strtol: "" is token 0
    ({"abc": "x", "7": True, " 12": 1}, [(12, 1.0)]),           # not a number or false: skipped
    ([[29, -1], ["Hi", False]], [(29, -1.0), ("Hi", -INF)]),
    ([[29], [1.5, 2], "x", [29, "y"]], []),
    ("not a bias", []),
])
def test_logit_bias_forms(value, want):
    assert validate.logit_bias(value) == want


@pytest.mark.parametrize("body,chat,want", [
    ({"logprobs": True, "top_logprobs": 2}, True, 2),
    ({"logprobs": True}, True, validate.DEFAULT_TOP_LOGPROBS),
    ({"logprobs": True, "top_logprobs": 0}, True, 0),
    ({"logprobs": True, "top_logprobs": -1}, True, -1),        # no probabilities at all
    ({"logprobs": 2}, True, 2),
    ({"n_probs": 3}, True, 3),
    ({"n_probs": 3}, False, 3),
    ({"logprobs": 4}, False, 4),                                # /v1/completions
    ({"logprobs": True}, False, 1),
    ({}, False, 0),
])
def test_how_many_top_tokens(body, chat, want):
    assert validate.n_probs(body, chat) == want


def test_top_logprobs_needs_logprobs_on_the_chat_route():
    with pytest.raises(ValueError, match="top_logprobs requires logprobs to be set to true"):
        validate.n_probs({"top_logprobs": 2}, chat=True)
    assert validate.n_probs({"top_logprobs": 2}, chat=False) == 0


@pytest.mark.parametrize("value,want", [
    (None, None), (-1, None), (0xFFFFFFFF, None), (0, 0), (7, 7), (-5, 4294967291),
    (2**32 + 5, 5), (2**64, 0), (2**63 + 5, 5), (5.7, 5), (-1.5, None), (1e30, 0),
])
def test_seed_is_read_into_32_bits_as_llama_server_reads_it(value, want):
    assert validate.seed(value) == want


def test_penalties_and_their_limits():
    p = sampling_params({"repeat_penalty": 1.3, "repeat_last_n": 16, "frequency_penalty": 0.5,
                         "presence_penalty": -0.5})
    assert (p.repeat_penalty, p.repeat_last_n, p.frequency_penalty, p.presence_penalty) == \
        (1.3, 16, 0.5, -0.5)
    d = SamplingParams()
    assert (d.repeat_last_n, d.repeat_penalty, d.frequency_penalty, d.presence_penalty) == \
        (64, 1.0, 0.0, 0.0)
    for body, message in [
        ({"repeat_last_n": -1}, "Field 'repeat_last_n': Value must be between 0 <= value <= "
                                "2147483647, but got -1"),
        ({"repeat_penalty": 0}, "Failed to initialize samplers: penalty_repeat must be finite "
                                "and greater than 0"),
        ({"frequency_penalty": "high"}, "'frequency_penalty' must be a number"),
    ]:
        with pytest.raises(ApiError) as err:
            sampling_params(body)
        assert err.value.status == 400 and err.value.message.startswith(message)


def test_chat_requests_read_the_openai_logprobs_rules():
    assert chat_request({"messages": USER, "logprobs": True}).params.n_probs == 20
    with pytest.raises(ApiError, match="top_logprobs requires logprobs"):
        chat_request({"messages": USER, "top_logprobs": 3})


@pytest.mark.parametrize("key,value", [
    ("mirostat", 2), ("typical_p", 0.5), ("dynatemp_range", 0.5), ("top_n_sigma", 1.0),
    ("xtc_probability", 0.5), ("dry_multiplier", 0.8), ("min_keep", 5),
    ("post_sampling_probs", True), ("samplers", ["top_k", "temperature"]),
])
def test_samplers_labkit_lacks_are_refused_by_name(key, value):
    with pytest.raises(ApiError) as err:
        sampling_params({key: value})
    assert err.value.status == 400 and f"'{key}' is not supported" in err.value.message


def test_samplers_labkit_lacks_are_accepted_when_off():
    off = {key: value for key, (value, _) in validate.UNSUPPORTED.items()}
    sampling_params({**off, "samplers": validate.DEFAULT_SAMPLERS})


def test_n_choices_and_their_seeds():
    assert validate.n_choices({}, 2) == 1 and validate.n_choices({"n": 2.9}, 2) == 2
    for n in (0, 3, -1):
        with pytest.raises(ValueError) as err:
            validate.n_choices({"n": n}, 2)
        assert str(err.value) == f"Field 'n': Value must be between 1 <= value <= 2, but got {n}"
    p = SamplingParams(seed=42)
    assert [validate.choice_params(p, k).seed for k in range(3)] == [42, 43, 44]
    assert validate.choice_params(SamplingParams(), 1).seed is None    # random stays random
    assert validate.choice_params(SamplingParams(seed=0xFFFFFFFE), 2).seed == 0


@pytest.mark.parametrize("prompt,want", [
    ("Hi", ["Hi"]),
    ([1, 2], [[1, 2]]),
    (["Hi", 5, "x"], [["Hi", 5, "x"]]),                 # mixed: one prompt
    (["Hi", "Yo"], ["Hi", "Yo"]),
    ([[1, 2], "Yo", [3, "z"]], [[1, 2], "Yo", [3, "z"]]),
])
def test_completion_prompts(prompt, want):
    assert validate.completion_prompts({"prompt": prompt}, prompt_field) == want


def test_completion_prompt_elements_are_checked():
    with pytest.raises(ValueError, match='"prompt" elements must be'):
        validate.completion_prompts({"prompt": ["Hi", 5.5]}, prompt_field)
    with pytest.raises(ApiError, match="'prompt' is empty"):
        validate.completion_prompts({"prompt": ["Hi", ""]}, prompt_field)


def test_prompt_tokens_add_special_tokens_to_the_first_piece_only():
    def tok(text, special):
        return ([0] if special else []) + [ord(c) for c in text]
    assert validate.prompt_tokens("ab", tok) == [0, 97, 98]
    assert validate.prompt_tokens([5, 6], tok) == [5, 6]
    assert validate.prompt_tokens(["a", 5, "b"], tok) == [0, 97, 5, 98]
    assert validate.prompt_tokens([5, "b"], tok) == [5, 98]
