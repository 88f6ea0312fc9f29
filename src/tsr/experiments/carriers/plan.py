"""The carrier study of the reference paper (§"What: the carrier must persist", Appendix
"The carrier" and "Replay and anchor ablations", Figure "Candidate carriers").

Pair experiments source J -> target t at the probe's budget N: the same seed, steps and N
target examples in every arm, and every arm starts from the seed's shared initialisation
except where the carrier is the initialisation itself. The arms are ordinary probe arms
(:mod:`tsr.experiments.probe`), saved in the config's probe folder, so they are shared with
``tsr probe`` and the budget audit, resumable and run on the worker pool:

``target``   the N target examples alone (no carrier);
``mixed``    data mixing: ER with alpha 1/2 and J's whole pool as replay data (persistent data);
``init``     one-shot parameter carrier: start from J's trained adapter theta_J, then CE alone;
``anchor``   persistent parameter carrier: CE + mu ||theta - theta_J||^2, one arm per mu.

What is measured, per pair and carrier, at the last step and at every checkpoint (the
wash-out: the one-shot carrier's early advantage erased by continued training):

- the target score, mean ± std over seeds (accuracy; answer loss for generation targets,
  lower is better, as in :mod:`tsr.analysis.transfer`);
- the gain over the target arm, paired by seed and oriented so that positive means the
  carrier helps (:func:`tsr.analysis.transfer.benefit`), mean ± se;
- the share of the mixing gain the carrier captures, ``(carrier - target) / (mixed - target)``
  on the mean gains (the paper's bar heights; its numbers are ratios of means over the five
  oracle pairs). Choice: the share is given only where the mixing gain is positive (a share of
  a harmful or null gain has no meaning), else None.

Over several pairs of the same metric, a mean row: the mean over pairs of each pair's mean
score (± std over pairs) and of its mean gain (± se over pairs, n = pairs), and the share as
the ratio of those mean gains, as the paper's "mean over the five oracle pairs".

Step 0 (the starting points, before any training): every arm but ``init`` starts at the seed's
shared initialisation and ``init`` at theta_J, so the curve's first point scores those two
states on the target's test set (:func:`tsr.experiments.probe.run.score_start`), once per (target,
seed) and per (pair, seed), cached as ``<probe folder>/starts/*.json``. At step 0 every
carrier but ``init`` has gain 0 exactly; ``init``'s is the head start that the wash-out erases.

Pairs come from ``--pairs SRC:TGT,...`` or from a probe folder's transfer matrix: each
target's column-best source (:func:`tsr.analysis.transfer.column_best`), the ``top`` K pairs
with the largest mixing benefit (the paper's "oracle pairs"). Checkpoints default to every
``train.steps / 8`` steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ...analysis.transfer import benefit, column_best, transfer_matrix
from ...data.example import Stream
from ...errors import ConfigError
from ..probe import plan as pr
from .arms import DEFAULT_MU, safe_name

ARMS = ("target", "mixed", "init", "anchor")


STARTS_DIR = "starts"  # in the probe folder: the scores of the arms' starting points (step 0)


PARTS = 8  # default checkpoints: every train.steps / PARTS steps


@dataclass(frozen=True)
class CarrierPlan:
    pairs: tuple[tuple[str, str], ...]  # (source, target)
    seeds: tuple[int, ...]
    mus: tuple[float, ...]
    checkpoints: tuple[int, ...]


def parse_pairs(text: str) -> list[tuple[str, str]]:
    pairs = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        parts = item.split(":")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise ConfigError(f"--pairs: {item!r} is not SOURCE:TARGET")
        pairs.append((parts[0].strip(), parts[1].strip()))
    if not pairs:
        raise ConfigError("--pairs: no pair given (SOURCE:TARGET,...)")
    return pairs


def pairs_from_probe(folder: Path, top: int | None = None) -> list[tuple[str, str]]:
    """Each target's best source in the transfer matrix of the probe folder ``folder`` (its
    saved mixed arms), the ``top`` pairs with the largest mixing benefit first."""
    arms = pr.read_arms(folder, "--from")
    matrix = {t: {s: c for s, c in cells.items() if not math.isnan(c["mean"])}
              for t, cells in transfer_matrix(arms).items()}
    kinds = {a["target"]: a["kind"] for a in arms}
    best = column_best(matrix, kinds)
    if not best:
        raise ConfigError(f"--from {folder}: no mixed arm with its target arm (run tsr probe --arms target,mixed)")
    if top is not None and top < 1:
        raise ConfigError(f"--top: {top} is not a positive number of pairs")
    ranked = sorted(best, key=lambda t: -benefit(matrix[t][best[t]]["mean"], kinds[t]))
    return [(best[t], t) for t in ranked[:top]]


def default_checkpoints(steps: int, parts: int = PARTS) -> tuple[int, ...]:
    """Every ``steps / parts`` steps (rounded), below ``steps``."""
    return tuple(sorted({round(k * steps / parts) for k in range(1, parts)} & set(range(1, steps))))


def plan_carriers(stream: Stream, pairs: list[tuple[str, str]], seeds: list[int], mus: list[float],
                  checkpoints: list[int] | None, steps: int) -> CarrierPlan:
    """Check the study (task names, seeds, mu, checkpoints) before anything runs."""
    for source, target in pairs:
        for name in (source, target):
            if name not in stream.names:
                raise ConfigError(f"--pairs: unknown task {name!r} (tasks: {', '.join(stream.names)})")
        if source == target:
            raise ConfigError(f"--pairs: {source}:{target} pairs a task with itself")
    if not seeds:
        raise ConfigError("--seeds: no seed given")
    bad = [m for m in mus if not m >= 0]
    if bad or not mus:
        raise ConfigError(f"--mu: the anchor strength must be >= 0 (got {bad[0] if bad else 'none'})")
    points = default_checkpoints(steps) if checkpoints is None else tuple(sorted(set(checkpoints)))
    wrong = [s for s in points if not 1 <= s < steps]
    if wrong:
        raise ConfigError(f"--checkpoints: step {wrong[0]} is not between 1 and train.steps - 1 ({steps - 1})")
    return CarrierPlan(tuple(dict.fromkeys(pairs)), tuple(dict.fromkeys(seeds)),
                       tuple(dict.fromkeys(float(m) for m in mus)), points)


def carrier_jobs(stream: Stream, plan: CarrierPlan) -> list[pr.Job]:
    """The probe arms of the study, each once (pairs of one target share its target arms)."""
    jobs: dict[pr.Job, None] = {}
    for source, target in plan.pairs:
        jobs.update(dict.fromkeys(pr.plan_jobs(stream, plan.seeds, [target], [source], ARMS, mus=plan.mus)))
    return list(jobs)


def start_points(plan: CarrierPlan) -> list[tuple[str, str | None, int]]:
    """(target, source or None for the shared initialisation, seed) of every starting point."""
    points: dict[tuple[str, str | None, int], None] = {}
    for source, target in plan.pairs:
        for seed in plan.seeds:
            points.update(dict.fromkeys([(target, None, seed), (target, source, seed)]))
    return list(points)


def start_file(folder: Path, target: str, source: str | None, seed: int) -> Path:
    at = "init" if source is None else f"source_{safe_name(source)}"
    return folder / STARTS_DIR / f"{safe_name(target)}__at_{at}__s{seed}.json"


def of_plan(arms: list[dict], plan: CarrierPlan) -> list[dict]:
    keep = []
    for a in arms:
        pair = any(a["target"] == t and (a["arm"] == "target" or a["source"] == s) for s, t in plan.pairs)
        mu_ok = a["arm"] != "anchor" or a.get("mu", DEFAULT_MU) in plan.mus
        if pair and mu_ok and a["arm"] in ARMS and a["seed"] in plan.seeds:
            keep.append(a)
    return keep
