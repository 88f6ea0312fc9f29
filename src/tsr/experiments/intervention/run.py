"""The local intervention of the reference paper (Appendix "Local intervention"): does a
source's gradient direction give the target an immediate descent, and does the signature
rank sources by it?

At an adapter state theta (the shared initialisation, or any state given), each repetition
draws independent batches: one target batch for the target's gradient, one per source for
that source's gradient, a second target batch (the equal-compute reference), and a held-out
batch of the target's test set on which every loss is measured. All perturbations are pure
parameter steps of the same norm epsilon along a unit gradient direction g^ (no optimiser):

- source-only: ``L_t(theta - eps g^_s) - L_t(theta)``;
- marginal: after one equal-norm target step ``theta_T = theta - eps g^_t``,
  ``L_t(theta_T - eps g^_s) - L_t(theta_T)``;
- reference: the same with a second, independent target batch in place of the source.

To first order the source-only change is ``-eps * grad L_t(theta) . g^_s``, so the gradient's
alignment should control the immediate descent. ``eps`` is a multiple (the paper's 0.25, 0.5,
1) of the measured one-step parameter displacement: the norm of AdamW's first step from theta
on a target batch at the run's learning rate (``lr * ||g / (|g| + 1e-8)||``, AdamW's first,
bias-corrected update). Reported: per target and source, the mean changes and the share of
helpful (negative) steps at each scale; the within-target rank correlation between the
per-repetition gradient cosine ``g^_t . g^_s`` and the loss reduction (the paper's rho); and
the rank correlation between a signature's scores for the sources and their mean marginal
reduction.

Choices the paper leaves open, stated: the source direction is its gradient at theta (not at
theta_T) in the marginal effect; gradients are those of every trainable adapter tensor (at
the shared initialisation only the B factors' are non-zero); batches come from each task's
budget of N examples, the evaluation batch from the target's test set.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from ...cl.losses import masked_ce
from ...cl.signatures import similarity, take
from ...config import RunConfig
from ...data.example import Stream
from ...data.sampling import BatchStream
from ...errors import ConfigError
from ...model.learner import Learner
from ...rng import numpy_rng
from ..probe.plan import arm_examples
from ..signatures.run import probe_batches, spearman

SCALES = (0.25, 0.5, 1.0)


def _flat_grad(learner: Learner, batch) -> torch.Tensor:
    params = learner.adapter.trainable()
    loss = masked_ce(*learner.answer_logits(batch))
    return torch.cat([g.detach().float().flatten() for g in torch.autograd.grad(loss, params)])


@torch.no_grad()
def _loss(learner: Learner, batch) -> float:
    return float(masked_ce(*learner.answer_logits(batch)))


def _shifted(learner: Learner, base: dict, direction: torch.Tensor, eps: float) -> dict:
    """The adapter state ``base - eps * direction`` (direction flattened over trainable tensors)."""
    out, i = dict(base), 0
    for (name, p) in learner.adapter.named():
        n = p.numel()
        out[name] = base[name] - eps * direction[i:i + n].view_as(p).to(base[name].dtype)
        i += n
    return out


def _unit(g: torch.Tensor) -> torch.Tensor:
    return g / g.norm().clamp_min(1e-12)


def one_step_displacement(learner: Learner, grad: torch.Tensor, lr: float) -> float:
    """Norm of AdamW's first step for gradient ``grad``: ``lr * ||g / (|g| + 1e-8)||``."""
    return float(lr * (grad / (grad.abs() + 1e-8)).norm())


def intervene(learner: Learner, cfg: RunConfig, stream: Stream, target: str, sources: Sequence[str],
              reps: int = 30, scales: Sequence[float] = SCALES, seed: int = 0, state: dict | None = None,
              signature: str | None = "gradb") -> dict[str, Any]:
    """The intervention for one target at ``state`` (default: the shared initialisation of
    ``seed``); plain data for JSON."""
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
        eval_batch = held_out.next()
        step = one_step_displacement(learner, g_t, cfg.train.lr)
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
    learner.adapter.load(learner.init_state)
    scores = _signature_scores(learner, cfg, stream, target, sources, seed, signature) if signature else {}
    return summarise(target, sources, scales, rows, scores, signature)


def _signature_scores(learner, cfg, stream, target, sources, seed, kind) -> dict[str, float]:
    probe = probe_batches(learner, cfg, stream, seed, 10)
    sigs = {name: take(kind, learner, probe[name]) for name in [target, *sources]}
    return {s: float(similarity(kind, sigs[s], sigs[target])) for s in sources}


def summarise(target: str, sources: Sequence[str], scales: Sequence[float], rows: list[dict],
              scores: dict[str, float], signature: str | None) -> dict[str, Any]:
    """Per (source, scale): mean changes and helpful-step rates; the rank correlations."""
    table = []
    for s in sources:
        for scale in scales:
            mine = [r for r in rows if r["source"] == s and r["scale"] == scale]
            table.append({"source": s, "scale": scale, "n": len(mine),
                          "cosine": float(np.mean([r["cosine"] for r in mine])),
                          "source_only": float(np.mean([r["source_only"] for r in mine])),
                          "marginal": float(np.mean([r["marginal"] for r in mine])),
                          "reference": float(np.mean([r["reference"] for r in mine])),
                          "helpful": float(np.mean([r["marginal"] < 0 for r in mine]))})
    rho = {kind: spearman([r["cosine"] for r in rows], [-r[kind] for r in rows])
           for kind in ("source_only", "marginal")}
    out: dict[str, Any] = {"target": target, "sources": list(sources), "scales": list(scales),
                           "rho_cosine": rho, "table": table, "rows": rows}
    if scores:
        mean_marginal = {s: float(np.mean([r["marginal"] for r in rows if r["source"] == s])) for s in sources}
        out["signature"] = {"kind": signature, "scores": scores,
                            "rho": spearman([scores[s] for s in sources], [-mean_marginal[s] for s in sources])}
    return out


def markdown(results: list[dict[str, Any]]) -> str:
    """The intervention's report: rank correlations, then each target's table."""
    lines = ["# Local intervention", "",
             "ρ (cosine): within-target Spearman correlation between the per-repetition gradient cosine "
             "and the loss reduction; ρ (signature): between the signature's scores of the sources and "
             "their mean marginal reduction. Changes are held-out target loss after minus before "
             "(negative helps).", "",
             "| target | ρ (cosine), source-only | ρ (cosine), marginal | signature | ρ (signature) |",
             "|---|---|---|---|---|"]
    for r in results:
        sig = r.get("signature") or {}
        lines.append(f"| {r['target']} | {_f(r['rho_cosine']['source_only'])} | {_f(r['rho_cosine']['marginal'])} | "
                     f"{sig.get('kind', '-')} | {_f(sig.get('rho'))} |")
    for r in results:
        lines += ["", f"## {r['target']}", ""] + ([f"Perturbed from {r['state']}.", ""] if r.get("state") else []) + [
                  "| source | ε scale | cosine | source-only ΔL | marginal ΔL | reference ΔL (2nd target batch) | helpful |",
                  "|---|---|---|---|---|---|---|"]
        for row in r["table"]:
            lines.append(f"| {row['source']} | {row['scale']:g} | {row['cosine']:+.3f} | {row['source_only']:+.4f} | "
                         f"{row['marginal']:+.4f} | {row['reference']:+.4f} | {row['helpful']:.0%} |")
    return "\n".join(lines) + "\n"


def _f(value) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:+.2f}"
