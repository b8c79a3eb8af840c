"""Every server setting, declared once.

A llama-server command line such as the seed tutorial's::

    llama-server -m model.gguf --alias local -c 16384 -np 4 --no-kv-unified -b 512 -ub 128 ...

is a list of settings. Each one is a row of :data:`TABLE`: its llama-server flag(s), its type,
its default, the values it allows, its help text, and where it lives:

- ``engine``: how the slot engine is built; a field of :class:`labkit.engine.EngineConfig`
  and of :class:`labkit.server.launch.ServerConfig`, and a flag of ``labkit serve``;
- ``server``: what the HTTP server does around the engine; a field of ``ServerConfig`` and a
  flag of ``labkit serve``;
- ``process``: where and how the process listens (host, port, log file, which endpoints are
  on); a flag of ``labkit serve`` that the launcher sets itself.

Everything else is derived from the table: the two config dataclasses (:func:`settings_fields`),
the server's argument parser (:func:`add_arguments`), the launcher's command line
(:func:`to_argv`) and the check that runs when a config is made (:func:`check_all`). A wrong
value fails at once, naming the setting, the value and what is allowed, before any process
starts. Adding a flag is one row here plus the code that uses it.

Where labkit's default differs from llama-server's on purpose, the row says so and why
(:func:`differences`). Two rows are labkit's own and have no llama-server flag: ``reserve``
and ``max_queue``.

This module imports nothing heavy, so a notebook kernel that only launches servers stays light.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .models.kv import BYTES_PER_VALUE
from .machine.runenv import flag

ENGINE, SERVER, PROCESS = "engine", "server", "process"

# llama-server's "-np auto": this many slots, sharing one unified KV pool.
AUTO_SLOTS = 4

# The KV cache types -ctk / -ctv take: the same list, in the same order, as the bytes per
# element in labkit.models.kv (one source for both).
CACHE_TYPES: tuple[str, ...] = tuple(BYTES_PER_VALUE)

FLASH_ATTN_MODES = ("on", "off", "auto")
SPLIT_MODES = ("none", "layer", "row")


class SettingError(ValueError):
    """A setting was given a value it does not allow. The message names the setting, the value
    and what is allowed."""


def resolve_slots(n_slots: int | str, kv_unified: bool | None) -> tuple[int, bool]:
    """llama-server's rule for ``-np`` and ``--kv-unified``: returns (slots, unified).

    ``-np auto`` means :data:`AUTO_SLOTS` slots sharing one unified KV pool, even with
    ``--no-kv-unified`` (llama-server turns unified KV on whenever it picks the slot count
    itself: measured in tests/differential_cases.py, "np-auto-with-no-kv-unified"); an
    explicit ``-np N`` keeps one KV stripe per slot (split) unless ``--kv-unified`` is given.

    >>> resolve_slots("auto", None), resolve_slots("auto", False), resolve_slots(4, None)
    ((4, True), (4, True), (4, False))
    """
    if n_slots == "auto":
        return AUTO_SLOTS, True
    return int(n_slots), bool(kv_unified)


# ---------------------------------------------------------------------------- value checks
# Each check takes a value as a program gives it (int, bool, str) or as a command line gives
# it (always str), and returns the value to store, or raises ValueError saying what is allowed.

def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    raise ValueError


def integer(minimum: int, maximum: int | None = None) -> Callable[[Any], int]:
    def check(value):
        n = _as_int(value)
        if n < minimum or (maximum is not None and n > maximum):
            raise ValueError
        return n
    return check


def choice(options: Iterable[str], aliases: dict | None = None) -> Callable[[Any], str]:
    options, aliases = tuple(options), dict(aliases or {})

    def check(value):
        key = value if isinstance(value, bool) else str(value).strip().lower()
        if key in aliases:
            return aliases[key]
        if key in options:
            return key
        raise ValueError
    return check


def boolean(value: Any) -> bool:
    """True/False, or one of the on/off words that labkit reads everywhere (runenv.flag)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip()
    if not word:
        raise ValueError
    try:
        return flag(word)
    except ValueError:
        raise ValueError from None


def text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError
    return value


def optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``None`` is allowed and means "not given"."""
    def opt(value):
        return None if value is None else check(value)
    return opt


def slots(value: Any) -> int | str:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return integer(1)(value)


def fraction(value: Any) -> float:
    """A number from 0 to 1 (a float, or its text)."""
    if isinstance(value, bool):
        raise ValueError
    x = float(value)
    if not 0.0 <= x <= 1.0:
        raise ValueError
    return x


def gpu_layers(value: Any) -> int:
    """A layer count, or "all"/"auto" (stored as -1: every layer, llama.cpp's own convention)."""
    if isinstance(value, str) and value.strip().lower() in ("all", "auto"):
        return -1
    return integer(-1)(value)


def only(allowed_value: Any, why: str) -> Callable[[Any], Any]:
    """A setting labkit accepts for compatibility but supports with one value only."""
    def check(value):
        v = boolean(value) if isinstance(allowed_value, bool) else str(value).strip().lower()
        if v != allowed_value:
            raise ValueError(why)
        return v
    return check


# ---------------------------------------------------------------------------- the table

SAME = object()  # llama_server_default when it equals labkit's default


@dataclass(frozen=True)
class Setting:
    """One server setting: a row of :data:`TABLE`."""

    name: str                       # the field name in EngineConfig / ServerConfig
    flags: tuple[str, ...]          # llama-server's flag(s); the first is the short one
    default: Any
    annotation: str                 # the field's type, as written in the dataclasses
    check: Callable[[Any], Any]
    allowed: str                    # what the check accepts, in words
    help: str
    scope: str = ENGINE
    off_flags: tuple[str, ...] = ()  # for yes/no settings: the flag(s) that turn it off
    labkit_only: bool = False       # llama-server has no such flag
    llama_server_only: bool = False  # labkit's server has no such thing (given: refused)
    llama_server_default: Any = SAME
    why_different: str = ""         # why labkit's default differs from llama-server's
    bench_default: Any = SAME       # `labkit bench`'s own default, in words, when it differs
    bench_why: str = ""             # why it differs
    secret: bool = False            # its value never goes into a log or a record (masked_argv)

    @property
    def is_switch(self) -> bool:
        return self.annotation.startswith("bool")

    def validate(self, value: Any) -> Any:
        """The value to store, or :class:`SettingError` naming the setting, value and allowed."""
        try:
            return self.check(value)
        except (ValueError, TypeError) as exc:
            extra = f" ({exc})" if str(exc) else ""
            raise SettingError(f"{self.name}={value!r} ({'/'.join(self.flags)}): "
                               f"allowed: {self.allowed}{extra}") from None

    def parse_cli(self, value: str) -> Any:
        """:meth:`validate` as an argparse ``type=``: a bad value becomes a usage error."""
        try:
            return self.validate(value)
        except SettingError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def argv(self, value: Any) -> list[str]:
        """The command-line words for this value ([] when it is not given)."""
        if value is None:
            return []
        if self.is_switch:
            if value:
                return [self.flags[-1]]
            return [self.off_flags[-1]] if self.off_flags else []
        if self.name == "n_gpu_layers" and value < 0:
            return [self.flags[0], "all"]
        return [self.flags[0], str(value)]


TABLE: tuple[Setting, ...] = (
    # --- engine: how the slot engine is built -------------------------------------------
    Setting("n_ctx", ("-c", "--ctx-size"), 4096, "int", integer(0),
            "an integer >= 0 (0: the model's training context)",
            "total KV cells, shared among the slots (rounded up to a multiple of 256); "
            "0: the model's training context",
            llama_server_default=0,
            why_different="llama-server's 0 takes the model's training context; labkit's 4096 "
                          "keeps a learner's first runs small and quick on a laptop CPU"),
    Setting("n_slots", ("-np", "--parallel"), "auto", "int | str", slots,
            "an integer >= 1 or 'auto'",
            f"slots: requests served at once; 'auto' means {AUTO_SLOTS} slots sharing one "
            "unified KV pool, as llama-server does"),
    Setting("kv_unified", ("-kvu", "--kv-unified"), None, "bool | None", optional(boolean),
            "True, False or None", "one KV pool shared by all slots (unified) instead of one "
            "stripe per slot (split); not given: split, except that -np auto is always unified",
            off_flags=("--no-kv-unified",)),
    Setting("kv_unified_per_slot", ("--kv-unified-per-slot",), None, "int | None",
            optional(integer(1)), "an integer >= 1, or None",
            "cap each slot's context (n_ctx_slot) at N tokens; with -c 0 it also sizes the "
            "pool: slots x N"),
    Setting("n_batch", ("-b", "--batch-size"), 2048, "int", integer(1), "an integer >= 1",
            "logical batch: the most tokens one llama_decode call takes"),
    Setting("n_ubatch", ("-ub", "--ubatch-size"), 512, "int", integer(1), "an integer >= 1",
            "physical batch: the most tokens computed in one pass inside llama_decode"),
    Setting("type_k", ("-ctk", "--cache-type-k"), "f16", "str", choice(CACHE_TYPES),
            ", ".join(CACHE_TYPES), "KV cache data type for keys"),
    Setting("type_v", ("-ctv", "--cache-type-v"), "f16", "str", choice(CACHE_TYPES),
            ", ".join(CACHE_TYPES), "KV cache data type for values"),
    Setting("flash_attn", ("-fa", "--flash-attn"), "auto", "str",
            choice(FLASH_ATTN_MODES, {True: "on", False: "off"}), "on, off or auto",
            "flash attention"),
    Setting("n_gpu_layers", ("-ngl", "--gpu-layers", "--n-gpu-layers"), 0, "int | str",
            gpu_layers, "an integer >= 0, or 'all' / 'auto' / -1 for every layer",
            "layers to offload to the GPU", llama_server_default="auto",
            why_different="the engine and labkit serve load on the CPU unless told: the "
                          "notebooks choose the GPU path from nb.compute_path(), labkit bench "
                          "from the devices llama.cpp sees",
            bench_default="all when llama.cpp sees a GPU device, else 0",
            bench_why="labkit bench measures where the learner's model would run, as the seed "
                      "tutorial's -ngl all does: every layer on the GPU that llama.cpp sees "
                      "(CUDA, Metal, HIP, Vulkan, SYCL); -ngl 0 still measures the CPU"),
    Setting("op_offload", ("--op-offload",), False, "bool", boolean, "True or False",
            "run each batch of 32 tokens or more (a prompt) on the GPU device even for the "
            "layers -ngl keeps on the CPU, copying their weights there (ggml's op offload)",
            off_flags=("--no-op-offload",), llama_server_default=True,
            why_different="-ngl 0 then keeps every step on the CPU, so what measures the CPU "
                          "measures it alone; llama-server's default sends the prompts of a "
                          "-ngl 0 run to the GPU device it sees (ggml's op offload, "
                          "GGML_OP_OFFLOAD_MIN_BATCH = 32 tokens)"),
    Setting("split_mode", ("-sm", "--split-mode"), "layer", "str", choice(SPLIT_MODES),
            "none, layer or row", "how to split the model across several GPUs"),
    Setting("main_gpu", ("-mg", "--main-gpu"), 0, "int", integer(0), "an integer >= 0",
            "the GPU that holds the model with --split-mode none"),
    Setting("n_threads", ("-t", "--threads"), None, "int | None", optional(integer(1)),
            "an integer >= 1, or None", "CPU threads (not given: every core this process may "
            "use)", llama_server_default="the machine's physical cores",
            why_different="labkit uses every core the process may run on (its CPU affinity), "
                          "which is what a container or a taskset limit leaves it"),
    Setting("cont_batching", ("-cb", "--cont-batching"), True, "bool", boolean, "True or False",
            "continuous batching: admit waiting prompts while other slots generate",
            off_flags=("-nocb", "--no-cont-batching")),
    Setting("reserve", ("--reserve",), False, "bool", boolean, "True or False",
            "admit a request only when its prompt + max_tokens cells are free (labkit's own "
            "admission control: the unified pool can then never run out)", labkit_only=True),
    Setting("max_queue", ("--max-queue",), None, "int | None", optional(integer(0)),
            "an integer >= 0, or None", "refuse a new request at once (503) when N already "
            "wait for a slot (labkit's own; llama-server defers it)", labkit_only=True),
    Setting("slot_prompt_similarity", ("-sps", "--slot-prompt-similarity"), 0.1, "float",
            fraction, "a number from 0 to 1",
            "a request goes to the idle slot whose cached tokens share the longest prefix with "
            "its prompt, if that prefix is more than this fraction of the prompt; else (and "
            "always with 0) to the least recently used idle slot"),
    # --- server: what the HTTP server does around the engine ------------------------------
    Setting("model", ("-m", "--model"), None, "str | None", optional(text),
            "a GGUF path, synthetic:NAME[:QUANT], or None", "GGUF file, or a model shape with "
            "random weights (labkit.models.synthetic; not given: $LABKIT_MODEL, else the embedded "
            "SmolLM2-135M)", scope=SERVER),
    Setting("alias", ("-a", "--alias"), None, "str | None", optional(text),
            "a non-empty name, or None", "the model name the API reports (not given: the "
            "file name)", scope=SERVER),
    Setting("api_key", ("--api-key",), None, "str | None", optional(text),
            "a non-empty key, or None", "require 'Authorization: Bearer KEY'", scope=SERVER,
            secret=True),
    Setting("context_shift", ("--context-shift",), False, "bool",
            only(False, "labkit's engine never shifts context: a full slot ends with "
                        "finish_reason 'length'"), "False",
            "drop old tokens when a slot fills (labkit: never)", scope=SERVER,
            off_flags=("--no-context-shift",)),
    Setting("fit", ("--fit",), "off", "str",
            only("off", "labkit never shrinks the settings to fit the device's memory"), "off",
            "fit unset settings to the device's memory (labkit: never)", scope=SERVER,
            llama_server_default="on",
            why_different="the seed tutorial runs llama-server with --fit off so that the "
                          "configuration it reads back is the one it asked for"),
    Setting("cache_ram", ("-cram", "--cache-ram"), None, "int | None", optional(integer(-1)),
            "an integer >= -1 (MiB; -1: no limit, 0: off), or None",
            "llama-server's prompt cache in host memory, which saves a slot's prompt and KV "
            "before the slot is reused and restores the closest saved prompt into any slot "
            "(not given: llama-server's 8192 MiB; labkit's server has no such cache and refuses "
            "the flag)", scope=SERVER, llama_server_only=True),
    # --- process: where the server listens; the launcher sets these itself ----------------
    Setting("host", ("--host",), "127.0.0.1", "str", text, "an address", "address to listen on",
            scope=PROCESS),
    Setting("port", ("--port",), 8080, "int", integer(1, 65535), "an integer from 1 to 65535",
            "port to listen on", scope=PROCESS),
    Setting("log_file", ("--log-file",), None, "str | None", optional(text), "a path, or None",
            "write the log to this file", scope=PROCESS),
    Setting("metrics", ("--metrics",), False, "bool", boolean, "True or False",
            "enable /metrics (Prometheus)", scope=PROCESS),
    Setting("slots_endpoint", ("--slots",), True, "bool", boolean, "True or False",
            "enable /slots", scope=PROCESS, off_flags=("--no-slots",)),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in TABLE}


def table(*scopes: str) -> tuple[Setting, ...]:
    """The settings of these scopes (all of them when none is named), in table order."""
    return tuple(s for s in TABLE if not scopes or s.scope in scopes)


def get(name: str) -> Setting:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no setting {name!r}; the settings are {', '.join(BY_NAME)}") from None


def differences() -> list[dict]:
    """The settings whose labkit default differs from llama-server's, with the reason."""
    return [{"setting": s.name, "flag": s.flags[-1], "labkit": s.default,
             "llama-server": s.llama_server_default, "why": s.why_different}
            for s in TABLE if s.llama_server_default is not SAME]


def bench_differences() -> list[dict]:
    """The settings whose `labkit bench` default differs from labkit's, with the reason."""
    return [{"setting": s.name, "flag": s.flags[-1], "labkit": s.default,
             "labkit bench": s.bench_default, "why": s.bench_why}
            for s in TABLE if s.bench_default is not SAME]


# ---------------------------------------------------------------------------- derived forms

def settings_fields(*scopes: str, frozen: bool = False):
    """Class decorator: add the settings of ``scopes`` as dataclass fields (after the class's
    own fields without a default, before those with one), then make the class a dataclass
    whose construction checks and normalises every setting. A ``__post_init__`` the class
    defines runs after the check."""
    from dataclasses import dataclass as make_dataclass

    def wrap(cls):
        own = dict(cls.__dict__.get("__annotations__", {}))
        head = {k: v for k, v in own.items() if not hasattr(cls, k)}   # no default
        tail = {k: v for k, v in own.items() if k not in head}         # with a default
        annotations = dict(head)
        for s in table(*scopes):
            annotations[s.name] = s.annotation
            setattr(cls, s.name, field(default=s.default))
        annotations.update(tail)
        cls.__annotations__ = annotations
        after = cls.__dict__.get("__post_init__")

        def __post_init__(self):
            check_all(self, *scopes)
            if after is not None:
                after(self)
        cls.__post_init__ = __post_init__
        return make_dataclass(cls, frozen=frozen)
    return wrap


def check_all(obj, *scopes: str) -> None:
    """Check and normalise, in place, the settings of ``scopes`` (all when none is named)
    that a config object or an argparse namespace holds."""
    for s in table(*scopes):
        if hasattr(obj, s.name):
            object.__setattr__(obj, s.name, s.validate(getattr(obj, s.name)))


def refuse_labkit_only(obj, server: str) -> None:
    """A server other than labkit's has no ``reserve`` or ``max_queue``: asking it for one is
    an error, never a setting silently dropped."""
    for s in TABLE:
        if s.labkit_only and getattr(obj, s.name, s.default) != s.default:
            raise SettingError(f"{s.name}={getattr(obj, s.name)!r} ({s.flags[0]}): {server} has "
                               f"no such setting; it is labkit's own")


def refuse_llama_server_only(obj) -> None:
    """labkit's server has no prompt cache in host memory (``--cache-ram``): asking it for one
    is an error, never a setting silently dropped."""
    for s in TABLE:
        if s.llama_server_only and getattr(obj, s.name, s.default) != s.default:
            raise SettingError(f"{s.name}={getattr(obj, s.name)!r} ({s.flags[-1]}): labkit's "
                               f"server has no such setting; it is llama-server's own")


def values(obj, *scopes: str) -> dict:
    """{name: value} for the settings of ``scopes`` that ``obj`` (a config or an argparse
    namespace) holds."""
    return {s.name: getattr(obj, s.name) for s in table(*scopes) if hasattr(obj, s.name)}


def to_argv(settings: dict, *, llama_server: bool = True) -> list[str]:
    """The command-line words for ``{name: value}``, in table order. Unset values (None) are
    left out; with ``llama_server=True`` so are labkit's own settings, which llama-server
    would refuse."""
    out: list[str] = []
    for s in TABLE:
        if s.name in settings and not (llama_server and s.labkit_only):
            out += s.argv(settings[s.name])
    return out


MASK = "***"
_SECRET_NAMES = frozenset(s.name for s in TABLE if s.secret)
_SECRET_FLAGS = frozenset(f for s in TABLE if s.secret for f in s.flags)


def masked_argv(argv: list[str]) -> list[str]:
    """``argv`` as it may be logged or recorded: the value of every secret setting (the API
    key) shown as :data:`MASK`, after its flag (``--api-key KEY``) or in it
    (``--api-key=KEY``). The command that runs keeps the real value."""
    out, hide = [], False
    for word in argv:
        flag = word.split("=", 1)[0]
        if hide:
            out.append(MASK)
        elif "=" in word and flag in _SECRET_FLAGS:
            out.append(f"{flag}={MASK}")
        else:
            out.append(word)
        hide = not hide and word in _SECRET_FLAGS
    return out


def masked_fields(values: dict) -> dict:
    """``values`` ({setting name: value}, such as a config's fields) as a record may keep
    them: every secret setting that is set shown as :data:`MASK`."""
    return {k: MASK if v is not None and k in _SECRET_NAMES else v for k, v in values.items()}


def add_arguments(parser: argparse.ArgumentParser, *scopes: str) -> None:
    """Add the settings of ``scopes`` to an argparse parser, with llama-server's flag names."""
    for s in table(*scopes):
        default_note = "" if s.default is None else f" (default: {s.default})"
        if s.is_switch:
            group = parser.add_mutually_exclusive_group()
            group.add_argument(*s.flags, dest=s.name, action="store_true", default=s.default,
                               help=s.help + default_note)
            if s.off_flags:
                group.add_argument(*s.off_flags, dest=s.name, action="store_false",
                                   help=f"turn off {s.flags[-1]}")
        else:
            parser.add_argument(*s.flags, dest=s.name, type=s.parse_cli, default=s.default,
                                metavar=s.name.upper(), help=s.help + default_note)


def markdown() -> str:
    """docs/SETTINGS.md: the table as a reader sees it (regenerate with
    ``python -m labkit.settings > docs/SETTINGS.md``; a test keeps the two in step)."""
    def cell(v):
        return "not given" if v is None else f"`{v}`"
    lines = [
        "# Server settings",
        "",
        "Generated from `labkit/settings.py` (`python -m labkit.settings > docs/SETTINGS.md`).",
        "Every setting is declared once there; `EngineConfig`, `ServerConfig`, `labkit serve`'s",
        "flags and the launcher's command line are derived from it. *engine* settings build the",
        "slot engine, *server* settings shape the HTTP server around it, *process* settings say",
        "where it listens (the launcher sets those itself).",
        "",
        "| setting | flags | default | allowed | scope | what it does |",
        "|---|---|---|---|---|---|",
    ]
    for s in TABLE:
        own = (" (labkit's own)" if s.labkit_only
               else " (llama-server's own)" if s.llama_server_only else "")
        lines.append(f"| `{s.name}` | {', '.join(f'`{f}`' for f in s.flags + s.off_flags)} | "
                     f"{cell(s.default)} | {s.allowed} | {s.scope} | {s.help}{own} |")
    lines += ["", "## Where labkit's default differs from llama-server's", "",
              "| setting | labkit | llama-server | why |", "|---|---|---|---|"]
    for d in differences():
        lines.append(f"| `{d['flag']}` | {cell(d['labkit'])} | {cell(d['llama-server'])} | "
                     f"{d['why']} |")
    lines += ["", "## Where `labkit bench`'s default differs", "",
              "| setting | labkit | labkit bench | why |", "|---|---|---|---|"]
    for d in bench_differences():
        lines.append(f"| `{d['flag']}` | {cell(d['labkit'])} | {d['labkit bench']} | "
                     f"{d['why']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")

