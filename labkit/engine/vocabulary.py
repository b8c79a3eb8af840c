"""Tokens are not characters: count them with the model's own tokenizer.

A context of 16k is 16,384 *tokens*, and how many characters that is depends on the
language and on the model's vocabulary. :func:`count` loads only the vocabulary of a GGUF
(no weights, no context: llama.cpp's ``vocab_only``) and tokenizes texts with it, exactly as
the server would tokenize a prompt (no BOS token added, so the counts are of the text alone).
"""

from __future__ import annotations

from contextlib import contextmanager

#: One short paragraph, said once in English and once in Traditional Chinese (the same
#: meaning), so that the two counts compare like with like.
SAMPLES = {
    "English": (
        "A small restaurant has four tables and one fast kitchen. Every round, the cook makes "
        "one more bite for each guest who is eating, and as soon as a guest leaves, the next "
        "person in line sits down at that table. The notes the waiter keeps for each order "
        "take room on the table top, and a long order fills the table top sooner."),
    "Traditional Chinese": (
        "一家小餐廳有四張桌子和一個很快的廚房。每一輪，廚師為每位正在用餐的客人多做一口菜；"
        "只要有客人離開，排隊的下一位就在那張桌子坐下。服務生為每張單記下的筆記會佔用桌面，"
        "點得越長的單，越快把桌面佔滿。"),
}


@contextmanager
def vocabulary(model=None):
    """The llama.cpp vocabulary of ``model`` (default: the embedded model), weights not loaded."""
    import llama_cpp

    from .native import install_log_router, quiet_llama
    from ..models.files import resolve_model
    install_log_router()
    path = str(resolve_model(model))
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    with quiet_llama():
        ptr = llama_cpp.llama_model_load_from_file(path.encode(), params)
    if not ptr:
        raise RuntimeError(f"{path}: llama.cpp could not read its vocabulary")
    try:
        yield llama_cpp.llama_model_get_vocab(ptr)
    finally:
        llama_cpp.llama_model_free(ptr)


def tokenize(texts, model=None) -> list[list[int]]:
    """The token ids of each text in ``texts``, as the model's tokenizer splits it."""
    from .native import tokenize as _tokenize
    with vocabulary(model) as vocab:
        return [_tokenize(vocab, t, add_special=False, parse_special=False) for t in texts]


def count(texts: dict | None = None, model=None, context: int = 16384):
    """One row per text: characters, UTF-8 bytes, tokens, characters per token, and about how
    many characters of such text a ``context``-token context holds. ``texts``: ``{name:
    text}`` (default :data:`SAMPLES`)."""
    import pandas as pd
    texts = SAMPLES if texts is None else texts
    ids = tokenize(list(texts.values()), model)
    rows = []
    for (name, text), toks in zip(texts.items(), ids):
        chars = len(text)
        rows.append({"text": name, "characters": chars, "bytes": len(text.encode("utf-8")),
                     "tokens": len(toks), "chars_per_token": chars / len(toks),
                     f"characters in {context:,} tokens": int(context * chars / len(toks))})
    return pd.DataFrame(rows).set_index("text")


def pieces(text: str, model=None) -> list[str]:
    """How the tokenizer cuts ``text``: each token's bytes, decoded where they are whole
    characters (a piece that is part of a character's bytes is shown as its hex)."""
    import ctypes

    import llama_cpp

    from .native import tokenize as _tokenize
    out = []
    with vocabulary(model) as vocab:
        for t in _tokenize(vocab, text, add_special=False, parse_special=False):
            buf = ctypes.create_string_buffer(64)
            n = llama_cpp.llama_token_to_piece(vocab, t, buf, 64, 0, False)
            raw = buf.raw[:n]
            try:
                out.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(raw.hex(" "))
    return out
