"""The run environment: quick mode, where results go, and how many CPU threads to use.

Every switch read from the environment is parsed here, once, so a notebook and
``labkit bench`` always agree on what ``LABKIT_QUICK=off`` means.

- :func:`flag`: the one parser of on/off words.
- :func:`quick`, :func:`pick`: quick mode (``LABKIT_QUICK``, set by the test suite)
  shrinks workloads so everything runs in seconds on two CPU cores.
- :func:`results_dir`, :func:`log_to_file`: where runs write what they record.
- :func:`usable_cores`, :func:`server_threads_beside_client`: thread counts, one
  function per meaning.

This module imports the standard library only, so anything in labkit may import it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

ENV_QUICK = "LABKIT_QUICK"
ENV_RESULTS = "LABKIT_RESULTS"

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off", "")


# ---------------------------------------------------------------------------- switches

def flag(text: str | None, variable: str = "the value") -> bool:
    """Read an on/off word: ``1``, ``true``, ``yes``, ``on`` are True; ``0``, ``false``,
    ``no``, ``off`` and the empty string (or None, for an unset variable) are False; case
    and surrounding spaces do not matter. Anything else is a ValueError that names
    ``variable``, the value and the accepted words."""
    word = (text or "").strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"{variable}={text!r} is not an on/off word: on is "
                     f"{', '.join(TRUE_WORDS)}; off is {', '.join(w for w in FALSE_WORDS if w)} "
                     f"or empty (any case)")


def quick() -> bool:
    """True when ``LABKIT_QUICK`` is on (see :func:`flag`); unset means off."""
    return flag(os.environ.get(ENV_QUICK), ENV_QUICK)


def pick(quick_value, full_value):
    """``quick_value`` in quick mode, else ``full_value``."""
    return quick_value if quick() else full_value


# ---------------------------------------------------------------------------- files

def results_dir() -> Path:
    """Where runs write what they record (``$LABKIT_RESULTS``, else ``./results``), created
    if missing. ``results/`` is ignored by git, so recipes and logs stay local."""
    p = Path(os.environ.get(ENV_RESULTS) or "results")
    p.mkdir(parents=True, exist_ok=True)
    return p


_log_handler: logging.FileHandler | None = None


def log_to_file(name: str = "labkit.log") -> Path:
    """Send labkit's own log (the in-process engine's startup lines, its warnings when the
    KV pool runs out) to the file ``name`` under :func:`results_dir`, never into a notebook
    cell. Calling it again with the same file changes nothing; with another file, the log
    moves there."""
    global _log_handler
    path = (results_dir() / name).resolve()
    logger = logging.getLogger("labkit")
    if _log_handler is not None and Path(_log_handler.baseFilename) == path:
        return path
    if _log_handler is not None:
        logger.removeHandler(_log_handler)
        _log_handler.close()
    _log_handler = logging.FileHandler(path, encoding="utf-8")
    _log_handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger.addHandler(_log_handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return path


# ---------------------------------------------------------------------------- CPU threads

def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, which a container or
    ``taskset`` may make smaller than the machine), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                     # no affinity call on this platform (macOS)
        return max(1, os.cpu_count() or 1)


def server_threads_beside_client() -> int:
    """Threads for a server whose client runs on the same machine: the usable cores minus
    one, at least 1. llama.cpp's worker threads spin while they wait for each other, so a
    thread that shares its core with the benchmark client or the HTTP front slows every
    step; leaving that core free matters more than the extra thread gains."""
    return max(1, usable_cores() - 1)


def cpu_model() -> str:
    """The CPU's name as the system gives it ("AMD EPYC"), or "" where it gives none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""
