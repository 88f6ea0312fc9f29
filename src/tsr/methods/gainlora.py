"""GainLoRA: gated integration of low-rank adaptation (Liang et al., NeurIPS 2025).

Each task gets a new LoRA branch on every adapted projection; old branches are frozen, and
every forward adds branch i scaled by its gate ``a_i(x) = |2 sigmoid(4 cos(g_i(q(x)), k_i)) - 1|``
(:mod:`tsr.model.gating`: a model-level gate, one value per task shared by all layers, no task
identity). The new task's gating network starts from the previous one, its key starts
orthogonal to the old tasks' gate outputs, and after every optimiser step the updates of its
two weight matrices and its key are projected off the subspaces spanned by old tasks' inputs
to them (:mod:`tsr.cl.gpm`), so the new gate stays at zero on old tasks' inputs.

Variant: the official release (github.com/liangyanshuo/gainlora), GainLoRA (InfLoRA): each
branch's A is fixed before training to the top-r directions of the task's inputs to that
layer with the old tasks' input subspace removed (scaled 1/sqrt(3)), and only B trains.
``branch: olora`` gives the paper's GainLoRA (O-LoRA): A and B train from the shared
initialisation's law with O-LoRA's orthogonality penalty (``olora_lambda``, default 0.5).
Task 0's branch is the shared adapter (PEFT ``default``); it is gated from the first task on.
Deviations (decoder-only port, parity with the reference paper):
- The gate reads the mean embedding of tokens 1..p at position p, padding excluded (the
  release averages its encoder input, dividing by the padded length); see :mod:`tsr.model.gating`.
- Subspaces are built from attended positions of the task's training budget, one pass at the
  start (key, A) and one at the end (memory) of each task; chunk = 1.
- The projection is applied to the parameter update after the AdamW step, as released
  (including the release's rescaling of each projected row to its unprojected norm,
  ``keep_row_norms``); with no post-step hook in the contract it runs at the start of the
  next step and at the end of the task.
- Footprint, lr and steps are the run's (q, k, v, o at r = 16, alpha = 32, lr 1e-4), not
  the release's T5 setting. Defaults from the release's scripts: gate hidden 100,
  threshold 0.995 (both memories), growing to 1 over a horizon of 15 tasks (hard-coded there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import torch

from ..cl.gpm import Covariances, collect_layer_inputs, extend_basis, project_out, threshold_at, top_directions
from ..cl.losses import masked_ce
from ..model import branches
from ..model.gating import attach_gate
from ..schema import require
from .base import Method, MethodState, Scope
from .context import TaskContext

GATE_PARTS = (("gate.in", "w1"), ("gate.hidden", "w2"), ("gate.key", "key"))


@dataclass
class GainLoRAParams:
    branch: Literal["inflora", "olora"] = "inflora"
    gate_hidden: int = 100
    threshold: float = 0.995
    threshold_horizon: int = 15
    olora_lambda: float | None = None
    keep_row_norms: bool = True

    def check(self, path: str) -> None:
        require(self.gate_hidden >= 1, f"{path}.gate_hidden", "must be >= 1")
        require(0.0 < self.threshold <= 1.0, f"{path}.threshold", "energy threshold must be in (0, 1]")
        require(self.threshold_horizon >= 1, f"{path}.threshold_horizon", "must be >= 1")
        require(self.olora_lambda is None or self.olora_lambda >= 0.0, f"{path}.olora_lambda", "must be >= 0")
        require(self.olora_lambda is None or self.branch == "olora", f"{path}.olora_lambda",
                "applies only to branch=olora (InfLoRA branches have no orthogonality penalty)")


class GainLoRA(Method):
    name = "gainlora"
    Params = GainLoRAParams

    def __init__(self, params: GainLoRAParams):
        super().__init__(params)
        self._task = -1
        self._bases: dict[str, torch.Tensor] = {}
        self._aliases: dict[str, str] = {}
        self._before: dict[str, torch.Tensor] | None = None

    def setup(self, learner) -> None:
        self._learner = learner
        self._layers = branches.adapted_layers(learner.model)
        self._gate = attach_gate(learner.model, self.params.gate_hidden)
        for layer in self._layers.values():
            branches.attach(layer, self._gate)

    def _batches(self, ctx: TaskContext) -> list:
        encoded = ctx.encode(ctx.train, f"task {ctx.task.name}")
        size = ctx.batch_size
        return [ctx.learner.encoder.collate(encoded[i:i + size]) for i in range(0, len(encoded), size)]

    def _gate_covariances(self, batches: list, task: int) -> Covariances:
        covs, device = Covariances(), self._learner.device
        for b in batches:
            rows = self._gate.feature_rows(b.input_ids.to(device), b.attention_mask.to(device), task)
            for (kind, _), r in zip(GATE_PARTS, rows):
                covs.add(kind, r)
        return covs

    def _layer_covariances(self, batches: list) -> tuple[Covariances, dict[str, str]]:
        return collect_layer_inputs(self._learner.model, self._layers, batches, self._learner.device)

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        t = self._task = ctx.index
        gate, inflora = self._gate, self.params.branch == "inflora"
        gate.init_network(t, ctx.seed)
        for name, layer in self._layers.items():
            if t > 0:
                branches.init_pair(layer, name, t, ctx.seed)  # B = 0: the branch is silent until trained
        batches = self._batches(ctx)
        cov = self._gate_covariances(batches, t).mean("gate.key")
        gate.set_key(t, top_directions(cov, self._bases.get("gate.key"), 1)[:, 0], ctx.seed)
        if inflora:
            covs, aliases = self._layer_covariances(batches)
            with torch.no_grad():
                for name, layer in self._layers.items():
                    a = branches.pair(layer, t)[0]
                    u = top_directions(covs.mean(aliases.get(name, name)), self._bases.get(f"lora.{name}"), a.shape[0])
                    a.copy_((u.T / math.sqrt(3.0)).to(a.dtype))
        keep = [gate.w1[branches.key(t)], gate.w2[branches.key(t)], gate.key[branches.key(t)]]
        for layer in self._layers.values():
            a, b = branches.pair(layer, t)
            keep += [b] if inflora else [a, b]
        branches.train_only(ctx.learner.adapter, keep)
        return {"branches": t + 1}

    def _gate_params(self) -> dict[str, torch.nn.Parameter]:
        k = branches.key(self._task)
        return {kind: getattr(self._gate, attr)[k] for kind, attr in GATE_PARTS}

    def after_backward(self, ctx: TaskContext, batch, draw) -> None:
        if ctx.index > 0:
            self._before = {kind: p.detach().clone() for kind, p in self._gate_params().items()}

    @torch.no_grad()
    def _project_pending(self) -> None:
        """Project the last optimiser step's update of the gate off the old tasks' subspaces."""
        if self._before is None:
            return
        for kind, param in self._gate_params().items():
            now = param.view(-1, param.shape[-1])
            before = self._before[kind].view_as(now)
            basis = self._bases.get(kind)
            new = before + project_out(now - before, None if basis is None else basis.to(now))
            if self.params.keep_row_norms:
                new = new * (now.norm(dim=1, keepdim=True) / new.norm(dim=1, keepdim=True).clamp_min(1e-30))
            param.copy_(new.view_as(param))
        self._before = None

    def after_step(self, ctx: TaskContext) -> None:
        self._project_pending()

    def loss(self, ctx: TaskContext, batch, draw) -> dict[str, torch.Tensor]:
        terms = {"ce": masked_ce(*ctx.learner.answer_logits(batch))}
        lam = 0.5 if self.params.olora_lambda is None else self.params.olora_lambda
        if self.params.branch == "olora" and lam > 0 and ctx.index > 0:
            terms["orth"] = lam * branches.orthogonality(self._layers, ctx.index).to(ctx.learner.device)
        return terms

    def end_task(self, ctx: TaskContext) -> None:
        t, p = ctx.index, self.params
        threshold = threshold_at(p.threshold, t, p.threshold_horizon)
        batches = self._batches(ctx)
        covs = self._gate_covariances(batches, t)
        for kind, _ in GATE_PARTS:
            self._bases[kind] = extend_basis(covs.mean(kind), self._bases.get(kind), threshold)
        if p.branch != "inflora":
            return
        covs, aliases = self._layer_covariances(batches)
        for name in covs.names():
            self._bases[f"lora.{name}"] = extend_basis(covs.mean(name), self._bases.get(f"lora.{name}"), threshold)
        for name, first in aliases.items():
            self._bases[f"lora.{name}"] = self._bases[f"lora.{first}"]
        self._aliases = dict(aliases)

    def state_dict(self, scope: Scope = "run") -> MethodState:
        if scope == "step":
            return MethodState()
        shared = {f"lora.{name}" for name in self._aliases}
        tensors = {k: v for k, v in self._bases.items() if k not in shared}
        return MethodState(tensors, {"tasks": self._task + 1, "aliases": dict(self._aliases)})

    def load_state_dict(self, learner, state: MethodState, scope: Scope = "run") -> None:
        if scope == "step":
            return
        self.setup(learner)
        tasks = int(state.meta.get("tasks", 0))
        for t in range(tasks):
            self._gate.ensure(t)
            for layer in self._layers.values():
                if t > 0:
                    branches.ensure_pair(layer, t)
        self._task = tasks - 1
        self._aliases = dict(state.meta.get("aliases", {}))
        # fresh (aligned) copies: CPU BLAS results can depend on the alignment of loaded tensors
        self._bases = {k: v.to(learner.device).clone() for k, v in state.tensors.items()}
        for name, first in self._aliases.items():
            self._bases[f"lora.{name}"] = self._bases[f"lora.{first}"]
