"""Benchmark: how much of each engine step is labkit's own Python, and how much is llama.cpp?

The engine's step trace records when each llama_decode call started and ended. Between the
end of one call and the start of the next, the engine samples a token per slot, streams the
text, admits waiting requests and builds the next batch: that gap is labkit's host time.
This script keeps every slot busy decoding (the same prompt per slot, a fixed answer length
with ignore_eos) and prints, per slot count, the median llama_decode time, the median host
time between steps, and the host share of a step. On a GPU a 135M model decodes a step in
well under a millisecond, so a host share that is invisible on a CPU can dominate there.

    python benchmarks/engine_overhead.py                       # 1, 2, 4 slots, embedded model
    python benchmarks/engine_overhead.py --slots 4 8 16 -ngl all --model synthetic:smollm2-135m
    python benchmarks/engine_overhead.py --slots 1 4 8 16 --model synthetic:gpu-speed-stand-in

The last is a GPU-speed stand-in on a CPU: a shape whose step takes about a millisecond here
(labkit/models/catalog.py, STAND_INS), so the host share is what a GPU would show.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from labkit.engine import Engine, EngineConfig, SamplingParams
from labkit.models.files import resolve_model
from labkit.settings import get as setting


def measure(model: str, slots: int, tokens: int, n_gpu_layers: int) -> dict:
    cfg = EngineConfig(str(resolve_model(model)), n_ctx=max(1024, slots * (tokens + 128)),
                       n_slots=slots, kv_unified=False, n_gpu_layers=n_gpu_layers)
    with Engine(cfg) as eng:
        prompt = eng.tokenize(eng.apply_template(
            [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]))
        params = SamplingParams(max_tokens=tokens, ignore_eos=True, temperature=0.0)
        handles = [eng.submit(prompt, params) for _ in range(slots)]
        for h in handles:
            h.result(600)
        steps = eng.trace_df()
    # Steady decoding only: every slot generating, no prompt in the batch.
    full = steps[(steps.n_prefill_tokens == 0) & (steps.n_decode == slots)].copy()
    gap = steps.t_start.shift(-1) - steps.t_end          # host time after each step
    full["host_s"] = gap.loc[full.index]
    full = full.dropna(subset=["host_s"])
    decode_ms = full.dur_s.median() * 1e3
    host_ms = full.host_s.median() * 1e3
    return {"slots": slots, "steps": len(full), "decode_ms": decode_ms, "host_ms": host_ms,
            "host_share": host_ms / (host_ms + decode_ms),
            "host_us_per_token": host_ms * 1e3 / slots,
            "agg_tok_s": slots / ((host_ms + decode_ms) / 1e3)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="GGUF path or synthetic:NAME (default: embedded)")
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--tokens", type=int, default=128, help="tokens each slot generates")
    ngl = setting("n_gpu_layers")
    p.add_argument(*ngl.flags, dest="n_gpu_layers", type=ngl.parse_cli, default=ngl.default)
    a = p.parse_args(argv)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} · {platform.node()} · {os.cpu_count()} CPUs · "
          f"load {os.getloadavg()[0]:.1f} · model {a.model or 'embedded'} · -ngl {a.n_gpu_layers}")
    print(f"{'slots':>5} {'steps':>6} {'decode ms':>10} {'host ms':>8} {'host share':>10} "
          f"{'host us/token':>13} {'tok/s':>7}")
    for n in a.slots:
        r = measure(a.model, n, a.tokens, a.n_gpu_layers)
        print(f"{r['slots']:>5} {r['steps']:>6} {r['decode_ms']:>10.2f} {r['host_ms']:>8.3f} "
              f"{r['host_share']:>10.1%} {r['host_us_per_token']:>13.0f} {r['agg_tok_s']:>7.1f}")
    print(f"# load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
