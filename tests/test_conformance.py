"""labkit's server against llama.cpp's real llama-server (from the xllamacpp wheel).

Same flags, same model: the per-slot context each reports, and the refusal of a
prompt that does not fit, must agree. Skipped when the `ref` extra is not installed.
"""

import httpx
import pytest

from labkit.launch import ServerConfig, launch

pytestmark = pytest.mark.slow

pytest.importorskip("xllamacpp")

# Longer than the largest per-slot cap below (8192, SmolLM2's training context).
OVER_LONG = "word " * 9000


def observe(kind: str, n_slots: int, unified: bool) -> dict:
    cfg = ServerConfig(kind=kind, n_ctx=16384, n_slots=n_slots, kv_unified=unified)
    with launch(cfg) as srv:
        props = srv.props()
        r = httpx.post(srv.base_url + "/v1/chat/completions", timeout=120, json={
            "model": "local", "max_tokens": 4,
            "messages": [{"role": "user", "content": OVER_LONG}]})
        err = r.json().get("error", {})
        return {
            "slot_n_ctx": props["default_generation_settings"]["n_ctx"],
            "total_slots": props["total_slots"],
            "log": {k: srv.facts.get(k) for k in ("n_slots", "n_ctx_slot", "kv_unified")},
            "refusal": (r.status_code, err.get("type")),
            "refusal_n_ctx": err.get("n_ctx"),
        }


@pytest.mark.parametrize("unified", [False, True], ids=["split", "unified"])
@pytest.mark.parametrize("n_slots", [1, 2, 4])
def test_same_per_slot_context_and_refusal_as_llama_server(n_slots, unified):
    ours = observe("labkit", n_slots, unified)
    ref = observe("xllamacpp", n_slots, unified)
    assert ours == ref
    expected = min(16384 // n_slots if not unified else 16384, 8192)
    assert ours["slot_n_ctx"] == expected
    assert ours["refusal"] == (400, "exceed_context_size_error")
