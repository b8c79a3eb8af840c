"""labkit's server against llama.cpp's llama-server, case by case.

Every case of tests/differential_cases.py is sent to labkit's server and to the reference
llama-server (the xllamacpp wheel, a dependency of labkit) started with the same flags and the same
model, and the two answers are compared as the case says. Each pair of servers is started once
per flag set (the cases are run grouped by flag set, the base flag set last: the session's
server pool, tests/conftest.py, hands that pair on to tests/test_differential_engine.py) and
always stopped. Skipped when xllamacpp is not installed. The startup faults, compared with
llama-server's, are in tests/test_faults.py.

    pytest tests/test_differential.py -s        # -s prints what each server answered
"""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from differential_cases import CASES, FLAGS, Case, builds_differ

KINDS = ("labkit", "xllamacpp")
# The order the flag sets run in: "base" last, so that its pair is still running when
# tests/test_differential_engine.py asks for the same one.
ORDER = {name: i for i, name in enumerate([*(f for f in FLAGS if f != "base"), "base"])}


class _Missing:
    def __repr__(self):
        return "<missing>"


MISSING = _Missing()   # what get() returns for a path an answer does not have


# ---------------------------------------------------------------------------- servers

@pytest.fixture
def pair(server_pool):
    """labkit's server and llama-server started with one flag set of :data:`FLAGS` (its name):
    {kind: server}, from the session's pool, so at most two servers run at a time."""
    pytest.importorskip("xllamacpp")
    return lambda flags: server_pool.get(KINDS, **FLAGS[flags])


# ---------------------------------------------------------------------------- observing

def get(obj, path: str):
    """The value at a dotted path: ``error.type``, ``choices.0.text``, ``items.*.id``."""
    for i, part in enumerate(path.split(".")):
        if part == "*":
            rest = ".".join(path.split(".")[i + 1:])
            return [get(x, rest) if rest else x for x in obj] if isinstance(obj, list) \
                else MISSING
        if isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return MISSING
    return obj


def send(srv, case: Case) -> httpx.Response:
    body = case.body
    headers = dict(case.headers)
    if isinstance(body, bytes):
        kw = {"content": body}
        headers.setdefault("Content-Type", "application/json")
    else:
        kw = {"json": body} if body is not None else {}
    return httpx.request(case.method, srv.base_url + case.path, headers=headers, timeout=600,
                         **kw)


def generated_text(body: dict):
    choice = get(body, "choices.0")
    if choice is not MISSING:
        message = get(choice, "message.content")
        return message if message is not MISSING else choice.get("text", MISSING)
    return body.get("content", MISSING)


def key_paths(obj, prefix: str = "") -> list[str]:
    """The dotted paths of every field of a JSON object, sorted: nested objects are entered,
    and so is the first element of a list of objects (``choices.0.delta.content``)."""
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(prefix + k)
            if isinstance(v, list) and v and isinstance(v[0], dict):
                v, k = v[0], k + ".0"
            if isinstance(v, dict):
                out += key_paths(v, prefix + k + ".")
    return sorted(out)


def answer(r: httpx.Response) -> dict:
    """One answer as a flat record: ``http``, the JSON body's fields (a list answer under
    ``items``), ``keys`` (:func:`key_paths` of the body), ``text`` (the generated text),
    ``json_keys`` (when that text is a JSON object) and ``n_choices``."""
    import json
    obs: dict = {"http": r.status_code}
    try:
        body = r.json()
    except ValueError:
        return {**obs, "raw": r.text[:200], "content_type": r.headers.get("content-type")}
    if isinstance(body, list):
        return {**obs, "items": body}
    obs.update(body)
    obs["keys"] = key_paths(body)
    text = generated_text(body)
    if text is not MISSING:
        obs["text"] = text
        try:
            parsed = json.loads(text)
            if isinstance(parsed, dict):
                obs["json_keys"] = sorted(parsed)
        except (TypeError, ValueError):
            pass
    if isinstance(body.get("choices"), list):
        obs["n_choices"] = len(body["choices"])
    return obs


def streamed(srv, case: Case) -> dict:
    """The same request streamed: the text pieced together, the final chunk's fields, the
    fields of every chunk (``keys``: one :func:`key_paths` list per chunk), each usage
    chunk's ``completion_tokens`` (``usage_counts``) and whether every one came right after a
    finish chunk (``usage_after_finish``), and whether the stream ended with ``data: [DONE]``."""
    import json
    body = {**case.body, "stream": True}
    out = {"text": "", "objects": set(), "done": False, "chunks": 0, "keys": [],
           "usage_counts": [], "usage_after_finish": True}
    finished_last = False
    with httpx.stream(case.method, srv.base_url + case.path, json=body, timeout=600) as r:
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                out["done"] = True
                continue
            chunk = json.loads(line[6:])
            out["chunks"] += 1
            out["keys"].append(key_paths(chunk))
            out["objects"].add(chunk.get("object", MISSING))
            for path in ("choices.0.delta.content", "choices.0.text", "content"):
                piece = get(chunk, path)
                if isinstance(piece, str):
                    out["text"] += piece
                    break
            role = get(chunk, "choices.0.delta.role")
            if role is not MISSING and "first_role" not in out:
                out["first_role"] = role
            if get(chunk, "choices.0.finish_reason") not in (None, MISSING):
                out["finish_reason"] = chunk["choices"][0]["finish_reason"]
            if chunk.get("usage"):
                out["usage"] = chunk["usage"]
                out["usage_counts"].append(chunk["usage"].get("completion_tokens"))
                out["usage_after_finish"] &= finished_last
            finished_last = get(chunk, "choices.0.finish_reason") not in (None, MISSING)
            if chunk.get("stop") is True:
                out.update(stop_type=chunk.get("stop_type"),
                           tokens_predicted=chunk.get("tokens_predicted"))
    out["objects"] = sorted(out["objects"])
    return out


def metrics(srv) -> dict:
    text = srv.get("/metrics").text
    return {name.removeprefix("llamacpp:"): float(value) for name, value in
            (line.split() for line in text.splitlines() if line and not line.startswith("#"))}


def concurrent(srv, case: Case) -> dict:
    results: list = [None] * case.times

    def one(i):
        results[i] = answer(send(srv, case))
    threads = [threading.Thread(target=one, args=(i,)) for i in range(case.times)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [r for r in results if r["http"] != 200]
    return {"n_failed": len(failed), "n_ok": len(results) - len(failed),
            "error_types": sorted({get(r, "error.type") for r in failed})}


def disconnect(srv, case: Case, wait_s: float = 10.0) -> dict:
    """A non-streaming client that sends its request and leaves once it is being served."""
    import json
    body = json.dumps(case.body).encode()
    head = (f"POST {case.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", srv.port)) as client:
        client.sendall(head + body)
        deadline = time.monotonic() + 60
        while not any(s["is_processing"] for s in srv.slots()):
            assert time.monotonic() < deadline, "the request never started"
            time.sleep(0.05)
        time.sleep(1.0)
    deadline = time.monotonic() + wait_s
    while any(s["is_processing"] for s in srv.slots()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return {"freed": not any(s["is_processing"] for s in srv.slots())}


def observe(srv, case: Case) -> dict:
    if case.kind == "request":
        return answer(send(srv, case))
    if case.kind == "stream":
        plain = answer(send(srv, case))
        flow = streamed(srv, case)
        return {"plain": plain, "streamed": flow, "agree": plain.get("text") == flow["text"]}
    if case.kind == "repeat":
        for _ in range(case.times - 1):
            send(srv, case)
        return answer(send(srv, case))
    if case.kind == "metrics":
        before = metrics(srv)
        assert send(srv, case).status_code == 200
        after = metrics(srv)
        return {"names": {n: True for n in after},
                "delta": {n: after[n] - before.get(n, 0) for n in after}}
    if case.kind == "concurrent":
        return concurrent(srv, case)
    if case.kind == "disconnect":
        return disconnect(srv, case)
    if case.kind == "facts":
        return dict(srv.facts)
    raise ValueError(f"unknown kind {case.kind!r}")


# ---------------------------------------------------------------------------- comparing

def differences(case: Case, ours: dict, ref: dict) -> list[str]:
    """Every way the two observations differ from what the case asks."""
    out = []
    for side, obs, expected in (("labkit", ours, case.labkit),
                                ("llama-server", ref, case.reference)):
        for path, value in expected.items():
            if get(obs, path) != value:
                out.append(f"{side} {path} = {get(obs, path)!r}, expected {value!r}")
    if case.deliberate:
        return out
    for path in case.has:
        for side, obs in (("labkit", ours), ("llama-server", ref)):
            if get(obs, path) is MISSING:
                out.append(f"{side} has no {path}")
    for path, pattern in case.match.items():
        for side, obs in (("labkit", ours), ("llama-server", ref)):
            if not re.search(pattern, str(get(obs, path))):
                out.append(f"{side} {path} = {get(obs, path)!r} does not match {pattern!r}")
    for path in case.same:
        a, b = get(ours, path), get(ref, path)
        if a != b:
            out.append(f"{path}: labkit {a!r} != llama-server {b!r}")
    return out


def _shown(case: Case, obs: dict) -> dict:
    paths = [*case.same, *case.has, *case.match, *case.labkit, *case.reference]
    return {p: get(obs, p) for p in dict.fromkeys(paths) if get(obs, p) is not MISSING}


def _param(case: Case):
    marks = ([pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else
             [builds_differ(case.without_avx512)] if case.without_avx512 else [])
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.slow
@pytest.mark.parametrize("case", [_param(c) for c in sorted(CASES, key=lambda c: ORDER[c.flags])])
def test_labkit_answers_as_llama_server_does(case, pair):
    obs = {kind: observe(srv, case) for kind, srv in pair(case.flags).items()}
    ours, ref = obs["labkit"], obs["xllamacpp"]
    print(f"\n{case.name} [{case.flags}]\n  labkit:       {_shown(case, ours)}\n"
          f"  llama-server: {_shown(case, ref)}")
    found = differences(case, ours, ref)
    assert not found, "\n".join(found)


# ---------------------------------------------------------------------------- the table itself

def test_the_table_is_well_formed():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), "two cases share a name"
    for c in CASES:
        assert c.flags in ORDER, f"{c.name}: unknown flag set {c.flags!r}"
        assert not (c.xfail and c.deliberate), f"{c.name}: xfail or deliberate, not both"
        assert c.same or c.has or c.match or c.labkit or c.reference, f"{c.name} checks nothing"
        if c.deliberate:
            assert c.labkit, f"{c.name}: say what labkit does"


def test_every_deliberate_difference_is_documented():
    doc = (Path(__file__).parent.parent / "docs" / "ENGINE.md").read_text()
    assert "## Differences from llama-server" in doc
    section = doc.split("## Differences from llama-server", 1)[1]
    missing = [c.name for c in CASES if c.deliberate and f"`{c.name}`" not in section]
    assert not missing, f"not listed in docs/ENGINE.md's differences: {missing}"


def test_the_reference_hands_a_json_schema_to_llguidance():
    """The reference llama-server was built with llguidance: ``json_schema_to_grammar`` gives
    the ``%llguidance`` form, which is what ``/completion``'s ``json_schema`` field gets (and
    labkit samples it through the llguidance package too); a chat ``response_format`` goes
    through the chat parser's GBNF instead (labkit.engine.response_format). If this fails, the
    reference changed and the completion-json-schema cases must be measured again."""
    xlc = pytest.importorskip("xllamacpp")
    from differential_cases import SCHEMA
    grammar = xlc.json_schema_to_grammar(SCHEMA)
    assert grammar.startswith("%llguidance {}\nstart: %json {")
