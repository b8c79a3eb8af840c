"""Start and stop servers for measurements: one config object in, a running server out.

    from labkit.server.launch import ServerConfig, launch
    with launch(ServerConfig(n_ctx=16384, n_slots=4, kv_unified=False)) as srv:
        print(srv.base_url, srv.facts)          # facts parsed from the startup log
        print(srv.props()["total_slots"])

Four kinds of server, all started the same way, as a subprocess on a free loopback port:

- ``labkit``: labkit's own continuous-batching slot server (``python -m labkit.server``);
- ``xllamacpp``: llama.cpp's real llama-server from the ``xllamacpp`` wheel (the reference);
- ``llama-server``: an external llama-server binary (``binary=`` path, or found on PATH);
- ``llama_cpp.server``: llama-cpp-python's bundled server, which answers one request at a
  time (the serial baseline).

The server's output goes to a log file, never into a notebook cell; the log's first line is
the command, with the API key shown as ``***`` (:func:`labkit.settings.masked_argv`). The process and its
children are stopped when the ``with`` block ends, on error, at interpreter exit (which
includes a Jupyter kernel shutting down), and, on Linux, when the parent process dies
abruptly (even by SIGKILL): every server is started from one launcher thread that lives as
long as the process, so the kernel's parent-death signal follows the process, not the thread
that happened to call :func:`start`.

A server that exits while starting is reported at once (:class:`ServerFailedToStart`), with
the reason read from its log: the first line it logged at error level.
"""

from __future__ import annotations

import atexit
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from .. import settings
from ..lang.i18n import pick
from ..settings import ENGINE, SERVER, settings_fields

KINDS = ("labkit", "xllamacpp", "llama-server", "llama_cpp.server")


class ServerFailedToStart(RuntimeError):
    """The server exited or did not become healthy in time. The message names the reason (from
    the log) and ends with the log's last lines; ``returncode`` is None when it timed out."""

    def __init__(self, message: str, *, reason: str | None = None,
                 returncode: int | None = None, elapsed_s: float = 0.0,
                 log_path: Path | None = None):
        super().__init__(message)
        self.reason, self.returncode, self.elapsed_s = reason, returncode, elapsed_s
        self.log_path = log_path


# llama-cpp-python's bundled server has flags of its own; these are the settings it takes.
_LLAMA_CPP_SERVER_FLAGS = {"n_ctx": "--n_ctx", "n_gpu_layers": "--n_gpu_layers",
                           "n_batch": "--n_batch", "n_threads": "--n_threads",
                           "alias": "--model_alias"}


@settings_fields(ENGINE, SERVER, frozen=True)
class ServerConfig:
    """Everything that defines a server run: which server (``kind``), then every engine and
    server setting of :data:`labkit.settings.TABLE` as a keyword (``n_ctx``, ``n_slots``,
    ``alias``, ...), checked here, before any process starts. :meth:`args` turns them into
    llama-server's flags."""

    kind: str = "labkit"
    binary: str | None = None           # for kind="llama-server"
    extra_args: tuple[str, ...] = ()
    log_dir: str | None = None          # default: a fresh temporary folder
    startup_timeout_s: float = 180.0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown server kind {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.kind != "labkit":
            settings.refuse_labkit_only(self, self.kind)
        else:
            settings.refuse_llama_server_only(self)
        object.__setattr__(self, "extra_args", tuple(self.extra_args))

    @property
    def label(self) -> str:
        kv = {None: "default", True: "unified", False: "split"}[self.kv_unified]
        return f"{self.kind}-c{self.n_ctx}-np{self.n_slots}-{kv}"

    def with_(self, **changes) -> "ServerConfig":
        return replace(self, **changes)

    def args(self, model_path: str, port: int) -> list[str]:
        """The command-line flags, in llama-server's names (llama-cpp-python's for its own
        server). The launcher always listens on loopback with /metrics and /slots on."""
        given = settings.values(self, ENGINE, SERVER)
        given.pop("model")
        if self.kind == "llama_cpp.server":
            a = ["--model", model_path, "--host", "127.0.0.1", "--port", str(port)]
            for name, flag in _LLAMA_CPP_SERVER_FLAGS.items():
                if given.get(name) is not None:
                    a += [flag, str(given[name])]
            return a + list(self.extra_args)
        given.update(host="127.0.0.1", port=port, metrics=True, slots_endpoint=True)
        return (["-m", model_path] + settings.to_argv(given, llama_server=self.kind != "labkit")
                + list(self.extra_args))

    @property
    def health_path(self) -> str:
        """llama-cpp-python's server has no /health; its model list answers once it is ready."""
        return "/v1/models" if self.kind == "llama_cpp.server" else "/health"

    def command(self, model_path: str, port: int) -> list[str]:
        if self.kind == "labkit":
            head = [sys.executable, "-m", "labkit.server"]
        elif self.kind == "xllamacpp":
            head = [sys.executable, "-m", "labkit.server.reference"]
        elif self.kind == "llama_cpp.server":
            head = [sys.executable, "-m", "llama_cpp.server"]
        else:
            binary = self.binary or shutil.which("llama-server")
            if not binary:
                raise FileNotFoundError(pick(
                    "no llama-server binary: pass ServerConfig(binary=PATH) or put it on PATH",
                    "找不到 llama-server 執行檔：請傳入 ServerConfig(binary=PATH)，或把它放進 PATH"))
            head = [binary]
        return head + self.args(model_path, port)


# Startup facts, read from the log the way the seed tutorial reads them by eye.
_FACTS = {
    "n_ctx": re.compile(r"\bn_ctx\s*=\s*(\d+)"),
    "n_ctx_seq": re.compile(r"\bn_ctx_seq\s*=\s*(\d+)"),
}
_SLOTS_LINE = re.compile(
    r"initializing, n_slots = (\d+), n_ctx_slot = (\d+), kv_unified = '(true|false)'")
# llama.cpp's load_tensors line, in every build that can offload (a CPU build prints none).
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")


def startup_facts(server, wait_s: float = 3.0) -> dict:
    """The startup facts of a server that has just answered its health check. llama-server
    writes its log from a thread of its own, so its slots line may reach the file a moment
    after /health says ok: wait up to ``wait_s`` for it (llama_cpp.server writes none)."""
    deadline = time.monotonic() + wait_s
    while True:
        facts = parse_startup_log(server.log_text())
        if ("n_slots" in facts or server.config.kind == "llama_cpp.server"
                or time.monotonic() >= deadline):
            return facts
        time.sleep(0.05)


def parse_startup_log(text: str) -> dict:
    """n_ctx, n_ctx_seq, n_slots, n_ctx_slot and kv_unified from a llama-server style log.
    Keys whose line is absent are left out."""
    facts: dict = {}
    for key, rx in _FACTS.items():
        found = rx.findall(text)
        if found:
            facts[key] = int(found[0])
    m = _SLOTS_LINE.search(text)
    if m:
        facts.update(n_slots=int(m.group(1)), n_ctx_slot=int(m.group(2)),
                     kv_unified=m.group(3) == "true")
    return facts


def offloaded_layers(text: str) -> dict:
    """The layers llama.cpp put on the GPU (``gpu_layers``, of ``n_layers_offloadable``), from
    its load_tensors line in a startup log; {} when there is none (a CPU build)."""
    m = _OFFLOADED.search(text)
    return {"gpu_layers": int(m.group(1)), "n_layers_offloadable": int(m.group(2))} if m else {}


# An error line: llama.cpp's log ("0.00.019.540 E gguf_init_from_reader: ...") or labkit's
# ("2026-01-01 12:00:00,000 E labkit.server: ...").
_ERROR_LINE = re.compile(r"^(?:\d+\.\d+\.\d+\.\d+|\S+ \S+) E (?:labkit\.\S+: )?(.*)$")
_SAYS_ERROR = re.compile(r"error|failed|exception", re.IGNORECASE)


def failure_reason(log: str) -> str | None:
    """Why a server failed to start, from its log: the first line it logged at error level (the
    cause; the error lines after it are its consequences, such as llama-server's "exiting due to
    model loading error"); in a log without levels, the last line that says error (a Python
    traceback's exception, argparse's usage error). None when no line does."""
    lines = log.splitlines()
    for line in lines:
        m = _ERROR_LINE.match(line.strip())
        if m:
            return " ".join(m.group(1).split())
    said = [ln.strip() for ln in lines[1:] if _SAYS_ERROR.search(ln)]  # line 0: the command
    return said[-1] if said else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    """Linux: ask the kernel to SIGTERM the child when its parent dies (even by SIGKILL). The
    kernel's "parent" is the thread that forked the child, so :class:`_Spawner` forks every
    server from a thread that lives as long as the process."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


class _Spawner:
    """Starts subprocesses from one daemon thread that never exits, so that the parent-death
    signal fires when this process dies, not when a short-lived thread that called
    :func:`start` (a worker, a notebook widget's callback) ends."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, cmd: list[str], **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():   # also after a fork
                self._thread = threading.Thread(target=self._serve, name="labkit-spawner",
                                                daemon=True)
                self._thread.start()
        job = {"done": threading.Event()}
        self._jobs.put((cmd, kwargs, job))
        interrupted = None
        while not job["done"].is_set():
            try:
                job["done"].wait()
            except BaseException as exc:   # Ctrl-C: let the start finish, then undo it
                interrupted = exc
        if interrupted is not None:
            if "process" in job:
                _kill_group(job["process"])
            raise interrupted
        if "error" in job:
            raise job["error"]
        return job["process"]

    def _serve(self) -> None:
        while True:
            cmd, kwargs, job = self._jobs.get()
            try:
                job["process"] = subprocess.Popen(cmd, preexec_fn=_die_with_parent, **kwargs)
            except BaseException as exc:   # handed to the caller, raised there
                job["error"] = exc
            finally:
                job["done"].set()


_spawner = _Spawner()


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


_live: set["RunningServer"] = set()
_live_lock = threading.Lock()


@atexit.register
def stop_all() -> None:
    """Stop every server this process started and has not stopped yet."""
    with _live_lock:
        servers = list(_live)
    for s in servers:
        s.stop()


@dataclass(eq=False)
class RunningServer:
    config: ServerConfig
    process: subprocess.Popen
    port: int
    log_path: Path
    model_path: str
    command: list[str]
    facts: dict = field(default_factory=dict)
    offload: dict = field(default_factory=dict)     # offloaded_layers() of its startup log

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def get(self, path: str, **kw) -> httpx.Response:
        return httpx.get(self.base_url + path, timeout=kw.pop("timeout", 30), **kw)

    def props(self) -> dict:
        r = self.get("/props")
        r.raise_for_status()
        return r.json()

    def slots(self) -> list:
        r = self.get("/slots")
        r.raise_for_status()
        return r.json()

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_healthy(self, timeout_s: float) -> None:
        """Return when the health path answers 200; raise :class:`ServerFailedToStart` as soon
        as the process exits, or after ``timeout_s``."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if not self.alive():
                code = self.process.returncode
                self._failed(pick(f"exited with code {code}", f"結束了，結束碼 {code}"), t0, code)
            try:
                if self.get(self.config.health_path, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        self._failed(pick(f"was not healthy after {timeout_s:.0f} s",
                          f"過了 {timeout_s:.0f} 秒仍未就緒"), t0, None)

    def _failed(self, what: str, t0: float, returncode: int | None):
        elapsed = time.monotonic() - t0
        reason = failure_reason(self.log_text())
        raise ServerFailedToStart(
            pick(f"{self.config.kind} server {what} ({elapsed:.1f} s after it started)"
                 f"{': ' + reason if reason else ''}\nlog {self.log_path}, last lines:\n",
                 f"{self.config.kind} 伺服器{what}（啟動後 {elapsed:.1f} 秒）"
                 f"{'：' + reason if reason else ''}\n日誌 {self.log_path}，最後幾行：\n")
            + self.log_tail(), reason=reason, returncode=returncode,
            elapsed_s=elapsed, log_path=self.log_path)

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM the server's process group; SIGKILL whatever is left after timeout_s."""
        with _live_lock:
            _live.discard(self)
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.process.wait(5)
        # Children that outlived their parent in the same group.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def start(config: ServerConfig) -> RunningServer:
    """Start a server and wait until /health answers 200. Call .stop() when done
    (or use :func:`launch`, which always does)."""
    from ..engine.devices import resolve_to_load
    model_path = str(resolve_to_load(config.model, config.n_gpu_layers))
    log_dir = Path(config.log_dir or tempfile.mkdtemp(prefix="labkit-server-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = log_dir / f"{config.label}-{port}.log"
    cmd = config.command(model_path, port)
    log = open(log_path, "wb")
    log.write((" ".join(settings.masked_argv(cmd)) + "\n").encode())   # no API key in a log
    log.flush()
    try:
        proc = _spawner.popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, start_new_session=True)
    finally:
        log.close()
    server = RunningServer(config, proc, port, log_path, model_path, cmd)
    with _live_lock:
        _live.add(server)
    try:
        server.wait_healthy(config.startup_timeout_s)
    except BaseException:
        server.stop()
        raise
    server.facts = startup_facts(server)
    server.offload = offloaded_layers(server.log_text())
    return server


@contextmanager
def launch(config: ServerConfig | None = None, **changes):
    """``with launch(cfg) as srv:`` starts a server and always stops it."""
    config = (config or ServerConfig()).with_(**changes) if changes else (config or ServerConfig())
    server = start(config)
    try:
        yield server
    finally:
        server.stop()
