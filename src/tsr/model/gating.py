"""GainLoRA's gates: one coefficient per task, computed once per input, used by every layer.

Task i owns a gating network ``g_i`` (two bias-free linear maps, each followed by SiLU, as in
the release's ``trans_input``) and a key ``k_i``. The coefficient of task i's LoRA branch is

    a_i(x) = | 2 sigmoid(4 cos(g_i(mean_emb(x)), k_i)) - 1 |     (= |tanh(2 cos)|),

so a query orthogonal to the key switches the branch off exactly. The release (an
encoder-decoder) reads the mean embedding of the whole encoder input. A decoder-only model
sees prompt and answer in one sequence, and averaging over all of it would let every position
(teacher-forced scoring included) see the gold answer; here position p reads the mean
embedding of tokens 1..p (padding excluded), which is causal, equals what greedy decoding
computes, and needs no task identity.

:class:`GateNet` holds every task's network and key (``tsr_gate.w1.t0``, ...) as adapter
state; a forward pre-hook on the model computes ``current`` (batch, length, tasks) for the
branch hooks of :mod:`tsr.model.branches`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..rng import torch_rng
from .branches import key

GATE = "tsr_gate"


def prefix_mean(emb: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the attended embeddings up to and including each position (batch, length, d)."""
    m = mask.to(emb.dtype).unsqueeze(-1)
    return torch.cumsum(emb * m, dim=1) / torch.cumsum(m, dim=1).clamp(min=1.0)


def gate_features(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(hidden, output) of a gating network: ``silu(silu(x w1^T) w2^T)``."""
    hidden = F.silu(x @ w1.T)
    return hidden, F.silu(hidden @ w2.T)


def gate_value(query: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``|2 sigmoid(4 cos(query, k)) - 1|`` over the last dimension (0 when either is zero)."""
    cos = (F.normalize(query, dim=-1, eps=1e-12) * F.normalize(k, dim=-1, eps=1e-12)).sum(-1)
    return (2 * torch.sigmoid(4 * cos) - 1).abs()


class GateNet(nn.Module):
    """Every task's gating network and key."""

    def __init__(self, embed: nn.Module, width: int, hidden: int, dtype: torch.dtype, device) -> None:
        super().__init__()
        self.w1, self.w2, self.key = nn.ParameterDict(), nn.ParameterDict(), nn.ParameterDict()
        self.width, self.hidden, self.dtype, self.device = width, hidden, dtype, device
        object.__setattr__(self, "embed", embed)  # the base model's embedding: not ours to register
        self.current: torch.Tensor | None = None

    def tasks(self) -> list[int]:
        return sorted(int(k[1:]) for k in self.key)

    def ensure(self, task: int) -> None:
        """Parameters for task ``task`` (zeros when new)."""
        if key(task) in self.key:
            return
        make = lambda *shape: nn.Parameter(torch.zeros(*shape, dtype=self.dtype, device=self.device))
        self.w1[key(task)] = make(self.hidden, self.width)
        self.w2[key(task)] = make(self.width, self.hidden)
        self.key[key(task)] = make(self.width)

    @torch.no_grad()
    def init_network(self, task: int, seed: int) -> None:
        """Task 0: PyTorch's linear-layer law (uniform, bound 1/sqrt(fan_in)) from
        (seed, "gainlora-gate", name); later tasks continue from the previous task's network."""
        self.ensure(task)
        for name, table in (("w1", self.w1), ("w2", self.w2)):
            w = table[key(task)]
            if task > 0:
                w.copy_(table[key(task - 1)])
                continue
            bound = 1.0 / math.sqrt(w.shape[1])
            values = torch.rand(w.shape, generator=torch_rng(seed, "gainlora-gate", name), dtype=torch.float32)
            w.copy_((values * 2 * bound - bound).to(w.dtype))

    @torch.no_grad()
    def set_key(self, task: int, direction: torch.Tensor, seed: int) -> None:
        """The key along ``direction`` with the norm of the release's uniform(-1, 1) draw."""
        draw = torch.rand(self.width, generator=torch_rng(seed, "gainlora-key", task), dtype=torch.float32) * 2 - 1
        k = direction.float().flatten()
        self.key[key(task)].copy_((k / k.norm().clamp_min(1e-12) * draw.norm()).to(self.dtype))

    def queries(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None):
        """(prefix-mean embeddings, attention mask) of a batch."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        with torch.no_grad():
            emb = self.embed(input_ids).to(self.dtype)
        return prefix_mean(emb, attention_mask.to(emb.device)), attention_mask

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        x, _ = self.queries(input_ids, attention_mask)
        if not self.key:
            return x.new_zeros(*x.shape[:-1], 0)
        cols = [gate_value(gate_features(x, self.w1[key(t)], self.w2[key(t)])[1], self.key[key(t)])
                for t in self.tasks()]
        return torch.stack(cols, dim=-1)

    @torch.no_grad()
    def feature_rows(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, task: int):
        """(query input, hidden, output) rows of task ``task``'s network at attended positions."""
        x, mask = self.queries(input_ids, attention_mask)
        hidden, out = gate_features(x, self.w1[key(task)], self.w2[key(task)])
        keep = mask.bool()
        return x[keep], hidden[keep], out[keep]


def _compute_gates(model: nn.Module, args: tuple, kwargs: dict) -> None:
    gate: GateNet = getattr(model, GATE)
    ids = kwargs.get("input_ids", args[0] if args else None)
    gate.current = gate(ids, kwargs.get("attention_mask"))


def attach_gate(model: nn.Module, hidden: int) -> GateNet:
    """The model's :class:`GateNet`, created with its forward pre-hook on first use (idempotent)."""
    gate = getattr(model, GATE, None)
    if gate is None:
        embed = model.get_input_embeddings()
        ref = next(p for n, p in model.named_parameters() if ".lora_A." in n)
        gate = GateNet(embed, embed.weight.shape[1], hidden, ref.dtype, ref.device)
        model.add_module(GATE, gate)
        model.register_forward_pre_hook(_compute_gates, with_kwargs=True)
    return gate
