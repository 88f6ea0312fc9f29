"""Gradient signatures: what a task asks the adapter to learn, read from loss gradients.

Every function here takes the learner, the task's probe batches and an adapter ``state`` (the
shared initialisation unless a caller says otherwise), swaps the adapter to ``state`` for the
probe and restores it afterwards; no ``.grad`` buffer, optimiser or random stream is touched.

Paper signatures (reference paper, Eq. 5 and Table 2):

- ``gradb``: the mean over the probe batches of the gradient of the answer loss with respect to
  every LoRA B factor, flattened across layers; similarity: cosine.
- ``gradb_norm``: each batch's gradient normalised to unit length before the mean.
- ``gradb_last4``: ``gradb`` restricted to the B factors of the last four blocks.
- ``fisher``: the diagonal empirical Fisher of the LoRA B factors, the mean over the probe
  examples of each example's squared gradient (Task2Vec-style, Achille et al. 2019; one
  backward pass per example); similarity: cosine. The A factors are left out: at the shared
  initialisation B = 0, so every A gradient is exactly zero. ``fisher_batch`` (ours, its first
  reading) squares batch-mean gradients instead, which is not an empirical Fisher.

Candidates of this project, meant to separate a shared *rule* from shared *answer words*
(see :func:`gradb_contrast` and :func:`gradb_noanswer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ..data.collate import IGNORE, Batch, Encoded, collate
from ..model.adapter import State
from ..model.learner import Learner
from ..rng import numpy_rng
from .losses import masked_ce
from .routing import cosine

# the projections whose output is added to the residual stream (attention output, MLP down
# projection) across the architectures PEFT maps: gradients of their B factors live in the
# hidden space, where the answer words' unembedding directions are
RESIDUAL_WRITERS = frozenset({"o_proj", "down_proj", "dense", "c_proj", "out_proj", "fc2", "wo", "w2",
                              "dense_4h_to_h"})


def b_params(learner: Learner, last_blocks: int | None = None) -> list[tuple[str, torch.nn.Parameter]]:
    """The LoRA B factors of the active adapter (optionally of the last blocks only)."""
    return [(n, p) for n, p in learner.adapter.lora_b(last_blocks) if ".default." in n]


def batch_gradb(learner: Learner, batch: Batch, params: Sequence[torch.nn.Parameter]) -> torch.Tensor:
    """Flattened gradient of one batch's answer loss w.r.t. ``params`` (float32, on CPU).

    Uses ``torch.autograd.grad``, so no parameter's ``.grad`` is written.
    """
    loss = masked_ce(*learner.answer_logits(batch))
    grads = torch.autograd.grad(loss, list(params))
    return torch.cat([g.detach().float().flatten() for g in grads]).cpu()


def _check(batches: Sequence[Batch]) -> None:
    if not batches:
        raise ValueError("a signature needs at least one probe batch")


def gradb(learner: Learner, batches: Sequence[Batch], state: State, *, normalise: bool = False,
          last_blocks: int | None = None) -> torch.Tensor:
    """Mean B gradient over ``batches`` at ``state`` (``normalise``: each batch's gradient at
    unit length first; ``last_blocks``: the last few blocks only)."""
    _check(batches)
    params = [p for _, p in b_params(learner, last_blocks)]
    total: torch.Tensor | None = None
    with learner.adapter.swapped(state):
        for batch in batches:
            g = batch_gradb(learner, batch, params)
            if normalise:
                g = g / g.norm().clamp_min(1e-12)
            total = g if total is None else total + g
    assert total is not None
    return total / len(batches)


def rows(batch: Batch) -> list[Encoded]:
    """The (prompt, answer) token ids of every row of a right-padded batch."""
    out = []
    for ids, att, lab in zip(batch.input_ids.tolist(), batch.attention_mask.tolist(), batch.labels.tolist()):
        length = sum(att)
        prompt = tuple(i for i, m in zip(ids[:length], lab[:length]) if m == IGNORE)
        answer = tuple(i for i, m in zip(ids[:length], lab[:length]) if m != IGNORE)
        out.append(Encoded(prompt, answer))
    return out


def fisher(learner: Learner, batches: Sequence[Batch], state: State, *, per_example: bool = False) -> torch.Tensor:
    """Diagonal empirical Fisher of the B factors: the mean squared gradient over the probe
    batches (``per_example``: over their examples, one backward pass each, Task2Vec's estimate)."""
    _check(batches)
    params = [p for _, p in b_params(learner)]
    total, count = None, 0
    with learner.adapter.swapped(state):
        for batch in batches:
            units = [batch]
            if per_example:
                width = batch.input_ids.shape[1]
                units = [collate([r], width, 0) for r in rows(batch)]
            for unit in units:
                g = batch_gradb(learner, unit, params) ** 2
                total = g if total is None else total + g
                count += 1
    assert total is not None
    return total / count


def permuted_answers(batches: Sequence[Batch], seed: int = 0, pad_id: int = 0) -> list[Batch]:
    """The probe batches with every example's answer replaced by a different answer of the same
    task (drawn uniformly from the distinct answers of all ``batches``), same prompts, same
    order. A task with a single distinct answer keeps it (nothing to permute)."""
    encoded = [rows(b) for b in batches]
    answers = sorted({r.answer_ids for group in encoded for r in group})
    rng = numpy_rng(seed, "signature", "contrast")
    out = []
    for batch, group in zip(batches, encoded):
        swapped = []
        for r in group:
            others = [a for a in answers if a != r.answer_ids] or [r.answer_ids]
            swapped.append(Encoded(r.prompt_ids, others[int(rng.integers(len(others)))]))
        width = max(len(r.prompt_ids) + len(r.answer_ids) for r in swapped)
        out.append(collate(swapped, width, pad_id, batch.keys))
    return out


def gradb_contrast(learner: Learner, batches: Sequence[Batch], state: State, *, seed: int = 0) -> torch.Tensor:
    """Label-permutation contrast: ``gradb`` of the task minus ``gradb`` of the same prompts
    with every answer swapped for another answer of the task (:func:`permuted_answers`).

    Meant to separate a shared rule from shared answer words: whatever any assignment of the
    task's answer words to its inputs would also ask of the adapter (raise these words, end
    after them, the answer format) is in both terms and cancels; what is left is the part of
    the learning direction that depends on *which* input gets *which* answer, i.e. the rule.
    For the cross-entropy ``-z_y + logsumexp(z)`` the log-partition term cancels exactly, so
    for a two-answer task the contrast is the gradient of the logit margin ``z_wrong - z_right``
    summed over examples, and a task against a copy with the labels flipped gives cosine -1.
    Costs two ``gradb`` passes.
    """
    true = gradb(learner, batches, state)
    return true - gradb(learner, permuted_answers(batches, seed, learner.encoder.pad_id), state)


@dataclass(frozen=True)
class Projectable:
    """A B gradient with what :func:`noanswer_similarity` needs to remove answer-word directions:
    the (offset, rows, cols) of each residual-writing B factor in the flat vector, and the
    answer tokens' output-embedding rows (k x hidden)."""

    grad: torch.Tensor
    blocks: tuple[tuple[int, int, int], ...]
    directions: torch.Tensor


def answer_tokens(batches: Sequence[Batch]) -> list[int]:
    """Every distinct supervised token id of ``batches`` (the answer words and EOS)."""
    ids: set[int] = set()
    for b in batches:
        ids.update(int(t) for t in b.labels[b.labels != IGNORE].tolist())
    return sorted(ids)


def gradb_noanswer(learner: Learner, batches: Sequence[Batch], state: State) -> Projectable:
    """``gradb`` whose residual-stream part is compared with the answer words projected out.

    The B gradient of a projection that writes into the residual stream (attention output, MLP
    down projection) is ``sum_pos delta_pos (A x_pos)^T``; its rows live in the hidden space,
    and the part of ``delta`` along an answer token's output embedding is the direct push on
    that token's logit. Two tasks that share answer words share that push whatever their rules.
    The similarity (:func:`noanswer_similarity`) removes, from both tasks' residual-writing
    blocks, the span of the output-embedding rows of *both* tasks' answer tokens, and takes the
    cosine of what remains (the other blocks are kept whole). The final norm's gain is ignored
    (the output-embedding rows stand in for the residual-space directions).
    """
    grad = gradb(learner, batches, state)
    blocks, offset = [], 0
    for name, p in b_params(learner):
        leaf = name.split(".lora_B.")[0].rsplit(".", 1)[-1]
        if leaf in RESIDUAL_WRITERS and p.dim() == 2:
            blocks.append((offset, int(p.shape[0]), int(p.shape[1])))
        offset += p.numel()
    head = learner.model.get_base_model().get_output_embeddings().weight
    dirs = head.detach()[answer_tokens(batches)].float().cpu()
    return Projectable(grad, tuple(blocks), dirs)


def project_out(p: Projectable, basis: torch.Tensor) -> torch.Tensor:
    """``p.grad`` with each residual-writing block's rows projected off ``basis`` (orthonormal
    columns, hidden x k)."""
    g = p.grad.clone().double()
    for offset, r, c in p.blocks:
        if r != basis.shape[0]:
            continue
        block = g[offset:offset + r * c].view(r, c)
        block -= basis @ (basis.T @ block)
    return g


def noanswer_similarity(a: Projectable, b: Projectable) -> float:
    dirs = torch.cat([a.directions, b.directions]).double().T
    basis = torch.linalg.svd(dirs, full_matrices=False).U if dirs.numel() else dirs
    if dirs.numel():
        s = torch.linalg.svdvals(dirs)
        basis = basis[:, : int((s > s.max() * 1e-8).sum())]
    return cosine(project_out(a, basis), project_out(b, basis))
