"""An environment setting labkit cannot read stops every command before it starts, with one
line naming the variable and the values it accepts: no traceback, no half-run command."""

import subprocess
import sys

import pytest

from labkit.cli import COMMANDS, main


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("variable,value,named", [
    ("LABKIT_LANG", "fr", "en or zh-TW"),
    ("LABKIT_QUICK", "maybe", "on is 1, true, yes, on"),
])
def test_an_unreadable_setting_is_one_line_for_every_command(monkeypatch, capsys, command,
                                                            variable, value, named):
    monkeypatch.setenv(variable, value)
    assert main([command]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and f"{variable}={value!r}" in lines[0] and named in lines[0], lines


def test_a_bad_quick_value_is_named_in_chinese(monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    monkeypatch.setenv("LABKIT_QUICK", "maybe")
    assert main(["bench"]) == 2
    err = capsys.readouterr().err
    assert "LABKIT_QUICK='maybe' 不是開關的值" in err and "is not" not in err


def test_good_settings_let_the_command_run(monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_LANG", "zh")
    monkeypatch.setenv("LABKIT_QUICK", "yes")
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("labkit ")


@pytest.mark.slow
def test_the_installed_command_exits_without_a_traceback():
    out = subprocess.run([sys.executable, "-m", "labkit", "doctor"], capture_output=True,
                         text=True, env={"LABKIT_LANG": "fr", "PATH": "/usr/bin:/bin"},
                         timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == ("labkit: LABKIT_LANG='fr' is not a language labkit speaks: use "
                                  "en or zh-TW (zh, zh_TW and zh-Hant mean zh-TW)")
