"""The measurement harness: the seed tutorial's 12-document benchmark as a library.

    from labkit import bench
    from labkit.server.launch import ServerConfig

    wl = bench.load_workload("short")                    # 12 documents + answer key
    rows = bench.run_config(ServerConfig(n_ctx=4096, n_slots=2, kv_unified=False), wl)
    bench.worksheet(rows, ttft_threshold_s=10)           # one line per config, three gates

    result = bench.measure(bench.default_configs(), ["short"], rounds=3)
    result.worksheet(); result.rows; result.plots; result.save("results/mine")

Modules: :mod:`~labkit.bench.workload` (the data), :mod:`~labkit.bench.prompt`,
:mod:`~labkit.bench.client` (streaming, closed/open loop), :mod:`~labkit.bench.grading`,
:mod:`~labkit.bench.memory`, :mod:`~labkit.bench.runner`, :mod:`~labkit.bench.worksheet`,
:mod:`~labkit.bench.plots`, :mod:`~labkit.bench.cli` (``labkit bench``).
"""

from .client import RequestSpec, Sampling, poisson_arrivals, send_all, stream_one
from .grading import Grade, grade
from .memory import MemorySampler
from .prompt import Prompt, json_schema_format
from .runner import BenchResult, Target, environment, measure, measure_target, run_config
from .workload import WORKLOADS, Document, Workload, generate, load_workload
from .worksheet import run_summary, timing_agreement, to_markdown, worksheet
from .cli import default_configs

__all__ = ["BenchResult", "Document", "Grade", "MemorySampler", "Prompt", "RequestSpec",
           "Sampling", "Target", "WORKLOADS", "Workload", "default_configs", "environment",
           "generate", "grade", "json_schema_format", "load_workload", "measure",
           "measure_target", "poisson_arrivals", "run_config", "run_summary",
           "send_all", "stream_one", "timing_agreement", "to_markdown", "worksheet"]
