"""The two editions of the workbook stay in step: every notebook has a Traditional Chinese
twin whose code cells equal the English ones except the language line, whose prose is
Chinese, and whose words for the workbook's terms are the glossary's (authoring.editions)."""

import re
from pathlib import Path

import nbformat
import pytest

from authoring import editions
from labkit.lang import glossary

NOTEBOOKS = editions.english_notebooks()
IDS = [p.stem for p in NOTEBOOKS]


def test_every_notebook_has_a_twin():
    missing = [p.name for p in NOTEBOOKS if not editions.twin(p).exists()]
    assert not missing, f"no zh-TW edition of {missing}: python -m authoring.editions sync"
    extra = sorted({p.name for p in (editions.ROOT / editions.TWIN_DIR).glob("*.ipynb")}
                   - {p.name for p in NOTEBOOKS})
    assert not extra, f"zh-TW notebooks without an English one: {extra}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_code_cells_are_the_same_but_the_language_line(path):
    problems = editions.differences(editions.read(path), editions.read(editions.twin(path)))
    assert not problems, "\n".join(problems) + "\n(python -m authoring.editions sync)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_prose_is_translated(path):
    problems = editions.untranslated(editions.read(editions.twin(path)))
    assert not problems, "\n".join(problems)


def _prose(path):
    return "\n".join(c.source for c in editions.read(path).cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chinese_prose_uses_the_glossary_words(path):
    problems = editions.words_to_fix(editions.read(editions.twin(path)))
    assert not problems, "\n".join(problems)


def _zh(*prose):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('nb.use_language("zh-TW")'),
                                           *map(nbformat.v4.new_markdown_cell, prose)])


def test_a_term_written_another_way_is_named_with_the_word_to_write():
    zh = _zh("連續批次是調度；一個 token（詞元）一口。", "碼表在用戶端。")
    assert editions.words_to_fix(zh) == [
        f"cell 1: 調度 should read 排程 ({editions.WORDS_HOWTO})",
        f"cell 1: 詞元 should read token ({editions.WORDS_HOWTO})",
        f"cell 2: 碼表 should read 碼錶 ({editions.WORDS_HOWTO})"]
    # a quote that is not one of the seeds' passages, and a word outside a FINE one, still count
    assert editions.words_to_fix(_zh("種子文章說「放上碼表吧」。")) == [
        f"cell 1: 碼表 should read 碼錶 ({editions.WORDS_HOWTO})"]
    assert editions.words_to_fix(_zh("反向代理擋在前面，代理再多也沒用。")) == [
        f"cell 1: 代理 should read Agent ({editions.WORDS_HOWTO})"]


def test_code_program_names_seed_quotes_and_right_words_are_not_flagged():
    assert editions.words_to_fix(_zh(
        "用 `text_chunks` 和 `調度` 數；```\nscheduler = 調度\n```",
        "種子文章第 ④ 步「放上碼表」，我們用碼錶。",
        "分塊預填（chunked prefill），每個 token 一個片段（chunk）。",
        "在伺服器前面擺一個反向代理；程式碼表示如下；排程策略。",
        "- Kwon 等：*Chunked Scheduling for FAQ Serving*，SOSP",
        "[文件](docs/調度.md)")) == []


def test_every_seed_quote_is_quoted_and_needs_its_exemption():
    """A passage listed in SEED_QUOTES is quoted in 「」 somewhere in the Chinese edition and
    holds a word the glossary avoids (else it needs no exemption); and where the seeds are at
    hand (LABKIT_SEEDS, or shared/seeds beside the repository) it is in the seed it names."""
    import os
    from pathlib import Path
    prose = "\n".join(_prose(editions.twin(p)) for p in NOTEBOOKS)
    seeds = Path(os.environ.get("LABKIT_SEEDS")
                 or editions.ROOT.parents[1] / "shared" / "seeds")
    for passage, seed in glossary.SEED_QUOTES.items():
        assert f"「{passage}」" in prose, passage
        assert glossary.avoided(passage), passage
        if (seeds / seed).exists():
            assert passage in (seeds / seed).read_text(encoding="utf-8"), (passage, seed)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_term_given_with_its_english_is_the_glossarys(path):
    """Where the Chinese prose gives a glossary term's English in parentheses (its first
    use), the Chinese just before it is one of the term's names in the glossary."""
    text = _prose(editions.twin(path))
    wrong = []
    for term in glossary.TERMS:
        chinese = [n for n in term.names() if editions.CJK.search(n)]
        for m in re.finditer(r"（" + re.escape(term.english) + r"[，,）]", text):
            before = text[max(0, m.start() - 14):m.start()]
            if not any(name in before for name in chinese):
                wrong.append(f"{before}{m.group(0)}: the glossary says {term.chinese}")
    assert not wrong, "\n".join(wrong)


def test_the_scheduling_notebook_names_the_policies_as_the_glossary_does():
    text = _prose(editions.twin(editions.ROOT / "07_policies.ipynb"))      # where the policies are taught
    for term in ("FIFO", "SJF", "priority", "fair share", "hybrid", "starvation"):
        assert glossary.lookup(term).chinese in text, term


def test_sync_changes_nothing_when_in_step():
    for path in NOTEBOOKS:
        chinese = editions.read(editions.twin(path))
        again = editions.synced(editions.read(path), chinese)
        assert [c.source for c in again.cells] == [c.source for c in chinese.cells], path.name


def test_sync_carries_a_code_change_and_keeps_the_prose():
    en = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('from labkit import notebook as nb\nnb.use_language("en")'),
        nbformat.v4.new_markdown_cell("Two slots share the cache."),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("The end."),
    ])
    zh = editions.synced(en)
    assert zh.cells[0].source.endswith('nb.use_language("zh-TW")')
    assert zh.cells[1].source.startswith(editions.TRANSLATE_MARK)
    zh.cells[1].source, zh.cells[3].source = "兩個槽位共用快取。", "結束。"
    assert editions.differences(en, zh) == [] and editions.untranslated(zh) == []
    en.cells[2].source = "x = 2"                                     # a code change
    en.cells.insert(3, nbformat.v4.new_markdown_cell("A new paragraph."))
    en.cells[3]["id"] = "new"
    zh2 = editions.synced(en, zh)
    assert [c.source for c in zh2.cells][1:3] == ["兩個槽位共用快取。", "x = 2"]
    assert zh2.cells[-1].source == "結束。"
    assert editions.untranslated(zh2) == [f"cell 3: marked {editions.TRANSLATE_MARK}: "
                                          "A new paragraph."]
    zh2.cells[2].source = "x = 3"                                    # drift is caught
    assert any("code differs" in p for p in editions.differences(en, zh2))


def test_english_left_in_chinese_prose_is_found():
    assert editions.english_runs("每個槽位 this sentence was never translated 對吧") \
        == ["this sentence was never translated"]
    assert editions.english_runs("用 `llama-server --parallel 4 --ctx-size 8192` 啟動") == []
    assert editions.english_runs("- Yu et al., Orca (OSDI 2022), https://www.usenix.org/x") == []
    assert editions.english_runs("- Kwon 等：*Efficient Memory Management for LLM Serving*，SOSP") == []
    assert editions.english_runs("**這樣讀** and this is not a title at all") \
        == ["and this is not a title at all"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chinese_labels_keep_their_punctuation_outside_the_markers(path):
    problems = editions.emphasis_to_fix(editions.read(editions.twin(path)))
    assert not problems, "\n".join(problems)


def test_a_label_with_its_punctuation_inside_is_told_how_to_write_it():
    zh = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('nb.use_language("zh-TW")'),
        nbformat.v4.new_markdown_cell("**在餐廳裡：**第一位客人進門。\n\n**5.6** *開放題。*你的數字"),
    ])
    assert editions.emphasis_to_fix(zh) == [
        f"cell 1: **在餐廳裡：** should read **在餐廳裡**： ({editions.EMPHASIS_HOWTO})",
        f"cell 1: *開放題。* should read *開放題*。 ({editions.EMPHASIS_HOWTO})",
    ]
    assert "**標籤**：" in editions.EMPHASIS_HOWTO
    zh.cells[1].source = "**在餐廳裡**：第一位客人進門。\n\n**5.6** *開放題*。你的數字"
    assert editions.emphasis_to_fix(zh) == []


def test_only_a_label_with_its_punctuation_inside_is_one_to_fix():
    found = editions.punctuation_inside_emphasis
    assert found("- **時間：**約 5 秒\n- **記憶體。**`-c` 格") == [
        ("**時間：**", "**時間**："), ("**記憶體。**", "**記憶體**。")]
    assert found("**Time:** about 5 s, **In the restaurant:** a table") == []
    assert found("**A**的說法：**B**，以及 *強調*。") == []            # pairs in order
    assert found("用 `**x：**y` 和 2 * 3，沒有標籤") == []              # code, a lone *
    assert found("* 第一項：**B\n\n第二段：**") == []                 # a bullet; two paragraphs
    assert found("Kwon 等：*Efficient Memory Management for LLM Serving*，SOSP") == []


def test_the_check_reports_the_labels_to_fix(tmp_path):
    english = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('from labkit import notebook as nb\nnb.use_language("en")'),
        nbformat.v4.new_markdown_cell("**In the restaurant:** the first guest comes in."),
    ])
    editions.write(english, tmp_path / "00_x.ipynb")
    chinese = editions.synced(english)
    chinese.cells[1].source = "**在餐廳裡：**第一位客人進門。"
    editions.write(chinese, editions.twin(tmp_path / "00_x.ipynb"))
    assert editions.report(tmp_path) == {"00_x.ipynb": [
        f"cell 1: **在餐廳裡：** should read **在餐廳裡**： ({editions.EMPHASIS_HOWTO})"]}
    chinese.cells[1].source = "**在餐廳裡**：帶位的人領第一位客人入座。"
    editions.write(chinese, editions.twin(tmp_path / "00_x.ipynb"))
    assert editions.report(tmp_path) == {"00_x.ipynb": [
        f"cell 1: 帶位的人 should read 帶位員 ({editions.WORDS_HOWTO})"]}


def _stdout(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def test_english_printed_by_a_chinese_cell_is_found():
    made_up = [_stdout("已略過：reading the server。\n"), _stdout("池 256 格、2 個槽位\n")]
    assert editions.english_printed_in("notebooks/zh-TW/04_split_vs_unified.ipynb", 15, made_up) \
        == ["zh-TW/04_split_vs_unified.ipynb cell 15: English printed: 'reading the server'"]
    table = nbformat.v4.new_output("execute_result", data={
        "text/html": "<style>#T_1 td {font-weight: bold; color: red}</style><table><tr>"
                     "<td>速度的來源</td><td>this notebook&#x27;s held-out run</td></tr></table>",
        "text/plain": "ignored when there is HTML"})
    assert editions.printed_english([table]) == ["this notebook's held-out run"]
    assert editions.printed_english([_stdout("首字等待 TTFT p50 s 最多差了 30%")]) == ["TTFT p50 s"]
    assert editions.printed_english([_stdout("ms/step, b=20 us/prompt tok, c=51 us/seq")]) \
        == ["us/prompt tok, c"]


def test_names_flags_and_units_are_not_english_sentences():
    printed = ("labkit server  -c 256 -np 2 --kv-unified：llama.cpp 的 n_ctx_slot 4096，"
               "/props total_slots 2，總 tok/s 上升了，是 1 個槽位的 1.50 倍，x1.50\n")
    assert editions.printed_english([_stdout(printed)]) == []
    allowed = ("字型  Noto Sans CJK TC（圖表可顯示中文標籤）；找不到 NVIDIA GPU（NVML：NVML Shared "
               "Library Not Found）；生成：'Red, green and blue.'\n"
               "模型：  Smollm2 135M 8k Lc100K Mix1 Ep2（Q4_1，94 MiB）\n"
               ' "name": "Smollm2 135M 8k Lc100K Mix1 Ep2",\n'
               "short split np1\nshort-zh unified np4")
    assert editions.printed_english([_stdout(allowed)]) == []
    assert editions.printed_english([_stdout("找不到 NVIDIA GPU（NVML：Not Found）so try again now")]) \
        == ["so try again now"]
    llama_cpp = ("04:17:47 I labkit.engine.llama: llama_context: n_ctx_seq (2048) < n_ctx_train "
                 "(8192) -- the full capacity of the model will not be utilized\n"
                 "   日誌： srv    load_model: capping per-slot context (4096) to 1024\n"
                 "labkit server  -c 256: 2 個 HTTP 500（Context size has been exceeded.）\n"
                 "DEMO-01  None 400 HTTP 400: request (2048 tokens) exceeds the available context\n"
                 "失敗（其中 10 個：「HTTP 400 the request exceeds the available context size」）\n")
    source = ("    def _prefill_step(self, a, b, c, d):\n        # cells after this step\n"
              "        for job, n in chunks:\n 137   if usage is None or usage.get('x') is None:\n"
              "        heapq.heappush(self._heap, (0 if front else 1, req))\n")
    assert editions.printed_english([_stdout(llama_cpp), _stdout(source)]) == []
    # the server's words end at the closing quote: prose after it is read again
    assert editions.printed_english([_stdout("「HTTP 500 Context size has been exceeded.」so try "
                                             "again now")]) == ["so try again now"]
    assert editions.printed_english([nbformat.v4.new_output("stream", name="stderr",
                                                            text="a warning from a library")]) == []
    widget = nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "x"},
        "text/plain": "VBox(children=(a slider, with English words))"})
    figure = nbformat.v4.new_output("display_data", data={
        "image/png": "iVBOR", "text/plain": "<Figure size 1000x700 with some more words>"})
    assert editions.printed_english([widget, figure]) == []


class _NbvalCell:
    """What the hook reads of an nbval cell: its notebook, its number, what it printed."""

    def __init__(self, path, outputs):
        self.path, self.cell_num, self.test_outputs = Path(path), 15, outputs

    def raise_cell_error(self, message):
        raise AssertionError(message)


def test_a_chinese_cell_that_prints_english_fails_under_nbval(pytestconfig):
    hook = next(impl.function for impl in pytestconfig.hook.pytest_runtest_call.get_hookimpls()
                if impl.function.__name__ == "pytest_runtest_call_in_chinese")   # registered
    made_up = [_stdout("已略過：reading the server。\n")]
    with pytest.raises(AssertionError, match=r"zh-TW/04_split_vs_unified.ipynb cell 15: "
                                             r"English printed: 'reading the server'"):
        hook(_NbvalCell(editions.ROOT / "zh-TW" / "04_split_vs_unified.ipynb", made_up))
    hook(_NbvalCell(editions.ROOT / "04_split_vs_unified.ipynb", made_up))   # English: printed
    hook(_NbvalCell(editions.ROOT / "zh-TW" / "04_split_vs_unified.ipynb", [_stdout("已略過。")]))


def test_language_line_is_the_one_difference_allowed():
    line = re.compile(editions.LANGUAGE_LINE.pattern, re.M)
    for path in NOTEBOOKS:
        first = next(c for c in editions.read(path).cells if c.cell_type == "code")
        assert line.search(first.source), f"{path.name}: the first code cell has no language line"


LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)#\s]+)")


@pytest.mark.parametrize("path", NOTEBOOKS + [editions.twin(p) for p in NOTEBOOKS],
                         ids=IDS + [f"zh-TW/{i}" for i in IDS])
def test_relative_links_lead_somewhere(path):
    """A link to a doc, a data file or another notebook resolves from the notebook's folder
    (the Chinese edition sits one folder deeper: ../../docs/, and its neighbours are the
    Chinese notebooks)."""
    if not path.exists():
        pytest.skip("no zh-TW edition yet")
    broken = [target for target in LINK.findall(_prose(path))
              if not (path.parent / target).exists()]
    assert not broken, f"{path.name}: links that lead nowhere: {broken}"


def test_a_quote_cut_by_a_tables_width_is_data_but_words_after_it_are_not():
    cut = "DEMO-02：從第 3 個字元起：'' vs ' railway station is f..."
    assert editions.printed_english([_stdout(cut)]) == []
    assert editions.printed_english([_stdout("從第 3 個字元起 railway station is f...")]) \
        == ["railway station is f"]                  # no quote: the words are still found
