"""Control panels for the notebooks: sliders in a browser, plain method calls anywhere else.

Every panel is a :class:`Panel`: it holds its current ``values``, recomputes its
``result`` (and redraws its ``figure``) on ``panel.update(**values)``, and shows
ipywidgets controls when displayed in Jupyter. The tests drive panels without a
browser through ``update`` and read ``result``; moving a slider calls the same
``update``.

- :func:`gantt_panel`: slots, arrival rate and length mix -> slot Gantt charts and
  metrics of static, dynamic and continuous batching on the same workload (notebook 01).
- :func:`capacity_panel`: GPU memory, model, n_ctx, slots, KV type -> how many
  conversations fit (notebook 03).
- :func:`slots_panel`: n_ctx, slots, split or unified -> llama.cpp's per-slot sizes
  and a picture of the table tops (notebook 04).
- :func:`gates_panel`: your TTFT threshold -> the worksheet's three gates (notebook 05).
- :func:`load_panel`: arrival rate, slots, policy -> queue depth and KV use (notebook 07).
- :func:`rent_buy_panel`: your quotes and busy hours a month -> the cost of a month of owning the
  machine, renting it always on, stopped when idle, or serverless (notebook 08).
- :func:`classroom_panel`: a worksheet column -> learner x configuration (classroom).

A panel only wires controls to a computation that lives elsewhere (the simulator's
experiments, the capacity calculator, :mod:`labkit.models.kv`, :mod:`labkit.costs.rentbuy`), and its
choices come from where those computations keep them: the policies the simulator knows,
the KV cache types :mod:`labkit.models.kv` has bytes for, the models the calculator describes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..lang.fonts import label as _L
from ..lang.glossary import lookup
from ..lang.i18n import pick

# Names shown for the simulator's keys (the values stay the keys: "fifo", "static" ...): the
# glossary's words for the batching modes and the policies.
MODE_NAMES = {m: lookup(f"{m} batching").chinese for m in ("static", "dynamic", "continuous")}
POLICY_NAMES = {key: f"{lookup(term).chinese}（{term}）" for key, term in
                (("fifo", "FIFO"), ("sjf", "SJF"), ("priority", "priority"),
                 ("fair", "fair share"))}
MIX_NAMES = {"short": "短", "mixed": "長短混合", "long": "長"}

# ---------------------------------------------------------------------------- the panel


@dataclass
class Control:
    """One control: ``kind`` is "int", "float", "choice" or "bool"."""

    kind: str
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    options: tuple = ()
    description: str = ""
    labels: dict = field(default_factory=dict)   # option -> the name shown for it (choice)


class Panel:
    """Values in, result (and a figure) out; ipywidgets controls when displayed."""

    def __init__(self, compute: Callable[..., Any], controls: dict[str, Control],
                 values: dict, draw: Callable | None = None, title: str = ""):
        self._compute = compute
        self._draw = draw
        self.controls = controls
        self.values = dict(values)
        self.title = title
        self.figure = None
        self.result = None
        self._ui = None
        self._out = None
        self._widgets: dict[str, Any] = {}
        self._syncing = False
        self.update()

    def update(self, **changes):
        """Set some values, recompute, redraw; returns the new result."""
        unknown = set(changes) - set(self.values)
        if unknown:
            raise TypeError(pick(f"unknown control(s) {sorted(unknown)}; this panel has "
                                 f"{sorted(self.values)}",
                                 f"沒有這個控制項 {sorted(unknown)}；這個面板有 {sorted(self.values)}"))
        for name, v in changes.items():
            c = self.controls.get(name)
            if c is not None and c.kind == "choice" and v not in c.options:
                raise ValueError(pick(f"{name}={v!r}: choose one of {list(c.options)}",
                                      f"{name}={v!r}：請從 {list(c.options)} 中選一個"))
        self.values.update(changes)
        self.result = self._compute(**self.values)
        if self._draw is not None:
            from matplotlib.figure import Figure
            fig = Figure(figsize=(10, 6.5), layout="constrained")
            self._draw(fig, self.result, self.values)
            self.figure = fig
        self._syncing = True                        # keep the controls in step with update()
        try:
            for name, w in self._widgets.items():
                if w.value != self.values[name]:
                    w.value = self.values[name]
        finally:
            self._syncing = False
        self._refresh()
        return self.result

    # ---- ipywidgets
    def _on_change(self, name):
        def handler(change):
            if not self._syncing:
                self.update(**{name: change["new"]})
        return handler

    def _make(self, name: str, c: Control, value):
        import ipywidgets as w
        style = {"description_width": "initial"}
        desc = c.description or name
        if c.kind == "int":
            x = w.IntSlider(value=value, min=c.lo, max=c.hi, step=c.step or 1, description=desc,
                            continuous_update=False, style=style)
        elif c.kind == "float":
            x = w.FloatSlider(value=value, min=c.lo, max=c.hi, step=c.step or 0.1,
                              description=desc, continuous_update=False, style=style)
        elif c.kind == "choice":
            shown = [(str(c.labels.get(o, o)), o) for o in c.options]
            x = w.Dropdown(options=shown, value=value, description=desc, style=style)
        elif c.kind == "bool":
            x = w.Checkbox(value=value, description=desc, style=style)
        else:
            raise ValueError(f"unknown control kind {c.kind!r}")
        x.observe(self._on_change(name), names="value")
        return x

    def widget(self):
        """The ipywidgets box: controls on top, the figure and the result below."""
        if self._ui is None:
            import ipywidgets as w
            self._widgets = {n: self._make(n, c, self.values[n]) for n, c in self.controls.items()}
            self._out = w.Output()
            head = [w.HTML(f"<b>{self.title}</b>")] if self.title else []
            self._ui = w.VBox(head + [w.HBox(list(self._widgets.values()),
                                             layout=w.Layout(flex_flow="row wrap")), self._out])
            self._refresh()
        return self._ui

    def _refresh(self):
        """Put the figure and the result in the output area by setting its ``outputs``
        directly: no ``with output:`` capture, whose message redirection can leave a headless
        client (nbclient, nbconvert) waiting for ever after the cell has run."""
        if self._out is None:
            return
        self._out.outputs = ()
        if self.figure is not None:
            self._out.append_display_data(self.figure)
        self._out.append_display_data(self.shown())

    def shown(self):
        """The result as the panel shows it: a table with Chinese headings under
        LABKIT_LANG=zh-TW (:func:`labkit.lang.i18n.show`), anything else as it is."""
        import pandas as pd

        from ..lang.i18n import show
        return show(self.result) if isinstance(self.result, pd.DataFrame) else self.result

    def still(self) -> dict:
        """The panel as it stands, for a reader with no kernel: its title, figure and result as
        HTML (the figure inlined as a PNG) and the figure alone as ``image/png``. JupyterLab shows
        the live widget instead; a code host, the rendered edition and nbconvert show this."""
        import base64
        import html

        import pandas as pd

        from ..machine.atomic import figure_bytes
        parts, bundle = [], {}
        if self.title:
            parts.append(f"<p><b>{html.escape(self.title)}</b></p>")
        if self.figure is not None:
            png = base64.b64encode(figure_bytes(self.figure, "png")).decode("ascii")
            bundle["image/png"] = png
            parts.append(f'<img src="data:image/png;base64,{png}" alt="{html.escape(self.title)}">')
        shown = self.shown()
        if isinstance(shown, pd.DataFrame):
            parts.append(shown.to_html())
        elif hasattr(shown, "_repr_html_") and shown._repr_html_() is not None:
            parts.append(shown._repr_html_())
        else:
            parts.append(f"<pre>{html.escape(str(shown))}</pre>")
        bundle["text/html"] = "\n".join(parts)
        return bundle

    def _ipython_display_(self):
        from IPython.display import display
        ui = self.widget()
        display({**ui._repr_mimebundle_(), **self.still()}, raw=True)

    def __repr__(self):
        return f"<{type(self).__name__} {self.title!r} {self.values}>"


# ---------------------------------------------------------------------------- notebook 01

def gantt_panel(slots: int = 4, rate: float = 4.0, mix: str = "mixed", n: int = 24,
                seed: int = 0) -> Panel:
    """Slots, arrival rate and length mix -> Gantt charts and metrics of static, dynamic and
    continuous batching on one workload (:func:`labkit.sim.experiments.restaurant`).
    ``panel.result.summary`` holds the metrics."""
    from ..sim import experiments

    def compute(slots, rate, mix, n, seed):
        return experiments.restaurant(slots=slots, rate=rate, mix=mix, n=n, seed=seed)

    def draw(fig, result, values):
        from .plots import gantt
        axes = fig.subplots(len(result.runs), 1, sharex=True)
        for ax, (mode, run) in zip(axes, result.runs.items()):
            s = result.summary.loc[mode]
            gantt(run, ax=ax, labels=values["n"] <= 30,
                  title=_L(f"{mode}: {s['throughput_tok_s']:.0f} tok/s, "
                           f"TTFT p90 {s['ttft_p90']:.2f} s, mean e2e {s['e2e_mean']:.2f} s",
                           f"{MODE_NAMES.get(mode, mode)}：{s['throughput_tok_s']:.0f} tok/s，"
                           f"首字等待 p90 {s['ttft_p90']:.2f} s，平均端到端 {s['e2e_mean']:.2f} s"))
            ax.set_xlabel("")
        axes[-1].set_xlabel(_L("time (s)", "時間 (s)"))

    controls = {
        "slots": Control("int", 1, 8, description=pick("slots (tables)", "槽位（桌）")),
        "rate": Control("float", 0.5, 20.0, 0.5, description=pick("arrivals / s", "每秒到達")),
        "mix": Control("choice", options=tuple(experiments.MIXES),
                       description=pick("answer lengths", "回答長度"),
                       labels=pick({}, MIX_NAMES)),
        "n": Control("int", 4, 60, description=pick("guests", "客人數")),
    }
    return Panel(compute, controls, dict(slots=slots, rate=rate, mix=mix, n=n, seed=seed), draw,
                 title=pick("Same guests, three ways of batching", "同一批客人，三種批次方式"))


# ---------------------------------------------------------------------------- notebook 03

def capacity_panel(gpu_gib: float = 24.0, model: str = "llama-3.1-8b-q4", n_ctx: int = 16384,
                   slots: int = 4, kv_type: str = "f16", kv_unified: bool = False,
                   tokens_per_conversation: int = 4096, overhead_gib: float = 1.0) -> Panel:
    """GPU memory, model, -c, -np, KV type -> the capacity calculator's answer
    (``panel.result`` is a :class:`labkit.costs.capacity.Capacity`)."""
    from ..costs import capacity
    from ..models import kv

    def compute(gpu_gib, model, n_ctx, slots, kv_type, kv_unified, tokens_per_conversation,
                overhead_gib):
        return capacity.plan(gpu_gib, model, n_ctx=n_ctx, slots=slots, kv_type=kv_type,
                             kv_unified=kv_unified, overhead_gib=overhead_gib,
                             tokens_per_conversation=tokens_per_conversation)

    def draw(fig, c, values):
        from .plots import memory_bar
        memory_bar(c, ax=fig.subplots(1, 1))
        fig.set_size_inches(10, 2.2)

    controls = {
        "gpu_gib": Control("float", 4, 192, 4, description=pick("GPU GiB", "GPU 記憶體 GiB")),
        "model": Control("choice", options=tuple(capacity.MODELS),
                         description=pick("model", "模型")),
        "n_ctx": Control("int", 1024, 131072, 1024, description="-c"),
        "slots": Control("int", 1, 32, description="-np"),
        "kv_type": Control("choice", options=tuple(kv.BYTES_PER_VALUE),
                           description=pick("KV type", "KV 型別")),
        "kv_unified": Control("bool", description=pick("unified KV", "統一 KV")),
        "tokens_per_conversation": Control("int", 256, 131072, 256,
                                           description=pick("tokens/conversation",
                                                            "每段對話 token 數")),
        "overhead_gib": Control("float", 0, 8, 0.25,
                                description=pick("overhead GiB", "額外開銷 GiB")),
    }
    values = dict(gpu_gib=gpu_gib, model=model, n_ctx=n_ctx, slots=slots, kv_type=kv_type,
                  kv_unified=kv_unified, tokens_per_conversation=tokens_per_conversation,
                  overhead_gib=overhead_gib)
    return Panel(compute, controls, values, draw,
                 title=pick("How many conversations fit?", "放得下幾段對話？"))


# ---------------------------------------------------------------------------- notebook 04

def slots_panel(n_ctx: int = 16384, slots: int = 4, kv_unified: bool = False,
                n_ctx_train: int | None = 8192, per_slot: int | None = None) -> Panel:
    """-c, -np and the KV mode -> llama.cpp's n_ctx, n_ctx_seq and n_ctx_slot
    (``panel.result`` is a :class:`labkit.models.kv.SlotContext`) and the table-top picture."""
    from ..models import kv

    def compute(n_ctx, slots, kv_unified, n_ctx_train, per_slot):
        return kv.slot_context(n_ctx, slots, kv_unified, n_ctx_train=n_ctx_train,
                               per_slot=per_slot)

    def draw(fig, sc, values):
        from .plots import table_tops
        table_tops(sc, ax=fig.subplots(1, 1))
        fig.set_size_inches(10, 2.4)

    controls = {
        "n_ctx": Control("int", 256, 65536, 256, description="-c"),
        "slots": Control("int", 1, 16, description="-np"),
        "kv_unified": Control("bool", description=pick("unified KV", "統一 KV")),
    }
    return Panel(compute, controls, dict(n_ctx=n_ctx, slots=slots, kv_unified=kv_unified,
                                         n_ctx_train=n_ctx_train, per_slot=per_slot), draw,
                 title=pick("How llama.cpp shares the table top", "llama.cpp 怎麼分配桌面"))


# ---------------------------------------------------------------------------- notebook 07: load

def load_panel(rate: float = 2.0, slots: int = 4, policy: str = "fifo", long_share: float = 0.3) -> Panel:
    """Arrival rate, slots, policy, share of long answers -> queue depth and KV use over time,
    with the run's TTFT, per-stream tok/s and peak queue in the title (notebook 07).
    ``result`` is :func:`labkit.sim.experiments.load_run`'s dict."""
    from ..sim.experiments import load_run
    from ..sim.policies import POLICIES

    def compute(rate, slots, policy, long_share):
        return load_run(rate=rate, slots=slots, policy=policy, long_share=long_share)

    def draw(fig, result, values):
        from ..sim import plots as splots
        s = result["summary"]
        axes = fig.subplots(2, 1, sharex=True)
        splots.queue_and_kv(result["run"], axes=axes)
        axes[0].set_title(_L(
            f"{values['rate']:g} req/s, {values['slots']} slots, {values['policy']}: "
            f"{s['throughput_tok_s']:.0f} tok/s, TTFT p50 {s['ttft_p50']:.2f} s, "
            f"per-stream {1 / s['tpot_p50']:.0f} tok/s, peak queue {s['peak_queue']}",
            f"{values['rate']:g} req/s，{values['slots']} 個槽位，"
            f"{POLICY_NAMES.get(values['policy'], values['policy'])}："
            f"{s['throughput_tok_s']:.0f} tok/s，首字等待 p50 {s['ttft_p50']:.2f} s，"
            f"每條串流 {1 / s['tpot_p50']:.0f} tok/s，佇列峰值 {s['peak_queue']}"))

    return Panel(compute, {
        "rate": Control("float", 0.25, 6.0, 0.25, description=pick("requests/s", "每秒請求數")),
        "slots": Control("int", 1, 16, 1, description=pick("slots (-np)", "槽位 (-np)")),
        "policy": Control("choice", options=tuple(POLICIES),
                          description=pick("policy", "排程策略"), labels=pick({}, POLICY_NAMES)),
        "long_share": Control("float", 0.0, 1.0, 0.1, description=pick("long answers", "長回答比例")),
    }, {"rate": rate, "slots": slots, "policy": policy, "long_share": long_share}, draw,
        title=pick("Load: queue depth and KV use", "負載：佇列深度與 KV 用量"))


# ---------------------------------------------------------------------------- notebook 05: the gates

def gates_panel(rows, ttft_threshold_s: float = 10.0) -> Panel:
    """Your TTFT threshold -> the worksheet's three gates for every config (notebook 05).
    ``rows``: a bench result's per-request rows (``result.rows``); ``result`` is the worksheet."""
    import pandas as pd

    from ..bench import worksheet

    hi = max(1.0, float(pd.to_numeric(rows["ttft_s"], errors="coerce").max() or 1.0) * 1.5)

    def compute(ttft_threshold_s):
        ws = worksheet(rows, ttft_threshold_s)
        return ws[["kv_mode", "slots", "workload", "ttft_max_s", "fits_context", "ttft_ok",
                   "all_correct", "verdict"]]

    def draw(fig, ws, values):
        ax = fig.subplots()
        labels = [f"{r.workload} {r.kv_mode} np{r.slots}" for r in ws.itertuples()]
        colors = ["#3a9a5b" if v == "pass" else "#b04a3a" for v in ws["verdict"]]
        ax.barh(labels, ws["ttft_max_s"].fillna(0), color=colors)
        ax.axvline(values["ttft_threshold_s"], color="k", ls="--", lw=0.8,
                   label=_L("your threshold", "你的門檻"))
        ax.set_xlabel(_L("slowest first token (s); green: all three gates pass",
                         "最慢的首字等待 (s)；綠色：三關都過"))
        ax.legend(fontsize=8)

    return Panel(compute, {"ttft_threshold_s": Control(
        "float", 0.1, round(hi, 1), 0.1, description=pick("TTFT limit s", "首字等待上限 s"))},
        {"ttft_threshold_s": ttft_threshold_s}, draw, title=pick("The three gates", "三關"))


# ---------------------------------------------------------------------------- notebook 08: rent or buy

def rent_buy_panel(own=None, rent=None, busy_hours: float = 0.0) -> Panel:
    """Your quotes and hours -> the cost of a month of owning the machine and of each way of
    renting it, over the busy hours a month, with your hours marked (notebook 08). ``own`` and
    ``rent`` are :class:`labkit.costs.rentbuy.Owning` and ``Renting`` (default: theirs); the
    sliders replace some of their fields. ``result`` is :func:`labkit.costs.rentbuy.summary`'s
    table at your hours."""
    import dataclasses

    from ..costs import rentbuy
    own, rent = own or rentbuy.Owning(), rent or rentbuy.Renting()
    owning_fields = ("card_price", "years", "kwh_price")
    renting_fields = ("rent_per_hour", "serverless_per_hour")

    def inputs(values):
        return (dataclasses.replace(own, **{k: values[k] for k in owning_fields}),
                dataclasses.replace(rent, **{k: values[k] for k in renting_fields}))

    def compute(busy_hours, **values):
        o, r = inputs(values)
        return rentbuy.summary(o, r, busy_hours)

    def draw(fig, table, values):
        o, r = inputs(values)
        ax = fig.subplots()
        rentbuy.plot_costs(rentbuy.monthly_costs(o, r), values["busy_hours"], ax=ax)
        at = table["USD/month at your hours"]
        ax.set_title(_L(f"a month at {values['busy_hours']:.0f} busy hours: " + "; ".join(
                            f"{rentbuy.OPTION_NAMES[k][0]} {v:,.0f} USD" for k, v in at.items()),
                        f"每月忙碌 {values['busy_hours']:.0f} 小時的每月成本：" + "；".join(
                            f"{rentbuy.OPTION_NAMES[k][1]} {v:,.0f} 美元" for k, v in at.items())),
                     fontsize=9)

    hi_price = max(1.0, own.card_price * 4)
    hi_rent = max(1.0, rent.rent_per_hour * 4, rent.serverless_per_hour * 2)
    return Panel(compute, {
        "busy_hours": Control("float", 0.0, own.on_hours, 1.0,
                              description=pick("busy h/month", "每月忙碌時數")),
        "card_price": Control("float", 0.0, hi_price, hi_price / 200,
                              description=pick("card price", "顯示卡價格")),
        "years": Control("float", 0.5, 10.0, 0.5, description=pick("years kept", "使用年數")),
        "kwh_price": Control("float", 0.0, 1.0, 0.01, description=pick("per kWh", "每度電 kWh")),
        "rent_per_hour": Control("float", 0.0, hi_rent, 0.01,
                                 description=pick("rent/hour", "租用每小時")),
        "serverless_per_hour": Control("float", 0.0, hi_rent, 0.01,
                                       description=pick("serverless/h", "無伺服器每小時")),
    }, {"busy_hours": busy_hours, **{k: getattr(own, k) for k in owning_fields},
        **{k: getattr(rent, k) for k in renting_fields}},
        draw, title=pick("Rent or buy", "租還是買"))


# ---------------------------------------------------------------------------- classroom

CLASSROOM_METRICS = ("output_tok_s", "ttft_p50_s", "ttft_max_s", "completion_p50_s",
                     "sampled_peak_mib", "correct")


def classroom_panel(merged, metric: str = "output_tok_s") -> Panel:
    """Pick a worksheet column -> the learner x configuration table and grouped bars
    (the classroom notebook). ``merged``: :func:`labkit.lessons.classroom.merge`'s table."""
    from . import classroom
    metrics = tuple(m for m in CLASSROOM_METRICS if m in merged.columns)

    def compute(metric):
        return classroom.comparison(merged, metric)

    def draw(fig, table, values):
        classroom.plot(merged, values["metric"], ax=fig.subplots())

    from ..lang.i18n import HEADINGS
    return Panel(compute, {"metric": Control(
        "choice", options=metrics, description=pick("column", "欄位"),
        labels=pick({}, {m: f"{HEADINGS.get(m, m)}（{m}）" for m in metrics}))},
        {"metric": metric}, draw, title=pick("Classroom comparison", "全班比較"))
