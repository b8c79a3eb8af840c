"""Which language labkit speaks: ``LABKIT_LANG`` (``en``, the default, or ``zh-TW``,
Traditional Chinese as written in Taiwan), read here and nowhere else. A notebook's language
line sets it (:func:`use_language`) for the kernel and every process it starts;
:mod:`labkit.lang.i18n` chooses its words by it.

This module imports the standard library only, so anything in labkit may import it.
"""

from __future__ import annotations

import os

ENV_LANG = "LABKIT_LANG"

LANGUAGES = ("en", "zh-TW")
_LANG_WORDS = {"en": "en", "english": "en", "zh-tw": "zh-TW", "zh": "zh-TW", "zh-hant": "zh-TW",
               "zh-hant-tw": "zh-TW", "tw": "zh-TW", "中文": "zh-TW", "繁體中文": "zh-TW"}


def lang() -> str:
    """The language of labkit's messages: ``"en"`` (the default, also for an unset or empty
    ``LABKIT_LANG``) or ``"zh-TW"``. ``zh``, ``zh_TW``, ``zh-Hant`` and ``tw`` (any case) mean
    zh-TW, ``en_US.UTF-8``-style values their language; anything else is a ValueError naming
    the accepted values."""
    text = (os.environ.get(ENV_LANG) or "").strip()
    if not text:
        return "en"
    word = text.split(".")[0].replace("_", "-").lower()
    if word in _LANG_WORDS:
        return _LANG_WORDS[word]
    if word.startswith("en-"):
        return "en"
    raise ValueError(f"{ENV_LANG}={text!r} is not a language labkit speaks: use "
                     f"{' or '.join(LANGUAGES)} (zh, zh_TW and zh-Hant mean zh-TW)")


def use_language(language: str) -> str:
    """Speak ``language`` from now on, in this process and in every process it starts (a
    server, ``labkit bench``): sets ``LABKIT_LANG``. Each notebook's language line calls it.
    A word :func:`lang` does not accept is a ValueError and changes nothing."""
    before = os.environ.get(ENV_LANG)
    os.environ[ENV_LANG] = language
    try:
        return lang()
    except ValueError:
        if before is None:
            del os.environ[ENV_LANG]
        else:
            os.environ[ENV_LANG] = before
        raise
