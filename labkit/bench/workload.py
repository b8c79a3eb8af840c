"""The benchmark's inputs: twelve documents, their answer key, and the variants built from them.

Every workload is a JSON file under ``data/workloads/`` written by :func:`generate`, a
deterministic function of one seed (and, for the sized sets, of the model's tokenizer).
The files are committed, so everyone measures exactly the same inputs.

=================  ========================================================================
``short``          12 short documents. Each names an id, an owner and a deadline in a sentence
                   or two; the answer key holds the three values.
``long``           the same 12 answers, each buried in unrelated paragraphs, sized so the
                   whole prompt (template applied) is ``LONG_PROMPT_TOKENS`` tokens.
``overlong``       one document whose prompt is ``OVERLONG_PROMPT_TOKENS`` tokens: more than a
                   4096-token slot holds, for the refusal experiment.
``shared_prefix``  the 12 short documents behind one long system preamble that every request
                   shares token for token: the input of the prefix-cache experiment.
``decode_heavy``   12 one-line story requests answered with fixed-length stories: mostly
                   decode, timing only (:mod:`labkit.bench.stories`).
``short-zh``       the short set's counterpart in Traditional Chinese as written in Taiwan:
                   案號, 負責人 and 截止日期 in a Chinese memo, with its own Chinese prompt
                   (:func:`generate_zh`).
``long-zh``        ``short-zh`` buried in Chinese filler paragraphs, sized like ``long``.
=================  ========================================================================

The prompt (a system instruction and one worked example) lives next to the data in
``data/prompt.json``; :mod:`labkit.bench.prompt` turns a document into chat messages.

    >>> from labkit.bench import load_workload
    >>> wl = load_workload("short")
    >>> len(wl), wl.documents[0].answer
    (12, {'id': 'DEMO-01', 'owner': ..., 'deadline': ...})
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Callable

from ..machine.atomic import write_atomic
from .prompt import Prompt

SEED = 20261201
LONG_PROMPT_TOKENS = 2048
OVERLONG_PROMPT_TOKENS = 5000
SHARED_PREAMBLE_TOKENS = 600
WORKLOADS = ("short", "long", "overlong", "shared_prefix", "decode_heavy", "short-zh", "long-zh")

# Owners whose names the tiny default model copies cleanly (one common name each).
OWNERS = ["Lin", "Chen", "Maya", "Omar", "Sara", "Kenji", "Priya", "Tomas", "Ana", "Elena",
          "Lucas", "Noor"]
TASKS = ["the budget review", "the quarterly report", "the vendor contract",
         "the server migration", "the hiring plan", "the safety audit", "the launch checklist",
         "the design review", "the customer survey", "the training schedule",
         "the press release", "the data cleanup"]
OPENERS = ["Please finish {task} before the deadline.",
           "This note is about {task}.",
           "Reminder: {task} is still open.",
           "The team asked for an update on {task}."]
CLOSERS = ["Thank you.", "Ask the owner if anything is unclear.",
           "Send questions to the owner.", "Keep this note with the project files."]

# Unrelated filler for the long documents: none of it looks like an id, a name or a date.
_FILLER_SUBJECTS = ["The garden", "The river", "The old library", "A small bakery",
                    "The mountain trail", "The harbour", "The city museum", "An orchard",
                    "The village market", "The railway station", "A quiet lake", "The school choir"]
_FILLER_VERBS = ["looks calm", "is busy", "smells of fresh bread", "fills with visitors",
                 "is painted blue", "opens early", "stays quiet", "hums with music",
                 "is covered in leaves", "glows in the evening light"]
_FILLER_TAILS = ["in the spring", "after the rain", "on most mornings", "when the wind turns",
                 "during the long summer", "as the seasons change", "before the crowds arrive",
                 "while the clouds drift past", "near the end of the day",
                 "under a pale sky"]
_RULES = ["Read the whole document before answering.",
          "Copy values exactly; do not translate, shorten or reformat them.",
          "Never invent a value that is not written in the document.",
          "Dates are written as year-month-day and must stay that way.",
          "An id is a short code made of letters, a hyphen and digits.",
          "The owner is the person responsible for the work.",
          "The deadline is the last day on which the work may be delivered.",
          "Answer with JSON only, with no text before or after it.",
          "Use double quotes around keys and values.",
          "Do not add keys that were not asked for.",
          "Ignore greetings, signatures and unrelated remarks.",
          "If a document mentions several dates, the deadline is the one labelled deadline."]


def data_dir() -> Path:
    """The folder holding prompt.json and workloads/ ($LABKIT_DATA, or the repository's data/)."""
    env = os.environ.get("LABKIT_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    answer: dict
    prompt_tokens: int | None = None   # whole prompt, template applied, as measured at generation


@dataclass
class Workload:
    """A named list of documents plus the prompt that wraps each of them."""

    name: str
    documents: list[Document]
    prompt: Prompt
    description: str = ""
    system_preamble: str = ""
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.documents)

    def messages(self, doc: Document) -> list[dict]:
        """The chat messages sent for one document."""
        return self.prompt.messages(doc.text, preamble=self.system_preamble)

    def head(self, n: int) -> "Workload":
        """The first n documents (quick mode uses this)."""
        return Workload(self.name, self.documents[:n], self.prompt, self.description,
                        self.system_preamble, dict(self.meta))


def load_workload(name: str = "short", folder: str | os.PathLike | None = None) -> Workload:
    """Read ``data/workloads/<name>.json`` (a name from :data:`WORKLOADS`, or a path)."""
    base = Path(folder) if folder else data_dir()
    path = Path(name) if str(name).endswith(".json") else base / "workloads" / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"no workload {name!r} at {path}; known: {', '.join(WORKLOADS)}")
    d = json.loads(path.read_text())
    prompt = (Prompt(**d["prompt"]) if "prompt" in d     # a set with its own prompt
              else Prompt.load(path.parent.parent / "prompt.json"))
    docs = [Document(x["id"], x["text"], x["answer"], x.get("prompt_tokens"))
            for x in d["documents"]]
    meta = {k: v for k, v in d.items() if k not in ("documents", "name", "description",
                                                     "system_preamble", "prompt")}
    return Workload(d["name"], docs, prompt, d.get("description", ""),
                    d.get("system_preamble", ""), meta)


# ---------------------------------------------------------------------------- generation

def answer_key(seed: int = SEED) -> list[dict]:
    """The 12 answers: ids DEMO-01..DEMO-12, distinct owners, distinct deadlines."""
    rng = random.Random(seed)
    owners = OWNERS[:]
    rng.shuffle(owners)
    days = rng.sample(range(0, 180), 12)
    start = date(2026, 12, 1)
    return [{"id": f"DEMO-{i + 1:02d}", "owner": owners[i],
             "deadline": (start + timedelta(days=days[i])).isoformat()} for i in range(12)]


def short_text(answer: dict, rng: random.Random, task: str) -> str:
    """One short document: an opening sentence, the three labelled fields, a closing line."""
    opener = rng.choice(OPENERS).format(task=task)
    return (f"{opener}\nid: {answer['id']}\nowner: {answer['owner']}\n"
            f"deadline: {answer['deadline']}\n{rng.choice(CLOSERS)}")


def filler_paragraph(rng: random.Random, n_sentences: int = 5) -> str:
    return " ".join(f"{rng.choice(_FILLER_SUBJECTS)} {rng.choice(_FILLER_VERBS)} "
                    f"{rng.choice(_FILLER_TAILS)}." for _ in range(n_sentences))


def _fit_words(words: list[str], fits: Callable[[str], bool], sep: str = " ") -> str:
    """The longest prefix of ``words`` (joined by ``sep``) for which ``fits`` holds."""
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(sep.join(words[:mid])):
            lo = mid
        else:
            hi = mid - 1
    return sep.join(words[:lo])


def long_text(short: str, rng: random.Random, count: Callable[[str], int], target: int,
              filler: Callable[[random.Random], str] = filler_paragraph) -> str:
    """Bury ``short`` among ``filler`` paragraphs so that ``count(text) == target`` or just
    under. English filler is trimmed word by word, Chinese filler (no spaces) character by
    character.

    The record sits after a seeded share (30-70 %) of the filler, so it is neither first nor last.
    """
    paras: list[str] = []
    while count("\n\n".join(paras + [short])) < target:
        paras.append(filler(rng))
    # Too long now: trim the last filler paragraph word by word to land on the target.
    last = paras.pop()
    share = rng.uniform(0.3, 0.7)

    def build(tail: str) -> str:
        ps = paras + ([tail] if tail else [])
        k = round(len(ps) * share)
        return "\n\n".join(ps[:k] + [short] + ps[k:])
    units, sep = (last.split(), " ") if " " in last else (list(last), "")
    tail = _fit_words(units, lambda t: count(build(t)) <= target, sep)
    return build(tail)


def preamble_text(rng: random.Random, count: Callable[[str], int], target: int) -> str:
    """House rules for the extraction, repeated in a seeded order to about ``target`` tokens."""
    sentences: list[str] = []
    while count(" ".join(sentences)) < target:
        batch = _RULES[:]
        rng.shuffle(batch)
        sentences += batch
    return _fit_words(" ".join(sentences).split(), lambda t: count(t) <= target)


# ---------------------------------------------------------------------------- Traditional Chinese

# The Chinese set keeps the English set's ids scheme, deadlines (same seed) and structure, in a
# memo as a Taiwanese office writes it: 案號, 負責人, 截止日期, full-width colons, and dates in
# the Western calendar written 2026年12月15日 (what company memos use; government documents
# would write 民國115年12月15日). The answer key holds the values exactly as written.
ZH_OWNERS = ["林怡君", "陳冠宇", "張雅婷", "王志明", "李佳穎", "黃俊傑", "吳淑芬", "劉家豪",
             "蔡宜臻", "楊宗翰", "許雅雯", "鄭凱文"]
ZH_TASKS = ["預算審查", "季度報告", "廠商合約", "伺服器遷移", "招募計畫", "安全稽核",
            "上線檢查清單", "設計審查", "客戶問卷", "教育訓練時程", "新聞稿", "資料清理"]
ZH_OPENERS = ["請在截止日期前完成{task}。", "這份通知與{task}有關。", "提醒：{task}尚未結案。",
              "團隊想了解{task}的最新進度。"]
ZH_CLOSERS = ["謝謝。", "如有不清楚的地方，請洽負責人。", "有問題請直接寄信給負責人。",
              "請將本通知與專案文件一併保存。"]
ZH_LABELS = {"id": "案號", "owner": "負責人", "deadline": "截止日期"}
ZH_SYSTEM = ("你負責從文件中擷取欄位。只回覆一個 JSON 物件，鍵正好是 id、owner、deadline："
             "id 是案號，owner 是負責人，deadline 是截止日期。每個值都照文件原文抄寫，不要翻譯或改寫。")
ZH_EXAMPLE_ANSWER = {"id": "TW-00", "owner": "高美玲", "deadline": "2026年11月20日"}
ZH_EXAMPLE_DOCUMENT = ("請在截止日期前完成辦公室搬遷。\n案號：TW-00\n負責人：高美玲\n"
                       "截止日期：2026年11月20日\n謝謝。")
# Unrelated filler for long-zh: no id, name or date in it.
_ZH_FILLER_SUBJECTS = ["花園", "河邊", "老圖書館", "巷口的麵包店", "山間步道", "港口", "市立博物館",
                       "果園", "村裡的市集", "火車站", "安靜的湖", "學校合唱團"]
_ZH_FILLER_VERBS = ["看起來很平靜", "十分熱鬧", "飄著剛出爐的麵包香", "擠滿了遊客", "漆成了藍色",
                    "很早就開門", "一直很安靜", "傳來陣陣音樂", "鋪滿了落葉", "在夕陽下閃閃發亮"]
_ZH_FILLER_TAILS = ["春天裡", "雨停之後", "大多數的早晨", "風向改變的時候", "漫長的夏天裡",
                    "隨著季節更替", "人潮湧入之前", "雲朵慢慢飄過時", "快到傍晚時", "在淡藍的天空下"]


def zh_date(iso: str) -> str:
    """``2026-12-15`` as a Taiwanese memo writes it: ``2026年12月15日`` (Western calendar)."""
    d = date.fromisoformat(iso)
    return f"{d.year}年{d.month}月{d.day}日"


def minguo_date(iso: str) -> str:
    """The same day in the Republic of China calendar (民國 year = Western year - 1911), as
    government documents write it: ``民國115年12月15日``. Not used by the workloads."""
    d = date.fromisoformat(iso)
    return f"民國{d.year - 1911}年{d.month}月{d.day}日"


def zh_answer_key(seed: int = SEED) -> list[dict]:
    """The Chinese set's 12 answers: ids TW-01..TW-12, the English set's deadlines (same seed)
    written as :func:`zh_date`, the owners shuffled the same way."""
    rng = random.Random(seed)
    owners = ZH_OWNERS[:]
    rng.shuffle(owners)
    return [{"id": f"TW-{i + 1:02d}", "owner": owners[i], "deadline": zh_date(a["deadline"])}
            for i, a in enumerate(answer_key(seed))]


def zh_short_text(answer: dict, rng: random.Random, task: str) -> str:
    """One short Chinese memo: an opening sentence, 案號/負責人/截止日期 lines, a closing line."""
    opener = rng.choice(ZH_OPENERS).format(task=task)
    fields = "".join(f"{ZH_LABELS[k]}：{answer[k]}\n" for k in ("id", "owner", "deadline"))
    return f"{opener}\n{fields}{rng.choice(ZH_CLOSERS)}"


def zh_filler_paragraph(rng: random.Random, n_sentences: int = 5) -> str:
    return "".join(f"{rng.choice(_ZH_FILLER_TAILS)}，{rng.choice(_ZH_FILLER_SUBJECTS)}"
                   f"{rng.choice(_ZH_FILLER_VERBS)}。" for _ in range(n_sentences))


def zh_prompt() -> Prompt:
    """The Chinese set's prompt: a Chinese instruction and one worked Chinese memo."""
    return Prompt(system=ZH_SYSTEM, example_document=ZH_EXAMPLE_DOCUMENT,
                         example_answer=dict(ZH_EXAMPLE_ANSWER))


class Tokenizer:
    """Token counts from a running server's /apply-template and /tokenize (the model's own)."""

    def __init__(self, base_url: str):
        import httpx
        self.client = httpx.Client(base_url=base_url, timeout=60)

    def tokens(self, text: str) -> int:
        r = self.client.post("/tokenize", json={"content": text, "add_special": True})
        r.raise_for_status()
        return len(r.json()["tokens"])

    def prompt_tokens(self, messages: list[dict]) -> int:
        r = self.client.post("/apply-template", json={"messages": messages})
        r.raise_for_status()
        return self.tokens(r.json()["prompt"])


def generate(folder: str | os.PathLike | None = None, *, base_url: str | None = None,
             seed: int = SEED, model: str | None = None) -> dict[str, Path]:
    """Write prompt.json and every workload under ``folder`` (default: :func:`data_dir`).

    The long, overlong and shared-prefix sets are sized with the model's tokenizer, through a
    server's /apply-template and /tokenize: ``base_url`` if given, else a labkit server started
    (and stopped) here on ``model`` (default: the embedded model). Same seed, same model,
    same files.
    """
    if base_url is None:
        from ..server.launch import ServerConfig, launch
        with launch(ServerConfig(n_ctx=2048, n_slots=1, model=model)) as srv:
            return generate(folder, base_url=srv.base_url, seed=seed, model=model)

    from ..models.files import describe
    base = Path(folder) if folder else data_dir()
    (base / "workloads").mkdir(parents=True, exist_ok=True)
    prompt = Prompt.default()
    prompt.save(base / "prompt.json")
    tok = Tokenizer(base_url)
    info = describe(model)
    answers = answer_key(seed)
    rng = random.Random(seed + 1)
    shorts = [short_text(a, rng, TASKS[i]) for i, a in enumerate(answers)]

    def n_prompt(text: str, preamble: str = "") -> int:
        return tok.prompt_tokens(prompt.messages(text, preamble=preamble))

    common = {"seed": seed, "generator": "labkit.bench.workload.generate",
              "tokenizer_model": info.name, "tokenizer_model_sha256": info.sha256}
    written: dict[str, Path] = {}

    def write(name: str, description: str, docs: list[tuple[str, dict]], preamble: str = "",
              **extra):
        body = {"name": name, "description": description, **common, **extra,
                "system_preamble": preamble,
                "documents": [{"id": a["id"], "answer": a, "prompt_tokens": n_prompt(t, preamble),
                               "text": t} for t, a in docs]}
        path = base / "workloads" / f"{name}.json"
        write_atomic(path, json.dumps(body, indent=1, ensure_ascii=False) + "\n")
        written[name] = path

    write("short", "12 short documents, each naming an id, an owner and a deadline.",
          list(zip(shorts, answers)))
    lrng = random.Random(seed + 2)
    longs = [long_text(s, lrng, n_prompt, LONG_PROMPT_TOKENS) for s in shorts]
    write("long", f"The 12 short documents, each buried in unrelated paragraphs; every prompt "
                  f"is sized to {LONG_PROMPT_TOKENS} tokens (or a few under).",
          list(zip(longs, answers)), target_prompt_tokens=LONG_PROMPT_TOKENS)
    orng = random.Random(seed + 3)
    over = long_text(shorts[0], orng, n_prompt, OVERLONG_PROMPT_TOKENS)
    write("overlong", f"One document whose prompt is {OVERLONG_PROMPT_TOKENS} tokens: more than a "
                      "4096-token slot can hold (the refusal experiment).",
          [(over, answers[0])], target_prompt_tokens=OVERLONG_PROMPT_TOKENS)
    pre = preamble_text(random.Random(seed + 4), tok.tokens, SHARED_PREAMBLE_TOKENS)
    write("shared_prefix", f"The 12 short documents behind one shared system preamble of about "
                           f"{SHARED_PREAMBLE_TOKENS} tokens (the prefix-cache experiment).",
          list(zip(shorts, answers)), preamble=pre, preamble_tokens=tok.tokens(pre))
    from .stories import NAME, workload_body
    written[NAME] = base / "workloads" / f"{NAME}.json"
    write_atomic(written[NAME], json.dumps(workload_body(tok.prompt_tokens, common), indent=1,
                                           ensure_ascii=False) + "\n")
    written.update(generate_zh(base, base_url=base_url, seed=seed, model=model))
    return written


# What data/README.md says of the Chinese sets after running the embedded model on them.
ZH_TIMING_ONLY = True


def generate_zh(folder: str | os.PathLike | None = None, *, base_url: str | None = None,
                seed: int = SEED, model: str | None = None) -> dict[str, Path]:
    """Write ``short-zh`` and ``long-zh`` under ``folder``/workloads (see :func:`generate`).

    Each document also records its character count and its text's own token count
    (``chars``, ``text_tokens``), for the characters-per-token comparison with the English
    set in data/README.md."""
    if base_url is None:
        from ..server.launch import ServerConfig, launch
        with launch(ServerConfig(n_ctx=2048, n_slots=1, model=model)) as srv:
            return generate_zh(folder, base_url=srv.base_url, seed=seed, model=model)

    from ..models.files import describe
    base = Path(folder) if folder else data_dir()
    (base / "workloads").mkdir(parents=True, exist_ok=True)
    prompt = zh_prompt()
    tok = Tokenizer(base_url)
    info = describe(model)
    answers = zh_answer_key(seed)
    rng = random.Random(seed + 11)
    shorts = [zh_short_text(a, rng, ZH_TASKS[i]) for i, a in enumerate(answers)]

    def n_prompt(text: str) -> int:
        return tok.prompt_tokens(prompt.messages(text))

    from dataclasses import asdict
    common = {"seed": seed, "generator": "labkit.bench.workload.generate_zh",
              "tokenizer_model": info.name, "tokenizer_model_sha256": info.sha256,
              "language": "zh-TW", "date_style": "western 2026年12月15日",
              "timing_only": ZH_TIMING_ONLY, "prompt": asdict(prompt)}
    written: dict[str, Path] = {}

    def write(name: str, description: str, docs: list[tuple[str, dict]], **extra):
        body = {"name": name, "description": description, **common, **extra,
                "documents": [{"id": a["id"], "answer": a, "prompt_tokens": n_prompt(t),
                               "text_tokens": tok.tokens(t), "chars": len(t), "text": t}
                              for t, a in docs]}
        path = base / "workloads" / f"{name}.json"
        write_atomic(path, json.dumps(body, indent=1, ensure_ascii=False) + "\n")
        written[name] = path

    write("short-zh", "12 short memos in Traditional Chinese (Taiwan), each naming 案號, 負責人 "
                      "and 截止日期; the answer key holds the values as written.",
          list(zip(shorts, answers)))
    lrng = random.Random(seed + 12)
    longs = [long_text(s, lrng, n_prompt, LONG_PROMPT_TOKENS, zh_filler_paragraph)
             for s in shorts]
    write("long-zh", f"The 12 Chinese memos, each buried in unrelated Chinese paragraphs; every "
                     f"prompt is sized to {LONG_PROMPT_TOKENS} tokens (or a few under).",
          list(zip(longs, answers)), target_prompt_tokens=LONG_PROMPT_TOKENS)
    return written


def token_stats(names=("short", "long", "short-zh", "long-zh"), model: str | None = None):
    """Characters and tokens of each document's text (the model's own tokenizer, vocabulary
    only, no BOS) for these workloads: a DataFrame with one row per workload, the ranges per
    document and the characters per token over the whole set. Behind data/README.md's table::

        python -c "from labkit.bench.workload import token_stats; print(token_stats())"
    """
    import pandas as pd

    from ..engine.vocabulary import tokenize
    rows = []
    for name in names:
        texts = [d.text for d in load_workload(name).documents]
        chars = [len(t) for t in texts]
        toks = [len(t) for t in tokenize(texts, model)]
        rows.append({"workload": name, "documents": len(texts),
                     "chars": f"{min(chars)}-{max(chars)}", "tokens": f"{min(toks)}-{max(toks)}",
                     "chars_per_token": round(sum(chars) / sum(toks), 2)})
    return pd.DataFrame(rows).set_index("workload")
