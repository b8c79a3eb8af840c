"""What the routes share: the engine (once loaded) and the server's settings."""

from __future__ import annotations

import logging
import threading
import time

from ..engine import Engine, EngineConfig

log = logging.getLogger("labkit.server")


class ServerState:
    """The engine (once loaded) and the settings the routes need."""

    def __init__(self, config: EngineConfig, alias: str, metrics: bool = True,
                 slots: bool = True, api_key: str | None = None):
        self.config, self.alias = config, alias
        self.metrics_enabled, self.slots_enabled, self.api_key = metrics, slots, api_key
        self.engine: Engine | None = None
        self.load_error: str | None = None
        self.loaded = threading.Event()
        self.created = int(time.time())
        self.n_vocab = 0
        self.eog: list[int] = []    # the end-of-generation tokens (ignore_eos bans them)
        self._close_lock = threading.Lock()

    def load(self) -> None:
        llama_lines = _LineCollector()
        llama_log = logging.getLogger("labkit.engine.llama")
        llama_log.addHandler(llama_lines)
        try:
            self.engine = Engine(self.config)
            self.n_vocab, self.eog = self.engine.n_vocab, self.engine.eog
            log.info("model loaded: %s", self.config.model_path)
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            cause = llama_lines.first_error()
            if cause:
                self.load_error += f" (llama.cpp: {cause})"
            log.error("failed to load the model: %s", self.load_error)
        finally:
            llama_log.removeHandler(llama_lines)
            self.loaded.set()

    def close(self) -> None:
        """Stop the engine: requests still running end with finish_reason 'cancelled'."""
        self.loaded.wait()
        with self._close_lock:
            if self.engine is not None:
                self.engine.close()
                self.engine = None
                log.info("engine stopped")


class _LineCollector(logging.Handler):
    """Keeps the lines llama.cpp logs while the model loads, to name the cause of a failure."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def first_error(self) -> str | None:
        """llama.cpp's first line that reports an error: the cause (later ones are its
        consequences, such as "failed to load model")."""
        words = ("error", "failed", "invalid", "must be", "not within")
        return next((ln.strip() for ln in self.lines if any(w in ln.lower() for w in words)),
                    None)
