"""Chinese text in matplotlib plots: find a CJK font, fall back to it, or say how to get one.

matplotlib's default font (DejaVu Sans) has no Chinese glyphs: a title such as 「吞吐與槽位數」
comes out as empty boxes with a "Glyph ... missing from font" warning. :func:`setup` finds a
font with Traditional Chinese glyphs among those installed (no path is written here: it asks
matplotlib, and the system's font folders, for fonts by name), then adds it at the end of
``font.family``, so Latin text looks as before and each Chinese glyph comes from the CJK font
(matplotlib falls back glyph by glyph across ``font.family`` since 3.6).

With no CJK font installed, :func:`setup` says once how to install one and returns None;
plots should then keep English labels. :func:`label` does that choice for a caller::

    from labkit.lang import fonts
    fonts.setup()
    ax.set_title(fonts.label("Throughput by slot count", "不同槽位數的吞吐"))

Debian/Ubuntu: ``apt-get install fonts-noto-cjk``; Fedora: ``dnf install
google-noto-sans-cjk-fonts``; conda: ``conda install -c conda-forge font-noto-sans-cjk``; macOS
and Windows ship one (PingFang TC, Microsoft JhengHei).
"""

from __future__ import annotations

import re
import sys

# Preferred families, Traditional Chinese (Taiwan) shapes first, then any CJK font that has
# the Traditional Chinese characters the workbook uses.
PREFERRED = (
    "Noto Sans CJK TC", "Noto Sans TC", "Source Han Sans TC", "Source Han Sans TW",
    "Microsoft JhengHei", "PingFang TC", "Heiti TC", "Apple LiGothic",
    "Noto Sans CJK HK", "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK KR",
    "Source Han Sans", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "AR PL UMing TW",
    "Droid Sans Fallback", "Noto Serif CJK TC",
)
# A file whose name looks like one of these may hold a CJK font (checked before loading it).
_FILE_HINT = re.compile(r"cjk|sourcehan|han ?sans|wqy|wenquan|uming|ukai|jhenghei|msjh|pingfang|"
                        r"heiti|notosanstc|notoseriftc|droidsansfallback", re.I)
PROBE = "連續批次槽位吞吐首字等待"    # characters a Chinese plot of this workbook needs

_state: dict = {}


def _has_glyphs(family: str, text: str = PROBE) -> bool:
    from matplotlib import font_manager as fm
    try:
        path = fm.findfont(fm.FontProperties(family=family), fallback_to_default=False)
        font = fm.get_font(path)
    except (ValueError, RuntimeError, OSError):
        return False
    return all(font.get_char_index(ord(c)) for c in text)


def _known_families() -> set[str]:
    from matplotlib import font_manager as fm
    return {f.name for f in fm.fontManager.ttflist}


def _register_system_cjk_files() -> None:
    """Add to matplotlib the system font files whose names suggest CJK (matplotlib's font
    cache may predate the font's installation)."""
    import os
    from matplotlib import font_manager as fm
    known = {f.fname for f in fm.fontManager.ttflist}
    # The system's font folders, listed directly (not through fc-list: no process started).
    folders = [*fm.X11FontDirectories, *fm.OSXFontDirectories,
               os.path.join(os.environ.get("WINDIR", "C:\\Windows"), "Fonts"),
               os.path.expanduser("~/.local/share/fonts"), os.path.expanduser("~/.fonts")]
    folders = [d for d in dict.fromkeys(folders) if os.path.isdir(d)]
    for path in fm.findSystemFonts(fontpaths=folders) if folders else []:
        if path not in known and _FILE_HINT.search(path.replace("-", "").replace("_", "")):
            try:
                fm.fontManager.addfont(path)
            except (RuntimeError, OSError, ValueError):
                pass


def find() -> str | None:
    """The family name of an installed font with the workbook's Chinese characters, or None."""
    families = _known_families()
    if not any(f in families for f in PREFERRED):
        _register_system_cjk_files()
        families = _known_families()
    for fam in PREFERRED:
        if fam in families and _has_glyphs(fam):
            return fam
    for fam in sorted(families):                      # any other font that has the glyphs
        if re.search(r"CJK|TC|Han|Hei|Ming|Kai|Gothic", fam) and _has_glyphs(fam):
            return fam
    return None


def setup(quiet: bool = False) -> str | None:
    """Make matplotlib draw Chinese: the CJK family now in use, or None (then say once, unless
    ``quiet``, how to install one). Calling it again is cheap and changes nothing."""
    if "family" not in _state:
        _state["family"] = find()
    fam = _state["family"]
    if fam is None:
        if not quiet and not _state.get("told"):
            from .i18n import t
            print(f"labkit.lang.fonts: {t('fonts.install')}", file=sys.stderr)
            _state["told"] = True
        return None
    import matplotlib as mpl
    # matplotlib falls back across the entries of font.family (a generic name such as
    # "sans-serif" counts as one font): the CJK family goes last, so Latin text keeps its font.
    family = list(mpl.rcParams["font.family"])
    if fam not in family:
        mpl.rcParams["font.family"] = family + [fam]
    sans = list(mpl.rcParams["font.sans-serif"])
    if fam not in sans:
        mpl.rcParams["font.sans-serif"] = sans + [fam]
    return fam


def available() -> bool:
    """True when matplotlib can draw Chinese (after :func:`setup`)."""
    return setup(quiet=True) is not None


def label(english: str, chinese: str) -> str:
    """The label to draw: ``chinese`` when the workbook's language is Traditional Chinese
    (LABKIT_LANG=zh-TW) and a CJK font is installed, else ``english``."""
    from .i18n import language
    if language() == "zh-TW" and setup() is not None:
        return chinese
    return english
