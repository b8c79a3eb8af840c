"""Writes that cannot half-happen: every file labkit writes for a learner goes through here.

A file is written whole under a temporary name in its own folder, flushed to the disk
(``fsync``), then renamed over the old one (``os.replace``, atomic on one file system). A
write that fails (a full disk, a quota, Ctrl-C) removes the temporary file and leaves the
file that was there before, byte for byte; a reader sees the old file or the new one, never
a part of either::

    write_atomic(folder / "recipe.json", text)
    write_csv(folder / "worksheet.csv", df, index=False)
    write_atomic(folder / "plots" / "timeline.png", figure_bytes(fig, dpi=110))

The error of a failed write names the file that was to be written (not the temporary one),
with the system's reason (``[Errno 28] No space left on device: 'results/recipe.json'``).
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from pathlib import Path

#: How a temporary file is named: hidden, beside its target, ending in this.
TMP_SUFFIX = ".tmp"


def temporary_name(path: Path) -> Path:
    """A name no other writer uses, in ``path``'s folder: ``.NAME.PID.RANDOM.tmp``."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}")


def write_atomic(path: str | os.PathLike, data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` (text is encoded as ``encoding``) to ``path`` whole or not at all.
    Returns ``path``; raises :class:`OSError` naming ``path`` when it could not be written,
    and then ``path`` is as it was."""
    path = Path(path)
    body = data.encode(encoding) if isinstance(data, str) else bytes(data)
    tmp = temporary_name(path)
    try:
        # Created exclusively, with the mode an ordinary open() would give (the umask's).
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with open(fd, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    _sync_folder(path.parent)
    return path


def write_csv(path: str | os.PathLike, frame, **to_csv) -> Path:
    """A pandas DataFrame as CSV (``frame.to_csv(**to_csv)``), written atomically."""
    return write_atomic(path, frame.to_csv(**to_csv))


def figure_bytes(fig, fmt: str = "png", **savefig) -> bytes:
    """A matplotlib figure drawn into memory (``fig.savefig(..., format=fmt, **savefig)``)."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, **savefig)
    return buf.getvalue()


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (the folder's entry); quietly skipped where a file
    system cannot sync a folder."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
