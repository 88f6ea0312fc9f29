"""Signature audit: do task signatures at the shared initialisation predict the measured matrix?

For every seed of a probe folder and every task, the probe batches are drawn exactly as TSR
draws them (``probe_batches`` batches of the task's N examples, from the seed's probe stream)
and every requested signature of :mod:`tsr.cl.signatures` is taken on the *same* batches at
the seed's shared initialisation. Each signature gives a similarity table per seed,
``table[target][source]``, which is scored against the measured transfer matrix (its mean over
the folder's seeds, oriented so that larger means "helps"):

- top-1: the most similar source against the matrix's best source, per target (the reference
  paper's headline, Table 2);
- Spearman's rank correlation, per target, between similarity and measured benefit over the
  sources, and its mean over targets;
- for designed benchmarks, the separation of designed partners from designed conflicts: the
  share of (target, partner, conflict) triples in which the partner is more similar.

Each metric is given on the seed-mean table (what a deployment averaging seeds would route
on) and per seed, with the spread over seeds (a deployment has one seed).
"""

from __future__ import annotations

import math
import statistics
import time

from ...cl.signatures import PROBE_BATCHES, SIGNATURE_KINDS, SIGNATURES, similarity, take
from ...config import RunConfig
from ...data.example import Stream
from ...errors import ConfigError
from ...data.sampling import BatchStream
from ...engine.machine import describe
from ...model.learner import Learner
from ...rng import numpy_rng
from ...analysis.ranks import spearman
from ..probe.plan import arm_examples
from ...analysis.transfer import benefit

Table = dict[str, dict[str, float]]


def probe_batches(learner: Learner, cfg: RunConfig, stream: Stream, seed: int, count: int) -> dict[str, list]:
    """Each task's probe batches for ``seed`` (the same draw for every signature)."""
    out = {}
    for index, task in enumerate(stream):
        examples = arm_examples(task, cfg.stream.budget, "target", seed)
        encoded = learner.encoder.encode_all(examples, f"task {task.name!r}")
        batches = BatchStream(learner.encoder, encoded, cfg.train.batch_size, numpy_rng(seed, "probe", index, "target"))
        out[task.name] = [batches.next() for _ in range(count)]
    return out


def stream_signatures(learner: Learner, cfg: RunConfig, stream: Stream, kind: str, seeds: list[int],
                      count: int) -> dict[int, dict]:
    """``{seed: {task: signature}}``: every task's ``kind`` signature at the shared initialisation
    of each seed, on ``count`` probe batches of its budget, as TSR takes it in a run of ``cfg``
    (``tsr signatures``)."""
    found = {}
    for seed in seeds:
        learner.reset(seed)
        learner.adapter.load(learner.init_state)
        batches = probe_batches(learner, cfg, stream, seed, count)
        found[seed] = {name: take(kind, learner, b) for name, b in batches.items()}
    return found


def seed_tables(learner: Learner, cfg: RunConfig, stream: Stream, seed: int, kinds: list[str],
                count: int = 10, timings: dict[str, float] | None = None) -> dict[str, Table]:
    """``tables[kind][target][source]`` = similarity(signature of source, signature of target)
    at the shared initialisation of ``seed``; ``timings`` (if given) collects seconds per kind."""
    learner.reset(seed)
    learner.adapter.load(learner.init_state)
    batches = probe_batches(learner, cfg, stream, seed, count)
    tables = {}
    for kind in kinds:
        start = time.perf_counter()
        sigs = {name: take(kind, learner, b) for name, b in batches.items()}
        tables[kind] = {t: {s: similarity(kind, sigs[s], sigs[t]) for s in sigs if s != t} for t in sigs}
        if timings is not None:
            timings[kind] = timings.get(kind, 0.0) + time.perf_counter() - start
    return tables


def score_table(table: Table, matrix: dict[str, dict[str, dict]], kinds: dict[str, str],
                relations: dict[str, dict[str, str]] | None = None) -> dict:
    """Top-1, Spearman per target and partner/conflict separation of one similarity table, and
    the regret of each pick: the best source's benefit minus the picked source's (0 when the
    pick is the best; a near-tie missed by top-1 costs little). ``mean_regret`` averages it over
    the accuracy targets only (accuracy and loss are not in one unit)."""
    top1, rho, pairs = {}, {}, []
    for target, cells in matrix.items():
        row = {s: v for s, v in table.get(target, {}).items() if s in cells}
        if not row:
            continue
        gain = {s: benefit(cells[s]["mean"], kinds[target]) for s in row}
        best, predicted = max(gain, key=gain.get), max(row, key=row.get)
        top1[target] = {"predicted": predicted, "best": best, "hit": predicted == best,
                        "regret": gain[best] - gain[predicted]}
        sources = sorted(row)
        rho[target] = spearman([row[s] for s in sources], [gain[s] for s in sources])
        rel = {s: (relations or {}).get(s, {}).get(target, "unrelated") for s in row}
        for p in (s for s in row if rel[s] == "partner"):
            pairs += [row[p] > row[c] for c in row if rel[c] == "conflict"]
    finite = [r for r in rho.values() if not math.isnan(r)]
    regrets = [h["regret"] for t, h in top1.items() if kinds[t] == "classification"]
    return {"top1": top1, "mean_regret": statistics.fmean(regrets) if regrets else math.nan, "hits": sum(h["hit"] for h in top1.values()), "targets": len(top1), "spearman": rho,
            "mean_spearman": statistics.fmean(finite) if finite else math.nan,
            "partner_above_conflict": (sum(pairs) / len(pairs)) if pairs else None, "pairs": len(pairs)}


def _spread(values: list[float]) -> dict:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return {"mean": statistics.fmean(vals) if vals else math.nan,
            "sd": statistics.stdev(vals) if len(vals) > 1 else math.nan, "n": len(vals)}


def summarise(kind: str, per_seed: dict[int, Table], matrix: dict, kinds: dict[str, str],
              relations: dict | None = None) -> dict:
    """One signature's audit entry: the seed-mean table scored, every seed scored, and the
    spread over seeds (``cosine``/``top1``/``hit_rate`` keep the earlier report's keys)."""
    seeds = sorted(per_seed)
    first = per_seed[seeds[0]]
    mean = {t: {s: statistics.fmean(per_seed[x][t][s] for x in seeds) for s in first[t]} for t in first}
    pooled = score_table(mean, matrix, kinds, relations)
    scored = {x: score_table(per_seed[x], matrix, kinds, relations) for x in seeds}
    targets = list(pooled["top1"])
    spec = SIGNATURES[kind]
    return {
        "seeds": seeds, "family": spec.family, "signal": spec.signal, "paper": spec.paper,
        "params": {k: v for k, v in spec.params.items()},
        "cosine": mean, "top1": pooled["top1"], "hit_rate": f"{pooled['hits']}/{pooled['targets']}",
        "spearman": pooled["spearman"], "mean_spearman": pooled["mean_spearman"], "mean_regret": pooled["mean_regret"],
        "partner_above_conflict": pooled["partner_above_conflict"], "pairs": pooled["pairs"],
        "per_seed": {str(x): {"hits": s["hits"], "mean_spearman": s["mean_spearman"], "mean_regret": s["mean_regret"],
                              "partner_above_conflict": s["partner_above_conflict"],
                              "top1": {t: h["predicted"] for t, h in s["top1"].items()}} for x, s in scored.items()},
        "spread": {"hits": _spread([float(s["hits"]) for s in scored.values()]),
                   "mean_spearman": _spread([s["mean_spearman"] for s in scored.values()]),
                   "mean_regret": _spread([s["mean_regret"] for s in scored.values()]),
                   "partner_above_conflict": _spread([s["partner_above_conflict"] for s in scored.values()])},
        "per_target": {t: {"hits": sum(scored[x]["top1"].get(t, {}).get("hit", False) for x in seeds),
                           "spearman": _spread([scored[x]["spearman"].get(t, math.nan) for x in seeds])}
                       for t in targets},
    }


def audit(learner: Learner, cfg: RunConfig, stream: Stream, seeds: list[int], matrix: dict,
          kinds: list[str] | tuple[str, ...] = SIGNATURE_KINDS, probe_batches: int = PROBE_BATCHES,
          relations: dict | None = None) -> dict:
    """Every signature in ``kinds`` over ``seeds``, scored against ``matrix`` (the transfer
    matrix of :func:`tsr.analysis.transfer.transfer_matrix`)."""
    task_kinds = {t.name: t.kind.value for t in stream}
    per_seed: dict[str, dict[int, Table]] = {k: {} for k in kinds}
    timings: dict[str, float] = {}
    for seed in seeds:
        for kind, table in seed_tables(learner, cfg, stream, seed, list(kinds), probe_batches, timings).items():
            per_seed[kind][seed] = table
    report = {}
    for kind in kinds:
        report[kind] = summarise(kind, per_seed[kind], matrix, task_kinds, relations)
        report[kind]["seconds_per_task"] = timings[kind] / (len(seeds) * len(stream))
        report[kind]["probe_batches"] = probe_batches
        report[kind]["machine"] = describe(learner.device, learner.compiled)  # a reading names its machine
    return report


def probe_audit(cfg: RunConfig, stream: Stream, arms: list[dict], out, kinds: list[str],
                relations: dict | None = None, probe_batches: int = PROBE_BATCHES) -> dict:
    """The audit of ``tsr probe --signatures``: over every seed of the folder's matrix, written
    into ``out`` (:func:`tsr.experiments.signatures.report.write_audit`). A folder without mixed arms
    for these tasks (no matrix to score against) is a one-line :class:`ConfigError`."""
    from ...model.learner import build_learner
    from .report import write_audit
    from ...analysis.transfer import transfer_matrix

    if not any(a["arm"] == "mixed" for a in arms):
        raise ConfigError(f"--signatures: {out} holds no mixed arms of these tasks, so there is no transfer "
                          "matrix to audit the signatures against; run tsr probe with --arms target,mixed first")
    matrix = {t: cells for t, cells in transfer_matrix(arms).items() if len(cells) >= 1}
    # over the seeds of the matrix the folder holds, not only those this command asked for
    seeds = sorted({a["seed"] for a in arms if a["arm"] == "mixed"})
    report = audit(build_learner(cfg), cfg, stream, seeds, matrix, kinds, probe_batches, relations)
    write_audit(out, report, stream.names, title=f"signature audit · {stream.name}")
    return report


__all__ = ["audit", "probe_audit", "probe_batches", "score_table", "seed_tables", "spearman", "stream_signatures",
           "summarise"]
