"""LwF: learning without forgetting (Li & Hoiem, 2017).

The model as it is when a task starts is frozen as the teacher; every step of the task adds
``weight * T^2 * KL(p_teacher || p_student)`` at temperature ``T`` on the current task's
batch (current-task inputs only: LwF stores no data of past tasks). The first task has no
previous model and trains on cross-entropy alone.

Deviations from the paper:
- Li & Hoiem distil the old task heads' outputs; a language model has one head, so the
  distilled outputs are the next-token distributions over the whole vocabulary, at every
  attended position by default (``kd_mask: attended``, the same positions TSR distils in the
  reference code) or only where an answer token is predicted (``kd_mask: answer``).
- The teacher's outputs are computed on the fly under the frozen start-of-task adapter
  (exactly cached on CPU, see :mod:`tsr.cl.teachers`) rather than recorded once before training;
  the two are the same function of the inputs.
- The KL carries Hinton's ``T^2`` factor (as TSR's distillation does), so the term's
  gradient scale does not depend on ``T``; Li & Hoiem's loss omits it.

Defaults: ``weight = 1`` (Li & Hoiem's loss-balance weight lambda_o = 1) and ``T = 2`` (their
temperature), also mammoth's LwF setting on Seq-TinyImageNet (``alpha: 1.0``,
``softmax_temp: 2.0`` in ``utils/best_args.py``). Code consulted: BeyonderXX/TRACE
``model/Regular/LwF.py`` (weight 1, T = 2, no ``T^2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from ..model.adapter import State
from ..cl.losses import KD_TEMPERATURE
from ..schema import require
from .base import Distillation, Method, ce_and_distillation, distilled
from .context import Draw, TaskContext


@dataclass
class LwFParams:
    weight: float = 1.0
    temperature: float = KD_TEMPERATURE
    kd_mask: Literal["attended", "answer"] = "attended"

    def check(self, path: str) -> None:
        require(self.weight >= 0.0, f"{path}.weight", "distillation weight must be >= 0")
        require(self.temperature > 0.0, f"{path}.temperature", "must be > 0")


class LwF(Method):
    name = "lwf"
    Params = LwFParams

    def __init__(self, params: LwFParams):
        super().__init__(params)
        self._start: State | None = None

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        # The teacher is the model at the start of the task (the previous task's end state).
        self._start = ctx.learner.adapter.state() if ctx.index > 0 else None
        return {}

    def loss(self, ctx: TaskContext, batch, draw: Draw) -> dict[str, torch.Tensor]:
        p = self.params
        kd = Distillation(p.kd_mask, p.weight, p.temperature)
        if p.weight > 0 and self._start is not None:
            return distilled(ctx, batch, ("lwf-start", ctx.index), self._start, kd)
        return ce_and_distillation(ctx, batch, None, kd)
