"""O-LoRA: orthogonal subspace learning (Wang et al., Findings of EMNLP 2023).

Each task trains a fresh LoRA pair on every adapted projection while the pairs of earlier
tasks stay frozen; every forward adds all pairs (no task identity at inference). The loss is
cross-entropy plus ``lambda1 * sum_layers sum_{j<t} |A_j A_t^T|`` (entrywise L1 of the
overlap between the new A and each old A) plus ``lambda2 * sum_layers (||A_t|| + ||B_t||)``.

Built from the paper and the official code (github.com/cmnfriend/O-LoRA):
- Task 0's pair is the shared adapter (PEFT ``default``), so the first task is exactly SeqFT
  when ``lambda2 = 0``; the pairs of later tasks are ``tsr_branches.{A,B}.t<k>`` on each layer
  (:mod:`tsr.model.branches`), A drawn with the shared initialisation's law from
  (seed, "branch-init", task, layer), B zero. Every pair uses the adapter's r and alpha.
- The official code concatenates old pairs into one growing ``lora_A``/``lora_B``; summing
  per-task pairs is the same function and the same penalty.
- ``lambda2`` multiplies the code's unsquared Frobenius norms of the new pair (the paper
  states only the orthogonality term); the code applies it from the first task on.
- Defaults: lambda1 = 0.5 and lambda2 = 0, the values of every standard-order script of the
  official release. Learning rate, steps and adapter footprint are the run's (the reference
  paper's parity setting), not O-LoRA's 1e-3 with T5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..cl.losses import masked_ce
from ..model import branches
from ..schema import require
from .base import Method, MethodState, Scope
from .context import TaskContext


@dataclass
class OLoRAParams:
    lambda1: float = 0.5
    lambda2: float = 0.0

    def check(self, path: str) -> None:
        require(self.lambda1 >= 0.0, f"{path}.lambda1", "orthogonality weight must be >= 0")
        require(self.lambda2 >= 0.0, f"{path}.lambda2", "L2 weight must be >= 0")


class OLoRA(Method):
    name = "olora"
    Params = OLoRAParams

    def __init__(self, params: OLoRAParams):
        super().__init__(params)
        self._layers: dict = {}
        self._task = 0

    def setup(self, learner) -> None:
        self._layers = branches.adapted_layers(learner.model)

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        t = self._task = ctx.index
        for name, layer in self._layers.items():
            if t > 0:
                branches.init_pair(layer, name, t, ctx.seed)
        current = [w for layer in self._layers.values() for w in branches.pair(layer, t)]
        branches.train_only(ctx.learner.adapter, current)
        return {"pairs": t + 1}

    def loss(self, ctx: TaskContext, batch, draw) -> dict[str, torch.Tensor]:
        terms = {"ce": masked_ce(*ctx.learner.answer_logits(batch))}
        p, t = self.params, ctx.index
        if p.lambda1 > 0 and t > 0:
            terms["orth"] = p.lambda1 * branches.orthogonality(self._layers, t).to(ctx.learner.device)
        if p.lambda2 > 0:
            terms["l2"] = p.lambda2 * branches.pair_norm(self._layers, t).to(ctx.learner.device)
        return terms

    def state_dict(self, scope: Scope = "run") -> MethodState:
        if scope == "step":
            return MethodState()
        return MethodState(meta={"pairs": self._task + 1})

    def load_state_dict(self, learner, state: MethodState, scope: Scope = "run") -> None:
        if scope == "step":
            return
        self.setup(learner)
        pairs = int(state.meta.get("pairs", 1))
        for layer in self._layers.values():
            for t in range(1, pairs):
                branches.ensure_pair(layer, t)
        self._task = pairs - 1
