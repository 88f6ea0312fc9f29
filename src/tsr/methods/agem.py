"""A-GEM: averaged gradient episodic memory (Chaudhry et al., 2019).

Each step trains on the current task; after the backward pass, a reference gradient is taken
on a memory batch of ``memory_batch`` examples drawn uniformly, without replacement, from
the union of every past task's replay data (100 stored examples per past task, as for the
other rehearsal methods). If the step's gradient ``g`` conflicts with it (``g . g_ref < 0``,
over all trainable parameters flattened), ``g`` is replaced by
``g - (g . g_ref / g_ref . g_ref) g_ref`` before the optimiser step
(:func:`tsr.cl.projection.agem_project`). With no past task it is SeqFT; past tasks that stored
no example (``stream.replay_per_task: 0``) are a config error.

Deviations from the paper and official code:
- The optimiser is the run's AdamW (the projection edits the gradient AdamW receives); the
  paper uses SGD, where the projected gradient is the update direction itself.
- The memory is the task memory's replay data (a fixed sample of each finished task, see
  ``stream.replay_source``) in the role of A-GEM's per-task episodic memory, which the paper
  fills with examples seen while training.
- The reference loss is the training loss (mean cross-entropy over answer tokens) on the
  memory batch, computed with ``torch.autograd.grad`` so ``.grad`` holds only ``g``.

Defaults: ``memory_batch = null`` means the training batch size (4 in the paper's setup),
as in mammoth's A-GEM settings (``minibatch_size`` equal to ``batch_size``, e.g. 32/32 on
Seq-CIFAR-10); the official code draws 256 memory examples (``EPS_MEM_BATCH_SIZE``), which
at LLM scale would cost 64 training batches per step. Code consulted: facebookresearch/agem,
aimagelab/mammoth ``models/agem.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..cl.buffer import draw_buffer, replay_pool
from ..cl.losses import masked_ce
from ..cl.projection import agem_project, flatten, split_like
from ..schema import require
from .base import Method, MethodState, require_replay
from .context import Draw, TaskContext


@dataclass
class AGEMParams:
    memory_batch: int | None = None

    def check(self, path: str) -> None:
        require(self.memory_batch is None or self.memory_batch >= 1, f"{path}.memory_batch",
                "must be >= 1 (or null for the training batch size)")


class AGEM(Method):
    name = "agem"
    Params = AGEMParams

    @classmethod
    def validate(cls, params, stream, cfg) -> None:
        require_replay(cfg, cls.name)

    def __init__(self, params: AGEMParams):
        super().__init__(params)
        self._memory: list = []
        self._rng = None
        self._projected: list[int] = []  # projected steps per finished task
        self._count = 0

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        self._memory, _ = replay_pool(ctx.memory, ctx.learner.encoder, self.name)
        self._rng = ctx.rng("agem-memory")
        self._count = 0
        return {"memory_examples": len(self._memory)}

    def after_backward(self, ctx: TaskContext, batch, draw: Draw) -> None:
        if not self._memory:
            return
        picked = draw_buffer(self._rng, len(self._memory), self.params.memory_batch or ctx.batch_size)
        learner = ctx.learner
        ref_batch = learner.encoder.collate([self._memory[i] for i in picked])
        params = learner.adapter.trainable()
        ref_loss = masked_ce(*learner.answer_logits(ref_batch))
        ref_grads = torch.autograd.grad(ref_loss, params, allow_unused=True)
        g_ref = flatten([torch.zeros_like(p) if r is None else r for r, p in zip(ref_grads, params)])
        grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in params]
        projected, changed = agem_project(flatten(grads), g_ref)
        if changed:
            self._count += 1
            with torch.no_grad():
                for p, new in zip(params, split_like(projected, params)):
                    p.grad = new.clone()

    def end_task(self, ctx: TaskContext) -> None:
        self._projected.append(self._count)

    def state_dict(self) -> MethodState:
        return MethodState({}, {"projected_steps": list(self._projected)})

    def load_state_dict(self, learner, state: MethodState) -> None:
        self._projected = [int(n) for n in state.meta.get("projected_steps", [])]
