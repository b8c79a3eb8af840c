"""A learner's function, read and run the way a code exercise needs: what it calls, a time
limit, and its result as plain data.

A code exercise asks the learner to write something labkit already implements (a batching
loop the simulator runs, the rule :mod:`labkit.models.kv` applies, the stopwatch of
:mod:`labkit.bench.client`), and its check has a reference to compare with. Calling either is
not an answer, so each exercise names what its answer may not reach in a :class:`Rule`, and
:func:`call` refuses a function that reaches it, twice over:

- before it runs (:func:`refusal`), by reading its code: the global names, attributes and
  imports its code object (and the code of its nested functions) names, resolved in its
  globals, its closure and its default values; a name that leads to a labkit module is read
  as that module's attribute, so ``sim.simulate``, ``from labkit.notebook import kv`` then
  ``kv.slot_context``, and ``import labkit.models.kv`` are all seen. Functions and classes it
  reaches that the learner wrote (defined in the notebook, or anywhere outside labkit and
  the Python installation) are read the same way, recursively;
- while it runs, by watching every Python function call its thread makes
  (:func:`sys.settrace`, ``call`` events only): a call into a forbidden function, however it
  was reached (``getattr``, ``__import__``, ``eval``, or a labkit helper that calls the
  forbidden one), stops the function and refuses it. Calls made from code the check handed
  to the learner (a ``tokenize`` argument), from an allowed module (the step cost of 1.7),
  and while a module is being imported, are not held against it.

Neither sees data read without a call (the check's objects found through :mod:`gc` or a
frame's locals): the cases drawn at check time are there for what reading cannot reach.

The message names what was called and what the exercise asks for instead, in the learner's
language.

:func:`call` runs the learner's function in a thread of its own and waits ``limit_s``
seconds for it. Whatever it raises (``SystemExit`` included) is a wrong answer that names
the exception; a function still running at the limit is reported as stopped after that many
seconds, and the check goes on. Python cannot kill a thread, so the thread is asked to stop:
an exception is raised in it at its next Python instruction (``PyThreadState_SetAsyncExc``)
and at its next Python call. A loop of Python code ends there. A thread blocked inside C code
(``time.sleep``, a socket read, ``llama_decode``) gets the exception only when that call
returns, and a function that catches ``BaseException`` may go on: such a thread is left
running in the background as a daemon (it never keeps the interpreter from exiting; it is kept
in :data:`STOPPED`), holding what it holds until it ends; what the check lent it (2.3's llama.cpp context) is freed by that
thread itself when it ends, never from under it. Threads the learner's function starts are
not watched.

The result is turned into plain data (numbers, strings, lists, tuples, dicts) inside that same
thread and time limit (:func:`plain`), so the check that reads it afterwards never runs the
learner's code (an ``__eq__`` or ``__float__`` of theirs); :func:`number` then refuses a
string where a number is asked (``"1234 characters"`` is wrong, not read).

Each check draws its generated cases from :func:`draw_seed`, a seed the learner does not
choose (the operating system's random source).
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import random
import sys
import threading
import types
from contextlib import nullcontext
from dataclasses import dataclass
from inspect import getattr_static

from ..lang.i18n import Both, pick, text

#: Seconds a learner's function may run before it is stopped, unless an exercise says more.
LIMIT_S = 10.0

#: The checks themselves and their references: no answer may call them.
CHECKS = "labkit.exercises"


class LearnerCodeError(Exception):
    """The learner's function raised, hung, returned what cannot be read, or called what it
    may not: reported as a wrong answer with the reason, never raised out of a check."""


class _Stop(BaseException):
    """Raised inside a learner's function that ran past its time limit (not an Exception, so
    an ``except Exception`` of theirs does not swallow it)."""


class _Refused(BaseException):
    """Raised inside a learner's function that called what its exercise forbids."""


def draw_seed() -> int:
    """A seed for a check's generated cases, from the operating system's random source: the
    learner cannot choose it, and each check draws a new one."""
    return random.SystemRandom().randrange(2 ** 32)


def cases_rng() -> random.Random:
    """A random generator for one check's cases, seeded by :func:`draw_seed`."""
    return random.Random(draw_seed())


# ---------------------------------------------------------------------------- what it may call

def _in(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def is_labkit(module) -> bool:
    return isinstance(module, str) and _in(module, "labkit")


@dataclass(frozen=True)
class Rule:
    """What a code exercise's answer may not call.

    ``forbid``: labkit's own implementation of what the exercise asks for, each a module (it
    and the modules under it: ``"labkit.sim"``) or one function or class in a module
    (``"labkit.models.kv:slot_context"``, a class covering its methods); the checks
    (:data:`CHECKS`) are always forbidden. ``allow``: modules under a forbidden one that the
    learner may use, with everything they call (``"labkit.sim.cost"``: the step cost handed to
    1.7). ``instead``: what the exercise asks the learner to write, said in the refusal."""

    forbid: tuple[str, ...]
    instead: Both
    allow: tuple[str, ...] = ()

    def blocks(self, module: str, qualname: str = "") -> bool:
        """Whether the function or class ``qualname`` of ``module`` is forbidden."""
        if not is_labkit(module) or self.allows(module) or module == __name__:
            return False
        for spec in (*self.forbid, CHECKS):
            where, _, name = spec.partition(":")
            if _in(module, where) if not name else (
                    module == where and (qualname == name or qualname.startswith(name + "."))):
                return True
        return False

    def allows(self, module: str) -> bool:
        return any(_in(module, a) for a in self.allow)

    def refused(self, called: str, through: str | None = None) -> str:
        """The refusal of a function that called ``called`` (a dotted name), ``through`` a
        labkit function it called itself."""
        role = (pick("the check's own reference, what your answer is compared with",
                     "這是檢查拿來和你的答案比對的參考答案")
                if _in(called, CHECKS) else
                pick("labkit's own implementation of what this exercise asks you to write",
                     "這是 labkit 自己對這題要你寫的東西的實作"))
        via = pick(f" (through {through})", f"（經由 {through}）") if through else ""
        return pick(f"your function calls {called}{via}, {role}. {text(self.instead)}",
                    f"你的函式呼叫了 {called}{via}，{role}。{text(self.instead)}")


def _name(obj) -> str:
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _installed(code: types.CodeType) -> bool:
    """Whether ``code`` comes from the Python installation (the standard library, a package)
    rather than from the learner."""
    filename = code.co_filename
    return any(filename.startswith(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}
               if p) or filename.startswith("<frozen")


def _names(code: types.CodeType) -> set[str]:
    """Every global, attribute and import name ``code`` and the code nested in it use."""
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _labkit_module(name: str):
    """The labkit module of a dotted import name, if it is one (imported already, or now)."""
    if not is_labkit(name):
        return None
    if name not in sys.modules:
        try:
            __import__(name)
        except Exception:       # a name the learner mistyped: their import fails when it runs
            return None
    return sys.modules.get(name)


def refusal(answer, rule: Rule) -> str | None:
    """Why ``answer`` (the learner's function) is refused before it runs, or None: the
    forbidden labkit callable its code reaches, read as the module docstring says."""
    found = _Reach(rule).hit(answer)
    return None if found is None else rule.refused(found)


class _Reach:
    """Reads a learner's function for the forbidden callables it reaches."""

    MAX_OBJECTS = 2000

    def __init__(self, rule: Rule):
        self.rule, self.seen = rule, set()

    def hit(self, obj) -> str | None:
        """The dotted name of a forbidden callable ``obj`` is or reaches, else None."""
        if id(obj) in self.seen or len(self.seen) > self.MAX_OBJECTS:
            return None
        self.seen.add(id(obj))
        if isinstance(obj, types.ModuleType):
            return None                    # a namespace: what the code takes from it counts
        if isinstance(obj, types.MethodType):
            return self.hit(obj.__func__) or self.hit(obj.__self__)
        if isinstance(obj, (staticmethod, classmethod)):
            return self.hit(obj.__func__)
        if isinstance(obj, property):
            return self.hit(obj.fget) or self.hit(obj.fset)
        if isinstance(obj, functools.partial):
            return self.first([obj.func, *obj.args, *obj.keywords.values()])
        if isinstance(obj, type):
            if is_labkit(obj.__module__):
                return _name(obj) if self.rule.blocks(obj.__module__, obj.__qualname__) else None
            if obj.__module__ == "builtins":
                return None
            return self.first(list(vars(obj).values()))
        if isinstance(obj, types.FunctionType):
            if is_labkit(obj.__module__):
                return _name(obj) if self.rule.blocks(obj.__module__, obj.__qualname__) else None
            if obj.__module__ != "__main__" and _installed(obj.__code__):
                return None
            return self.function(obj)
        if isinstance(obj, (list, tuple, set, frozenset)) and len(obj) <= 100:
            return self.first(list(obj))
        if isinstance(obj, dict) and len(obj) <= 100:
            return self.first(list(obj.values()))
        wrapped = getattr_static(obj, "__wrapped__", None)    # functools.cache, wraps
        if wrapped is not None:
            return self.hit(wrapped)
        kind = type(obj)
        if is_labkit(kind.__module__):      # a labkit object: its class decides
            return self.hit(kind)
        if callable(obj) and kind.__module__ not in ("builtins",):
            return self.hit(getattr_static(kind, "__call__", None))
        return None

    def first(self, objs) -> str | None:
        for o in objs:
            found = self.hit(o)
            if found:
                return found
        return None

    def function(self, fn: types.FunctionType) -> str | None:
        """What the code of a learner's function reaches."""
        names = sorted(_names(fn.__code__))
        refs = [fn.__globals__[n] for n in names if n in fn.__globals__]
        refs += [c.cell_contents for c in (fn.__closure__ or ()) if _filled(c)]
        refs += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
        namespaces = [m for n in names if (m := _labkit_module(n)) is not None]
        namespaces += [r for r in refs if _namespace(r)]
        done = set()
        while namespaces:                   # attributes, and the modules they lead to
            ns = namespaces.pop()
            if id(ns) in done:
                continue
            done.add(id(ns))
            for n in names:
                value = _attribute(ns, n)
                if value is None:
                    continue
                if _namespace(value):
                    namespaces.append(value)
                refs.append(value)
        return self.first(refs)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _namespace(obj) -> bool:
    """A labkit module, class or object: the names the learner's code uses are looked up in it."""
    if isinstance(obj, types.ModuleType):
        return is_labkit(obj.__name__)
    if isinstance(obj, type):
        return is_labkit(obj.__module__)
    return is_labkit(type(obj).__module__)


def _attribute(ns, name: str):
    try:
        if isinstance(ns, types.ModuleType):
            return getattr(ns, name)         # a lazy facade (labkit.notebook) loads it
        return getattr_static(ns, name)     # no property of labkit's is run
    except Exception:
        return None


# ---------------------------------------------------------------------------- running it

class _Run:
    """One run of a learner's function in its own thread, watched as the module says."""

    def __init__(self, fn, args, rule, read, within, allowed):
        self.fn, self.args, self.rule, self.read, self.within = fn, args, rule, read, within
        self.allowed = set()
        for a in allowed:
            self.allowed |= _codes(a)
        self.cache: dict = {}
        self.refused: str | None = None
        self.running = self.stopping = False
        self.outcome = self.failure = None
        self.phase = "setup"

    # -- in the learner's thread
    def work(self) -> None:
        try:
            with (self.within() if self.within else nullcontext(())) as lead:
                self.phase = "learner"
                sys.settrace(self.watch)
                self.running = True
                try:
                    out = self.fn(*lead, *self.args)
                    if not (self.refused or self.stopping):
                        self.phase = "read"       # a generator of theirs runs here too
                        self.outcome = self.read(out)
                finally:
                    self.running = False
                    sys.settrace(None)
                self.phase = "done"
        except BaseException as exc:      # noqa: B036  (anything the learner's code raises)
            self.failure = exc

    def watch(self, frame, event, arg):
        """The thread's trace function: sees every Python call (never lines)."""
        if self.stopping:
            raise _Stop
        if self.rule is None:
            return None
        code = frame.f_code
        blocked = self.cache.get(code)
        if blocked is None:
            blocked = self.cache[code] = self.rule.blocks(
                frame.f_globals.get("__name__", ""), _qualname(code))
        if blocked and not self._excused(frame):
            self.refused = self.rule.refused(*self._called(frame))
            raise _Refused
        return None

    def _excused(self, frame) -> bool:
        """A call of code the check handed over, or made from it, from an allowed module, or
        while a module is imported."""
        f = frame
        while f is not None:
            code = f.f_code
            if code in self.allowed or code.co_name == "<module>" or (
                    self.rule.allows(f.f_globals.get("__name__", ""))):
                return True
            f = f.f_back
        return False

    @staticmethod
    def _called(frame) -> tuple[str, str | None]:
        """(the forbidden function called, the labkit function the learner called that led
        there, if another)."""
        def dotted(f):
            return f"{f.f_globals.get('__name__', '?')}.{_qualname(f.f_code)}"
        entry, f = frame, frame.f_back
        while f is not None and is_labkit(f.f_globals.get("__name__")) and not _is_worker(f):
            entry, f = f, f.f_back
        return dotted(frame), (None if entry is frame else dotted(entry))

    # -- in the checking thread
    def stop(self, thread: threading.Thread) -> None:
        self.stopping = True
        if self.running and thread.ident is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                       ctypes.py_object(_Stop))


def _qualname(code: types.CodeType) -> str:
    return getattr(code, "co_qualname", code.co_name)       # Python 3.10 has no co_qualname


def _is_worker(frame) -> bool:
    return frame.f_code is _Run.work.__code__


def _codes(obj) -> set:
    """The code objects of a callable handed to the learner, nested code included."""
    fn = getattr(obj, "__func__", obj)
    code = getattr(fn, "__code__", None)
    if code is None:
        call_ = getattr_static(type(obj), "__call__", None)
        code = getattr(call_, "__code__", None)
    out, todo = set(), [code] if code is not None else []
    while todo:
        c = todo.pop()
        out.add(c)
        todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return out


#: Runs stopped at their limit whose thread had not ended yet (the newest last).
STOPPED: list[threading.Thread] = []


def call(fn, *args, rule: Rule | None = None, limit_s: float | None = None, read=None,
         within=None, allowed=()):
    """``fn(*args)`` for a check, as the module docstring says: refused (LearnerCodeError)
    when it reaches what ``rule`` forbids, stopped after ``limit_s`` seconds (default
    :data:`LIMIT_S`), what it raises
    turned into a LearnerCodeError that names it; its result through ``read`` (default
    :func:`plain`) in the same thread. ``within``: a context manager factory whose value (a
    tuple) goes before ``args``, entered and left in the learner's thread (what the check
    lends the function, freed only when the function is done with it). ``allowed``:
    callables among the arguments that the function may call whatever they call."""
    require_function(fn)
    if rule is not None:
        refused = refusal(fn, rule)
        if refused:
            raise LearnerCodeError(refused)
        allowed = tuple(allowed) + tuple(a for a in args if callable(a))
    limit_s = LIMIT_S if limit_s is None else limit_s
    run = _Run(fn, args, rule, plain if read is None else read, within, allowed)
    thread = threading.Thread(target=run.work, daemon=True, name="labkit-learner-code")
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        run.stop(thread)
        thread.join(0.5)
        if thread.is_alive():
            STOPPED.append(thread)
        raise LearnerCodeError(pick(
            f"your function was stopped after {limit_s:g} s, still running: an endless loop, "
            "or waiting for something that never comes?",
            f"你的函式跑了 {limit_s:g} 秒還沒結束，已被停止：是不是有無窮迴圈，或在等一個永遠"
            "不會來的東西？"))
    if run.refused:
        raise LearnerCodeError(run.refused)
    exc = run.failure
    if exc is None:
        return run.outcome
    if isinstance(exc, LearnerCodeError) or run.phase in ("setup", "done"):
        raise exc               # the check's own words, or its own setup failed
    raise raised(exc) from exc


def require_function(fn) -> None:
    """A TypeError, read as a wrong answer, when the answer is not a function."""
    if not callable(fn):
        raise TypeError(pick(f"expected a function (def ...), got {type(fn).__name__}",
                             f"這裡要的是一個函式（def ...），收到的是 {type(fn).__name__}"))


def raised(exc: BaseException) -> LearnerCodeError:
    """The wrong answer of a learner's function that raised ``exc``."""
    return LearnerCodeError(pick(f"your function raised {type(exc).__name__}: {exc}",
                                 f"你的函式丟出了 `{type(exc).__name__}: {exc}`"))


# ---------------------------------------------------------------------------- reading a result

#: The most items a result may hold (a list of step durations, a table of steps).
MAX_ITEMS = 100_000


def plain(value):
    """``value`` as plain data: None, bool, int, float, str, bytes, and lists, tuples and dicts
    of them (numpy and pandas values and arrays, and iterators, are converted; a subclass of a
    plain type becomes that type). Anything else is a LearnerCodeError naming its type. No
    method the learner wrote is called: the conversions use the plain types' own code."""
    count = itertools.count()
    return _plain(value, count, 0)


_PLAIN = (type(None), bool, int, float, str, bytes)


def _plain(v, count, depth):
    if next(count) > MAX_ITEMS or depth > 50:
        raise LearnerCodeError(pick("your function returned more than the check can read "
                                    f"(over {MAX_ITEMS:,} values, or nested over 50 deep)",
                                    f"你的函式回傳的東西太多，檢查讀不完（超過 {MAX_ITEMS:,} "
                                    "個值，或巢狀超過 50 層）"))
    kind = type(v)
    if kind in _PLAIN:
        return v
    for base, convert in ((int, int.__int__), (float, float.__float__), (str, str.__str__),
                          (bytes, bytes.__bytes__)):
        if isinstance(v, base) and not isinstance(v, bool):
            return convert(v)
    module = kind.__module__ or ""
    if module.split(".")[0] in ("numpy", "pandas") and hasattr(v, "tolist"):
        return _plain(v.tolist(), count, depth + 1)
    if module.split(".")[0] == "numpy" and hasattr(v, "item"):
        return _plain(v.item(), count, depth + 1)
    if isinstance(v, (tuple, list)):
        items = [_plain(x, count, depth + 1) for x in (tuple.__iter__(v) if isinstance(v, tuple)
                                                        else list.__iter__(v))]
        return tuple(items) if isinstance(v, tuple) else items
    if isinstance(v, dict):
        return {_plain(k, count, depth + 1): _plain(x, count, depth + 1)
                for k, x in dict.items(v)}
    if isinstance(v, types.GeneratorType) or kind.__name__ in ("map", "filter", "zip",
                                                               "range", "reversed"):
        return [_plain(x, count, depth + 1) for x in v]
    raise LearnerCodeError(pick(f"your function returned a {kind.__name__}, which the check "
                                "cannot read: return numbers, strings, lists, tuples or dicts",
                                f"你的函式回傳了 {kind.__name__}，檢查讀不懂：請回傳數字、字串、"
                                "串列、tuple 或 dict"))


def number(value, what: str | Both) -> float | int:
    """``value`` (plain data from :func:`plain`) as a finite number, or a LearnerCodeError
    that says what came back instead: a string is wrong where a number is asked, even one
    that reads as a number with a unit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise LearnerCodeError(pick(f"{text(what)} should be a finite number, not {value!r}",
                                        f"{text(what)} 應該是有限的數字，不是 {value!r}"))
        return value
    hint = (pick(": return the number alone, without a unit or quotes",
                 "：只回傳數字本身，不要加單位或引號") if isinstance(value, (str, bytes)) else "")
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    raise LearnerCodeError(pick(f"{text(what)} should be a number, but your function returned "
                                f"{shown} (a {type(value).__name__}){hint}",
                                f"{text(what)} 應該是數字，你的函式卻回傳了 {shown}（"
                                f"{type(value).__name__}）{hint}"))
