"""The `labkit` command: one entry point, a sub-command per job."""

from __future__ import annotations

import argparse
import sys


def _doctor(argv: list[str]) -> int:
    from . import doctor
    p = argparse.ArgumentParser(prog="labkit doctor",
                                description="Check that this machine can run the workbook.")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--model", "-m", help="a GGUF file, or synthetic:NAME[:QUANT] (a model "
                   "shape with random weights), to check instead of the embedded model")
    p.add_argument("--no-generate", action="store_true",
                   help="skip the short generation (faster, but proves less)")
    return doctor.main(p.parse_args(argv))


def _serve(argv: list[str]) -> int:
    from .server.__main__ import main as serve
    return serve(argv)


def _sim(argv: list[str]) -> int:
    from .sim.cli import main as sim
    return sim(argv)


def _bench(argv: list[str]) -> int:
    from .bench.cli import main as bench
    return bench(argv)


COMMANDS = {
    "doctor": (_doctor, "is my machine ready? versions, GPU, model, a short generation"),
    "serve": (_serve, "run the continuous-batching slot server (llama-server's flags)"),
    "bench": (_bench, "measure 1/2/4 slots x split/unified KV and print the worksheet"),
    "sim": (_sim, "compare batching and scheduling policies in the simulator"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: labkit COMMAND [options]\n\ncommands:")
        for name, (_, help_) in COMMANDS.items():
            print(f"  {name:<8} {help_}")
        print("\n`labkit COMMAND --help` says more.")
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from . import __version__
        print(f"labkit {__version__}")
        return 0
    cmd = COMMANDS.get(argv[0])
    if cmd is None:
        print(f"labkit: unknown command {argv[0]!r}; try one of: {', '.join(COMMANDS)}",
              file=sys.stderr)
        return 2
    return cmd[0](argv[1:])
