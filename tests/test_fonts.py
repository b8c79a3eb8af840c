"""Chinese text in plots: a CJK font is found without a path written anywhere, matplotlib falls
back to it glyph by glyph, and a plot with a Chinese title and labels renders every glyph."""

import warnings

import pytest

from labkit.lang import fonts
from labkit.lang import choice

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")

FAMILY = fonts.find()
needs_font = pytest.mark.skipif(
    FAMILY is None, reason="no CJK font installed (Debian/Ubuntu: apt-get install fonts-noto-cjk)")


@needs_font
def test_a_chinese_plot_renders_every_glyph():
    import matplotlib.pyplot as plt
    assert fonts.setup() == FAMILY
    assert FAMILY in mpl.rcParams["font.family"]
    fig, ax = plt.subplots(figsize=(3, 2))
    try:
        ax.plot([1, 2, 4], [4.7, 8.1, 11.0], marker="o")
        ax.set_title("連續批次：槽位數與吞吐")
        ax.set_xlabel("槽位數 (slots)")
        ax.set_ylabel("吞吐 tok/s，首字等待 TTFT")
        ax.legend(["分割 KV"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig.canvas.draw()
        missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
        assert missing == [], missing
    finally:
        plt.close(fig)


@needs_font
def test_setup_twice_adds_the_font_once():
    fonts.setup()
    fonts.setup()
    assert mpl.rcParams["font.family"].count(FAMILY) == 1


def test_without_a_cjk_font_it_says_how_once_and_labels_stay_english(monkeypatch, capsys):
    monkeypatch.setattr(fonts, "_state", {"family": None})
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    assert fonts.setup() is None and fonts.setup() is None
    err = capsys.readouterr().err
    assert err.count("fonts-noto-cjk") == 1
    assert fonts.label("Throughput", "吞吐") == "Throughput"
    assert not fonts.available()


@needs_font
def test_label_follows_the_language(monkeypatch):
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    assert fonts.label("Throughput", "吞吐") == "吞吐"
    monkeypatch.setenv(choice.ENV_LANG, "en")
    assert fonts.label("Throughput", "吞吐") == "Throughput"


def test_english_labels_never_look_for_a_font(monkeypatch, capsys):
    """In English a plot's labels need no CJK font: label() neither searches nor warns."""
    monkeypatch.setattr(fonts, "_state", {})
    monkeypatch.setattr(fonts, "find", lambda: pytest.fail("looked for a CJK font in English"))
    monkeypatch.delenv(choice.ENV_LANG, raising=False)
    assert fonts.label("Throughput", "吞吐") == "Throughput"
    assert capsys.readouterr().err == ""
