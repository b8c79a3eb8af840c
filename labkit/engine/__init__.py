"""labkit's slot engine: continuous batching on llama.cpp, small enough to read.

Start with :mod:`labkit.engine.engine` (the step loop), then
:mod:`~labkit.engine.scheduler` (who goes into each batch),
:mod:`~labkit.engine.slot`, :mod:`~labkit.engine.sampling` and
:mod:`~labkit.engine.trace`. :mod:`~labkit.engine.native` holds the thin
ctypes handles on llama.cpp.

>>> from labkit.engine import Engine, EngineConfig, SamplingParams
"""

from .config import EngineConfig
from .engine import Engine
from .request import (BadRequest, ContextExceeded, FinalEvent, QueueFull, RequestHandle, TokenEvent)
from .sampling import SamplingParams

__all__ = ["Engine", "EngineConfig", "SamplingParams", "BadRequest", "ContextExceeded", "QueueFull",
           "RequestHandle", "TokenEvent", "FinalEvent"]
