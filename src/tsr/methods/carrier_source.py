"""Which past task is the source of the carrier arms (``param_init``, ``l2_anchor``).

``source`` is ``previous`` (the snapshot of the task just before), ``top`` (the past task whose
stored signature is most similar: the argmax over past records of the cosine between
signatures taken as TSR takes them, :func:`tsr.cl.signatures.probe_signature` with the ``gradb``
probe on ``probe_batches`` batches of the current budget, drawn from the same seeded stream
TSR uses, so both pick the same task), or the name of a task of the stream. A task that has no
source yet (the first task; with a name, every task up to and including the named one)
trains on its own data with no carrier, like SeqFT. The words ``previous`` and ``top`` win over
task names that happen to be spelled the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..cl.routing import cosine
from ..cl.signatures import probe_signature
from ..errors import ConfigError, RunError
from ..schema import require
from .context import TaskContext

KEYWORDS = ("previous", "top")


def check_source(source: str, probe_batches: int, path: str) -> None:
    require(bool(source.strip()), f"{path}.source", "must be previous, top or the name of a task")
    require(probe_batches >= 1, f"{path}.probe_batches", "must be >= 1")


def check_source_in_stream(source: str, tasks) -> None:
    """A source given as a task name must be a task of the stream (``tasks``: its names)."""
    if source not in KEYWORDS and source not in tasks:
        raise ConfigError(f"config key 'method.source': no task named {source!r} in the stream "
                          f"(tasks: {', '.join(tasks)}; or previous, top)")


class SourcePicker:
    def __init__(self, source: str, probe_batches: int):
        self.source = source
        self.probe_batches = probe_batches
        self.signature: torch.Tensor | None = None

    def pick(self, ctx: TaskContext) -> tuple[int | None, dict[str, Any]]:
        """(index of the source task in the memory or None, facts to log) for task ``ctx.index``."""
        if self.source == "top":
            return self._top(ctx)
        if self.source == "previous":
            j = ctx.index - 1 if ctx.index > 0 else None
        else:
            j = next((r.index for r in ctx.memory if r.name == self.source), None)
        return j, ({"source": ctx.memory[j].name} if j is not None else {})

    def _top(self, ctx: TaskContext) -> tuple[int | None, dict[str, Any]]:
        probe = ctx.stream(None, purpose="probe")
        self.signature = probe_signature(ctx.learner, [probe.next() for _ in range(self.probe_batches)])
        past = list(ctx.memory)
        if not past:
            return None, {}
        missing = [r.name for r in past if r.signature is None or r.signature.shape != self.signature.shape]
        if missing:
            raise RunError(f"tasks {missing} have no comparable signature in the task memory")
        scores = [cosine(r.signature, self.signature) for r in past]
        j = int(np.argmax(scores))
        return j, {"source": past[j].name, "scores": {r.name: round(s, 6) for r, s in zip(past, scores)}}
