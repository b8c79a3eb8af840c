"""EngineConfig: the knobs of one slot engine, named after llama-server's flags.

The fields are the ``engine`` rows of :data:`labkit.settings.TABLE`: the table gives each
one its llama-server flag, default and allowed values, so a learner can read a server
command line and build the same engine in a notebook::

    EngineConfig(model_path, n_ctx=16384, n_slots=4, kv_unified=False)   # -c 16384 -np 4 --no-kv-unified

``labkit.settings.table("engine")`` lists them; a wrong value fails here, at construction,
naming the setting, the value and what is allowed. Two fields are labkit's own: ``reserve``
(admit a request only when its whole prompt + max_tokens fits in the free KV cells) and
``max_queue`` (refuse new requests at once when that many already wait for a slot).
"""

from __future__ import annotations

from ..models.files import SYNTHETIC_PREFIX
from ..machine.runenv import usable_cores
from ..settings import ENGINE, resolve_slots, settings_fields


@settings_fields(ENGINE)
class EngineConfig:
    """How to build an :class:`~labkit.engine.Engine`: the model file, then every engine
    setting of :data:`labkit.settings.TABLE` as a keyword (``n_ctx``, ``n_slots``, ...).

    ``n_slots`` is the number of requests served at once (llama.cpp sequences).
    ``n_slots="auto"`` follows llama-server: four slots sharing one unified KV pool
    (whatever ``kv_unified`` says); an explicit slot count keeps one KV stripe per slot
    (split KV) unless ``kv_unified=True`` is given.

    ``reserve=False`` (the default) is llama-server's behaviour: admit a request
    as soon as a slot is free, and if the shared (unified) KV pool later runs
    out, retry the step with smaller batches and finally fail every request in
    flight ("Context size has been exceeded."). ``reserve=True`` admits a request only when
    ``prompt + max_tokens`` cells are free, so the pool can never run out.
    """

    model_path: str

    def __post_init__(self):
        if str(self.model_path).startswith(SYNTHETIC_PREFIX):
            # synthetic:NAME[:QUANT] becomes its file (labkit.models.synthetic), written on first use.
            from .devices import resolve_to_load
            self.model_path = resolve_to_load(self.model_path, self.n_gpu_layers)
        self.model_path = str(self.model_path)

    @property
    def slots(self) -> int:
        """The number of slots after resolving "auto"."""
        return resolve_slots(self.n_slots, self.kv_unified)[0]

    @property
    def unified(self) -> bool:
        """Whether the KV cache is one shared pool (llama-server's rule for None)."""
        return resolve_slots(self.n_slots, self.kv_unified)[1]

    @property
    def threads(self) -> int:
        """CPU threads for llama.cpp: ``n_threads``, else every core this process may use."""
        return self.n_threads or usable_cores()
