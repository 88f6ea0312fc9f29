"""Gradient-projection memory (GPM): subspaces spanned by old tasks' inputs to a layer.

Saha et al. (ICLR 2021) keep, per layer, an orthonormal basis ``M`` of the inputs the layer
saw on earlier tasks; an update ``dW`` of a weight ``W`` (shape out x in) that satisfies
``dW M = 0`` leaves ``W x`` unchanged for every ``x`` in that subspace. GainLoRA (Liang et
al., NeurIPS 2025) uses this memory twice, and the functions here follow its release
(github.com/liangyanshuo/gainlora): the inputs' uncentred covariance is accumulated, the
energy criterion is applied to the *squared* singular values of that covariance, and the
threshold grows with the task index (``threshold_at``).
"""

from __future__ import annotations

from typing import Iterable

import torch
from torch import nn

from ..model.learner import eager_execution


class Covariances:
    """Running uncentred covariance ``mean(x x^T)`` of row vectors, one per name."""

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.counts: dict[str, int] = {}

    def add(self, name: str, rows: torch.Tensor) -> None:
        rows = rows.detach().reshape(-1, rows.shape[-1]).float()
        if rows.shape[0] == 0:
            return
        gram = rows.T @ rows
        self.sums[name] = self.sums[name] + gram if name in self.sums else gram
        self.counts[name] = self.counts.get(name, 0) + rows.shape[0]

    def mean(self, name: str) -> torch.Tensor:
        return self.sums[name] / max(self.counts[name], 1)

    def names(self) -> list[str]:
        return list(self.sums)


def threshold_at(base: float, task: int, horizon: int) -> float:
    """The release's schedule: ``base`` on the first task, growing linearly to 1 at ``horizon``."""
    return base + (1.0 - base) * min(task, horizon) / horizon


def _energy(cov: torch.Tensor) -> torch.Tensor:
    return torch.linalg.svdvals(cov) ** 2


def extend_basis(cov: torch.Tensor, basis: torch.Tensor | None, threshold: float) -> torch.Tensor:
    """The basis after adding the directions of ``cov`` needed to reach ``threshold`` energy.

    First task: the top-k left singular vectors of ``cov`` with k the number of leading
    squared singular values whose cumulative share stays below ``threshold`` (at least 1).
    Later: the share already explained by ``basis`` counts first; directions of the residual
    ``cov - M M^T cov`` are appended until the threshold is reached (none if it already is).
    The basis never has more columns than its dimension.
    """
    if basis is None:
        u, s, _ = torch.linalg.svd(cov)
        share = s ** 2 / (s ** 2).sum().clamp_min(1e-30)
        k = int((torch.cumsum(share, 0) < threshold).sum())
        return u[:, : max(k, 1)].contiguous()
    total = _energy(cov).sum().clamp_min(1e-30)
    residual = cov - basis @ (basis.T @ cov)
    u, s, _ = torch.linalg.svd(residual)
    covered = float((total - (s ** 2).sum()) / total)
    k = 0
    for value in (s ** 2 / total).tolist():
        if covered >= threshold:
            break
        covered += value
        k += 1
    if k == 0:
        return basis
    return torch.cat([basis, u[:, :k]], dim=1)[:, : cov.shape[0]].contiguous()


def top_directions(cov: torch.Tensor, basis: torch.Tensor | None, k: int) -> torch.Tensor:
    """The ``k`` leading left singular vectors of ``cov`` with the protected subspace removed
    (as columns); they are orthogonal to ``basis``."""
    if basis is not None:
        cov = cov - basis @ (basis.T @ cov)
    u, _, _ = torch.linalg.svd(cov)
    return u[:, :k]


def project_out(delta: torch.Tensor, basis: torch.Tensor | None) -> torch.Tensor:
    """``delta (I - M M^T)``: the part of an update (rows act on inputs) that leaves the
    outputs on the protected inputs unchanged."""
    if basis is None:
        return delta
    return delta - (delta @ basis) @ basis.T


@torch.no_grad()
def collect_layer_inputs(model: nn.Module, layers: dict[str, nn.Module], batches: Iterable,
                         device: torch.device | str) -> tuple[Covariances, dict[str, str]]:
    """Covariances of the inputs of ``layers`` over ``batches``, attended positions only.

    Layers fed the very same tensor in a forward pass (q, k and v of a block) share one
    covariance; the returned aliases map each such later layer to the first one's name.
    """
    covs, aliases = Covariances(), {}
    seen: dict[int, tuple[torch.Tensor, str]] = {}
    mask: list[torch.Tensor] = []

    def hook(name):
        def record(module, args):
            x = args[0]
            first = seen.get(id(x))
            if first is not None and first[0] is x:
                aliases.setdefault(name, first[1])
                return
            seen[id(x)] = (x, name)  # holding x keeps its id from being reused in this pass
            covs.add(name, x[mask[-1]])
        return record

    handles = [m.register_forward_pre_hook(hook(n)) for n, m in layers.items()]
    try:
        with eager_execution():  # hooks run eager (compiled blocks would trace them once)
            for batch in batches:
                batch = batch.to(device)
                seen.clear()
                mask.append(batch.attention_mask.bool())
                model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return covs, aliases
