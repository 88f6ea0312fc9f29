"""Stored top-k logits of answer tokens, and the matching term against them (for DER++).

DER (Buzzega et al., 2020) keeps the whole logit vector of each buffered example. A language
model's vocabulary makes that impossible per token, so we keep, at every position that
predicts an answer token (answer and EOS; the positions :func:`tsr.cl.losses.kd_mask` calls
``answer``), the ``k`` largest logits and their vocabulary indices. The matching term is the
mean squared error between the student's logits at those stored indices and the stored
values, averaged over every stored (position, rank) entry; the other ``V - k`` logits of a
position are not constrained.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..cl.losses import kd_mask


def answer_positions(labels: torch.Tensor) -> torch.Tensor:
    """Boolean (batch, length) mask of the positions whose next token is supervised."""
    return kd_mask("answer", torch.ones_like(labels), labels)


@dataclass(frozen=True)
class TopK:
    """Top-k logits of many examples, stacked: rows ``offsets[i]:offsets[i+1]`` are example i."""

    values: torch.Tensor    # (rows, k) float32
    indices: torch.Tensor   # (rows, k) int64
    offsets: torch.Tensor   # (examples + 1,) int64

    def __len__(self) -> int:
        return int(self.offsets.numel()) - 1

    def rows(self, examples: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(values, indices) of the given examples, concatenated in that order."""
        spans = [(int(self.offsets[i]), int(self.offsets[i + 1])) for i in examples]
        values = torch.cat([self.values[a:b] for a, b in spans])
        indices = torch.cat([self.indices[a:b] for a, b in spans])
        return values, indices


def topk_rows(logits: torch.Tensor, labels: torch.Tensor, k: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per example of a batch: (values, indices), each (answer positions, k), on the CPU.

    Rows follow the example's answer positions in increasing order.
    """
    if k < 1 or k > logits.shape[-1]:
        raise ValueError(f"k={k} must be in [1, vocabulary size {logits.shape[-1]}]")
    mask = answer_positions(labels.to(logits.device))
    out = []
    for row_logits, row_mask in zip(logits, mask):
        top = row_logits[row_mask].detach().float().topk(k, dim=-1)
        out.append((top.values.cpu(), top.indices.cpu().long()))
    return out


def stack(rows: list[tuple[torch.Tensor, torch.Tensor]]) -> TopK:
    """A :class:`TopK` from per-example (values, indices) in example order."""
    sizes = [v.shape[0] for v, _ in rows]
    offsets = torch.zeros(len(rows) + 1, dtype=torch.long)
    if sizes:
        offsets[1:] = torch.cumsum(torch.tensor(sizes, dtype=torch.long), 0)
    k = rows[0][0].shape[1] if rows else 0
    values = torch.cat([v for v, _ in rows]) if rows else torch.zeros((0, k))
    indices = torch.cat([i for _, i in rows]) if rows else torch.zeros((0, k), dtype=torch.long)
    return TopK(values, indices, offsets)


def topk_match(student_logits: torch.Tensor, labels: torch.Tensor, values: torch.Tensor,
               indices: torch.Tensor) -> torch.Tensor:
    """Mean squared error between the student's logits at stored indices and stored values.

    ``values``/``indices`` hold one row per answer position of the batch, in batch order
    (example by example, positions increasing), as :func:`topk_rows` produced them.
    """
    device = student_logits.device
    mask = answer_positions(labels.to(device))
    rows = int(mask.sum())
    if rows != values.shape[0]:
        raise ValueError(f"{values.shape[0]} stored rows for {rows} answer positions")
    # Gather in place of copying the (positions, vocabulary) rows out: only k logits per position.
    where = torch.zeros((*mask.shape, indices.shape[-1]), dtype=torch.long, device=device)
    where[mask] = indices.to(device)
    gathered = student_logits.gather(-1, where)[mask]
    return ((gathered.float() - values.to(device)) ** 2).mean()
