"""labkit's messages in English and Traditional Chinese: one setting, a complete catalogue,
and the two commands that print them (doctor, bench) in both languages."""

import pytest

from labkit import i18n, runenv


def test_every_key_has_both_languages_with_the_same_placeholders():
    assert i18n.missing() == []
    for key, entry in i18n.CATALOGUE.items():
        assert set(entry) == set(runenv.LANGUAGES), key


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
        monkeypatch.delenv(runenv.ENV_LANG, raising=False)
    else:
        monkeypatch.setenv(runenv.ENV_LANG, value)
    assert runenv.lang() == expected == i18n.language()


def test_an_unknown_language_names_the_accepted_ones(monkeypatch):
    monkeypatch.setenv(runenv.ENV_LANG, "klingon")
    with pytest.raises(ValueError, match="zh-TW"):
        runenv.lang()


def test_t_formats_in_the_chosen_language(monkeypatch):
    monkeypatch.setenv(runenv.ENV_LANG, "zh-TW")
    assert i18n.t("bench.wrote", out="r/x", seconds=3).startswith("已寫入 r/x/")
    assert i18n.t("bench.wrote", lang="en", out="r/x", seconds=3).startswith("wrote r/x/")
    assert i18n.t("check.correct") == "✔ 正確"
    assert i18n.pick("Throughput", "吞吐") == "吞吐"
    monkeypatch.delenv(runenv.ENV_LANG)
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
    from labkit import doctor
    monkeypatch.delenv(runenv.ENV_LANG, raising=False)
    en = doctor.render(_report())
    assert "NOT INSTALLED" in en and "NOT READY" in en and "labkit will run on the CPU" in en
    assert "fonts-noto-cjk" in en
    monkeypatch.setenv(runenv.ENV_LANG, "zh-TW")
    zh = doctor.render(_report())
    assert "未安裝" in zh and "NOT READY 尚未就緒" in zh and "改用 CPU" in zh and "已略過" in zh
    assert "NOT INSTALLED" not in zh


def test_bench_summary_in_chinese(monkeypatch, tmp_path, capsys):
    """`labkit bench` prints its summary through the catalogue (a fake run, no server)."""
    import pandas as pd

    from labkit.bench import cli, runner

    class Result:
        runs = [1]
        env: dict = {}

        def save(self, out):
            pass

        def worksheet(self):
            return pd.DataFrame({"server": ["labkit"], "errors": [0], "memory": ["RSS"],
                                 "model_sha256": ["abc"]})

    monkeypatch.setattr(runner, "measure", lambda *a, **k: Result())
    monkeypatch.setenv(runenv.ENV_LANG, "zh-TW")
    assert cli.main(["--workload", "short-zh", "--slots", "1", "--kv", "split", "--rounds", "1",
                     "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr()
    assert "模型 sha256 abc" in out.out and "已寫入" in out.out
    assert "1 組配置 × 1 輪 × short-zh" in out.err and "只用來量時間" in out.err
