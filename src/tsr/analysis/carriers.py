"""The carrier study of the reference paper (§"What: the carrier must persist", Appendix
"The carrier" and "Replay and anchor ablations", Figure "Candidate carriers").

Pair experiments source J -> target t at the probe's budget N: the same seed, steps and N
target examples in every arm, and every arm starts from the seed's shared initialisation
except where the carrier is the initialisation itself. The arms are ordinary probe arms
(:mod:`tsr.analysis.probe`), saved in the config's probe folder, so they are shared with
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
states on the target's test set (:func:`tsr.analysis.probe.score_start`), once per (target,
seed) and per (pair, seed), cached as ``<probe folder>/starts/*.json``. At step 0 every
carrier but ``init`` has gain 0 exactly; ``init``'s is the head start that the wash-out erases.

Pairs come from ``--pairs SRC:TGT,...`` or from a probe folder's transfer matrix: each
target's column-best source (:func:`tsr.analysis.transfer.column_best`), the ``top`` K pairs
with the largest mixing benefit (the paper's "oracle pairs"). Checkpoints default to every
``train.steps / 8`` steps.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..atomic import write_json
from ..config import RunConfig
from ..data.example import Stream
from ..engine.pool import Executor
from ..errors import ConfigError
from . import probe as pr
from .carrier_arms import DEFAULT_MU, safe_name
from .transfer import arms_at, benefit, column_best, metric, stat, transfer_matrix

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


def run_carriers(cfg: RunConfig, stream: Stream, plan: CarrierPlan, workers: int = 1,
                 progress: Callable[[dict, int, int], None] | None = None,
                 executor: Executor | None = None) -> list[dict]:
    """Run the study's arms not yet saved in the probe folder; return the study's saved arms."""
    arms = pr.run_probe(cfg, carrier_jobs(stream, plan), pr.probe_dir(cfg, stream), workers, progress,
                        plan.checkpoints, executor)
    return of_plan(arms, plan)


def saved_carriers(cfg: RunConfig, stream: Stream, plan: CarrierPlan) -> list[dict]:
    """The study's arms saved so far in the probe folder (nothing is trained)."""
    folder = pr.probe_dir(cfg, stream) / "arms"
    return of_plan([json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))], plan)


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


def run_starts(cfg: RunConfig, stream: Stream, plan: CarrierPlan,
               progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """Score the starting points not yet saved (in this process, one learner; the source
    adapters are the ones the arms cached); return every saved one of the plan."""
    folder = pr.probe_dir(cfg, stream)
    todo = [p for p in start_points(plan) if not start_file(folder, *p).is_file()]
    if todo:
        from ..model.learner import build_learner

        learner, tests = build_learner(cfg), {}
        for done, (target, source, seed) in enumerate(todo, 1):
            result = pr.score_start(learner, cfg, stream, target, source, seed, tests, folder / "sources")
            write_json(start_file(folder, target, source, seed), result)
            if progress is not None:
                progress(done, len(todo))
    return saved_starts(cfg, stream, plan)


def saved_starts(cfg: RunConfig, stream: Stream, plan: CarrierPlan) -> list[dict]:
    folder = pr.probe_dir(cfg, stream)
    files = [start_file(folder, *p) for p in start_points(plan)]
    return [json.loads(f.read_text(encoding="utf-8")) for f in files if f.is_file()]


def arms_at_start(rows: list[dict], starts: list[dict]) -> list[dict]:
    """Each arm as it scored before its first step: ``init`` at its source's theta_J, every
    other arm at the shared initialisation (arms whose starting point is not saved are left out)."""
    at = {(s["target"], s["source"], s["seed"]): s for s in starts}
    out = []
    for a in rows:
        start = at.get((a["target"], a["source"] if a["arm"] == "init" else None, a["seed"]))
        if start is not None:
            out.append({**a, "acc": start["acc"], "loss": start["loss"]})
    return out


def of_plan(arms: list[dict], plan: CarrierPlan) -> list[dict]:
    keep = []
    for a in arms:
        pair = any(a["target"] == t and (a["arm"] == "target" or a["source"] == s) for s, t in plan.pairs)
        mu_ok = a["arm"] != "anchor" or a.get("mu", DEFAULT_MU) in plan.mus
        if pair and mu_ok and a["arm"] in ARMS and a["seed"] in plan.seeds:
            keep.append(a)
    return keep


def carrier(a: dict) -> str:
    """The carrier an arm measures: target, mixed, init or ``anchor mu=<mu>``."""
    return f"anchor mu={a.get('mu', DEFAULT_MU):g}" if a["arm"] == "anchor" else a["arm"]


def carrier_names(plan: CarrierPlan) -> list[str]:
    return ["target", "mixed", "init", *(f"anchor mu={m:g}" for m in plan.mus)]


def _cells(rows: list[dict], kind: str, names: list[str]) -> dict[str, dict]:
    key = metric(kind)
    by: dict[str, dict[int, float]] = {}
    for a in rows:
        by.setdefault(carrier(a), {})[a["seed"]] = a[key]
    base = by.get("target", {})
    out = {}
    for name in names:
        scores = by.get(name, {})
        gains = [benefit(v - base[seed], kind) for seed, v in sorted(scores.items()) if seed in base]
        out[name] = {"score": _spread(list(scores.values())), "gain": stat(gains).to_dict()}
    return _with_shares(out)


def _with_shares(cells: dict[str, dict]) -> dict[str, dict]:
    mixed = cells.get("mixed", {}).get("gain", {}).get("mean", math.nan)
    for name, cell in cells.items():
        g = cell["gain"]["mean"]
        cell["share"] = g / mixed if name != "target" and mixed > 0 and not math.isnan(g) else None
    return cells


def _spread(values: list[float]) -> dict:
    if not values:
        return {"mean": math.nan, "std": math.nan, "n": 0}
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else math.nan,
            "n": len(values)}


def carrier_summary(arms: list[dict], plan: CarrierPlan, steps: int, starts: list[dict] | None = None) -> dict:
    """``{"steps", "checkpoints", "seeds", "mus", "pairs": [...], "means": {metric: ...}}``;
    each pair and mean holds ``final`` (after ``steps``) and ``curve[step]``: per carrier its
    score (mean, std, n), paired gain (mean, se, n) and share of the mixing gain. Given the
    starting points' scores (:func:`run_starts`), the curve begins at step 0."""
    names = carrier_names(plan)
    points = [*([0] if starts else []), *plan.checkpoints, steps]
    pairs = []
    for source, target in plan.pairs:
        rows = of_plan(arms, CarrierPlan(((source, target),), plan.seeds, plan.mus, ()))
        if not rows:
            continue
        kind = rows[0]["kind"]
        curve = {str(s): _cells(arms_at_start(rows, starts or []) if s == 0 else arms_at(rows, s, steps), kind, names)
                 for s in points}
        pairs.append({"source": source, "target": target, "kind": kind, "metric": metric(kind),
                      "final": curve[str(steps)], "curve": curve})
    means = {}
    for key in sorted({p["metric"] for p in pairs}):
        group = [p for p in pairs if p["metric"] == key]
        if len(group) > 1:
            curve = {str(s): _mean_cells([p["curve"][str(s)] for p in group], names) for s in points}
            means[key] = {"pairs": len(group), "final": curve[str(steps)], "curve": curve}
    return {"steps": steps, "checkpoints": list(plan.checkpoints), "seeds": list(plan.seeds),
            "mus": list(plan.mus), "carriers": names, "pairs": pairs, "means": means}


def _mean_cells(cells: list[dict[str, dict]], names: list[str]) -> dict[str, dict]:
    """The mean over pairs of each pair's mean score and mean gain (pairs missing one are left out)."""
    out = {}
    for name in names:
        scores = [c[name]["score"]["mean"] for c in cells if not math.isnan(c[name]["score"]["mean"])]
        gains = [c[name]["gain"]["mean"] for c in cells if not math.isnan(c[name]["gain"]["mean"])]
        out[name] = {"score": _spread(scores), "gain": stat(gains).to_dict()}
    return _with_shares(out)
