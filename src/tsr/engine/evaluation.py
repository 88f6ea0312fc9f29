"""Scoring a task's test set: teacher-forced exact match and answer loss.

Exact match is computed in one teacher-forced forward pass: an example is correct when every
answer token and the EOS is the argmax of the model's prediction at its position. Given the
gold prefix, that is exactly the condition for greedy decoding to reproduce the answer and
stop, which :func:`greedy_decode` lets the tests confirm. The loss is the mean next-token
cross-entropy over all answer tokens of the test set (token-weighted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from ..cl.losses import exact_match_rows, token_nll
from ..cl.teachers import head_adapted
from ..config.sections import EVAL_LOGITS_MB  # the default of eval.logits_mb
from ..data.collate import EVAL_BATCH, IGNORE, Encoded, fit
from ..model.learner import Learner, first_answer_position


@dataclass(frozen=True)
class Score:
    acc: float
    loss: float
    n: int
    gen: float | None = None  # the task's generation metric, with predictions (tsr.engine.predict)

    def to_dict(self) -> dict[str, float]:
        out = {"acc": self.acc, "loss": self.loss, "n": self.n}
        return out if self.gen is None else {**out, "gen": self.gen}


def _length_sorted(encoded: Sequence[Encoded]) -> list[int]:
    return sorted(range(len(encoded)), key=lambda i: len(encoded[i].prompt_ids) + len(encoded[i].answer_ids))


@torch.no_grad()
def example_correct(learner: Learner, encoded: Sequence[Encoded], batch_size: int = EVAL_BATCH,
                    logits_mb: float = EVAL_LOGITS_MB) -> tuple[list[bool], list[float], list[int]]:
    """Per example: teacher-forced exact match, summed answer NLL, number of answer tokens.

    A batch whose answer-window logits would take more than ``logits_mb`` is scored from its
    last hidden states, the output head run on the supervised positions only, ``logits_mb`` worth
    of positions at a time (:func:`_split_scores`): the same scores up to the rounding of the head's
    product in another shape, with memory bounded on any vocabulary or length."""
    correct = [False] * len(encoded)
    nll_sum = [0.0] * len(encoded)
    count = [0] * len(encoded)
    order = _length_sorted(encoded)
    split = not head_adapted(learner)
    for start in range(0, len(order), batch_size):
        idx = order[start: start + batch_size]
        batch = learner.encoder.collate([encoded[i] for i in idx])
        window = batch.input_ids.shape[1] - first_answer_position(batch.labels)
        if split and batch.size * window * learner.vocab_size * 4 > logits_mb * 2**20:
            hit, nll, mask = _split_scores(learner, batch, logits_mb)
        else:
            logits, labels = learner.answer_logits(batch)
            nll, mask = token_nll(logits, labels)
            hit = exact_match_rows(logits, labels)
        for row, i in enumerate(idx):
            correct[i] = bool(hit[row])
            nll_sum[i] = float(nll[row].sum())
            count[i] = int(mask[row].sum())
    return correct, nll_sum, count


def _split_scores(learner: Learner, batch, logits_mb: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(exact match per row, NLL per predicting position, its mask) as :func:`token_nll` and
    :func:`exact_match_rows` give them, with no (batch x length x vocabulary) tensor: the head
    runs on the positions that predict a supervised token, in chunks of at most ``logits_mb``."""
    hidden = learner.hidden(batch)
    labels = batch.labels.to(hidden.device)
    mask = labels[:, 1:] != IGNORE
    rows, cols = mask.nonzero(as_tuple=True)
    targets = labels[rows, cols + 1]
    chunk = max(1, int(logits_mb * 2**20 // (learner.vocab_size * 4)))
    nll = torch.empty(len(rows), dtype=torch.float32, device=hidden.device)
    hits = torch.empty(len(rows), dtype=torch.bool, device=hidden.device)
    for s in range(0, len(rows), chunk):
        logits = learner.head_logits(hidden[rows[s:s + chunk], cols[s:s + chunk]])
        nll[s:s + chunk] = F.cross_entropy(logits, targets[s:s + chunk], reduction="none")
        hits[s:s + chunk] = logits.argmax(-1) == targets[s:s + chunk]
    per_position = torch.zeros(mask.shape, dtype=torch.float32, device=hidden.device)
    per_position[rows, cols] = nll
    missed = torch.zeros(mask.shape[0], dtype=torch.long, device=hidden.device).index_add_(0, rows, (~hits).long())
    return (missed == 0) & mask.any(1), per_position, mask


def scored_tasks(t: int, k: int, period: int, all_tasks: bool = False) -> list[int]:
    """The tasks scored after task ``t`` of ``k``: every task with ``all_tasks``; otherwise the
    seen ones (``0..t``) after the last task and after every ``period``-th task (``period`` 0:
    never before the last), and the task just learnt after the others.

    Overall needs the last row, Plas the diagonal and BWT both, so ``period`` 0 gives the same
    stream metrics as full rows with ``k + k - 1`` scorings instead of ``k (k + 1) / 2``.
    """
    if all_tasks:
        return list(range(k))
    if t == k - 1 or (period and (t + 1) % period == 0):
        return list(range(t + 1))
    return [t]


def evaluate(learner: Learner, encoded: Sequence[Encoded], batch_size: int = EVAL_BATCH,
             logits_mb: float = EVAL_LOGITS_MB) -> Score:
    """Exact match and token-weighted answer loss of a test set (``logits_mb``: as
    :func:`example_correct`)."""
    correct, nll_sum, count = example_correct(learner, encoded, batch_size, logits_mb)
    tokens = max(sum(count), 1)
    return Score(sum(correct) / max(len(encoded), 1), sum(nll_sum) / tokens, len(encoded))


def greedy_decode(learner: Learner, enc: Encoded, max_new_tokens: int | None = None) -> list[int]:
    """Greedy continuation of an example's (possibly left-cut) prompt, up to and including EOS."""
    ids, _ = fit(enc, learner.encoder.max_length)
    prompt = ids[: len(ids) - len(enc.answer_ids)]
    return learner.greedy(prompt, max_new_tokens if max_new_tokens is not None else len(enc.answer_ids) + 4)
