"""Answers to the exercises of chapter 05: 5.1 and 5.2 in 05_roofline.ipynb (part 1), 5.3 to 5.8
in 05_slots_live.ipynb (part 2)."""

from labkit.notebook import roofline

# 5.1: one stream reads every weight once per token, so its speed is the memory's bytes per
# second over the weights' bytes: your latest measured bandwidth / the model's tensor bytes.
answer_5_1 = roofline.machine().bandwidth / roofline.model_cost().weight_bytes

# 5.2: an open question about your own numbers; an answer of a few sentences that quotes one of
# your figures (within rounding) is recorded, not graded, and gets the model answer and the
# rubric. The figures below are an example; quote yours.
answer_5_2 = ("Memory capacity only decides what fits, a bigger model or more streams at once; "
              "bandwidth sets the ceiling of one stream's speed. My batch-1 rate came in well below "
              "the speed formula (31 tok/s against 124), so here arithmetic and per-step work set "
              "the speed and more bandwidth alone would help little; slots raised the decode total "
              "until the arithmetic caught up, and prefill stayed flat, so prompt-heavy work needs "
              "more arithmetic, not more memory.")

# 5.3: 12 answers x 64 tokens = 768 tokens in 8 seconds of wall time.
answer_5_3 = 12 * 64 / 8

# 5.4: one wrong answer fails the "answers correct" gate, so the configuration fails.
answer_5_4 = False

# 5.5: each of 4 split slots holds 4096 / 4 = 1024 cells; a 2048-token prompt is refused (HTTP 400).
answer_5_5 = "fits context"

# 5.6: completion time is per request; 1.3x as long is slower, whatever the total did.
answer_5_6 = "slower"


# 5.7: send one streaming request; start the clock just before sending; the first chunk whose
# content has visible text is the first token (the role chunk, reasoning_content and whitespace
# are not); the stream's end is the completion; the final chunk's usage counts the tokens.
def answer_5_7(base_url, prompt):
    import json
    import time
    import urllib.request
    body = {"model": "local", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0, "max_tokens": 32, "cache_prompt": False}
    request = urllib.request.Request(base_url.rstrip("/") + "/v1/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    ttft = n_tokens = None
    sent = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        for raw in response:
            if not raw.startswith(b"data:"):
                continue
            data = raw[5:].strip()
            if data == b"[DONE]":
                break
            chunk = json.loads(data)
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or ""
                if ttft is None and piece.strip():
                    ttft = time.perf_counter() - sent
            if chunk.get("usage"):
                n_tokens = chunk["usage"]["completion_tokens"]
    return ttft, time.perf_counter() - sent, n_tokens


# 5.8: decode runs from the first token to the last: 35 tokens, of which 34 came after the
# first, in 3.35 - 2.50 = 0.85 s: about 40 tok/s (35 / 0.85 = 41 is accepted too).
answer_5_8 = 34 / (3.35 - 2.50)
