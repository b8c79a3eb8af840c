"""The figures a notebook has shown the learner in this kernel: every number in the lines it
printed through ``nb.say`` and in the tables it showed through ``nb.show``, since its banner
(every notebook's first cell, which calls :func:`forget`).

An open question about the learner's own results compares the numbers of an answer with these
(:func:`matching`): a number written to some precision matches a figure that rounds to it.
This module imports the standard library only."""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

_shown: set[float] = set()

#: A number as people write one: digits, thousands separated by commas, a decimal part; not
#: the digits inside a name (p90, rtx4090, q8_0), and without its sign.
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Written:
    value: float
    text: str
    half_step: float      # half a unit of the last digit written: how far rounding can move it

    def matches(self, figure: float) -> bool:
        return abs(self.value - figure) <= self.half_step * (1 + 1e-9)


def numbers_in(text: str) -> list[Written]:
    """The numbers in ``text`` (full-width digits too), each with the precision it was written
    to: "57" is 56.5 to 57.5, "7,500" 7,450 to 7,550, "0.85" 0.845 to 0.855."""
    found = []
    for m in NUMBER.finditer(unicodedata.normalize("NFKC", text)):
        whole, decimals = m[1].replace(",", ""), m[2] or ""
        if decimals:
            step = 10.0 ** -len(decimals)
        else:
            step = 10.0 ** (len(whole) - len(whole.rstrip("0"))) if whole.strip("0") else 1.0
        found.append(Written(float(f"{whole}.{decimals or 0}"), m[0], step / 2))
    return found


def record_text(text: str) -> None:
    """Keep the numbers of a line the notebook printed."""
    _shown.update(w.value for w in numbers_in(text))


def record_table(table) -> None:
    """Keep the numeric cells of a pandas DataFrame or Series the notebook showed (anything
    else is left alone)."""
    if hasattr(table, "select_dtypes"):
        values = table.select_dtypes("number").to_numpy().ravel()
    elif getattr(getattr(table, "dtype", None), "kind", "?") in ("i", "u", "f"):
        values = table.to_numpy()
    else:
        return
    _shown.update(abs(float(v)) for v in values
                  if v is not None and not _missing(v) and math.isfinite(v))


def _missing(v) -> bool:
    """A pandas missing value (``pd.NA`` of a nullable column, which has no float)."""
    return type(v).__name__ == "NAType"


def forget() -> None:
    """A new notebook starts: no figure shown yet."""
    _shown.clear()


def shown() -> frozenset[float]:
    return frozenset(_shown)


def matching(written: list[Written]) -> tuple[Written, float] | None:
    """The first written number that a figure shown rounds to, with that figure; None when no
    number matches."""
    for w in written:
        for figure in sorted(_shown):
            if w.matches(figure):
                return w, figure
    return None
