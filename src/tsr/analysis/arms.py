"""The paper's arm table: target-only, full, random source, hindsight oracle (and the column's
best source), per target, mean ± std over seeds.

Pure functions of a probe folder's saved arms (:mod:`tsr.experiments.probe`).

- ``random`` is a trained arm (the mixed arm of a uniformly drawn source; see
  :func:`tsr.experiments.probe.plan.random_source`).
- ``oracle`` is a view, not a training: the mixed arm of the one source with the best mean
  target score over the seeds (accuracy for classification targets, lowest answer loss for
  generation targets): the seed-mean matrix's column best, chosen in hindsight as the paper
  defines the oracle. With the mixed arms of every source saved, training it again would
  reproduce them bit for bit.
- ``oracle-max`` is each seed's best mixed arm: the maximum of noisy scores, biased upward, an
  upper bound of what hindsight selection gives, never a gain to compare with.
"""

from __future__ import annotations

import math
import statistics

from ..atomic import write_json, write_text
from ..errors import ConfigError
from .transfer import metric

COLUMNS = ("target", "full", "pooled", "random", "oracle", "oracle-max", "routed")


def _better(kind: str, a: float, b: float) -> bool:
    return a > b if kind == "classification" else a < b


def oracle_max_arms(arms: list[dict]) -> list[dict]:
    """Per (target, seed), a copy of the best saved mixed arm (ties: the first source by name),
    with ``arm`` = "oracle-max" (an upper bound); targets and seeds without a mixed arm have none."""
    best: dict[tuple[str, int], dict] = {}
    for a in sorted((a for a in arms if a["arm"] == "mixed"), key=lambda a: (a["target"], a["seed"], a["source"])):
        key, score = (a["target"], a["seed"]), a[metric(a["kind"])]
        held = best.get(key)
        if held is None or _better(a["kind"], score, held[metric(held["kind"])]):
            best[key] = a
    return [{**{k: v for k, v in a.items() if k != "checkpoints"}, "arm": "oracle-max"} for _, a in sorted(best.items())]


def oracle_arms(arms: list[dict]) -> list[dict]:
    """The oracle: the mixed arms of each target's source with the best mean score over the
    seeds it has (ties: the first source by name), with ``arm`` = "oracle"."""
    scores: dict[tuple[str, str], list[float]] = {}
    kinds = {}
    for a in arms:
        if a["arm"] == "mixed":
            scores.setdefault((a["target"], a["source"]), []).append(a[metric(a["kind"])])
            kinds[a["target"]] = a["kind"]
    choice: dict[str, str] = {}
    for (target, source), values in sorted(scores.items()):
        held = choice.get(target)
        if held is None or _better(kinds[target], statistics.fmean(values), statistics.fmean(scores[(target, held)])):
            choice[target] = source
    return [{**{k: v for k, v in a.items() if k != "checkpoints"}, "arm": "oracle"}
            for a in arms if a["arm"] == "mixed" and choice.get(a["target"]) == a["source"]]


def routed_arms(arms: list[dict], routes: dict[str, dict[str, str]]) -> list[dict]:
    """The saved mixed arm of the source a signature picks for each (target, seed):
    ``routes[seed][target]`` (argmax routing: the source most similar to the target)."""
    return [{**a, "arm": "routed"} for a in arms
            if a["arm"] == "mixed" and routes.get(str(a["seed"]), {}).get(a["target"]) == a["source"]]


def signature_routes(signatures: dict | None, kind: str = "gradb") -> dict[str, dict[str, str]]:
    """Each seed's top-1 source per target from a probe report's signature audit (empty
    without one, or without that signature)."""
    entry = (signatures or {}).get(kind) or {}
    return {seed: dict(row.get("top1", {})) for seed, row in entry.get("per_seed", {}).items()}


def _summary(values: list[float]) -> dict:
    if not values:
        return {"mean": math.nan, "std": math.nan, "n": 0}
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else math.nan,
            "n": len(values)}


def arm_table(arms: list[dict], routes: dict[str, dict[str, str]] | None = None,
              full_size: int | None = None) -> dict[str, dict]:
    """``table[target]`` = kind, metric, and per column mean / std / n over seeds (with the
    sources each seed's random, oracle, oracle-max and routed arm used); ``routes`` (seed ->
    target -> source, :func:`signature_routes`) fills the signature-routed column. Full arms of
    different sizes are never averaged into one column: ``full_size`` picks one, and without it
    a target whose full arms differ in size is an error naming the sizes."""
    if not any(a["arm"] == "target" for a in arms):
        raise ConfigError("the arm table needs target arms (run `tsr probe` with --arms target)")
    if not any(a["arm"] in ("mixed", "random", "full", "pooled") for a in arms):
        raise ConfigError("the arm table needs full, mixed or random arms beside the target arms "
                          "(run `tsr probe --arms target,full,mixed,random`)")
    arms = _one_full_size(arms, full_size)
    rows = [a for a in arms if a["arm"] in ("target", "full", "pooled", "random")] + oracle_arms(arms) \
        + oracle_max_arms(arms)
    rows += routed_arms(arms, routes or {})
    table: dict[str, dict] = {}
    for target in sorted({a["target"] for a in arms if a["arm"] == "target"}):
        mine = [a for a in rows if a["target"] == target]
        kind = mine[0]["kind"]
        key = metric(kind)
        entry: dict = {"kind": kind, "metric": key}
        for column in COLUMNS:
            chosen = sorted((a for a in mine if a["arm"] == column), key=lambda a: a["seed"])
            entry[column] = _summary([a[key] for a in chosen])
            if column in ("random", "oracle", "oracle-max", "routed"):
                entry[column]["sources"] = {str(a["seed"]): a["source"] for a in chosen}
        table[target] = entry
    return table


def _one_full_size(arms: list[dict], full_size: int | None) -> list[dict]:
    """The arms with the full arms of one size only (``full_size``, or the one size there is)."""
    if full_size is not None:
        return [a for a in arms if a["arm"] != "full" or a.get("examples") == full_size]
    for target in sorted({a["target"] for a in arms}):
        sizes = sorted({a.get("examples") for a in arms if a["arm"] == "full" and a["target"] == target})
        if len(sizes) > 1:
            raise ConfigError(f"task {target!r} has full arms of {', '.join(map(str, sizes))} examples; the arm "
                              "table compares one size (choose it with --full N)")
    return arms


def _cell(c: dict) -> str:
    if not c["n"]:
        return "—"
    std = "" if math.isnan(c["std"]) else f" ± {c['std']:.3f}"
    return f"{c['mean']:.3f}{std}"


def table_markdown(table: dict[str, dict], order: list[str] | None = None) -> str:
    routed = any(r["routed"]["n"] for r in table.values())
    lines = ["| target | metric | target-only | full | pooled | random | oracle (source) | oracle-max (upper bound) |"
             + (" signature-routed |" if routed else "") + " seeds |",
             "|---|---|---|---|---|---|---|---|" + ("---|" if routed else "") + "---|"]
    for t in [t for t in order or sorted(table) if t in table]:
        r = table[t]
        source = ", ".join(sorted(set(r["oracle"]["sources"].values())))
        best = _cell(r["oracle"]) + (f" ({source})" if source else "")
        lines.append(f"| {t} | {r['metric']} | {_cell(r['target'])} | {_cell(r['full'])} | {_cell(r['pooled'])} "
                     f"| {_cell(r['random'])} | {best} | {_cell(r['oracle-max'])} |"
                     + (f" {_cell(r['routed'])} |" if routed else "") + f" {r['target']['n']} |")
    return "\n".join(lines) + "\n"


def table_csv(table: dict[str, dict]) -> str:
    rows = ["target,kind,metric,arm,mean,std,n"]
    for t, r in table.items():
        for column in COLUMNS:
            c = r[column]
            rows.append(f"{t},{r['kind']},{r['metric']},{column},{c['mean']:.6f},{c['std']:.6f},{c['n']}")
    return "\n".join(rows) + "\n"


def write_arm_table(out, arms: list[dict], order: list[str] | None = None,
                    routes: dict[str, dict[str, str]] | None = None, full_size: int | None = None) -> dict:
    """``arm-table.md``, ``.csv`` and ``.json`` into ``out``; returns the table."""
    from pathlib import Path

    table = arm_table(arms, routes, full_size)
    out = Path(out)
    write_text(out / "arm-table.md", "# Probe arms per target (mean ± std over seeds)\n\n" + table_markdown(table, order)
               + "\noracle: the mixed arm of the source with the best mean over seeds (the seed-mean matrix's "
               "column best); oracle-max: each seed's best mixed arm in hindsight, an upper bound biased upward by seed "
               "noise; pooled: every other task's pool mixed uniformly (uniform ER); random: the mixed arm of a "
               "uniformly drawn source; signature-routed "
               "(with a signature audit): the mixed arm of the source whose gradb signature is most similar to the "
               "target's at that seed (argmax routing; TSR itself routes softly).\n")
    write_text(out / "arm-table.csv", table_csv(table))
    write_json(out / "arm-table.json", table)
    return table
