"""Task signatures: zero-training probes of what a task asks the adapter to learn.

``gradb`` is the reference paper's Eq. 5: the mean over m probe batches of the gradient of
the LM loss with respect to every LoRA B factor, taken at the shared initialisation (the
fixed A0 and B0 = 0 of the run) and flattened across layers. ``gradb_norm`` normalises each
batch's gradient before averaging; ``gradb_last4`` keeps the last four blocks only.
"""

from __future__ import annotations

from typing import Literal, Sequence

import torch

from ..data.collate import Batch
from ..model.learner import Learner
from .losses import masked_ce

SignatureKind = Literal["gradb", "gradb_norm", "gradb_last4"]
SIGNATURE_KINDS: tuple[str, ...] = ("gradb", "gradb_norm", "gradb_last4")


def batch_gradb(learner: Learner, batch: Batch, params: Sequence[torch.nn.Parameter]) -> torch.Tensor:
    """Flattened gradient of one batch's loss w.r.t. ``params`` (float32, on CPU).

    Uses ``torch.autograd.grad``, so no parameter's ``.grad`` is written.
    """
    loss = masked_ce(*learner.answer_logits(batch))
    grads = torch.autograd.grad(loss, list(params))
    return torch.cat([g.detach().float().flatten() for g in grads]).cpu()


def probe_signature(learner: Learner, batches: Sequence[Batch], kind: SignatureKind = "gradb") -> torch.Tensor:
    """The signature of the task the ``batches`` come from, at the shared initialisation.

    The adapter is swapped to the shared initialisation for the probe and restored
    afterwards; the optimiser, ``.grad`` buffers and random streams are not touched.
    """
    if kind not in SIGNATURE_KINDS:
        raise ValueError(f"unknown signature kind {kind!r}")
    if not batches:
        raise ValueError("a signature needs at least one probe batch")
    last = 4 if kind == "gradb_last4" else None
    params = [p for n, p in learner.adapter.lora_b(last) if ".default." in n]
    total: torch.Tensor | None = None
    with learner.adapter.swapped(learner.init_state):
        for batch in batches:
            g = batch_gradb(learner, batch, params)
            if kind == "gradb_norm":
                g = g / g.norm().clamp_min(1e-12)
            total = g if total is None else total + g
    assert total is not None
    return total / len(batches)
