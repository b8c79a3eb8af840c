"""Plausible wrong answers to the exercises of notebook 05: each must fail with a hint."""


def _first_chunk_timer(base_url, prompt):
    """Stops the TTFT clock at the first data line: the role chunk, which has no text."""
    import json
    import time

    import httpx
    client = httpx.Client()
    sent = time.perf_counter()
    ttft = n = None
    with client.stream("POST", base_url + "/v1/chat/completions",
                       json={"stream": True, "messages": [{"role": "user", "content": prompt}]}) as r:
        for line in r.iter_lines():
            if not line.startswith("data:") or line.endswith("[DONE]"):
                continue
            ttft = ttft if ttft is not None else time.perf_counter() - sent
            chunk = json.loads(line[5:])
            n = (chunk.get("usage") or {}).get("completion_tokens", n)
    return ttft, time.perf_counter() - sent, n


def _chunk_counter(base_url, prompt):
    """Times well, but counts the chunks that carried text instead of reading the usage."""
    import json
    import time

    import httpx
    client = httpx.Client()
    sent = time.perf_counter()
    ttft, n = None, 0
    with client.stream("POST", base_url + "/v1/chat/completions",
                       json={"stream": True, "messages": [{"role": "user", "content": prompt}]}) as r:
        for line in r.iter_lines():
            if not line.startswith("data:") or line.endswith("[DONE]"):
                continue
            for choice in json.loads(line[5:]).get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece:
                    n += 1
                if piece.strip() and ttft is None:
                    ttft = time.perf_counter() - sent
    return ttft, time.perf_counter() - sent, n


def _whole_answer_timer(base_url, prompt):
    """No stream: the first token is only seen when the whole answer has arrived."""
    import time

    import httpx
    client = httpx.Client()
    sent = time.perf_counter()
    r = client.post(base_url + "/v1/chat/completions",
                    json={"messages": [{"role": "user", "content": prompt}]})
    done = time.perf_counter() - sent
    return done, done, r.json()["usage"]["completion_tokens"]


def _wrong_path(base_url, prompt):
    import httpx
    httpx.post(base_url + "/completion", json={"prompt": prompt}).raise_for_status()
    return 0.0, 0.0, 0


WRONG = {
    "5.3": [8, 768, "12"],
    "5.4": [True, "yes", "通過", "是"],
    "5.5": ["ttft", "correct", "等待可接受", "交件正確", "首字等待", "答對"],
    "5.6": ["faster", "更快", "變快"],
    "5.1": [0, 1e9, "fast"],
    "5.2": ["bandwidth", "a bigger GPU", 3],
    "5.7": [_first_chunk_timer, _chunk_counter, _whole_answer_timer, _wrong_path,
            lambda base_url, prompt: 1 / 0, (0.4, 0.7, 7)],
    "5.8": [35 / 3.35, 35 / 2.5, 35],
}
