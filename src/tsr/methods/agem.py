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

- The reference gradient is accumulated over forward/backward passes of ``chunk`` memory
  examples each (the gradient of the memory batch's token-mean loss, summed chunk by chunk),
  so a large memory batch fits in memory; the chunk size changes only float rounding. The
  memory batch is sorted by length before it is cut into chunks, which pads less: on
  ``synth-trace``'s memory, 0.82x the CPU time of the drawn order for 256 examples, the
  gradient the same to 2e-6 of its largest entry (``python bench/agem_reference.py``).

Defaults: ``memory_batch = 256``, the official code's episodic-memory batch
(``EPS_MEM_BATCH_SIZE = 256`` for MNIST and CIFAR; 128 for CUB and AWA), capped by what the
memory holds (100 examples per past task). The cost is real: from the fourth task on, each
step computes the reference gradient on 256 examples, 64 times the paper's training batch of
4. Measured on the bundled base (``python bench/methods.py --model src/tsr/assets/base
--methods seqft,er,agem``, one thread, a 200-example reference batch on the third task): an
A-GEM step costs 5.1x a SeqFT step (105 against 20 ms of CPU). In a default run on ``synth-trace``
(one thread, longer examples than the benchmark script's) it costs more: 0.83 s per step on the
second task, whose memory holds 100 examples, against 0.050 s for SeqFT (17x); from the fourth
task on the reference batch is 256 examples, so a run takes hours on one core where SeqFT's
takes minutes. ``memory_batch = null`` is the training batch
size, mammoth's setting (``minibatch_size`` equal to ``batch_size``), the cheap variant.
``chunk = 16`` examples per reference pass (our choice; the evaluation batch size). Code
consulted: facebookresearch/agem, aimagelab/mammoth ``models/agem.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..cl.buffer import draw_buffer, replay_pool
from ..cl.losses import token_nll
from ..cl.projection import agem_project, flatten, split_like
from ..rng import restore_rng, rng_state
from ..schema import require
from .base import Method, MethodState, Scope, require_replay
from .context import Draw, TaskContext


@dataclass
class AGEMParams:
    memory_batch: int | None = 256
    chunk: int = 16

    def check(self, path: str) -> None:
        require(self.memory_batch is None or self.memory_batch >= 1, f"{path}.memory_batch",
                "must be >= 1 (or null for the training batch size)")
        require(self.chunk >= 1, f"{path}.chunk", "must be >= 1")


def reference_gradient(learner, examples: list, params: list, chunk: int, by_length: bool = True) -> torch.Tensor:
    """The flattened gradient of the mean cross-entropy over every answer token of ``examples``,
    accumulated over forward/backward passes of ``chunk`` examples.

    The examples are taken shortest first, so each chunk pads to a length close to its own: the
    sum over tokens does not depend on the order (up to float rounding) and the padding does
    not get computed (``by_length=False`` keeps the drawn order: ``bench/agem_reference.py``)."""
    if by_length:
        examples = sorted(examples, key=lambda e: len(e.prompt_ids) + len(e.answer_ids))
    total = None
    tokens = 0
    for start in range(0, len(examples), chunk):
        logits, labels = learner.answer_logits(learner.encoder.collate(examples[start: start + chunk]))
        nll, mask = token_nll(logits, labels)
        grads = torch.autograd.grad(nll.sum(), params, allow_unused=True)
        flat = flatten([torch.zeros_like(p) if g is None else g for g, p in zip(grads, params)])
        total = flat if total is None else total + flat
        tokens += int(mask.sum())
    return total / max(tokens, 1)


class AGEM(Method):
    name = "agem"
    Params = AGEMParams

    @classmethod
    def validate(cls, params, facts) -> None:
        require_replay(facts, cls.name)

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
        params = learner.adapter.trainable()
        g_ref = reference_gradient(learner, [self._memory[i] for i in picked], params, self.params.chunk)
        grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in params]
        projected, changed = agem_project(flatten(grads), g_ref)
        if changed:
            self._count += 1
            with torch.no_grad():
                for p, new in zip(params, split_like(projected, params)):
                    p.grad = new.clone()

    def end_task(self, ctx: TaskContext) -> None:
        self._projected.append(self._count)

    def state_dict(self, scope: Scope = "run") -> MethodState:
        if scope == "step":
            return MethodState({}, {"rng": rng_state(self._rng), "count": self._count})
        return MethodState({}, {"projected_steps": list(self._projected)})

    def load_state_dict(self, learner, state: MethodState, scope: Scope = "run") -> None:
        if scope == "step":
            restore_rng(self._rng, state.meta["rng"])
            self._count = int(state.meta["count"])
            return
        self._projected = [int(n) for n in state.meta.get("projected_steps", [])]
