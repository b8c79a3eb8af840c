"""``LABKIT_LANG`` and ``LABKIT_QUICK`` holding a value labkit cannot read: the one line that
says so, naming the variable and the values it accepts (:func:`unreadable_setting`), and
what each entry point does with it. The ``labkit`` command prints the line and stops before
any command starts; a notebook's kernel, which has nothing to exit, prints it with the
default it goes on with and sets that default (:func:`fall_back_to_defaults`), so the banner,
``check()`` and every cell after them run instead of raising.
"""

from __future__ import annotations

import os
import sys

from ..lang.choice import ENV_LANG, lang
from ..lang.i18n import pick
from .runenv import ENV_QUICK, FALSE_WORDS, TRUE_WORDS, quick


def _problem() -> tuple[str, str] | None:
    """(the variable, the line) of the first of ``LABKIT_LANG``, ``LABKIT_QUICK`` that labkit
    cannot read, else None."""
    try:
        lang()
    except ValueError as exc:        # the language is unknown: say it in English
        return ENV_LANG, f"labkit: {exc}"
    try:
        quick()
    except ValueError as exc:
        value = os.environ.get(ENV_QUICK)
        return ENV_QUICK, pick(
            f"labkit: {exc}",
            f"labkit：{ENV_QUICK}={value!r} 不是開關的值：開是 {'、'.join(TRUE_WORDS)}；"
            f"關是 {'、'.join(w for w in FALSE_WORDS if w)} 或空白（大小寫都可以）")
    return None


def unreadable_setting() -> str | None:
    """The one line to print when ``LABKIT_LANG`` or ``LABKIT_QUICK`` holds a value labkit
    cannot read (naming the variable and the values it accepts), else None."""
    found = _problem()
    return found[1] if found else None


def fall_back_to_defaults(file=None) -> list[str]:
    """For a notebook's kernel: each unreadable setting is printed (to ``file``, stderr by
    default) as its one line and the default labkit goes on with, and removed from this
    process's environment, so that it takes its default here and in every process started
    from here (English; quick mode off). Returns the lines printed (none when both read)."""
    printed = []
    while (found := _problem()) is not None:
        variable, line = found
        del os.environ[variable]     # unset: the default, which lang() and quick() then read
        if variable == ENV_LANG:
            line += " (going on in en)"
        else:
            line += pick(" (going on with quick mode off)", "（先以快速模式關閉繼續）")
        print(line, file=file or sys.stderr)
        printed.append(line)
    return printed
