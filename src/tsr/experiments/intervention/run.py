"""The local intervention of the reference paper (Appendix "Local intervention"): does a
source's gradient direction give the target an immediate descent, and does the stored
signature rank sources by that direction?

At an adapter state theta (the shared initialisation, or any state given), each repetition
draws independent batches: one target batch for the target's gradient, one per source for
that source's gradient, a second target batch (the equal-compute reference: an extra target
batch), and a held-out batch of the target's test set on which every loss is measured. All
perturbations are pure parameter steps of the same norm epsilon along a unit gradient
direction g^ (no optimiser):

- source-only: ``L_t(theta - eps g^_s) - L_t(theta)``;
- marginal: after one equal-norm target step ``theta_T = theta - eps g^_t``,
  ``L_t(theta_T - eps g^_s) - L_t(theta_T)``;
- reference: the same with the second target batch in place of the source.

To first order the source-only change is ``-eps * grad L_t(theta) . g^_s``, so the gradient's
alignment should control the immediate descent. ``eps`` is a multiple (the paper's 0.25, 0.5,
1) of the measured one-step parameter displacement: the norm of AdamW's first step from theta
on a target batch at the run's learning rate (``lr * ||g / (|g| + 1e-8)||``, AdamW's first,
bias-corrected update). The statistics (:mod:`tsr.experiments.intervention.report`) are the
paper's: within target and scale, Spearman over the repetitions between the gradient cosine
and the loss reduction; the stored signature's scores against the current-gradient cosines;
the top / middle / bottom grouping by the signature and the share of an extra target batch's
descent the top group gives.

Choices the paper leaves open, stated: the source direction is its gradient at theta (not at
theta_T) in the marginal effect; gradients and steps are those of the adapter's *trainable*
tensors, one list for both (at the shared initialisation only the B factors' gradients are
non-zero); batches come from each task's budget of N examples, the evaluation batch from the
target's test set; every repetition measures every source on the same target batches.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ...cl.losses import masked_ce
from ...cl.signatures import PROBE_BATCHES, similarity, take
from ...config import RunConfig
from ...data.example import Stream
from ...data.sampling import BatchStream
from ...errors import ConfigError
from ...model.learner import Learner
from ...rng import numpy_rng
from ..probe.plan import arm_examples
from ..signatures.run import probe_batches
from .plan import REPS, SCALES, SIGNATURE
from .report import summarise


def _params(learner: Learner) -> list[tuple[str, torch.nn.Parameter]]:
    """The tensors a step moves and a gradient is taken of: the adapter's trainable ones."""
    return [(n, p) for n, p in learner.adapter.named() if p.requires_grad]


def _flat_grad(learner: Learner, batch) -> torch.Tensor:
    loss = masked_ce(*learner.answer_logits(batch))
    grads = torch.autograd.grad(loss, [p for _, p in _params(learner)])
    return torch.cat([g.detach().float().flatten() for g in grads])


@torch.no_grad()
def _loss(learner: Learner, batch) -> float:
    return float(masked_ce(*learner.answer_logits(batch)))


def _shifted(learner: Learner, base: dict, direction: torch.Tensor, eps: float) -> dict:
    """The adapter state ``base - eps * direction``; ``direction`` is flattened over the
    trainable tensors (:func:`_params`), the others are left as they are."""
    out, i = dict(base), 0
    for name, p in _params(learner):
        n = p.numel()
        out[name] = base[name] - eps * direction[i:i + n].view_as(p).to(base[name].dtype)
        i += n
    assert i == direction.numel(), "the direction does not cover the trainable tensors"
    return out


def _unit(g: torch.Tensor) -> torch.Tensor:
    return g / g.norm().clamp_min(1e-12)


def one_step_displacement(learner: Learner, grad: torch.Tensor, lr: float) -> float:
    """Norm of AdamW's first step for gradient ``grad``: ``lr * ||g / (|g| + 1e-8)||``."""
    return float(lr * (grad / (grad.abs() + 1e-8)).norm())


def intervene(learner: Learner, cfg: RunConfig, stream: Stream, target: str, sources: Sequence[str],
              reps: int = REPS, scales: Sequence[float] = SCALES, seed: int = 0, state: dict | None = None,
              signature: str | None = SIGNATURE) -> dict[str, Any]:
    """The intervention for one target at ``state`` (default: the shared initialisation of
    ``seed``); plain data for JSON (:func:`tsr.experiments.intervention.report.summarise`)."""
    names = stream.names
    for name in [target, *sources]:
        if name not in names:
            raise ConfigError(f"--targets/--sources: no task {name!r} in {stream.name} (tasks: {', '.join(names)})")
    learner.reset(seed)
    theta = state if state is not None else learner.init_state
    learner.adapter.load(theta)
    tasks = {t.name: t for t in stream}

    def batches(name: str, split: str, purpose: str) -> BatchStream:
        task = tasks[name]
        examples = list(task.test) if split == "test" else arm_examples(task, cfg.stream.budget, "target", seed)
        encoded = learner.encoder.encode_all(examples, f"task {name!r}")
        return BatchStream(learner.encoder, encoded, cfg.train.batch_size,
                           numpy_rng(seed, "intervention", purpose, names.index(target), names.index(name)))

    target_train, target_second = batches(target, "train", "target"), batches(target, "train", "reference")
    held_out = batches(target, "test", "evaluation")
    source_streams = {s: batches(s, "train", "source") for s in sources}
    rows: list[dict[str, Any]] = []
    for rep in range(reps):
        g_t = _flat_grad(learner, target_train.next())
        g_ref = _flat_grad(learner, target_second.next())
        grads = {s: _flat_grad(learner, source_streams[s].next()) for s in sources}
        rows += _repetition(learner, theta, rep, g_t, g_ref, grads, held_out.next(), scales, cfg.train.lr)
    learner.adapter.load(learner.init_state)
    scores = _signature_scores(learner, cfg, stream, target, sources, seed, signature) if signature else {}
    return {**summarise(target, sources, scales, rows, scores, signature), "seed": seed}


def _repetition(learner: Learner, theta: dict, rep: int, g_t: torch.Tensor, g_ref: torch.Tensor,
                grads: dict[str, torch.Tensor], eval_batch, scales: Sequence[float], lr: float) -> list[dict]:
    """Every scale and source of one repetition, on its held-out batch."""
    rows = []
    step = one_step_displacement(learner, g_t, lr)
    base_loss = _loss(learner, eval_batch)
    for scale in scales:
        eps = scale * step
        theta_t = _shifted(learner, theta, _unit(g_t), eps)
        with learner.adapter.swapped(theta_t):
            after_target = _loss(learner, eval_batch)
        with learner.adapter.swapped(_shifted(learner, theta_t, _unit(g_ref), eps)):
            reference = _loss(learner, eval_batch) - after_target
        for s, g in grads.items():
            with learner.adapter.swapped(_shifted(learner, theta, _unit(g), eps)):
                source_only = _loss(learner, eval_batch) - base_loss
            with learner.adapter.swapped(_shifted(learner, theta_t, _unit(g), eps)):
                marginal = _loss(learner, eval_batch) - after_target
            rows.append({"rep": rep, "scale": scale, "eps": eps, "source": s,
                         "cosine": float(_unit(g_t) @ _unit(g)), "source_only": source_only,
                         "marginal": marginal, "reference": reference})
    return rows


def _signature_scores(learner, cfg, stream, target, sources, seed, kind) -> dict[str, float]:
    probe = probe_batches(learner, cfg, stream, seed, PROBE_BATCHES)
    sigs = {name: take(kind, learner, probe[name]) for name in [target, *sources]}
    return {s: float(similarity(kind, sigs[s], sigs[target])) for s in sources}
