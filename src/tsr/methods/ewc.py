"""EWC: elastic weight consolidation (Kirkpatrick et al., 2017; online variant: Schwarz et al., 2018).

When a task ends, the diagonal Fisher information of the LoRA parameters is estimated from
squared gradients at the task's final parameters; while later tasks train, the loss adds
``lam * sum_j sum_i F_j,i (theta_i - theta*_j,i)^2``, a Fisher-weighted pull toward the
parameters each past task ended with (``mode: separate``, one term per past task). With
``mode: online`` there is a single term: the running Fisher ``F~ = gamma F~ + F_t`` anchored at
the previous task's end (Schwarz et al.'s online EWC / Progress & Compress).

Fisher estimate: the empirical Fisher, per example. For each of ``fisher_examples`` training
examples of the finished task (default: all of them, i.e. the budget N; a subset is drawn by
seed), one forward/backward of that single example's loss (the training loss: mean
cross-entropy over its answer tokens and EOS, with its gold answer), and the squared gradient
is averaged over the examples. The model is in evaluation mode (no dropout).

Deviations from the paper and official code:
- The penalty has no 1/2: ``lam * F (theta - theta*)^2`` as in mammoth's ``ewc_on`` and TRACE's
  LLM port (``BeyonderXX/TRACE``, ``model/Regular/EWC.py``); Kirkpatrick's ``lambda/2`` form is
  ``lam = lambda / 2``.
- Per-example gradients of the token-mean loss (not the summed sequence log-likelihood), so a
  long answer does not dominate the estimate; TRACE squares the per-batch gradients of its
  training steps instead.
- Anchors are the task-memory snapshots (identical to the parameters at each task's end), so
  only the Fisher estimates live in the method state.

Defaults: ``lam = 100``, set by a sweep on ``synth-trace`` with the bundled base (neither the
reference paper nor TRACE's LLM port states a tuned value; TRACE adds the penalty with unit
weight): lam in {1, 10, 100, 1000} over seeds 0-2 and {1e4, 1e5, 1e6} on seed 0, at 300 steps
per task. lam = 100 gives the best Overall accuracy (0.149 +- 0.052 against 0.022 +- 0.018 at
lam = 1, where the penalty is under 1% of the cross-entropy) and the best Overall loss, at
the same plasticity (0.476); from lam = 1e4 plasticity falls (0.32 and below). Table and
command: docs/results.md. On a real backbone the Fisher's scale differs; sweep it there.
``gamma = 1`` is mammoth's best setting for online EWC (``utils/best_args.py``: MNIST variants,
Seq-CIFAR-10, Seq-TinyImageNet).

Code consulted (re-implemented, not copied): aimagelab/mammoth ``models/ewc_on.py``, which also
weights each squared gradient by the example's probability (we do not), and BeyonderXX/TRACE
``model/Regular/EWC.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from ..cl.fisher import empirical_fisher, online_fisher, quadratic_penalty
from ..cl.losses import masked_ce
from ..data.collate import Encoded
from ..errors import RunError
from ..schema import require
from .base import Method, MethodState, Scope
from .context import Draw, TaskContext


@dataclass
class EWCParams:
    lam: float = 100.0
    mode: Literal["separate", "online"] = "separate"
    gamma: float = 1.0
    fisher_examples: int | None = None

    def check(self, path: str) -> None:
        require(self.lam >= 0.0, f"{path}.lam", "penalty weight must be >= 0")
        require(0.0 <= self.gamma <= 1.0, f"{path}.gamma", "online decay must be in [0, 1]")
        require(self.fisher_examples is None or self.fisher_examples >= 1, f"{path}.fisher_examples",
                "must be >= 1 (or null for every training example of the task)")


class EWC(Method):
    name = "ewc"
    Params = EWCParams

    def __init__(self, params: EWCParams):
        super().__init__(params)
        self._names: list[str] = []
        self._fisher: list[list[torch.Tensor]] = []  # separate: one per finished task; online: one
        self._tasks = 0                                # finished tasks folded into the estimate
        self._terms: list[tuple[list[torch.Tensor], list[torch.Tensor]]] = []

    def setup(self, learner) -> None:
        self._names = [n for n, p in learner.adapter.named() if p.requires_grad]

    def _params(self, ctx: TaskContext) -> list[torch.nn.Parameter]:
        named = dict(ctx.learner.adapter.named())
        return [named[n] for n in self._names]

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        if self._tasks != len(ctx.memory):
            raise RunError(f"ewc holds Fisher estimates of {self._tasks} tasks but the task memory "
                           f"has {len(ctx.memory)}; the checkpoint does not match the run")
        self._terms = []
        if self._tasks:
            if self.params.mode == "online":
                anchors = [(self._fisher[0], ctx.snapshot_of(len(ctx.memory) - 1))]
            else:
                anchors = [(f, ctx.snapshot_of(j)) for j, f in enumerate(self._fisher)]
            self._terms = [(f, [snap[n] for n in self._names]) for f, snap in anchors]
        return {}

    def loss(self, ctx: TaskContext, batch, draw: Draw) -> dict[str, torch.Tensor]:
        terms = super().loss(ctx, batch, draw)
        if self.params.lam > 0 and self._terms:
            params = self._params(ctx)
            penalty = sum(quadratic_penalty(params, anchor, fisher) for fisher, anchor in self._terms)
            terms["ewc"] = self.params.lam * penalty
        return terms

    def end_task(self, ctx: TaskContext) -> None:
        encoded = ctx.encode(ctx.train, f"task {ctx.task.name}")
        n = self.params.fisher_examples
        if n is not None and n < len(encoded):
            order = ctx.rng("fisher").permutation(len(encoded))[:n]
            encoded = [encoded[int(i)] for i in sorted(order)]
        learner = ctx.learner

        def loss_of(enc: Encoded) -> torch.Tensor:
            batch = learner.encoder.collate([enc])
            return masked_ce(*learner.answer_logits(batch))

        fisher = empirical_fisher(loss_of, self._params(ctx), encoded)
        if self.params.mode == "online":
            self._fisher = [online_fisher(self._fisher[0] if self._fisher else None, fisher, self.params.gamma)]
        else:
            self._fisher.append(fisher)
        self._tasks += 1

    def state_dict(self, scope: Scope = "run") -> MethodState:
        if scope == "step":
            return MethodState()
        tensors = {f"fisher.{j}.{name}": t for j, f in enumerate(self._fisher)
                   for name, t in zip(self._names, f)}
        return MethodState(tensors, {"tasks": self._tasks, "estimates": len(self._fisher),
                                     "mode": self.params.mode})

    def load_state_dict(self, learner, state: MethodState, scope: Scope = "run") -> None:
        if scope == "step":
            return
        if state.meta.get("mode") != self.params.mode:
            raise RunError(f"ewc checkpoint was written in mode {state.meta.get('mode')!r}, "
                           f"not {self.params.mode!r}")
        device = learner.device
        self._fisher = [[state.tensors[f"fisher.{j}.{name}"].to(device) for name in self._names]
                        for j in range(int(state.meta["estimates"]))]
        self._tasks = int(state.meta["tasks"])
