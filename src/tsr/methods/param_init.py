"""Parameter initialisation from a source: the transient carrier arm of the reference paper (§4.2).

When a task starts, its adapter becomes a copy of a source task's trained adapter (the
source's task-memory snapshot), then trains on the target's data alone with cross-entropy
(fresh optimiser, as every task). The source is chosen by ``source`` (see
:mod:`tsr.methods.carrier_source`): ``previous`` (default), ``top`` (most similar stored signature;
the method then also takes and returns its own signature so later records have one) or a
task name. The paper finds this one-shot carrier washed out by continued training
(Fig. "Candidate carriers", Appendix "The carrier").

With ``source: previous`` the copy is the state the adapter is already in, since each task
starts from the previous task's end: on a two-task stream [source, target] (indeed on any
stream) this method equals SeqFT exactly. It differs from SeqFT only when the source is not
the previous task.

Deviations: the paper's probe protocol trains the target from the source adapter in a pair
experiment; here the same operation happens at every task of a stream. Defaults:
``source = previous``; ``probe_batches = 10`` is TSR's m (Appendix "Full-stream setup").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..cl.signatures import PROBE_BATCHES
from .base import Method
from .carrier_source import SourcePicker, check_source, check_source_in_stream
from .context import TaskContext


@dataclass
class ParamInitParams:
    source: str = "previous"
    probe_batches: int = PROBE_BATCHES

    def check(self, path: str) -> None:
        check_source(self.source, self.probe_batches, path)


class ParamInit(Method):
    name = "param_init"
    Params = ParamInitParams

    @classmethod
    def validate(cls, params: ParamInitParams, facts) -> None:
        check_source_in_stream(params.source, facts.tasks)

    def __init__(self, params: ParamInitParams):
        super().__init__(params)
        self._picker = SourcePicker(params.source, params.probe_batches)

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        j, info = self._picker.pick(ctx)
        if j is not None:
            ctx.learner.adapter.load(ctx.snapshot_of(j))
        return info

    def signature(self) -> torch.Tensor | None:
        return self._picker.signature
