import re
from pathlib import Path

import pytest

from labkit.lang import glossary
from labkit.exercises import choice


def test_docs_glossary_is_generated_from_the_package():
    doc = Path(__file__).resolve().parents[1] / "docs" / "GLOSSARY.md"
    assert doc.read_text(encoding="utf-8") == glossary.markdown(), \
        "regenerate: python -c \"from labkit.lang import glossary; " \
        "open('docs/GLOSSARY.md','w',encoding='utf-8').write(glossary.markdown())\""


def test_seed_metaphors_and_standard_terms():
    # (english, the term engineers write, the seed's metaphor)
    for english, chinese, metaphor in [
            ("request", "請求", "正在辦的單"), ("slot", "槽位", "窗口"),
            ("context", "上下文", "桌面"), ("KV cache", "KV 快取", "已讀筆記"),
            ("continuous batching", "連續批次", "每輪換桌名單"),
            ("TTFT", "首個 token 延遲", "首字等待"), ("prefix cache", "前綴快取", "前綴重用")]:
        t = glossary.lookup(english)
        assert (t.chinese, t.metaphor) == (chinese, metaphor)
        assert glossary.lookup(chinese) is t and glossary.lookup(metaphor) is t
    with pytest.raises(KeyError):
        glossary.lookup("flux capacitor")


@pytest.mark.parametrize("word,english", [
    ("連續批次", "continuous batching"), ("窗口", "slot"), ("槽位", "slot"), ("kv 快取", "KV cache"),
    ("KV快取", "KV cache"), ("先來先服務", "FIFO"), ("fcfs", "FIFO"), ("最短作業優先", "SJF"),
    ("優先級", "priority"), ("公平分享", "fair share"), ("Fair-Share", "fair share"),
    ("混合", "hybrid"), ("預填", "prefill"), ("解碼", "decode"), ("吞吐", "throughput"),
    ("分割 KV", "split KV"), ("unified", "unified KV"), ("分頁注意力", "PagedAttention"),
    ("批次大小", "batch size"), ("ubatch", "microbatch"), ("飽和", "saturation"),
    ("佇列深度", "queue depth"), ("搶占", "preemption"), ("搶佔", "preemption"),
    ("餓死", "starvation"), ("首字等待", "TTFT"), ("time_to_first_token", "TTFT"),
])
def test_lookup_in_both_languages(word, english):
    assert glossary.lookup(word).english == english


def test_every_name_points_to_one_term():
    owner: dict[str, str] = {}
    for t in glossary.TERMS:
        assert t.english and t.chinese and t.restaurant and t.engineer
        for w in t.names():
            k = glossary._key(w)
            assert owner.setdefault(k, t.english) == t.english, \
                f"{w!r} names both {owner[k]!r} and {t.english!r}"


def test_words_feed_the_exercise_choice():
    assert glossary.words("slot")[:3] == ("slot", "槽位", "窗口")
    opts = glossary.options("fifo", "sjf", "priority", "fair share", "hybrid")
    assert list(opts) == ["FIFO", "SJF", "priority", "fair share", "hybrid"]
    assert choice("先來先服務", opts) == "FIFO"
    assert choice("「最短作業優先」。", opts) == "SJF"
    assert choice("fair sharing", opts) == "fair share"
    assert choice("混合策略", opts) == "hybrid"
    with pytest.raises(ValueError):
        choice("隨機", opts)


def test_table_has_one_row_per_term():
    t = glossary.table()
    assert len(t) == len(glossary.TERMS) and {"english", "中文", "比喻"} <= set(t.columns)


def test_every_term_has_its_picture_and_meaning_in_chinese():
    assert set(glossary.IN_CHINESE) == {t.english for t in glossary.TERMS}
    for t in glossary.TERMS:
        for text in (t.restaurant_in("zh-TW"), t.engineer_in("zh-TW")):
            assert re.search(r"[\u4e00-\u9fff]", text), (t.english, text)
            assert not glossary.avoided(text), (t.english, glossary.avoided(text))


def test_the_table_speaks_the_notebooks_language(monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    zh = glossary.table()
    assert list(zh.columns) == ["english", "中文", "比喻", "餐廳裡", "工程師的意思"]
    assert zh.set_index("english").loc["slot", "餐廳裡"] == "一張桌子"
    monkeypatch.setenv("LABKIT_LANG", "en")
    assert glossary.table().set_index("english").loc["slot", "restaurant"] == "a table"


def test_avoided_words_are_found_but_not_inside_the_right_word():
    assert glossary.avoided("先到先服務和短作業優先") == {"先到先服務": "先來先服務",
                                                     "短作業優先": "最短作業優先"}
    assert glossary.avoided("最短作業優先、先來先服務、公平分享") == {}
