"""Representation signatures: what a task's data looks like to the model, at an adapter state.

- ``proto``: the mean hidden state of the task's probe examples (reference paper, Table 2,
  "input similarity"); similarity: cosine.
- ``hiddenot``: the optimal-transport distance between the two tasks' clouds of per-example
  hidden states ("distribution geometry"); similarity: minus the distance.
- ``jointot``: OTDD (Alvarez-Melis & Fusi, 2020, "Geometric dataset distances via optimal
  transport"): each example is its hidden state and its label, and moving example (x, y) onto
  (x', y') costs ``|x - x'|^2 + label_weight * W(a_y, a'_y')``, where ``W(a_y, a'_y')`` is the
  exact OT distance (same ground cost) between the two label-conditional clouds, the
  examples of class y in one task and of class y' in the other ("label-aware distribution");
  similarity: minus the distance. A label is an example's answer (its token ids). Our reading
  for generation tasks, whose answers are not classes: a task whose probe examples have more
  distinct answers than half their number has one label, so its label-conditional cloud is
  the whole task (the label cost then compares a class of one task with all of the other).
- ``jointot_emb`` (ours, the first reading of jointot): the label cost is the squared distance
  between the examples' answer embeddings (the mean input embedding of the answer tokens, EOS
  excluded), a cheap stand-in that sees exactly the answer words two tasks share.

Choices the paper leaves open, each a parameter (docs/signatures.md):

- ``layer``: which hidden state; ``-1`` (the default) is the decoder's last layer after its final
  norm (what the output head reads), ``0`` the token embeddings.
- ``pooling``: one vector per example; ``"mean"`` (default) averages the prompt positions
  (attended, unsupervised), ``"last"`` takes the last prompt position, the one that predicts
  the first answer token. Answer positions are never read, so ``proto`` and ``hiddenot`` see
  the inputs only.
- the OT ground cost is the squared Euclidean distance between unit-normalised feature vectors
  (``2 - 2 cos``, scale-free across layers and models); the joint signatures add
  ``label_weight`` (1) times their label cost.
- ``reg``: 0 (the default) solves the exact transport (POT's network simplex); ``reg > 0`` uses
  entropic Sinkhorn with that regularisation. Both clouds have uniform weights.
- sample size: every example of the probe batches (``probe_batches`` x batch size; 40 in the
  default audit), no subsampling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ..data.collate import IGNORE, Batch
from ..errors import ConfigError
from ..model.adapter import State
from ..model.learner import Learner
from .routing import cosine


@dataclass(frozen=True)
class Cloud:
    """One task's examples as points (n x d, float64); ``labels`` (n x e answer embeddings)
    for ``jointot_emb``'s label cost, ``classes`` (n class ids, int64) for OTDD's."""

    points: torch.Tensor
    labels: torch.Tensor | None = None
    classes: torch.Tensor | None = None


def _check(batches: Sequence[Batch], pooling: str) -> None:
    if not batches:
        raise ValueError("a signature needs at least one probe batch")
    if pooling not in ("mean", "last"):
        raise ValueError(f"pooling must be 'mean' or 'last', not {pooling!r}")


@torch.no_grad()
def features(learner: Learner, batches: Sequence[Batch], state: State, layer: int = -1,
             pooling: str = "mean") -> torch.Tensor:
    """One pooled hidden-state vector per example of ``batches`` (float64, n x hidden)."""
    _check(batches, pooling)
    out = []
    with learner.adapter.swapped(state):
        for batch in batches:
            b = batch.to(learner.device)
            hidden = learner.model(input_ids=b.input_ids, attention_mask=b.attention_mask, use_cache=False,
                                   output_hidden_states=True).hidden_states[layer].double()
            prompt = (b.attention_mask == 1) & (b.labels == IGNORE)
            if pooling == "mean":
                m = prompt.double().unsqueeze(-1)
                out.append((hidden * m).sum(1) / m.sum(1).clamp_min(1))
            else:
                last = prompt.long().cumsum(1).argmax(1)  # the last prompt position of each row
                out.append(hidden[torch.arange(hidden.shape[0]), last])
    return torch.cat(out).cpu()


@torch.no_grad()
def answer_embeddings(learner: Learner, batches: Sequence[Batch]) -> torch.Tensor:
    """The mean input embedding of each example's answer tokens, EOS excluded (EOS alone if
    the answer is empty), float64, n x hidden."""
    table = learner.model.get_base_model().get_input_embeddings().weight.detach()
    eos = learner.encoder.eos_id
    out = []
    for batch in batches:
        for ids in batch.labels.tolist():
            answer = [t for t in ids if t != IGNORE]
            words = [t for t in answer if t != eos] or answer
            out.append(table[words].double().mean(0).cpu())
    return torch.stack(out)


def proto(learner: Learner, batches: Sequence[Batch], state: State, *, layer: int = -1,
          pooling: str = "mean") -> torch.Tensor:
    """The mean pooled hidden state of the probe examples."""
    return features(learner, batches, state, layer, pooling).mean(0)


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)


def hidden_cloud(learner: Learner, batches: Sequence[Batch], state: State, *, layer: int = -1,
                 pooling: str = "mean") -> Cloud:
    return Cloud(_unit(features(learner, batches, state, layer, pooling)))


def joint_cloud(learner: Learner, batches: Sequence[Batch], state: State, *, layer: int = -1,
                pooling: str = "mean") -> Cloud:
    return Cloud(_unit(features(learner, batches, state, layer, pooling)),
                 _unit(answer_embeddings(learner, batches)))


def class_ids(batches: Sequence[Batch]) -> torch.Tensor:
    """Each example's class: the index of its answer (token ids) among the distinct answers in
    order of first appearance; all 0 when more than half the answers are distinct (a
    generation task: one label, the module doc's reading)."""
    answers = [tuple(t for t in ids if t != IGNORE) for batch in batches for ids in batch.labels.tolist()]
    index: dict[tuple, int] = {}
    ids = [index.setdefault(a, len(index)) for a in answers]
    if len(index) > len(answers) / 2:
        ids = [0] * len(answers)
    return torch.tensor(ids, dtype=torch.int64)


def otdd_cloud(learner: Learner, batches: Sequence[Batch], state: State, *, layer: int = -1,
               pooling: str = "mean") -> Cloud:
    return Cloud(_unit(features(learner, batches, state, layer, pooling)), classes=class_ids(batches))


def label_costs(a: Cloud, b: Cloud, reg: float = 0.0) -> torch.Tensor:
    """OTDD's label cost: ``W(a_y, b_y')`` between every class y of ``a`` and y' of ``b``
    (Ka x Kb), each the OT distance between the two label-conditional clouds."""
    ka, kb = int(a.classes.max()) + 1, int(b.classes.max()) + 1
    out = torch.zeros(ka, kb, dtype=torch.float64)
    for y in range(ka):
        for z in range(kb):
            out[y, z] = ot_distance(squared_distances(a.points[a.classes == y], b.points[b.classes == z]), reg)
    return out


def squared_distances(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x.unsqueeze(1) - y.unsqueeze(0)).pow(2).sum(-1)


def ot_distance(cost: torch.Tensor, reg: float = 0.0) -> float:
    """The optimal-transport cost between two uniform clouds for a ground ``cost`` matrix
    (n x m): exact for ``reg == 0``, entropic Sinkhorn otherwise. Needs POT (``pip install pot``)."""
    try:
        import ot
    except ImportError:
        raise ConfigError("the OT signatures (hiddenot, jointot) need the POT package: pip install 'tsr[ot]'") from None
    import numpy as np

    n, m = cost.shape
    a, b = np.full(n, 1.0 / n), np.full(m, 1.0 / m)
    c = cost.detach().double().numpy()
    value = ot.emd2(a, b, c) if reg <= 0 else ot.sinkhorn2(a, b, c, reg)
    return float(value)


def ot_similarity(a: Cloud, b: Cloud, *, label_weight: float = 1.0, reg: float = 0.0) -> float:
    """Minus the OT distance of two clouds; with classes on both, OTDD's joint cost
    ``|x - x'|^2 + label_weight * W(a_y, b_y')``; with answer embeddings on both,
    ``jointot_emb``'s ``|x - x'|^2 + label_weight * |e - e'|^2``."""
    cost = squared_distances(a.points, b.points)
    if a.classes is not None and b.classes is not None:
        cost = cost + label_weight * label_costs(a, b, reg)[a.classes][:, b.classes]
    elif a.labels is not None and b.labels is not None:
        cost = cost + label_weight * squared_distances(a.labels, b.labels)
    return -ot_distance(cost, reg)


def proto_similarity(a: torch.Tensor, b: torch.Tensor) -> float:
    return cosine(a, b)
