"""The `labkit` command: one entry point, a sub-command per job."""

from __future__ import annotations

import argparse
import sys


def _doctor(argv: list[str]) -> int:
    from .tools import doctor
    from .lang.i18n import pick, t
    p = argparse.ArgumentParser(prog="labkit doctor", add_help=False,
                                description=pick("Check that this machine can run the workbook.",
                                                 "檢查這台機器能不能執行這本工作簿。"))
    p.add_argument("-h", "--help", action="help", help=t("cli.help"))
    p.add_argument("--json", action="store_true",
                   help=pick("print the report as JSON", "以 JSON 印出報告"))
    p.add_argument("--model", "-m",
                   help=pick("a GGUF file, or synthetic:NAME[:QUANT] (a model shape with random "
                             "weights), to check instead of the embedded model",
                             "改檢查一個 GGUF 檔，或 synthetic:NAME[:QUANT]（隨機權重的模型形狀），"
                             "而不是內建的模型"))
    p.add_argument("--no-generate", action="store_true",
                   help=pick("skip the short generation (faster, but proves less)",
                             "略過短短的生成（比較快，但證明的事比較少）"))
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
# What each command does, in Chinese (LABKIT_LANG=zh-TW).
COMMANDS_ZH = {
    "doctor": "這台機器準備好了嗎？版本、GPU、模型、一段短短的生成",
    "serve": "執行連續批次的槽位伺服器（參數同 llama-server）",
    "bench": "量測 1/2/4 個槽位 × 分割／統一 KV，印出工作表",
    "sim": "在模擬器裡比較批次方式與排程策略",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from .machine.unreadable import unreadable_setting
    problem = unreadable_setting()   # read before any command starts: none fails on it halfway
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if not argv or argv[0] in ("-h", "--help"):
        from .lang.i18n import pick
        print(pick("usage: labkit COMMAND [options]\n\ncommands:",
                   "用法：labkit COMMAND [options]\n\n指令："))
        for name, (_, help_) in COMMANDS.items():
            print(f"  {name:<8} {pick(help_, COMMANDS_ZH.get(name, help_))}")
        print(pick("\n`labkit COMMAND --help` says more.", "\n`labkit COMMAND --help` 有更多說明。"))
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from . import __version__
        print(f"labkit {__version__}")
        return 0
    cmd = COMMANDS.get(argv[0])
    if cmd is None:
        from .lang.i18n import pick
        print(pick(f"labkit: unknown command {argv[0]!r}; try one of: {', '.join(COMMANDS)}",
                   f"labkit：沒有 {argv[0]!r} 這個指令；請用其中之一：{', '.join(COMMANDS)}"),
              file=sys.stderr)
        return 2
    return cmd[0](argv[1:])
