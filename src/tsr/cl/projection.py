"""Gradient projection: A-GEM's constraint against a reference gradient (Chaudhry et al., 2019).

The gradient ``g`` of the current step and the reference gradient ``g_ref`` (on a batch of
stored examples of past tasks) are flat vectors over every trainable parameter. When they
conflict (``g . g_ref < 0``) ``g`` is replaced by its projection onto the half-space where the
memory loss does not increase to first order: ``g - (g . g_ref / g_ref . g_ref) g_ref``.
"""

from __future__ import annotations

from typing import Sequence

import torch


def flatten(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """One flat float32 vector from a list of tensors (in order)."""
    return torch.cat([t.detach().float().reshape(-1) for t in tensors])


def split_like(vector: torch.Tensor, like: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Cut a flat vector back into tensors shaped (and typed) like ``like``."""
    out, start = [], 0
    for t in like:
        n = t.numel()
        out.append(vector[start: start + n].view(t.shape).to(t.dtype))
        start += n
    if start != vector.numel():
        raise ValueError(f"vector of {vector.numel()} values does not match tensors of {start}")
    return out


def agem_project(g: torch.Tensor, g_ref: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """(projected gradient, whether it was projected) for flat vectors ``g`` and ``g_ref``.

    Dot products are taken in float64. A zero reference gradient constrains nothing.
    """
    if g.shape != g_ref.shape:
        raise ValueError(f"gradient shapes differ: {tuple(g.shape)} vs {tuple(g_ref.shape)}")
    dot = float(g.double() @ g_ref.double())
    if dot >= 0.0:
        return g, False
    ref_sq = float(g_ref.double() @ g_ref.double())
    if ref_sq == 0.0:
        return g, False
    return g - (dot / ref_sq) * g_ref.to(g.dtype), True
