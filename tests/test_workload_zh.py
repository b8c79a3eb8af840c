"""The Traditional Chinese workloads: the English set's counterpart, committed and sized with
the model's own tokenizer, with their own Chinese prompt."""

import json
import random

import pytest

from labkit.bench import workload as W
from labkit.bench.workload import load_workload


def test_committed_chinese_sets_match_their_answer_key():
    key = W.zh_answer_key()
    assert len({a["id"] for a in key}) == len({a["owner"] for a in key}) == \
        len({a["deadline"] for a in key}) == 12
    # the same deadlines as the English set, written as a Taiwanese memo writes them
    assert [a["deadline"] for a in key] == [W.zh_date(a["deadline"]) for a in W.answer_key()]
    short, long_ = load_workload("short-zh"), load_workload("long-zh")
    assert [d.answer for d in short.documents] == key == [d.answer for d in long_.documents]
    for d in short.documents + long_.documents:
        assert set(d.answer) == {"id", "owner", "deadline"}
        for k, v in d.answer.items():
            assert f"{W.ZH_LABELS[k]}：{v}\n" in d.text      # findable, verbatim
    target = long_.meta["target_prompt_tokens"]
    assert all(target - 8 <= d.prompt_tokens <= target for d in long_.documents)
    assert all(d.prompt_tokens < 500 for d in short.documents)
    assert short.meta["language"] == "zh-TW" and "timing_only" in short.meta


def test_chinese_documents_record_characters_and_tokens():
    raw = json.loads((W.data_dir() / "workloads" / "short-zh.json").read_text(encoding="utf-8"))
    for d in raw["documents"]:
        assert d["chars"] == len(d["text"]) and d["text_tokens"] > d["chars"] / 2


def test_the_chinese_prompt_is_sent_in_chinese():
    wl = load_workload("short-zh")
    m = wl.messages(wl.documents[0])
    assert [x["role"] for x in m] == ["system", "user", "assistant", "user"]
    assert "負責人" in m[0]["content"] and "截止日期" in m[1]["content"]
    assert "高美玲" in m[2]["content"] and json.loads(m[2]["content"]) == W.ZH_EXAMPLE_ANSWER
    assert wl.prompt.example_answer not in [d.answer for d in wl.documents]
    # the English set's worked answer is unchanged (ASCII either way)
    en = load_workload("short")
    assert json.loads(en.messages(en.documents[0])[2]["content"]) == en.prompt.example_answer


def test_chinese_filler_is_trimmed_character_by_character():
    count = len   # a stand-in tokenizer: one token per character
    a = W.long_text("案號：X-1", random.Random(5), count, 300, W.zh_filler_paragraph)
    b = W.long_text("案號：X-1", random.Random(5), count, 300, W.zh_filler_paragraph)
    assert a == b and 298 <= count(a) <= 300 and "案號：X-1" in a and " " not in a


def test_dates():
    assert W.zh_date("2026-12-05") == "2026年12月5日"
    assert W.minguo_date("2026-12-05") == "民國115年12月5日"


@pytest.mark.slow
def test_recorded_token_counts_are_the_model_s_own():
    """`text_tokens` in short-zh.json are the embedded model's counts (loads its vocabulary)."""
    from labkit.bench.workload import token_stats
    from labkit.engine.vocabulary import tokenize
    raw = json.loads((W.data_dir() / "workloads" / "short-zh.json").read_text(encoding="utf-8"))
    assert [len(t) for t in tokenize([d["text"] for d in raw["documents"]])] == \
        [d["text_tokens"] for d in raw["documents"]]
    stats = token_stats(("short", "short-zh"))
    assert stats.loc["short-zh", "chars_per_token"] < 1 < stats.loc["short", "chars_per_token"]


@pytest.mark.slow
def test_labkit_bench_runs_the_chinese_set_and_prints_in_chinese(tmp_path, monkeypatch, capsys):
    """`labkit bench --workload short-zh` on the embedded model: one document, one slot, the
    summary in Chinese (LABKIT_LANG=zh-TW). The answer is graded but not asserted: timing only."""
    import pandas as pd

    from labkit.bench.cli import main
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    rc = main(["--workload", "short-zh", "--slots", "1", "--kv", "split", "--rounds", "1",
               "--max-docs", "1", "--out", str(tmp_path), "--no-progress"])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    assert "short-zh" in out.out and "已寫入" in out.out and "只用來量時間" in out.err
    (folder,) = tmp_path.iterdir()
    rows = pd.read_csv(folder / "requests.csv")
    assert len(rows) == 1 and rows["error"].isna().all() and rows["prompt_tokens"].iloc[0] > 300
