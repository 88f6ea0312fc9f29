"""Diagonal Fisher information and quadratic parameter penalties.

EWC (Kirkpatrick et al., 2017) weighs the squared distance to a past task's parameters by the
diagonal of that task's Fisher information; the L2 anchor of the reference paper's carrier
ablation is the same penalty with unit weights. Both methods call these functions, so the
maths is tested once.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence, TypeVar

import torch

T = TypeVar("T")


def squared_gradients(loss: torch.Tensor, params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Elementwise squared gradient of ``loss`` w.r.t. each of ``params`` (float32).

    Uses ``torch.autograd.grad``: no ``.grad`` buffer is written. A parameter the loss does not
    depend on gets zeros.
    """
    grads = torch.autograd.grad(loss, list(params), allow_unused=True)
    return [torch.zeros_like(p, dtype=torch.float32) if g is None else g.detach().float() ** 2
            for g, p in zip(grads, params)]


def empirical_fisher(loss_of: Callable[[T], torch.Tensor], params: Sequence[torch.Tensor],
                     items: Iterable[T]) -> list[torch.Tensor]:
    """Diagonal empirical Fisher: the mean over ``items`` of the squared gradient of ``loss_of(item)``.

    With one example per item this is Kirkpatrick et al.'s per-sample estimate
    ``F_i = E_x[(d log p(y|x) / d theta_i)^2]`` with the gold label ``y`` (the "empirical"
    Fisher that EWC implementations use).
    """
    total: list[torch.Tensor] | None = None
    count = 0
    for item in items:
        squares = squared_gradients(loss_of(item), params)
        total = squares if total is None else [a + b for a, b in zip(total, squares)]
        count += 1
    if total is None:
        raise ValueError("a Fisher estimate needs at least one item")
    return [t / count for t in total]


def online_fisher(previous: Sequence[torch.Tensor] | None, new: Sequence[torch.Tensor],
                  gamma: float) -> list[torch.Tensor]:
    """Online EWC's running Fisher (Schwarz et al., 2018): ``gamma * previous + new``."""
    if previous is None:
        return [n.clone() for n in new]
    return [gamma * p + n for p, n in zip(previous, new)]


def quadratic_penalty(params: Sequence[torch.Tensor], anchor: Sequence[torch.Tensor],
                      weight: Sequence[torch.Tensor] | None = None) -> torch.Tensor:
    """``sum_i w_i (theta_i - a_i)^2`` over every element of every tensor (``w = 1`` if no weight).

    Gradients flow into ``params``; ``anchor`` and ``weight`` are constants.
    """
    if len(params) != len(anchor) or (weight is not None and len(weight) != len(params)):
        raise ValueError("params, anchor and weight must list the same tensors")
    total = None
    for i, (p, a) in enumerate(zip(params, anchor)):
        diff = p.float() - a.detach().to(device=p.device, dtype=torch.float32)
        term = diff * diff
        if weight is not None:
            term = term * weight[i].detach().to(device=p.device, dtype=torch.float32)
        term = term.sum()
        total = term if total is None else total + term
    if total is None:
        raise ValueError("a quadratic penalty needs at least one parameter")
    return total
