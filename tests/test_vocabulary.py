"""Tokens are not characters: the embedded model's tokenizer on English and Chinese."""

import pytest

from labkit.engine import vocabulary


@pytest.mark.slow
def test_chinese_takes_more_tokens_per_character_than_english():
    df = vocabulary.count()
    assert list(df.index) == ["English", "Traditional Chinese"]
    assert df.loc["English", "chars_per_token"] > 3
    assert df.loc["Traditional Chinese", "chars_per_token"] < 1
    assert (df["tokens"] <= df["bytes"]).all()          # byte-level: never more tokens than bytes
    assert df.loc["English", "characters in 16,384 tokens"] > 5 * df.loc[
        "Traditional Chinese", "characters in 16,384 tokens"]


@pytest.mark.slow
def test_pieces_rebuild_the_text():
    text = "A small restaurant"
    assert "".join(vocabulary.pieces(text)) == text
    assert len(vocabulary.tokenize([text])[0]) == len(vocabulary.pieces(text))
