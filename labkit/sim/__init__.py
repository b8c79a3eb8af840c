"""labkit.sim: a discrete-event simulator of LLM serving with slots and batching.

The restaurant, once more: requests are guests; slots (窗口) are tables; each
table's context (桌面) is the table top, where the guest's notes, the KV cache
(已讀筆記), pile up as they read and answer; the kitchen cooks in rounds (steps),
and continuous batching refills empty tables at every round instead of waiting
for the whole room to finish.

Typical use::

    from labkit import sim
    reqs = sim.poisson(500, rate=4.0, prompt=(64, 1024), output=sim.Exponential(200))
    res = sim.simulate(reqs, slots=8, batching="continuous", policy="fifo",
                       kv=sim.UnifiedKV(16384), cost=sim.preset("rtx4090", "8b-q4"))
    res.summary(); res.requests; res.steps; sim.plots.gantt(res)

Modules: :mod:`.requests` (Request, length distributions), :mod:`.arrivals`
(workloads), :mod:`.policies` (waiting-room order, and policies written as a key), :mod:`.kv` (KV models),
:mod:`.cost` (step cost and presets), :mod:`.fit` (calibration), :mod:`.engine`
(the event loop), :mod:`.record` (what a run hands over), :mod:`.metrics` (result
tables built from that record), :mod:`.plots`, :mod:`.experiments`
(comparisons and load sweeps), :mod:`.cli` (``python -m labkit.sim``).
The simulator is pure Python + numpy/pandas; it never loads a model.
"""

from . import experiments, plots
from .arrivals import (ClosedLoop, SharedPrefix, burst, closed_loop, from_trace, gamma,
                       offered_load, poisson)
from .cost import HARDWARE, MODELS, Hardware, ModelSpec, StepCost, derive, preset, presets_table
from .engine import BATCHING, simulate
from .fit import Fit, fit
from .kv import KVModel, PagedKV, SplitKV, UnifiedKV
from .metrics import SimResult
from .policies import FIFO, SJF, FairShare, KeyPolicy, Policy, PriorityFirst, from_key, make_policy
from .record import SimConfig, SimRecord
from .requests import Choice, Exponential, Fixed, LogNormal, Request, Uniform

__all__ = [
    "Request", "Fixed", "Uniform", "Exponential", "LogNormal", "Choice",
    "poisson", "gamma", "burst", "closed_loop", "ClosedLoop", "from_trace", "SharedPrefix",
    "offered_load",
    "simulate", "SimConfig", "SimRecord", "SimResult", "BATCHING",
    "Policy", "FIFO", "SJF", "PriorityFirst", "FairShare", "KeyPolicy", "from_key", "make_policy",
    "KVModel", "SplitKV", "UnifiedKV", "PagedKV",
    "StepCost", "Hardware", "ModelSpec", "HARDWARE", "MODELS", "preset", "derive", "presets_table",
    "fit", "Fit", "experiments", "plots",
]
