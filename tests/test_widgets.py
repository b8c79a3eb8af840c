"""Panels work without a browser: update() recomputes .result; the ipywidgets controls call
the same update()."""

import pytest

from labkit.lessons import widgets


def test_gantt_panel_updates_without_a_browser():
    p = widgets.gantt_panel(n=12)
    assert list(p.result.summary.index) == ["static", "dynamic", "continuous"]
    before = p.result.summary.loc["continuous", "ttft_p90"]
    p.update(slots=1)
    assert p.values["slots"] == 1
    assert p.result.summary.loc["continuous", "ttft_p90"] > before
    assert p.figure is not None and len(p.figure.axes) == 3
    for run in p.result.runs.values():
        assert run.requests["slot"].max() == 0


def test_panel_rejects_unknown_controls_and_choices():
    p = widgets.slots_panel()
    with pytest.raises(TypeError, match="unknown control"):
        p.update(gpus=2)
    g = widgets.gantt_panel(n=6)
    with pytest.raises(ValueError, match="choose one of"):
        g.update(mix="enormous")


def test_widget_controls_drive_update():
    pytest.importorskip("ipywidgets")
    p = widgets.slots_panel(n_ctx=16384, slots=4, kv_unified=False)
    box = p.widget()
    assert box is p.widget()
    assert p.result.n_ctx_slot == 4096
    p._widgets["kv_unified"].value = True          # what a click does
    assert p.result.kv_unified and p.result.n_ctx_slot == 8192
    p.update(slots=2, kv_unified=False)            # and update() moves the controls
    assert p._widgets["slots"].value == 2 and p.result.n_ctx_slot == 8192


def test_a_panel_displays_as_the_live_widget_with_a_still_for_a_reader_with_no_kernel():
    """The one output a panel leaves: the widget view for JupyterLab, and for a code host or
    the rendered edition the panel as it stands (title, figure, table), which follows update()."""
    pytest.importorskip("ipywidgets")
    import base64
    from unittest import mock
    p = widgets.gantt_panel(n=6)
    with mock.patch("IPython.display.display") as display:
        p._ipython_display_()
    (bundle,), kwargs = display.call_args
    assert kwargs == {"raw": True}
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == p.widget().model_id
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    html = bundle["text/html"]
    assert p.title in html and f'base64,{bundle["image/png"]}' in html
    assert "continuous" in html and "ttft" in html                # its result, as the panel prints it
    before = p.still()["text/html"]
    p.update(slots=1)
    assert p.still()["text/html"] != before             # the still is the panel as it stands now
    slots = widgets.slots_panel(n_ctx=16384, slots=4)
    assert "n_ctx_slot=4096" in slots.still()["text/html"]
    slots.figure = None                                  # a panel with no figure: its result alone
    assert "image/png" not in slots.still() and "<img" not in slots.still()["text/html"]


def test_capacity_panel():
    p = widgets.capacity_panel()
    f16 = p.result.conversations
    p.update(kv_type="q4_0")
    assert p.result.conversations > f16
    p.update(gpu_gib=4, model="llama-3.1-70b-q4")
    assert not p.result.fits and p.result.conversations == 0


def test_restaurant_workload_is_deterministic():
    from labkit.lessons import plots
    from labkit.sim import experiments
    a = experiments.restaurant_summary(slots=2, n=10)
    b = experiments.restaurant_summary(slots=2, n=10)
    assert a.equals(b)
    assert (a["throughput_tok_s"] > 0).all()
    t = plots.work_table(experiments.restaurant_runs(n=6)["static"])
    assert not ((t["action"] == "idle") & t["request_id"].isna()).any()


def test_choices_come_from_their_sources():
    """A policy, KV cache type or model added where it is defined shows up in the panels."""
    from labkit.costs import capacity
    from labkit.models import kv
    from labkit.sim import experiments
    from labkit.sim.policies import POLICIES
    load = widgets.load_panel(rate=0.5)
    assert load.controls["policy"].options == tuple(POLICIES)
    cap = widgets.capacity_panel()
    assert cap.controls["kv_type"].options == tuple(kv.BYTES_PER_VALUE)
    assert cap.controls["model"].options == tuple(capacity.MODELS)
    assert widgets.gantt_panel(n=6).controls["mix"].options == tuple(experiments.MIXES)
    for kv_type in cap.controls["kv_type"].options:          # every offered choice computes
        assert cap.update(kv_type=kv_type).kv_type == kv_type


def test_widgets_holds_panels_only():
    """The domain code lives next to its kin: simulator experiments in labkit.sim.experiments,
    pictures in labkit.lessons.plots, planning in labkit.costs.planning."""
    for name in ("restaurant_runs", "restaurant_summary", "summarize", "work_table", "gantt",
                 "RestaurantResult", "load_run", "MIXES", "rent_vs_buy"):
        assert not hasattr(widgets, name), name
