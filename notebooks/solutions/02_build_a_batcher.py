"""Answers to the exercises of 02_build_a_batcher.ipynb."""

# 2.1: two prompts are read in call 1 and give tokens 1..5 in calls 1-5; both finish in call 5,
# so the third is admitted in call 6 and gives its tokens in calls 6-10.
answer_2_1 = 10

# 2.2: an open question; an answer of two or three sentences that quotes one of your own
# figures (as the notebook printed it, within rounding) is recorded, not graded, and the check
# shows the model answer and the rubric. One such answer:
answer_2_2 = ("In my table the step that read a 34-token prompt beside one decode took 111 ms, "
              "a decode-only step with both slots busy 13 ms. Every step reads all the weights "
              "once, but the arithmetic grows with the tokens in the batch: 36 rows against 2, "
              "so the admitting step is slower, and the other slot's next token waits for it.")


def answer_2_3(ctx, vocab, prompts, n_slots, max_tokens, n_batch):
    """The hand-built batcher with chunked prefill: decode tokens first, then prompt chunks in
    arrival order, never more than n_batch tokens in one llama_decode."""
    import ctypes
    import time
    from collections import deque

    import llama_cpp
    import numpy as np

    mem, n_vocab = llama_cpp.llama_get_memory(ctx), llama_cpp.llama_vocab_n_tokens(vocab)
    batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
    buf = ctypes.create_string_buffer(64)
    waiting, free = deque(enumerate(prompts)), deque(range(n_slots))
    seats, reading = {}, []           # slot -> its request; slots still reading, by arrival
    text, steps = [b""] * len(prompts), []

    def add(tok, pos, s, want_logits):
        i = batch.n_tokens
        batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, pos, 1
        batch.seq_id[i][0], batch.logits[i] = s, want_logits
        batch.n_tokens += 1
        return i

    while waiting or seats:
        while waiting and free:
            (r, prompt), s = waiting.popleft(), free.popleft()
            seats[s] = {"r": r, "prompt": prompt, "pos": 0, "n": 0, "i": -1}
            reading.append(s)
        batch.n_tokens, work = 0, []
        for s in sorted(seats):                        # one token for each generating slot
            seat = seats[s]
            if s not in reading:
                seat["i"] = add(seat["last"], seat["pos"], s, True)
                seat["pos"] += 1
                work.append((s, seat["r"], "decode", 1))
        for s in reading:                              # prompt chunks in the room left
            seat, room = seats[s], n_batch - batch.n_tokens
            n = min(room, len(seat["prompt"]) - seat["pos"])
            if n <= 0:
                break
            for k in range(seat["pos"], seat["pos"] + n):
                seat["i"] = add(seat["prompt"][k], k, s, k == len(seat["prompt"]) - 1)
            seat["pos"] += n
            work.append((s, seat["r"], "prefill", n))
        t0 = time.perf_counter()
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        steps.append(((time.perf_counter() - t0) * 1e3, work))
        for s, r, action, n in work:
            seat = seats[s]
            if seat["pos"] < len(seat["prompt"]):
                continue                                # a chunk that is not the last: no token yet
            if action == "prefill":
                reading.remove(s)
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, seat["i"]),
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


# 2.4: call 1 reads 32 tokens of prompt A; call 2 the last 8 of A (A's first token) and 24 of B;
# call 3 A's decode and B's last 16 (A's second token, B's first); call 4 both decode (A's
# third and last token, B's second); call 5 B's third.
answer_2_4 = 5
