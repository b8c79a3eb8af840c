"""Plausible wrong answers to the exercises of notebook 02: each must fail with a hint.

2.3's wrong answers are batchers with one mistake each, made by :func:`batcher_with`."""


def batcher_with(mistake):
    """A chunked batcher with one mistake: "whole prompts" (no chunking), "room ignores
    decodes", "token after every chunk", "prompts before decodes" or "last logits for all"."""

    def chunked_batcher(ctx, vocab, prompts, n_slots, max_tokens, n_batch):
        import ctypes
        import time
        from collections import deque

        import llama_cpp
        import numpy as np

        mem, n_vocab = llama_cpp.llama_get_memory(ctx), llama_cpp.llama_vocab_n_tokens(vocab)
        batch = llama_cpp.llama_batch_init(2048, 0, 1)
        buf = ctypes.create_string_buffer(64)
        waiting, free = deque(enumerate(prompts)), deque(range(n_slots))
        seats, reading, text, steps = {}, [], [b""] * len(prompts), []

        def add(tok, pos, s, want_logits):
            i = batch.n_tokens
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, pos, 1
            batch.seq_id[i][0], batch.logits[i] = s, want_logits
            batch.n_tokens += 1
            return i

        def decodes(work):
            for s in sorted(seats):
                seat = seats[s]
                if s not in reading and (mistake != "prompts before decodes"
                                         or batch.n_tokens < n_batch):
                    seat["i"] = add(seat["last"], seat["pos"], s, True)
                    seat["pos"] += 1
                    work.append((s, seat["r"], "decode", 1))

        def chunks(work):
            for s in list(reading):
                seat = seats[s]
                room = n_batch if mistake == "room ignores decodes" else n_batch - batch.n_tokens
                n = len(seat["prompt"]) - seat["pos"]
                if mistake != "whole prompts":
                    n = min(room, n)
                if n <= 0:
                    break
                last = seat["pos"] + n == len(seat["prompt"]) or mistake == "token after every chunk"
                for k in range(seat["pos"], seat["pos"] + n):
                    seat["i"] = add(seat["prompt"][k], k, s, last and k == seat["pos"] + n - 1)
                seat["pos"] += n
                seat["ready"] = last
                work.append((s, seat["r"], "prefill", n))

        while waiting or seats:
            while waiting and free:
                (r, prompt), s = waiting.popleft(), free.popleft()
                seats[s] = {"r": r, "prompt": prompt, "pos": 0, "n": 0, "i": -1}
                reading.append(s)
            batch.n_tokens, work = 0, []
            if mistake == "prompts before decodes":
                chunks(work)
                decodes(work)
            else:
                decodes(work)
                chunks(work)
            t0 = time.perf_counter()
            if llama_cpp.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
            steps.append(((time.perf_counter() - t0) * 1e3, work))
            for s, r, action, n in work:
                seat = seats[s]
                if action == "prefill":
                    if not seat["ready"]:
                        continue
                    reading.remove(s)
                i = -1 if mistake == "last logits for all" else seat["i"]
                logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, i),
                                               shape=(n_vocab,))
                tok = seat["last"] = int(logits.argmax())
                seat["n"] += 1
                eog = llama_cpp.llama_vocab_is_eog(vocab, tok)
                if not eog:
                    n_bytes = llama_cpp.llama_token_to_piece(vocab, tok, buf, 64, 0, False)
                    text[r] += buf.raw[:n_bytes]
                if eog or seat["n"] >= max_tokens:
                    llama_cpp.llama_memory_seq_rm(mem, s, -1, -1)
                    del seats[s]
                    free.append(s)
        llama_cpp.llama_batch_free(batch)
        return [t.decode("utf-8", "ignore") for t in text], steps

    chunked_batcher.mistake = mistake
    return chunked_batcher


WRONG = {
    "2.1": [15, 9, 6, "15 次"],
    "2.2": ["the prompt is longer", "提示比較長",
            "the step that reads a new prompt carries many more tokens than a step that only "
            "decodes, so it takes longer"],
    "2.3": [batcher_with(m) for m in ("whole prompts", "room ignores decodes",
                                       "token after every chunk", "prompts before decodes",
                                       "last logits for all")] + [42],
    "2.4": [3, 6, "約 6 次"],
}
