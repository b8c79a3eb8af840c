"""Benchmark: how much slower unified KV decodes than split KV while other sequences hold cells.

Notebook 04, section 7, measures this once, at a size a learner can wait for, and reports what
its run shows (``labkit.lessons.kv_attention.findings``). The effect is a fifth to a third of
the decode speed on a 2-core CPU, of the order of the noise on a busy machine, so the claim
"unified is slower" is measured here, in rounds on a quiet machine, and never asserted by a
test.

Each round runs both servers (labkit's, and llama.cpp's llama-server where one is installed),
split and unified, each on a fresh server with ``-np 4``, through the phases of
``kv_attention.PHASES``; the second round reverses the order of the servers and of split and
unified, so that a slow drift of the machine does not land on one side. It prints every
round's unified / split ratio per server and phase, then their median.

    python benchmarks/kv_attention.py                          # 2 rounds, 2,000-token prompts
    python benchmarks/kv_attention.py --rounds 4 --prompt-tokens 1000 --threads 1
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from labkit.bench.harness import QuietMachine, load1
from labkit.lessons import kv_attention as ka


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--prompt-tokens", type=int, default=2000)
    p.add_argument("--max-tokens", type=int, default=64, help="tokens each sequence generates")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--servers", nargs="+", default=["labkit", "xllamacpp"],
                   help="server kinds (xllamacpp: llama.cpp's llama-server, left out if absent)")
    p.add_argument("--out", default=None, help="folder for every request row (CSV)")
    QuietMachine.add_arguments(p)
    args = p.parse_args(argv)
    quiet = QuietMachine.from_args(args)
    setup = ka.Setup(args.prompt_tokens, args.max_tokens, args.threads)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"{setup.prompt_tokens}-token prompts, {setup.max_tokens} tokens each, -t "
          f"{setup.threads}, -c {setup.n_ctx} -np {ka.SLOTS}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    tables = []
    for r in range(args.rounds):
        flip = r % 2 == 1
        kinds = list(reversed(args.servers)) if flip else list(args.servers)
        order = (True, False) if flip else (False, True)
        la = quiet.wait()
        rows = ka.measure(kinds, setup, order=order)
        t = ka.summary(rows)
        t["round"] = r + 1
        tables.append(t)
        print(f"\nround {r + 1} (servers {', '.join(kinds)}; "
              f"{'unified first' if flip else 'split first'}; load {la:.2f} at the start, "
              f"{load1():.2f} at the end)")
        print(t[["server", "phase", "split tok/s total", "unified tok/s total",
                 "unified / split"]].to_string(index=False, float_format="%.2f"))
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            rows.to_csv(os.path.join(args.out, f"round{r + 1}.csv"), index=False)
    import pandas as pd
    every = pd.concat(tables)
    med = (every.groupby(["server", "phase"], sort=False)["unified / split"]
           .agg(["median", "min", "max", "count"]).reset_index())
    print("\nunified / split of the total decode tok/s, over the rounds "
          "(below 1: unified decoded slower)")
    print(med.to_string(index=False, float_format="%.2f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
