"""One classroom submission read and checked against what ``labkit bench`` writes, before
:mod:`labkit.lessons.classroom` merges it.

A submission is a results folder as ``labkit bench`` (or notebook 05's ``result.save``) writes
it, or the worksheet.csv in one. It is refused, with its folder and the reason
(:class:`Refused`, its sentence in the language in use), when:

- it is, or holds, a symbolic link (a link to another learner's file would merge as a second
  learner), or it holds more entries than a results folder (:data:`MAX_ENTRIES`);
- worksheet.csv or environment.json is missing (bench writes both: a run saved on a full disk,
  or copied half, lacks one), is not a plain file, is larger than a bench run writes
  (:data:`MAX_FILE_BYTES`), or is not UTF-8; environment.json or about.json is not a JSON
  object, or a field the classroom reads has the wrong type;
- the worksheet is empty, has its header but no line, or more lines than bench writes
  (:data:`MAX_LINES`); it is cut (bench ends every line with a newline and writes every field:
  a file cut while written or copied ends without one, or with fewer fields, and its last
  number may read whole, 20.8 cut to 2);
- its columns are not bench's (:func:`bench_columns`, asked of
  :func:`labkit.bench.worksheet.worksheet` itself), or a cell does not hold what bench writes
  there (a number written whole, True or False, a whole number of slots, a verdict);
- two of its lines are one configuration (the same line twice, or two lines the classroom's
  tables cannot tell apart).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from ..lang.i18n import Both, t

#: The most lines a worksheet holds. ``labkit bench`` writes one line per configuration: its
#: default grid is 6 (1/2/4 slots x split/unified) per workload, and all 7 workloads x 2 KV
#: modes x 8 slot counts x 8 in-flight counts would be 896. A file with more is not one run.
MAX_LINES = 1_000
#: The longest line a worksheet has room for: about 500 bytes in a bench run (a 64-digit
#: sha256, the memory label, a verdict naming three gates), plus 6 bytes a round for the
#: per-round throughput; 4 KiB holds hundreds of rounds.
MAX_LINE_BYTES = 4096
#: The largest file a submission's check reads (worksheet.csv, environment.json, about.json):
#: MAX_LINES lines of MAX_LINE_BYTES (environment.json has one entry per configuration, well
#: under that).
MAX_FILE_BYTES = MAX_LINES * MAX_LINE_BYTES
#: The most entries a results folder holds (bench writes about fifteen files and four plots).
MAX_ENTRIES = 1_000

WORKSHEET, ENVIRONMENT, ABOUT = "worksheet.csv", "environment.json", "about.json"
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_FLAGS = ("True", "False")


# ---------------------------------------------------------------------------- refusals

@dataclass(frozen=True, eq=False)
class Refused:
    """A submission left out of the merge: ``submission`` (the folder or file as given), ``why``
    (the reason's key: ``classroom.refused.<why>`` in :data:`labkit.lang.i18n.CATALOGUE`) and
    ``detail`` (what the reason names). ``reason`` is the sentence in the language in use."""

    submission: str
    why: str
    detail: dict = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return t(f"classroom.refused.{self.why}", **self.detail)

    def __str__(self) -> str:
        return f"{self.submission}: {self.reason}"


class SubmissionRefused(ValueError):
    """:func:`check`'s answer to a submission that fails a check; ``.refused`` is
    the :class:`Refused` record, the message names the submission and the reason."""

    def __init__(self, refused: Refused):
        super().__init__(str(refused))
        self.refused = refused


def _refuse(submission, why: str, **detail):
    raise SubmissionRefused(Refused(str(submission), why, detail))


# ---------------------------------------------------------------------------- what bench writes

class Column(NamedTuple):
    """One column of the worksheet ``labkit bench`` writes: ``kind`` is ``number``, ``flag``
    (True or False) or ``text``; ``ungraded`` says that a timing-only run writes a "not graded
    (...)" word there instead; an ``optional`` column is missing from older worksheets."""

    name: str
    kind: str
    ungraded: bool
    optional: bool


def _probe(grade_reason: str | None) -> pd.DataFrame:
    """The worksheet of one request as :mod:`labkit.bench.runner` records it (a graded one, or
    a timing-only one when ``grade_reason`` says "not graded")."""
    from ..bench.worksheet import worksheet
    request = {"run_id": "probe", "round": 0, "server": "labkit", "model_sha256": "0" * 64,
               "kv_mode": "split", "pool_n_ctx": 4096, "slots": 1, "n_ctx_slot": 4096,
               "in_flight": 1, "load": "closed", "workload": "short", "cache_prompt": False,
               "device": "CPU", "backend": "CPU", "n_gpu_layers": 0, "wall_s": 1.0,
               "peak_memory_bytes": 2.0 ** 20, "memory_label": "not measured", "error": None,
               "finish_reason": "stop", "prompt_tokens": 1, "completion_tokens": 1,
               "ttft_s": 0.5, "completion_s": 1.0, "correct": True, "grade_reason": grade_reason}
    return worksheet(pd.DataFrame([request]))


@cache
def bench_columns() -> tuple[Column, ...]:
    """The columns of worksheet.csv in the order ``labkit bench`` writes them, each with what
    it holds: asked of :func:`labkit.bench.worksheet.worksheet` itself on one made-up request,
    so the check follows the worksheet when it changes. The device columns
    (:data:`labkit.bench.worksheet.DEVICE_KEYS`) are optional: worksheets written before bench
    recorded where the layers ran lack them."""
    from ..bench.grading import not_graded
    from ..bench.worksheet import DEVICE_KEYS
    graded, ungraded = _probe(None), _probe("not graded (timing only)")
    out = []
    for name in graded.columns:
        dtype = graded[name].dtype
        kind = ("flag" if pd.api.types.is_bool_dtype(dtype)
                else "number" if pd.api.types.is_numeric_dtype(dtype) else "text")
        out.append(Column(name, kind, bool(not_graded(ungraded[name].iloc[0])),
                          name in DEVICE_KEYS))
    return tuple(out)


# ---------------------------------------------------------------------------- reading files

def _own_files(path: Path, folder: Path, names) -> None:
    """Refuse a submission that is a symbolic link, or holds one: its files must be its own
    (a link to another learner's file would merge as a second learner)."""
    def check(p: Path):
        if p.is_symlink():
            _refuse(path, "symlink", name=p.name if p != path else str(p),
                    target=os.readlink(p))
    check(path)
    if not path.is_dir():
        for name in names:
            if os.path.lexists(folder / name):
                check(folder / name)
        return
    seen = 0
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            seen += 1
            if seen > MAX_ENTRIES:
                _refuse(path, "too_many_files", limit=f"{MAX_ENTRIES:,}")
            check(Path(root) / name)


def _read_bytes(submission, p: Path, missing: str) -> bytes:
    """The bytes of ``p``, a plain file no larger than :data:`MAX_FILE_BYTES`."""
    try:
        st = p.stat()
    except FileNotFoundError:
        _refuse(submission, missing, name=p.name)
    except OSError as exc:
        _refuse(submission, "unreadable", name=p.name, error=exc.strerror or type(exc).__name__)
    if not stat.S_ISREG(st.st_mode):
        _refuse(submission, "not_a_file", name=p.name)
    if st.st_size > MAX_FILE_BYTES:
        _refuse(submission, "too_large", name=p.name, size=f"{st.st_size / 1e6:,.1f} MB",
                limit=f"{MAX_FILE_BYTES / 1e6:,.1f} MB")
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        _refuse(submission, "unreadable", name=p.name, error=exc.strerror or type(exc).__name__)
    if len(data) > MAX_FILE_BYTES:               # it grew while being read
        _refuse(submission, "too_large", name=p.name, size=f"> {MAX_FILE_BYTES / 1e6:,.1f} MB",
                limit=f"{MAX_FILE_BYTES / 1e6:,.1f} MB")
    return data


def _text(submission, name: str, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _refuse(submission, "not_utf8", name=name, offset=f"{exc.start:,}")
    return text[1:] if text.startswith("\ufeff") else text


def _json_object(submission, p: Path, missing: str, required: bool) -> dict:
    """A JSON object read from ``p``; {} when it is absent and not ``required``."""
    if not required and not os.path.lexists(p):
        return {}
    text = _text(submission, p.name, _read_bytes(submission, p, missing))
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        _refuse(submission, "bad_json", name=p.name,
                error=getattr(exc, "msg", type(exc).__name__),
                line=getattr(exc, "lineno", "?"))
    if not isinstance(value, dict):
        _refuse(submission, "not_an_object", name=p.name)
    return value


#: JSON's names for the types a field the classroom reads must have.
_JSON_TYPES = {list: Both("array", "陣列（array）"), dict: Both("object", "物件（object）"),
               int: Both("number", "數字（number）"), str: Both("string", "字串（string）")}


def _expect(submission, name: str, record: dict, key: str, kind: type):
    """Refuse ``record[key]`` when it is there but not of ``kind`` (JSON's null is absent)."""
    value = record.get(key)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        _refuse(submission, "bad_field", name=name, field=key, expected=_JSON_TYPES[kind])


# ---------------------------------------------------------------------------- the worksheet

def _cells(submission, text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the lines (with their line numbers in the file) of a worksheet's text,
    refused when the file is empty, cut (a last line without its newline, a line with fewer
    fields than the header), has no line, or more than :data:`MAX_LINES`."""
    if not text.strip():
        _refuse(submission, "empty")
    if not text.endswith("\n"):
        _refuse(submission, "cut", line=f"{text.count(chr(10)) + 1:,}")
    if text.count("\n") - 1 > MAX_LINES:
        _refuse(submission, "too_many_lines", lines=f"{text.count(chr(10)) - 1:,}",
                limit=f"{MAX_LINES:,}")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
        lines = []
        start = reader.line_num + 1
        for fields in reader:
            lines.append((start, fields))
            start = reader.line_num + 1
    except csv.Error as exc:
        _refuse(submission, "not_csv", line=f"{reader.line_num:,}", error=str(exc))
    if not lines:
        _refuse(submission, "no_lines")
    for number, fields in lines:
        if len(fields) != len(header):
            _refuse(submission, "fields", line=f"{number:,}", found=len(fields),
                    expected=len(header))
    return header, lines


def _check_columns(submission, header: list[str]) -> dict[str, Column]:
    columns = {c.name: c for c in bench_columns()}
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        _refuse(submission, "columns_twice", columns=", ".join(twice))
    missing = [c for c, col in columns.items() if c not in header and not col.optional]
    if missing:
        _refuse(submission, "missing_columns", columns=", ".join(missing))
    unknown = [c for c in header if c not in columns]
    if unknown:
        _refuse(submission, "unknown_columns", columns=", ".join(unknown))
    return columns


def _check_cells(submission, header, lines, columns: dict[str, Column]) -> None:
    """Every cell holds what bench writes in its column: a number written whole (or nothing),
    True or False, a timing-only run's "not graded" word where bench writes one; a whole
    number of slots; a configuration's workload and KV mode; a verdict."""
    from ..bench.grading import not_graded
    for number, fields in lines:
        for name, cell in zip(header, fields):
            col = columns[name]
            if col.ungraded and not_graded(cell):
                continue
            if col.kind == "number":
                ok = cell == "" or (_NUMBER.fullmatch(cell) and math.isfinite(float(cell)))
            elif col.kind == "flag":
                ok = cell in _FLAGS
            else:
                ok = True
            if name == "slots" and ok and cell:
                ok = float(cell) >= 1 and float(cell).is_integer()
            if name in ("workload", "kv_mode", "verdict") and not cell:
                _refuse(submission, "empty_cell", line=f"{number:,}", column=name)
            if name == "verdict":
                ok = cell.startswith(("pass", "fail: "))
            if not ok:
                why = {"slots": "bad_slots", "verdict": "bad_verdict"}.get(name, f"not_{col.kind}")
                _refuse(submission, why, line=f"{number:,}", column=name, value=cell[:40])


def config_label(ws: pd.DataFrame) -> pd.Series:
    """Each line's configuration as the classroom's tables name it: ``workload kv_mode npN``,
    with the client's in-flight count when it is not the slot count and the load when it is
    not a closed loop (``short split np2 in-flight 4``, ``short split np2 poisson 2/s``)."""
    def one(r):
        slots = f"np{int(r['slots'])}" if pd.notna(r["slots"]) else "np?"
        label = f"{r['workload']} {r['kv_mode']} {slots}"
        k = r.get("in_flight")
        if pd.notna(k) and (pd.isna(r["slots"]) or int(k) != int(r["slots"])):
            label += f" in-flight {int(k)}"
        load = r.get("load")
        if isinstance(load, str) and load and load != "closed":
            label += f" {load}"
        return label
    return ws.apply(one, axis=1).astype(str) if len(ws) else pd.Series([], dtype=str)


def _check_configs(submission, ws: pd.DataFrame, lines) -> None:
    """Refuse two lines of one configuration: the same line twice, or two lines the
    classroom's tables could not tell apart (they differ only in, say, the server or the pool)."""
    from ..bench.worksheet import CONFIG_KEYS, DEVICE_KEYS
    ident = [k for k in CONFIG_KEYS + DEVICE_KEYS if k in ws]
    first: dict[str, int] = {}
    for i, label in enumerate(ws["config"]):
        if label not in first:
            first[label] = i
            continue
        j = first[label]
        a, b = ws.iloc[j], ws.iloc[i]
        differ = [k for k in ident if not (a[k] == b[k] or (pd.isna(a[k]) and pd.isna(b[k])))]
        where = {"first": f"{lines[j][0]:,}", "second": f"{lines[i][0]:,}", "config": label}
        if differ:
            _refuse(submission, "same_config", columns=", ".join(differ), **where)
        _refuse(submission, "duplicate_line", **where)


def _worksheet(submission, text: str) -> pd.DataFrame:
    header, lines = _cells(submission, text)
    columns = _check_columns(submission, header)
    _check_cells(submission, header, lines, columns)
    texts = {c: str for c in header if columns[c].kind == "text"}
    ws = pd.read_csv(io.StringIO(text), dtype=texts)
    ws.insert(0, "config", config_label(ws))
    _check_configs(submission, ws, lines)
    return ws


# ---------------------------------------------------------------------------- a submission

class Checked(NamedTuple):
    """A submission that passed every check: its ``worksheet`` (with a ``config`` column first,
    :func:`config_label`), ``environment`` and ``about`` (``{}`` without an about.json), the
    ``folder`` and ``csv`` it was read from, and the worksheet's ``sha256``."""

    worksheet: pd.DataFrame
    environment: dict
    about: dict
    folder: Path
    csv: Path
    sha256: str


def check(path) -> Checked:
    """Read the submission at ``path`` (a results folder, or the worksheet CSV file in one) and
    check it; :class:`SubmissionRefused` names it and the first check it fails."""
    path = Path(path)
    if not os.path.lexists(path):
        _refuse(path, "not_found")
    folder = path if path.is_dir() else path.parent
    csv_path = path / WORKSHEET if path.is_dir() else path
    _own_files(path, folder, (ENVIRONMENT, ABOUT))
    data = _read_bytes(path, csv_path, "no_worksheet")
    ws = _worksheet(path, _text(path, csv_path.name, data))
    env = _json_object(path, folder / ENVIRONMENT, "no_environment", required=True)
    about = _json_object(path, folder / ABOUT, "not_found", required=False)
    for key, kinds in (("gpus", list), ("llama_cpp", dict), ("cpu_count", int)):
        _expect(path, ENVIRONMENT, env, key, kinds)
    _expect(path, ENVIRONMENT, env.get("llama_cpp") or {}, "llama_cpp_source", dict)
    for key in ("label", "note"):
        _expect(path, ABOUT, about, key, str)
    return Checked(ws, env, about, folder, csv_path, hashlib.sha256(data).hexdigest())
