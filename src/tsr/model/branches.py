"""Per-task LoRA branches on the adapted layers of a growing adapter (O-LoRA, GainLoRA).

Task 0's pair is PEFT's ``default`` adapter, the pair every method trains. The pairs of tasks
1, 2, ... live in a :class:`BranchBank` attached to each adapted layer as ``tsr_branches``
(parameter names ``...q_proj.tsr_branches.A.t1``), so they are adapter state like any other
non-base parameter, and snapshots, checkpoints and swaps see them. A forward hook on the
layer adds the bank's pairs to the layer's output, each scaled like PEFT's (alpha / r).

With a gate attached (GainLoRA), PEFT's own ungated addition of the default pair is switched
off and the hook adds every pair, task 0 included, multiplied by its task's gate value
(``gate.current[..., t]``, one value per task and position). Each addition is written as PEFT
writes it, so with all gates equal to 1 the sum is bit-identical to the ungated one.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..rng import torch_rng

BANK = "tsr_branches"


def adapted_layers(model: nn.Module) -> dict[str, nn.Module]:
    """The PEFT LoRA layers of ``model`` that carry the ``default`` adapter, by module name."""
    from peft.tuners.lora import LoraLayer

    return {n: m for n, m in model.named_modules() if isinstance(m, LoraLayer) and "default" in m.lora_A}


def key(task: int) -> str:
    return f"t{task}"


class BranchBank(nn.Module):
    """The LoRA pairs of tasks 1, 2, ... on one layer: ``A[t]`` (r x in), ``B[t]`` (out x r)."""

    def __init__(self) -> None:
        super().__init__()
        self.A = nn.ParameterDict()
        self.B = nn.ParameterDict()
        object.__setattr__(self, "gate", None)  # a plain reference, never a submodule

    def tasks(self) -> list[int]:
        return sorted(int(k[1:]) for k in self.A)


def attach(layer: nn.Module, gate: nn.Module | None = None) -> BranchBank:
    """The layer's bank, created with its forward hook on first use (idempotent)."""
    bank = getattr(layer, BANK, None)
    if bank is None:
        bank = BranchBank()
        layer.add_module(BANK, bank)
        layer.register_forward_hook(_add_branches)
    if gate is not None and bank.gate is None:
        object.__setattr__(bank, "gate", gate)
        layer.enable_adapters(False)  # the hook now adds the default pair, gated
    return bank


def ensure_pair(layer: nn.Module, task: int) -> None:
    """Make sure task ``task`` (>= 1) has a pair on this layer (zeros when new)."""
    bank = attach(layer)
    if key(task) in bank.A:
        return
    ref = layer.lora_A["default"].weight
    r = ref.shape[0]
    bank.A[key(task)] = nn.Parameter(torch.zeros(r, layer.in_features, dtype=ref.dtype, device=ref.device))
    bank.B[key(task)] = nn.Parameter(torch.zeros(layer.out_features, r, dtype=ref.dtype, device=ref.device))


@torch.no_grad()
def init_pair(layer: nn.Module, name: str, task: int, seed: int) -> None:
    """Task ``task``'s pair at initialisation: A drawn with the law of the shared
    initialisation (uniform, bound 1/sqrt(fan_in)) from (seed, "branch-init", task, name), B zero."""
    ensure_pair(layer, task)
    bank = getattr(layer, BANK)
    a = bank.A[key(task)]
    bound = 1.0 / math.sqrt(a.shape[1])
    values = torch.rand(a.shape, generator=torch_rng(seed, "branch-init", task, name), dtype=torch.float32)
    a.copy_((values * 2 * bound - bound).to(a.dtype))
    bank.B[key(task)].zero_()


def train_only(adapter, keep: list[nn.Parameter]) -> None:
    """Freeze every adapter parameter except those in ``keep`` (the base stays frozen)."""
    ids = {id(p) for p in keep}
    for _, p in adapter.named():
        p.requires_grad_(id(p) in ids)


def pair(layer: nn.Module, task: int) -> tuple[nn.Parameter, nn.Parameter]:
    """(A, B) of task ``task`` on this layer; task 0 is PEFT's default adapter."""
    if task == 0:
        return layer.lora_A["default"].weight, layer.lora_B["default"].weight
    bank = getattr(layer, BANK)
    return bank.A[key(task)], bank.B[key(task)]


def orthogonality(layers: dict[str, nn.Module], task: int) -> torch.Tensor:
    """O-LoRA's L_orth: the sum over layers and old tasks j < ``task`` of ``|A_j A_task^T|``
    summed entrywise (zero on the first task)."""
    terms = []
    for layer in layers.values():
        new = pair(layer, task)[0]
        terms.extend((pair(layer, j)[0] @ new.T).abs().sum() for j in range(task))
    return torch.stack(terms).sum() if terms else torch.zeros(())


def pair_norm(layers: dict[str, nn.Module], task: int) -> torch.Tensor:
    """The sum over layers of ``||A_task||_F + ||B_task||_F`` (O-LoRA code's L2 term)."""
    return torch.stack([torch.linalg.norm(w) for layer in layers.values() for w in pair(layer, task)]).sum()


def _add_branches(layer: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
    bank: BranchBank = getattr(layer, BANK)
    gates = bank.gate.current if bank.gate is not None else None
    x, drop, scale = args[0], layer.lora_dropout["default"], layer.scaling["default"]
    result = out
    if gates is not None and gates.shape[-1] > 0:  # no gate yet (zero-shot): task 0's B is 0
        lora_a, lora_b = layer.lora_A["default"], layer.lora_B["default"]
        result = result + (lora_b(lora_a(drop(x.to(lora_a.weight.dtype)))) * scale) * gates[..., 0:1]
    for t in bank.tasks():
        if gates is not None and t >= gates.shape[-1]:
            continue
        a, b = bank.A[key(t)], bank.B[key(t)]
        delta = F.linear(F.linear(drop(x.to(a.dtype)), a), b) * scale
        result = result + (delta * gates[..., t:t + 1] if gates is not None else delta)
    return result.to(out.dtype)
