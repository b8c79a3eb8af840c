"""The command line in the notebook's language: `labkit --help`, `labkit doctor --help`,
`labkit bench --help` and `labkit sim`'s lines and table under LABKIT_LANG=zh-TW; flags,
file names and units as the program writes them. English unchanged."""

import re

import pytest

from labkit.lang import choice

CJK = re.compile(r"[\u4e00-\u9fff]")


def test_labkit_help_in_chinese(monkeypatch, capsys):
    from labkit.cli import main
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("用法：labkit COMMAND") and "doctor   這台機器準備好了嗎" in out
    assert main(["frobnicate"]) == 2
    assert "沒有 'frobnicate' 這個指令" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["doctor", "bench"])
def test_subcommand_help_in_chinese(monkeypatch, capsys, command):
    from labkit.cli import main
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    words = {"doctor": ("--no-generate", "檢查這台機器能不能執行這本工作簿", "以 JSON 印出報告",
                        "略過短短的生成"),
             "bench": ("--ttft-threshold", "每一輪都重新啟動伺服器", "你的首字等待（TTFT）門檻",
                       "不顯示進度列", "量測已在這些 URL 執行的伺服器")}[command]
    for w in words:                                  # the flag stays, its help is Chinese
        assert w in out, w


def test_sim_prints_in_chinese(monkeypatch, capsys):
    from labkit.sim.cli import main
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    assert main(["--requests", "12", "--compare", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("工作負載：12 個請求") and "步驟成本：" in out
    assert "首字等待 p50 (s)" in out and "有效吞吐（goodput）" in out


def test_sim_and_help_in_english(monkeypatch, capsys):
    from labkit.cli import main as labkit
    from labkit.sim.cli import main
    monkeypatch.delenv(choice.ENV_LANG, raising=False)
    assert main(["--requests", "12", "--compare", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("workload: 12 requests") and "TTFT p50" in out
    assert "goodput: requests/s with TTFT <= 2s and TPOT <= 0.2s" in out
    assert labkit(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: labkit COMMAND [options]\n\ncommands:")
