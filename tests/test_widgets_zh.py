"""The control panels speak the notebook's language: under LABKIT_LANG=zh-TW their titles,
the controls' descriptions, the names in their drop-down lists and the figures they draw are
Chinese (flags such as -c and -np stay as they are), while the values stay the program's keys.
In English they are as before."""

import re
import warnings

import pytest

from labkit.lang import fonts
from labkit.lang import choice
from labkit.lessons import widgets

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
pytest.importorskip("ipywidgets")

needs_font = pytest.mark.skipif(
    fonts.find() is None,
    reason="no CJK font installed (Debian/Ubuntu: apt-get install fonts-noto-cjk)")
CJK = re.compile(r"[\u4e00-\u9fff]")
FLAGS = {"-c", "-np"}


def _bench_rows():
    from test_plots_zh import _bench_rows as rows
    return rows()


def _panels():
    from labkit.lessons import classroom
    merged = classroom.merge(classroom.submissions(classroom.samples_dir()))
    return {
        "gantt": widgets.gantt_panel(n=6),
        "capacity": widgets.capacity_panel(),
        "slots": widgets.slots_panel(),
        "load": widgets.load_panel(rate=0.5, slots=2),
        "gates": widgets.gates_panel(_bench_rows(), 2.5),
        "rent_buy": widgets.rent_buy_panel(busy_hours=240.0),
        "classroom": widgets.classroom_panel(merged),
    }


def _figure_texts(fig):
    for ax in fig.axes:
        yield ax.get_title() + ax.get_title(loc="left")
        yield ax.get_xlabel() + ax.get_ylabel()


@needs_font
def test_panels_speak_chinese(monkeypatch):
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    fonts.setup(quiet=True)
    for name, panel in _panels().items():
        assert CJK.search(panel.title), name
        head, controls, output = panel.widget().children
        for key, w in panel._widgets.items():
            if w.description in FLAGS:
                continue
            assert CJK.search(w.description), (name, key, w.description)
            assert w.value == panel.values[key]                 # values stay the keys
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=r".*(missing from font|Glyph).*")
            panel.figure.canvas.draw()
        assert any(CJK.search(t) for t in _figure_texts(panel.figure)), name
        # What the notebook shows: the title, these controls, the figure and then the result.
        assert head.value == f"<b>{panel.title}</b>", name
        assert list(controls.children) == list(panel._widgets.values()), name
        figure, _result = output.outputs
        assert figure["data"]["text/plain"].startswith("<Figure size"), name
    gates = widgets.gates_panel(_bench_rows(), 2.5)
    assert "判定" in gates.shown().columns and "verdict" in gates.result.columns
    load = widgets.load_panel()
    load.widget()
    shown = dict((v, k) for k, v in load._widgets["policy"].options)
    assert shown["fifo"] == "先來先服務（FIFO）" and shown["sjf"] == "最短作業優先（SJF）"
    assert load.update(policy="sjf") is load.result                  # keys still work
    assert load._widgets["policy"].value == "sjf"


def test_panels_in_english_as_before(monkeypatch):
    monkeypatch.delenv(choice.ENV_LANG, raising=False)
    load = widgets.load_panel(rate=0.5, slots=2)
    load.widget()
    assert load.title == "Load: queue depth and KV use"
    assert load._widgets["policy"].description == "policy"
    assert [label for label, _ in load._widgets["policy"].options] == ["fifo", "sjf", "priority",
                                                                        "fair"]
    assert load.figure.axes[0].get_title().startswith("0.5 req/s, 2 slots, fifo: ")
    assert widgets.gantt_panel(n=6).figure.axes[-1].get_xlabel() == "time (s)"
