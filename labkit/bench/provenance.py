"""Which server produced a figure: the one label every live table and plot carries.

A live result says which server measured it, in one form, in both languages:

    labkit server 0.1.0 · -c 4096 -np 2 --no-kv-unified
    llama-server (xllamacpp 2026.10.11549) · -c 4096 -np 2 --no-kv-unified

- :func:`flags` is a config's flags as a learner would type them (``-c``, ``-np``, the KV mode,
  the per-slot cap, ``-ngl`` when layers go to a GPU);
- :func:`server_name` names a server kind with its version;
- :func:`label` is both, for a :class:`~labkit.server.launch.ServerConfig`;
- :func:`row_label` is the same label read back from a bench row (its ``server`` and ``flags``
  columns, which :func:`labkit.bench.runner.describe_target` fills), and :func:`caption` the
  line for a whole table or plot: every distinct label of its rows; :func:`labelled` puts the
  label in a table's first column, ``server``;
- :func:`missing` lists the labels a figure's text lacks (tests/test_provenance.py holds the
  bench plots to it).

Not every live result comes from a server. labkit's engine run in the notebook's own process
(:class:`~labkit.engine.EngineConfig`) is labelled "labkit engine 0.1.0 (llama-cpp-python
0.3.16)" with its flags, and a figure read from llama.cpp's library alone (the KV allocation of
notebook 03) "llama.cpp (llama-cpp-python 0.3.16)": the llama.cpp a result comes from is then
the one compiled into llama-cpp-python, whose version names it. A result keeps its labels in
``attrs["measured_on"]`` (a DataFrame) or ``.config`` (an engine run), and :func:`caption` reads
them there.
"""

from __future__ import annotations

import re
import shutil
from importlib.metadata import PackageNotFoundError, version

from ..lang.i18n import pick

SEP = " · "

# bench rows name their server "<kind> <version>" (runner._server_name); the label's words:
_NAMES = {"labkit": "labkit server", "xllamacpp": "llama-server (xllamacpp {v})",
          "llama-server": "llama-server ({v})", "llama_cpp.server": "llama-cpp-python server {v}"}


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def server_name(kind: str, ver: str | None = None) -> str:
    """``kind`` named with its version: "labkit server 0.1.0", "llama-server (xllamacpp
    2026.10.11549)", "llama-server (/usr/local/bin/llama-server)" for a binary."""
    if ver is None:
        ver = {"labkit": _version("labkit"), "xllamacpp": _version("xllamacpp"),
               "llama_cpp.server": _version("llama-cpp-python"),
               "llama-server": shutil.which("llama-server")}.get(kind)
    if kind not in _NAMES:
        return f"{kind} {ver}".strip() if ver else kind
    if kind == "labkit":
        return f"labkit server {ver}" if ver else "labkit server"
    return _NAMES[kind].format(v=ver or "?")


def flags(config) -> str:
    """The flags of ``config`` a lesson is about, as a learner would type them."""
    out = [f"-c {config.n_ctx}", f"-np {config.n_slots}"]
    if config.kv_unified is not None:
        out.append("--kv-unified" if config.kv_unified else "--no-kv-unified")
    if config.kv_unified_per_slot is not None:
        out.append(f"--kv-unified-per-slot {config.kv_unified_per_slot}")
    if getattr(config, "cont_batching", True) is False:
        out.append("--no-cont-batching")
    ngl = getattr(config, "n_gpu_layers", None)
    if ngl not in (None, 0, "0"):
        out.append(f"-ngl {ngl}")
    return " ".join(out)


def libllama_name() -> str:
    """The llama.cpp this process runs, the one compiled into llama-cpp-python:
    "llama.cpp (llama-cpp-python 0.3.16)"."""
    return f"llama.cpp (llama-cpp-python {_version('llama-cpp-python') or '?'})"


def engine_name() -> str:
    """labkit's engine in this process, on that llama.cpp: "labkit engine 0.1.0
    (llama-cpp-python 0.3.16)"."""
    ver = _version("labkit")
    return (f"labkit engine{' ' + ver if ver else ''} "
            f"(llama-cpp-python {_version('llama-cpp-python') or '?'})")


def label(config) -> str:
    """The server and flags of ``config``: "labkit server 0.1.0 · -c 4096 -np 2 ...". An
    :class:`~labkit.engine.EngineConfig` (no server ``kind``) is labkit's engine in this
    process: "labkit engine 0.1.0 (llama-cpp-python 0.3.16) · -c 2048 -np 4"."""
    kind = getattr(config, "kind", None)
    name = server_name(kind) if kind else engine_name()
    return f"{name}{SEP}{flags(config)}"


def row_label(row) -> str:
    """The label of one bench row (a dict or a pandas row): its ``server`` ("labkit 0.1.0",
    "xllamacpp 2026.10.11549") named as :func:`server_name` names it, and its ``flags``.
    A row without a ``server`` is refused: a live figure must say where it came from."""
    server = row.get("server") if hasattr(row, "get") else None
    if server is None or server != server or not str(server).strip():
        raise ValueError("a live result without a 'server': which server produced it is unknown")
    kind, _, ver = str(server).partition(" ")
    name = server_name(kind, ver or None) if kind in _NAMES else str(server)
    fl = row.get("flags")
    if fl is None or fl != fl or not str(fl).strip():     # rows recorded before flags were kept
        fl = " ".join(p for p in (
            f"-c {row.get('pool_n_ctx')}" if row.get("pool_n_ctx") is not None else "",
            f"-np {row.get('slots')}" if row.get("slots") is not None else "",
            {"split": "--no-kv-unified", "unified": "--kv-unified"}.get(row.get("kv_mode"), ""))
            if p)
    return f"{name}{SEP}{fl}" if fl else name


def labels(rows) -> list[str]:
    """Every distinct label of ``rows`` (a DataFrame of bench rows), in order of appearance."""
    return list(dict.fromkeys(row_label(r) for _, r in rows.iterrows()))


def servers(rows) -> list[str]:
    """Every distinct server name of ``rows``, without flags."""
    return list(dict.fromkeys(row_label(r).split(SEP)[0] for _, r in rows.iterrows()))


def measured_on(source) -> list[str]:
    """Every distinct label of ``source``, in order: a label itself (a string); a DataFrame's
    ``attrs["measured_on"]``, else its bench rows' ``server`` and ``flags``; an object's own
    ``measured_on``; an engine run's ``.config``; a config (server or engine); or a list of
    any of these. A source that names no server is refused."""
    if isinstance(source, str):
        found = [source] if source.strip() else []
    elif hasattr(source, "iterrows"):
        kept = source.attrs.get("measured_on")
        found = measured_on(kept) if kept else labels(source)
    elif isinstance(getattr(source, "measured_on", None), (str, list)):
        found = measured_on(source.measured_on)
    elif hasattr(source, "n_ctx") and hasattr(source, "n_slots"):
        found = [label(source)]
    elif getattr(source, "config", None) is not None:
        found = measured_on(source.config)
    elif isinstance(source, (list, tuple)):
        found = [lab for item in source for lab in measured_on(item)]
    else:
        raise ValueError(f"which server produced {type(source).__name__} is unknown")
    return list(dict.fromkeys(found))


def caption(source, plot: bool = False) -> str:
    """The line under a live table or plot, in the language in use: "measured on: <label>;
    <label>". Takes what :func:`measured_on` reads: bench rows, a result with its labels in
    ``attrs``, an engine run, configs. ``plot=True``: the words for a figure, in English where
    no CJK font can draw the Chinese (:func:`labkit.lang.fonts.label`)."""
    found = measured_on(source)
    if not found:
        raise ValueError("nothing to label: no rows and no configs")
    words = ("measured on: ", "量測於：")
    if plot:
        from ..lang.fonts import label as drawn
        head = drawn(*words)
    else:
        head = pick(*words)
    return head + "; ".join(_merged(found))


_NP = re.compile(r"-np (\S+)")


def _merged(found: list[str]) -> list[str]:
    """Labels that differ only in ``-np`` written once, the slot counts joined: "-np 1/2/4"."""
    groups: dict[str, list[str]] = {}
    for lab in found:
        m = _NP.search(lab)
        key = _NP.sub("-np {}", lab) if m else lab
        groups.setdefault(key, [])
        if m and m.group(1) not in groups[key]:
            groups[key].append(m.group(1))
    return [k.replace("{}", "/".join(v)) if v else k for k, v in groups.items()]


def labelled(table, rows=None):
    """``table`` (a worksheet, or any table with a ``server`` column, or one derived from
    ``rows``) with its first column ``server`` holding each line's full label. A table without
    a ``server`` column takes the caption of ``rows``; with neither, it is refused."""
    out = table.copy()
    if "server" in out.columns:
        col = [row_label(r) for _, r in out.iterrows()]
        out = out.drop(columns=["server"])
    elif rows is not None:
        col = ["; ".join(_merged(measured_on(rows)))] * len(out)
    else:
        raise ValueError("a live table without a 'server' column or rows to read it from")
    out.insert(0, "server", col)
    return out


def figure_text(fig) -> str:
    """Every piece of text a matplotlib figure shows: titles, suptitle, legends, labels."""
    parts = []
    for t in fig.findobj(lambda o: hasattr(o, "get_text") and callable(o.get_text)):
        try:
            parts.append(str(t.get_text()))
        except Exception:
            pass
    return "\n".join(parts)


def missing(fig, rows) -> list[str]:
    """The server names of ``rows`` a figure does not show (empty when it says them all)."""
    text = figure_text(fig)
    return [s for s in servers(rows) if s not in text]


__all__ = ["flags", "server_name", "engine_name", "libllama_name", "label", "measured_on",
           "row_label", "labels", "servers", "caption", "labelled", "figure_text", "missing",
           "SEP"]
