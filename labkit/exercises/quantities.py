"""Answers read as quantities: a number and its unit, in English or Traditional Chinese.

Each numeric exercise names the unit its question asks for (``quantity(answer, "s")``). A
bare number is read in that unit; a number with another unit of the same dimension is
converted (``"26 ms"`` is 0.026 s, ``"90 MiB"`` 0.088 GiB); a unit of another dimension, or
one the table does not know, is an :class:`Unreadable` answer whose message names what was
read and what the question asks for. Bytes keep their own sizes: MB and GB are powers of ten,
MiB and GiB powers of two. Chinese numerals are read up to the ten thousands (兩百零三, 一萬兩千).

One explicit table, :data:`UNITS`, holds every unit; a few lengths and masses are in it only so
that an answer in them is named as what it is."""

from __future__ import annotations

import math
import re
import unicodedata
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ..costs.planning import DAYS_PER_MONTH
from ..lang.i18n import Both, pick, text


class Unreadable(ValueError):
    """An answer the checks cannot read as the quantity asked for; the message says why and
    what form they expect, in the learner's language."""


@dataclass(frozen=True)
class Unit:
    symbol: str                    # as an English verdict shows it
    zh: str                        # as a Chinese verdict shows it
    dimension: str                 # a key of DIMENSIONS
    scale: float                   # how many of the dimension's first unit one of it is
    spellings: tuple[str, ...]     # how a learner writes it, lower case


DIMENSIONS = {
    "time": Both("a time", "時間"),
    "bytes": Both("an amount of memory", "記憶體大小"),
    "token rate": Both("a rate in tokens per second", "每秒 token 數"),
    "tokens": Both("a number of tokens (or KV cells)", "token 數（或 KV 格數）"),
    "requests": Both("a number of requests", "請求數"),
    "slots": Both("a number of slots", "槽位數"),
    "steps": Both("a number of steps (llama_decode calls)", "步數（llama_decode 的呼叫次數）"),
    "factor": Both("a factor", "倍數"),
    "fraction": Both("a fraction", "比例"),
    "length": Both("a length", "長度"),
    "mass": Both("a mass", "重量"),
}

UNITS = (
    Unit("s", "秒", "time", 1.0, ("s", "sec", "secs", "second", "seconds", "秒", "秒鐘")),
    Unit("ms", "毫秒", "time", 1e-3, ("ms", "msec", "millisecond", "milliseconds", "毫秒")),
    Unit("µs", "微秒", "time", 1e-6, ("μs", "us", "microsecond", "microseconds", "微秒")),
    Unit("min", "分鐘", "time", 60.0, ("min", "mins", "minute", "minutes", "分鐘", "分")),
    Unit("h", "小時", "time", 3600.0, ("h", "hr", "hrs", "hour", "hours", "小時", "鐘頭")),
    Unit("days", "天", "time", 86400.0, ("day", "days", "天", "日")),
    Unit("weeks", "週", "time", 7 * 86400.0, ("week", "weeks", "週", "星期", "禮拜")),
    Unit("months", "個月", "time", DAYS_PER_MONTH * 86400.0,            # the planner's month
         ("month", "months", "mo", "月")),
    Unit("B", "位元組", "bytes", 1.0, ("b", "byte", "bytes", "位元組")),
    Unit("KB", "KB", "bytes", 1e3, ("kb", "kilobyte", "kilobytes")),
    Unit("KiB", "KiB", "bytes", 2.0**10, ("kib", "kibibyte", "kibibytes")),
    Unit("MB", "MB", "bytes", 1e6, ("mb", "megabyte", "megabytes")),
    Unit("MiB", "MiB", "bytes", 2.0**20, ("mib", "mebibyte", "mebibytes")),
    Unit("GB", "GB", "bytes", 1e9, ("gb", "gigabyte", "gigabytes")),
    Unit("GiB", "GiB", "bytes", 2.0**30, ("gib", "gibibyte", "gibibytes")),
    Unit("TB", "TB", "bytes", 1e12, ("tb", "terabyte", "terabytes")),
    Unit("TiB", "TiB", "bytes", 2.0**40, ("tib", "tebibyte", "tebibytes")),
    Unit("tok/s", "tok/s", "token rate", 1.0,
         ("tok/s", "token/s", "tokens/s", "t/s", "tok/sec", "tokens/sec", "token/秒", "tok/秒",
          "tokens/秒", "tokens per second", "token per second", "tokens a second")),
    Unit("tok/ms", "tok/ms", "token rate", 1e3, ("tok/ms", "token/ms", "tokens/ms", "token/毫秒")),
    Unit("tok/min", "tok/min", "token rate", 1 / 60,
         ("tok/min", "token/min", "tokens/min", "token/分鐘", "tokens per minute")),
    Unit("tokens", "個 token", "tokens", 1.0, ("token", "tokens", "tok")),
    Unit("cells", "格", "tokens", 1.0, ("cell", "cells", "格", "格子", "kv cells")),
    Unit("requests", "個請求", "requests", 1.0, ("request", "requests", "請求")),
    Unit("conversations", "段對話", "requests", 1.0,
         ("conversation", "conversations", "對話", "段對話")),
    Unit("slots", "個槽位", "slots", 1.0, ("slot", "slots", "槽位", "槽")),
    Unit("steps", "步", "steps", 1.0, ("step", "steps", "步", "步驟", "llama_decode calls")),
    Unit("x", "倍", "factor", 1.0, ("x", "×", "times", "fold", "倍")),
    Unit("", "", "fraction", 1.0, ()),
    Unit("%", "%", "fraction", 0.01, ("%", "percent", "per cent")),
    Unit("m", "公尺", "length", 1.0, ("metre", "metres", "meter", "meters", "公尺", "米")),
    Unit("km", "公里", "length", 1e3, ("km", "kilometre", "kilometres", "kilometer", "kilometers",
                                      "公里")),
    Unit("cm", "公分", "length", 1e-2, ("cm", "centimetre", "centimetres", "公分")),
    Unit("g", "公克", "mass", 1e-3, ("g", "gram", "grams", "公克", "克")),
    Unit("kg", "公斤", "mass", 1.0, ("kg", "kilogram", "kilograms", "公斤")),
)
BY_SYMBOL = {u.symbol: u for u in UNITS}
BY_SPELLING = {s: u for u in UNITS for s in u.spellings}
#: Counters that fit any count (tokens, requests, slots, steps): read in the question's unit.
COUNTERS = ("個", "次", "call", "calls", "times")
COUNTS = ("tokens", "requests", "slots", "steps")

ABOUT = ("大約", "約", "about", "around", "roughly", "~", "≈")
ZERO = ("none", "no one", "zero", "零", "沒有", "都沒有", "一個也沒有", "零個")

_ARABIC = re.compile(r"^([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*(.*)$", re.I | re.S)
_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6,
           "七": 7, "八": 8, "九": 9}
_POWERS = {"十": 10, "百": 100, "千": 1000}
_CHINESE = re.compile(r"^([零〇一二兩三四五六七八九十百千萬]+)\s*(.*)$", re.S)


# ---------------------------------------------------------------------------- numbers

def chinese_numeral(written: str) -> int:
    """A Chinese numeral up to the ten thousands: 十二 12, 兩百零三 203, 一萬兩千 12000."""
    total = section = digit = 0
    for ch in written:
        if ch in _DIGITS:
            digit = _DIGITS[ch]
        elif ch in _POWERS:
            section += (digit or (1 if ch == "十" else 0)) * _POWERS[ch]
            digit = 0
        else:                                              # 萬
            total += (section + digit) * 10_000
            section = digit = 0
    return total + section + digit


def finite(value, written) -> float:
    """``value`` as a float, or a ValueError in the learner's language when it has no finite
    float (an integer of 400 digits, ``inf``, ``nan``, ``"1e400"``)."""
    try:
        v = float(value)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        raise ValueError(pick(f"expected a finite number, got {_short(written)}",
                              f"這裡要的是有限的數字，收到的是 {_short(written)}"))
    return v


def _short(written) -> str:
    """``written`` as a verdict quotes it: its repr, cut after 40 characters."""
    quoted = repr(written)
    return quoted if len(quoted) <= 40 else quoted[:37] + "..."


def tidy(written: str) -> str:
    """A learner's text with full-width forms made plain, thousands separators and final
    punctuation dropped, and "about" around it taken off."""
    s = unicodedata.normalize("NFKC", written).strip().rstrip("。.！!？? ")
    s = s.replace(",", "").replace("_", "")
    for about in ABOUT:
        s = s.removeprefix(about).strip()
    return s.removesuffix("左右").strip()


def split_number(written: str) -> tuple[float, str, str] | None:
    """(value, the number as written, the rest) of a text that starts with a number, Arabic or
    Chinese (``"3 萬"`` is 30000); None when it does not."""
    m = _ARABIC.match(written)
    if m:
        value, rest = finite(m[1], written), m[2].strip()
        if rest.startswith("萬"):
            return value * 10_000, f"{m[1]}萬", rest[1:].strip()
        return value, m[1], rest
    m = _CHINESE.match(written)
    if m:
        return float(chinese_numeral(m[1])), m[1], m[2].strip()
    return None


def as_number(x) -> float:
    """A plain number with no unit: an int, a float, a numpy scalar, or a string such as
    ``"131,072"``, ``"兩百零三"`` or ``"約 60 個"``; anything else is a ValueError in the
    learner's language. For an answer to a question about a quantity use :func:`quantity`."""
    if isinstance(x, bool):
        raise ValueError(pick("expected a number, got True/False", "這裡要的是數字，不是 True/False"))
    if isinstance(x, (int, float)):
        return finite(x, x)
    if hasattr(x, "item"):            # numpy scalars
        return finite(x.item(), x)
    if not isinstance(x, str):
        raise TypeError(pick(f"expected a number, got {type(x).__name__}",
                             f"這裡要的是數字，收到的是 {type(x).__name__}"))
    s = tidy(x)
    if s.lower() in ZERO:
        return 0.0
    parts = split_number(s)
    if parts and parts[2] in ("",) + COUNTERS:
        return parts[0]
    raise ValueError(pick(f"expected a number, got {_short(x)}",
                          f"這裡要的是數字，收到的是 {_short(x)}"))


# ---------------------------------------------------------------------------- Chinese text

def spaced(*parts: str) -> str:
    """Chinese text joined from ``parts``, with a space where a Latin letter or a digit meets a
    Chinese character, as Taiwan sets mixed text."""
    out = ""
    for part in parts:
        if out and part and (_is_latin(out[-1]) and is_cjk(part[0])
                             or is_cjk(out[-1]) and _is_latin(part[0])):
            out += " "
        out += part
    return out


def _is_latin(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch in "%/.'")


def is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a Chinese (CJK) character."""
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


# ---------------------------------------------------------------------------- units

def shown(value: float) -> str:
    """A number as a verdict shows it: whole numbers whole, others to four figures."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def unit_name(unit: Unit, per: str | None = None) -> str:
    """The unit as the language in use writes it (``"B/token"``, ``"位元組/token"``)."""
    name = pick(unit.symbol, unit.zh)
    return f"{name}/{per}" if per else name


def _with_unit(number: str, unit: Unit, per: str | None = None) -> str:
    name = unit_name(unit, per)
    glue = "" if name in ("", "%", "x") else " "
    return f"{number}{glue}{name}"


def _per_suffixes(per: str) -> tuple[str, ...]:
    return (f"/{per}", f"per {per}", f"/個 {per}", f"每個 {per}", f"每 {per}", f"a {per}")


def read_unit(words: str, per: str | None = None) -> Unit | None:
    """The unit ``words`` name, None for no words; a LookupError for words the table does not
    hold. With ``per`` (``"token"``), a trailing "/token" or "per token" is dropped."""
    w = " ".join(words.lower().replace(" /", "/").replace("/ ", "/").split())
    if per:
        for suffix in _per_suffixes(per):
            w = w.removesuffix(suffix).strip()
    if w.startswith("個") and len(w) > 1:
        w = w[1:].strip()
    if not w:
        return None
    if w not in BY_SPELLING:
        raise LookupError(w)
    return BY_SPELLING[w]


def _expected(unit: Unit, per: str | None) -> str:
    """The forms an answer may take for ``unit``: the number alone, or with one of the units of
    its dimension (a count also takes 個)."""
    name = unit_name(unit, per)
    alone = (pick(f"write a number alone (read in {name})", spaced("請只寫數字（以", name, "計）"))
             if name else pick("write a number alone (a fraction, such as -0.25)",
                               "請只寫數字（比例，例如 -0.25）"))
    names = [unit_name(u, per) for u in UNITS if u.dimension == unit.dimension and u.symbol]
    if unit.dimension in COUNTS:
        names.append("個")
    return pick(f"{alone}, or a number with a unit: {', '.join(names)}",
                f"{alone}，或寫數字加上單位：{'、'.join(names)}")


def _dimension(unit: Unit) -> str:
    return text(DIMENSIONS[unit.dimension])


def _unreadable(answer: str, unit: Unit, per: str | None) -> Unreadable:
    return Unreadable(pick(f"could not read {_short(answer)} as {_dimension(unit)}: "
                           f"{_expected(unit, per)}",
                           spaced("無法把", _short(answer), "讀成", _dimension(unit), "：",
                                  _expected(unit, per))))


# ---------------------------------------------------------------------------- what was read

_readings: ContextVar[list[str] | None] = ContextVar("readings", default=None)


@contextmanager
def readings():
    """Collect the notes ("read 26 ms as 0.026 s") of the quantities read inside the block."""
    notes: list[str] = []
    token = _readings.set(notes)
    try:
        yield notes
    finally:
        _readings.reset(token)


def _note(written: str, read: Unit | None, value: float, unit: Unit, per: str | None) -> None:
    notes = _readings.get()
    if notes is None:
        return
    if read is unit or (read is None and not unit.symbol):
        notes.append(pick(f"read {_with_unit(written, unit, per)}",
                          spaced("讀到", _with_unit(written, unit, per))))
        return
    source = _with_unit(written, read, per) if read else written
    target = _with_unit(shown(value), unit, per)
    notes.append(pick(f"read {source} as {target}", spaced("把", source, "讀作", target)))


# ---------------------------------------------------------------------------- quantities

def quantity(answer, unit: str, per: str | None = None) -> float:
    """``answer`` as a number of ``unit`` (a symbol of :data:`UNITS`: ``"s"``, ``"MiB"``,
    ``"tok/s"``, ``"tokens"``...). A bare number (or a string without a unit) is read in
    ``unit``; another unit of the same dimension is converted; a count's generic counters
    (個, 次) are read as ``unit``. A unit of another dimension, an unknown unit or a text that
    is no number is :class:`Unreadable`, saying what was read and what form is expected. Each
    reading leaves a note for :func:`readings`."""
    want = BY_SYMBOL[unit]
    if isinstance(answer, str):
        value, written, read = _parse(answer, want, per)
    else:
        value, read = as_number(answer), None
        written = shown(value)
    if read is not None and read.dimension != want.dimension:
        raise Unreadable(pick(
            f"read {_with_unit(written, read)} as {_dimension(read)}, but the question asks for "
            f"{_dimension(want)}: {_expected(want, per)}",
            spaced("把", _with_unit(written, read), "讀成", _dimension(read), "，但這題問的是",
                   _dimension(want), "：", _expected(want, per))))
    converted = value * (read.scale / want.scale if read else 1.0)
    _note(written, read, converted, want, per)
    return converted


def _parse(answer: str, want: Unit, per: str | None) -> tuple[float, str, Unit | None]:
    """(value, the number as written, the unit read, None for none) of a written answer."""
    s = tidy(answer)
    if s.lower() in ZERO:
        return 0.0, "0", None
    per_second = s.startswith("每秒")                 # 每秒 96 個 token
    parts = split_number(s.removeprefix("每秒").strip())
    if parts is None:
        raise _unreadable(answer, want, per)
    value, written, words = parts
    if per_second:
        words = f"{words}/s"
    if words.lower() in COUNTERS and want.dimension in COUNTS:
        return value, written, None
    try:
        return value, written, read_unit(words, per)
    except LookupError:
        raise _unreadable(answer, want, per) from None


def close(x, want: float, rel: float = 1e-6, abs_: float = 0.0) -> bool:
    """Whether the number ``x`` is ``want`` within ``rel`` (relative) or ``abs_``."""
    return abs(as_number(x) - want) <= max(abs_, rel * abs(want))
