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
            ("TTFT", "首字等待", "首字等待"), ("prefix cache", "前綴快取", "前綴重用")]:
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


def test_a_rendering_the_glossary_avoids_points_to_its_terms_word():
    """One word per term: where a term's other name is a word of AVOID, AVOID gives that term's
    own word (its Chinese, or one of its names), and no term's Chinese is itself avoided."""
    wrong = []
    for t in glossary.TERMS:
        if glossary.avoided(t.chinese):
            wrong.append(f"{t.english}: its Chinese {t.chinese} is avoided")
        for w in t.names():
            right = glossary.AVOID.get(w)
            if right is not None and right != t.chinese and right not in t.names():
                wrong.append(f"{t.english}: AVOID turns {w} into {right}, the term says "
                             f"{t.chinese}")
    assert not wrong, "\n".join(wrong)


def _text(path):
    import nbformat
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)


def test_the_notebooks_say_each_term_as_the_glossary_does():
    """Term by term: a term whose other renderings the glossary avoids, named in an English
    notebook, is named in its Chinese twin with the glossary's Chinese (prose or what its code
    shows), and the twin's prose has none of the avoided renderings (the editions check)."""
    from authoring import editions
    missing = []
    for path in editions.english_notebooks():
        english = "\n".join(editions.prose_for_words(c.source) for c in editions.read(path).cells
                            if c.cell_type == "markdown").lower()
        english = " ".join(english.split())     # a term broken over two lines is one term
        chinese = _text(editions.twin(path))
        for t in glossary.TERMS:
            english_names = [n.lower() for n in t.names() if n.isascii() and len(n) > 3]
            text = english                       # "time to first token" names TTFT, not token
            for u in glossary.TERMS:
                for longer in (n.lower() for n in u.names() if u is not t and n.isascii()):
                    if any(n in longer for n in english_names):
                        text = text.replace(longer, " ")
            if not any(w in glossary.AVOID for w in t.names()) or not any(
                    re.search(rf"\b{re.escape(n)}\b", text) for n in english_names):
                continue
            right = {t.chinese} | {glossary.AVOID[w] for w in t.names() if w in glossary.AVOID}
            if not any(w in chinese for w in right):
                missing.append(f"{path.name}: {t.english} is not written {t.chinese}")
        missing += [f"{path.name}: {line}" for line in
                    editions.words_to_fix(editions.read(editions.twin(path)))]
    assert not missing, "\n".join(missing)


def test_the_chosen_words():
    """What the glossary decided for the terms written more than one way (and a test that the
    decision is not undone by accident)."""
    for english, chinese in [("TTFT", "首字等待"), ("token", "token"), ("microbatch", "實體批次"),
                             ("scheduling policy", "排程策略"), ("tokenizer", "斷詞器"),
                             ("workbook", "工作簿"), ("host", "帶位員"), ("agent", "Agent"),
                             ("harness", "Harness"), ("stopwatch", "碼錶"),
                             ("closed loop", "封閉迴路")]:
        assert glossary.lookup(english).chinese == chinese
    for wrong, right in [("調度", "排程"), ("詞元", "token"), ("首個 token 延遲", "首字等待"),
                         ("微批", "實體批次"), ("分詞器", "斷詞器"), ("教材", "工作簿"),
                         ("領檯", "帶位員"), ("智慧代理", "Agent"), ("碼表", "碼錶"),
                         ("程式助手", "程式助理"), ("FAQ", "常見問題"), ("總結", "重點整理"),
                         ("佔", "占"), ("實例", "執行個體"), ("注意到的格數", "注意力讀取格數")]:
        assert glossary.avoided(f"前{wrong}後")[wrong] == right, wrong


def test_a_word_inside_a_fine_one_is_not_avoided():
    assert glossary.avoided("反向代理、程式碼表示、chunked prefill、片段（chunk）") == {}
    assert glossary.avoided("代理、碼表、chunk") == {"代理": "Agent", "碼表": "碼錶", "chunk": "片段"}


def _chinese_strings(path):
    """The Chinese texts written in a module, less the answers an exercise accepts (a tuple, list
    or set of words, which may hold the avoided ones on purpose: a learner may write them)."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and re.search(r"[\u4e00-\u9fff]", node.value) \
                and not isinstance(parents.get(node), (ast.Tuple, ast.List, ast.Set)):
            yield node.lineno, node.value


def test_the_exercises_and_the_chinese_readme_use_the_glossarys_words():
    """The exercises' Chinese questions and feedback (labkit/exercises) and README.zh-TW.md say
    each term as the glossary does; program names (chunked_batcher, text_chunks) and code are
    not read."""
    import labkit
    from authoring import editions
    root = Path(labkit.__file__).parent
    bad = {}
    for path in sorted((root / "exercises").glob("*.py")):
        for line, text in _chinese_strings(path):
            found = glossary.avoided(re.sub(r"\w+_\w+", " ", text))
            if found:
                bad[f"{path.name}:{line}"] = found
    readme = root.parent / "README.zh-TW.md"
    found = glossary.avoided(editions.prose_for_words(readme.read_text(encoding="utf-8")))
    if found:
        bad[readme.name] = found
    assert bad == {}
    assert glossary.avoided(re.sub(r"\w+_\w+", " ", "最後一個 chunk，text_chunks")) == {
        "chunk": "片段"}
