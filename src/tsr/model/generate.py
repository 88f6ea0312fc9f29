"""Batched greedy decoding: many prompts at once, left-padded, with a KV cache.

:meth:`Learner.greedy` decodes one prompt; evaluation with predictions (and any command that
answers many prompts) decodes a whole test set, so this decodes ``batch_size`` prompts per
forward. Prompts are left-padded, so every row's next token is read at the last position;
the attention mask hides the padding and the position ids count each row's own tokens from 0,
so a padded row sees exactly what it would see alone. A row stops at EOS (kept) or after its
own token budget; the batch stops when every row has. Rows are grouped by prompt length, which
keeps the padding small. The tokens equal :meth:`Learner.greedy`'s up to float rounding in
near-ties (padding changes the shapes of the matrix products), which the tests pin on tiny
models.
"""

from __future__ import annotations

from typing import Sequence

import torch

from ..data.collate import EVAL_BATCH
from .learner import Learner, eager_execution


@torch.no_grad()
def greedy_batch(learner: Learner, prompts: Sequence[Sequence[int]], max_new_tokens: int | Sequence[int],
                 batch_size: int = EVAL_BATCH, cache: bool = True) -> list[list[int]]:
    """Greedy continuation of each of ``prompts`` (token ids), up to and including EOS, at most
    ``max_new_tokens`` tokens (one budget for all, or one per prompt), in input order.

    ``cache=False`` recomputes every prefix instead of reusing its keys and values (slower; the
    arithmetic of a teacher-forced pass)."""
    budgets = [int(max_new_tokens)] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
    if len(budgets) != len(prompts):
        raise ValueError(f"{len(budgets)} token budgets for {len(prompts)} prompts")
    if any(len(p) == 0 for p in prompts):
        raise ValueError("greedy decoding needs a prompt of at least one token")
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), budgets[i]))
    out: list[list[int]] = [[] for _ in prompts]
    with eager_execution():  # shapes that grow one position at a time: the compiled blocks never see them
        for start in range(0, len(order), batch_size):
            rows = order[start: start + batch_size]
            decoded = _decode(learner, [list(prompts[i]) for i in rows], [budgets[i] for i in rows], cache)
            for i, tokens in zip(rows, decoded):
                out[i] = tokens
    return out


def _decode(learner: Learner, prompts: list[list[int]], budgets: list[int], cache: bool) -> list[list[int]]:
    device, eos, pad = learner.device, learner.encoder.eos_id, learner.encoder.pad_id
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt):] = 1
    ids, mask = ids.to(device), mask.to(device)
    out: list[list[int]] = [[] for _ in prompts]
    done = [b <= 0 for b in budgets]
    keep = {"logits_to_keep": 1} if learner.keeps_logits else {}
    past, step_ids = None, ids
    for _ in range(max(budgets, default=0)):
        if all(done):
            break
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        if cache:
            result, past = learner.cached_forward(past, input_ids=step_ids, attention_mask=mask,
                                                  position_ids=positions[:, -step_ids.shape[1]:], **keep)
        else:
            result = learner.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False, **keep)
        nxt = result.logits[:, -1].argmax(-1)
        for row, token in enumerate(nxt.tolist()):
            if done[row]:
                continue
            out[row].append(token)
            done[row] = token == eos or len(out[row]) >= budgets[row]
        # a finished row goes on reading padding, unattended, until the batch ends
        step = torch.where(torch.tensor(done, device=device), torch.full_like(nxt, pad), nxt)[:, None]
        ids = torch.cat([ids, step], dim=1)
        mask = torch.cat([mask, (~torch.tensor(done, device=device)).long()[:, None]], dim=1)
        step_ids = step
    return out
