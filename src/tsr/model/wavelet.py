"""DEAL's retention filter: a one-level 2-D Haar transform of LoRA's A and a learnable map.

The orthonormal one-level Haar transform splits a matrix into 2x2 blocks ``[[a, b], [c, d]]``
and returns one approximation and three detail coefficients per block:

    cA = (a + b + c + d) / 2      cH = (a + b - c - d) / 2
    cV = (a - b + c - d) / 2      cD = (a - b - c + d) / 2

(an orthogonal 4x4 map per block, so :func:`ihaar2d` reconstructs exactly). Matrices with an
odd side are zero-padded at the end and cropped back. Only ``cA`` is filtered, so the signs
chosen for the details do not matter.

:class:`WaveletFilter` is DEAL's ``LinearWaveletFilter`` (Han et al., NeurIPS 2025; release
github.com/Applied-Machine-Learning-Lab/DEAL): the down-projection ``x A^T`` becomes
``mlp(x A_f^T)`` with ``A_f = ihaar2d(theta * cA(A), details(A))`` and
``mlp = fc2(relu(fc1(.)))`` on the r-dimensional output. It hangs on an adapted layer as
``tsr_deal``; a forward hook on the layer's ``lora_A`` replaces that module's output, so A
keeps its PEFT name and stays the parameter the filter reads.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..rng import torch_rng

FILTER = "tsr_deal"

Details = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _blocks(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    rows, cols = x.shape[-2], x.shape[-1]
    x = F.pad(x, (0, cols % 2, 0, rows % 2))
    return x[..., 0::2, 0::2], x[..., 0::2, 1::2], x[..., 1::2, 0::2], x[..., 1::2, 1::2]


def haar2d(x: torch.Tensor) -> tuple[torch.Tensor, Details]:
    """One-level orthonormal 2-D Haar transform of the last two dimensions: (cA, (cH, cV, cD))."""
    a, b, c, d = _blocks(x)
    return (a + b + c + d) / 2, ((a + b - c - d) / 2, (a - b + c - d) / 2, (a - b - c + d) / 2)


def ihaar2d(approx: torch.Tensor, details: Details, shape: tuple[int, int] | None = None) -> torch.Tensor:
    """Inverse of :func:`haar2d`, cropped to ``shape`` (rows, cols) when given."""
    h, v, d = details
    a = (approx + h + v + d) / 2
    b = (approx + h - v - d) / 2
    c = (approx - h + v - d) / 2
    e = (approx - h - v + d) / 2
    rows, cols = approx.shape[-2] * 2, approx.shape[-1] * 2
    out = approx.new_empty(*approx.shape[:-2], rows, cols)
    out[..., 0::2, 0::2], out[..., 0::2, 1::2], out[..., 1::2, 0::2], out[..., 1::2, 1::2] = a, b, c, e
    if shape is not None:
        out = out[..., : shape[0], : shape[1]]
    return out


def filtered(weight: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """``weight`` with its approximation coefficients scaled by ``theta`` (the identity at theta = 1)."""
    approx, details = haar2d(weight)
    return ihaar2d(approx * theta, details, tuple(weight.shape))


class WaveletFilter(nn.Module):
    """theta (one per approximation coefficient of A) and the r -> hidden -> r map."""

    def __init__(self, rank: int, in_features: int, hidden: int, dtype: torch.dtype, device) -> None:
        super().__init__()
        shape = ((rank + 1) // 2, (in_features + 1) // 2)
        self.theta = nn.Parameter(torch.ones(shape, dtype=dtype, device=device))
        # skip_init: no draw from the global generator; values come from reset() or a load
        self.fc1 = nn.utils.skip_init(nn.Linear, rank, hidden, dtype=dtype, device=device)
        self.fc2 = nn.utils.skip_init(nn.Linear, hidden, rank, dtype=dtype, device=device)

    @torch.no_grad()
    def reset(self, seed: int, name: str) -> None:
        """theta = 1; the release's Kaiming-uniform (ReLU gain) weights from
        (seed, "deal-init", name, layer) and zero biases."""
        self.theta.fill_(1.0)
        for part in (self.fc1, self.fc2):
            bound = math.sqrt(2.0) * math.sqrt(3.0 / part.weight.shape[1])
            gen = torch_rng(seed, "deal-init", name, "fc1" if part is self.fc1 else "fc2")
            values = torch.rand(part.weight.shape, generator=gen, dtype=torch.float32) * 2 * bound - bound
            part.weight.copy_(values.to(part.weight.dtype))
            part.bias.zero_()

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(F.linear(x, filtered(weight, self.theta)))))

    def mlp_parameters(self) -> list[nn.Parameter]:
        return [self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias]


def _filtered_down(lora_a: nn.Linear, args: tuple, out: torch.Tensor) -> torch.Tensor:
    return lora_a.tsr_filter(args[0], lora_a.weight)


def attach_filter(layer: nn.Module, hidden: int) -> WaveletFilter:
    """The layer's filter, created (theta = 1, zero map) with its hook on first use (idempotent)."""
    filt = getattr(layer, FILTER, None)
    if filt is None:
        ref = layer.lora_A["default"].weight
        filt = WaveletFilter(ref.shape[0], ref.shape[1], hidden, ref.dtype, ref.device)
        with torch.no_grad():
            for p in filt.mlp_parameters():
                p.zero_()
        layer.add_module(FILTER, filt)
        lora_a = layer.lora_A["default"]
        object.__setattr__(lora_a, "tsr_filter", filt)  # a plain reference for the hook
        lora_a.register_forward_hook(_filtered_down)
    return filt
