"""labkit's messages in English and Traditional Chinese: one setting, a complete catalogue,
and the two commands that print them (doctor, bench) in both languages."""

import re

import pytest

from labkit.lang import i18n
from labkit.lang import choice


def test_every_key_has_both_languages_with_the_same_placeholders():
    assert i18n.missing() == []
    for key, entry in i18n.CATALOGUE.items():
        assert set(entry) == set(choice.LANGUAGES), key


def test_a_key_without_its_translation_is_reported(monkeypatch):
    monkeypatch.setitem(i18n.CATALOGUE, "demo.half", {"en": "only {x}"})
    monkeypatch.setitem(i18n.CATALOGUE, "demo.drift", {"en": "{a} of {b}", "zh-TW": "{a}／{c}"})
    got = i18n.missing()
    assert "demo.half/zh-TW: missing" in got
    assert any(g.startswith("demo.drift/zh-TW: placeholders") for g in got)


@pytest.mark.parametrize("value,expected", [
    (None, "en"), ("", "en"), ("en", "en"), ("EN", "en"), ("en_US.UTF-8", "en"),
    ("zh-TW", "zh-TW"), ("zh_TW", "zh-TW"), ("zh_TW.UTF-8", "zh-TW"), ("zh", "zh-TW"),
    ("zh-Hant", "zh-TW"), ("tw", "zh-TW"), ("繁體中文", "zh-TW"),
])
def test_language_setting(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(choice.ENV_LANG, raising=False)
    else:
        monkeypatch.setenv(choice.ENV_LANG, value)
    assert choice.lang() == expected == i18n.language()


def test_an_unknown_language_names_the_accepted_ones(monkeypatch):
    monkeypatch.setenv(choice.ENV_LANG, "klingon")
    with pytest.raises(ValueError, match="zh-TW"):
        choice.lang()


def test_t_formats_in_the_chosen_language(monkeypatch):
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    assert i18n.t("bench.wrote", out="r/x", seconds=3).startswith("已寫入 r/x/")
    assert i18n.t("bench.wrote", lang="en", out="r/x", seconds=3).startswith("wrote r/x/")
    assert i18n.t("check.correct") == "✔ 正確"
    assert i18n.pick("Throughput", "吞吐") == "吞吐"
    monkeypatch.delenv(choice.ENV_LANG)
    assert i18n.t("check.correct") == "✔ correct" and i18n.pick("Throughput", "吞吐") == "Throughput"
    with pytest.raises(KeyError):
        i18n.t("no.such.key")


def _report():
    return {"labkit": "0.1", "python": "3.11", "platform": "Linux", "cpu_count": 2,
            "packages": {"numpy": "2.0", "absent": None},
            "llama_cpp": {"ok": True, "version": "0.3", "gpu_offload": False, "devices": [],
                          "llama_cpp_source": None, "system_info": "AVX2"},
            "gpus": [], "gpu_note": "no NVIDIA GPU found", "cjk_font": None,
            "model": {"error": "no model"}, "generation": {"ok": None, "skipped": "--no-generate"},
            "problems": ["model: no model"], "ok": False}


def test_doctor_text_in_both_languages(monkeypatch):
    from labkit.tools import doctor
    monkeypatch.delenv(choice.ENV_LANG, raising=False)
    en = doctor.render(_report())
    assert "NOT INSTALLED" in en and "NOT READY" in en and "labkit will run on the CPU" in en
    assert "fonts-noto-cjk" in en
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    zh = doctor.render(_report())
    assert "未安裝" in zh and "NOT READY 尚未就緒" in zh and "改用 CPU" in zh and "已略過" in zh
    assert "NOT INSTALLED" not in zh


def test_bench_summary_in_chinese(monkeypatch, tmp_path, capsys):
    """`labkit bench` prints its summary through the catalogue (a fake run, no server)."""
    import pandas as pd

    from labkit.bench import cli, runner

    class Result:
        runs = [1]
        rows: list = []
        env: dict = {}

        def save(self, out):
            pass

        def worksheet(self):
            return pd.DataFrame({"server": ["labkit"], "errors": [0], "memory": ["RSS"],
                                 "model_sha256": ["abc"]})

    monkeypatch.setattr(runner, "measure", lambda *a, **k: Result())
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    assert cli.main(["--workload", "short-zh", "--slots", "1", "--kv", "split", "--rounds", "1",
                     "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr()
    assert "模型 sha256 abc" in out.out and "已寫入" in out.out
    assert "1 組配置 × 1 輪 × short-zh" in out.err and "只用來量時間" in out.err


def test_doctor_rows_in_chinese_and_aligned(monkeypatch):
    from labkit.tools import doctor
    r = _report()
    r["model"] = {"name": "M", "architecture": "llama", "file_type": "Q4_1", "n_params": 135e6,
                  "size_bytes": 2**20, "path": "/m.gguf", "sha256": "ab", "n_layer": 1,
                  "n_head": 1, "n_head_kv": 1, "head_dim": 64, "n_embd": 64, "n_ctx_train": 8}
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    lines = doctor.render(r).splitlines()
    rows = {ln.split()[0]: ln for ln in lines if ln.strip()}
    for label in ("模型", "路徑", "形狀", "生成測試", "字型"):
        assert label in rows, label
    # the value column starts at the 19th terminal column whatever the label's script
    assert rows["模型"].index("M") + len("模型") == rows["python"].index("3.11") == 18
    assert "（2 個 CPU）" in rows["python"]
    monkeypatch.delenv(choice.ENV_LANG)
    en = doctor.render(r)
    assert "\nmodel             M (llama" in en and "\npath              /m.gguf" in en
    assert "3.11 on Linux (2 CPUs)" in en


def test_gpu_note_in_the_language_in_use(monkeypatch):
    from labkit.machine import gpu
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    gpus, why = gpu.list_gpus()
    if gpus:
        pytest.skip("this machine has an NVIDIA GPU")
    assert re.search(r"[\u4e00-\u9fff]", why) and "no NVIDIA GPU" not in why
    monkeypatch.delenv(choice.ENV_LANG)
    assert not re.search(r"[\u4e00-\u9fff]", gpu.list_gpus()[1])


def test_headings_and_catalogue_use_the_glossarys_words():
    from labkit.lang import glossary
    texts = {f"HEADINGS[{k}]": v for k, v in i18n.HEADINGS.items()}
    texts.update({f"CATALOGUE[{k}]": e["zh-TW"] for k, e in i18n.CATALOGUE.items()})
    bad = {where: glossary.avoided(text) for where, text in texts.items() if glossary.avoided(text)}
    assert bad == {}


def test_the_chinese_written_in_labkits_display_modules_uses_the_glossarys_words():
    """Every Chinese text written in place (pick, fonts.label) in the modules that draw, print
    or build tables for people avoids the words the glossary replaces."""
    import ast
    from pathlib import Path

    import labkit
    from labkit.lang import glossary
    root = Path(labkit.__file__).parent
    modules = ["lessons/plots.py", "lessons/widgets.py", "sim/plots.py", "bench/plots.py",
               "sim/policy_plots.py", "sim/waste.py", "costs/roofline.py", "costs/planning.py",
               "lessons/live.py", "lessons/llama_server.py", "lessons/handbuilt.py",
               "costs/capacity.py", "lessons/classroom.py", "machine/gpu.py", "tools/doctor.py",
               "server/launch.py", "bench/cli.py", "sim/cli.py", "cli.py", "bench/calibration.py"]
    bad = {}
    for name in modules:
        tree = ast.parse((root / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.search(r"[\u4e00-\u9fff]", node.value):
                found = glossary.avoided(node.value)
                if found:
                    bad[f"{name}:{node.lineno}"] = found
    assert bad == {}


def test_a_worksheet_verdict_reads_in_chinese_and_stays_english_in_the_data():
    from labkit.lang.i18n import verdict_text
    ungraded = "fail: TTFT ok (fits context and TTFT only: answers not graded)"
    assert verdict_text(ungraded, "zh-TW") == "未通過：首字等待達標（只看上下文與首字等待：答案未評分）"
    assert verdict_text("pass", "zh-TW") == "通過"
    assert verdict_text("fail: fits context, all correct", "zh-TW") == "未通過：放得進上下文、全部答對"
    assert verdict_text(ungraded, "en") == ungraded


def test_show_reads_the_worksheets_values_in_chinese():
    import pandas as pd

    from labkit.bench import memory
    from labkit.lang.i18n import worksheet_value
    from labkit.lang.i18n import show
    ws = pd.DataFrame({"verdict": ["pass", "fail: TTFT ok"], "correct": ["not graded (timing only)", 12],
                       "memory": [memory.LABELS["rss"], "not measured"]})
    zh = show(ws, lang="zh-TW")
    assert list(zh["判定"]) == ["通過", "未通過：首字等待達標"]
    assert list(zh["正確"]) == ["不評分（只量時間）", 12]
    assert zh["記憶體"].str.contains("[\u4e00-\u9fff]").all()
    assert list(ws["verdict"]) == ["pass", "fail: TTFT ok"]          # the data is untouched
    assert show(ws, lang="en") is ws
    for label in memory.LABELS.values():
        assert worksheet_value(label, "zh-TW") != label


def _lang_tables_changed_by(code: str) -> list[str]:
    """The tables of labkit.lang.i18n that ``code``, run in a fresh interpreter after importing
    labkit.lang.i18n alone, changes."""
    import json
    import subprocess
    import sys
    probe = (
        "import json, labkit.lang.i18n as i18n\n"
        "NAMES = ('CATALOGUE', 'HEADINGS', 'HEADING_PATTERNS', 'CELL_WORDS', 'CELL_PATTERNS', 'WORKSHEET_WORDS', 'TITLES')\n"
        "snap = lambda: {n: repr(getattr(i18n, n)) for n in NAMES}\n"
        "before = snap()\n" + code + "\n"
        "print(json.dumps(sorted(n for n, v in snap().items() if before[n] != v)))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_importing_labkit_registers_no_words():
    """Words are chosen where they are shown: importing every module of labkit adds nothing to
    the language tables (a module that registered its words at import would)."""
    code = ("import importlib, pkgutil, labkit\n"
            "for m in pkgutil.walk_packages(labkit.__path__, 'labkit.'):\n"
            "    if not m.name.endswith('__main__'):\n"
            "        importlib.import_module(m.name)\n")
    assert _lang_tables_changed_by(code) == []
    assert _lang_tables_changed_by("i18n.CELL_WORDS.setdefault('decode_bound2', {})") == ["CELL_WORDS"]
