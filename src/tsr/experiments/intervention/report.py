"""The local intervention's statistics and report (the measurement:
:mod:`tsr.experiments.intervention.run`).

Per target, seed and scale, as the reference paper defines them (Appendix "Local
intervention", Table "predictors", right):

- **within-target rho**: Spearman's rank correlation, over the repetitions (every repetition
  measures every source, so the points are repetitions x sources) at one step scale, between
  the gradient cosine ``g^_t . g^_s`` and the loss reduction (minus the change), for the
  source-only and the marginal effect. The paper reports .93 and .87 at the shared
  initialisation.
- **stored-signature rho**: Spearman over the target's sources between the stored signature's
  scores and the current-gradient cosines (each source's mean over repetitions): does the
  signature preserve the gradient geometry (the paper's .85)?
- **grouping**: the sources ranked by the stored signature, top / middle / bottom, with each
  group's mean marginal change and helpful-step rate at every scale, beside an extra target
  batch's (the reference). Our rule for the groups, which the paper does not state: with five
  or more sources the top and bottom two (the paper's "top-aligned pair", "bottom pair") and
  the rest in the middle; with three or four, one each. Without signature scores the sources
  are ranked by their mean gradient cosine instead.
- **share**: the top group's mean marginal descent over the extra target batch's, the paper's
  "the top-aligned pair recovers roughly 28% of the descent an additional target batch would
  provide".

Ours, named as such: the within-target rho pooled over every scale (this project's first
statistic), and the signature's rank correlation with the sources' mean marginal reduction.
Over seeds (each its own shared initialisation) every statistic is a mean ± standard error.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Sequence

import numpy as np

from ...analysis.ranks import spearman

KINDS = ("source_only", "marginal")
GROUPS = ("top", "middle", "bottom")


def _mean(values) -> float:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.mean(values)) if values else math.nan


def _rho(rows: list[dict]) -> dict[str, float]:
    return {kind: spearman([r["cosine"] for r in rows], [-r[kind] for r in rows]) for kind in KINDS}


def group_sources(ranked: Sequence[str]) -> dict[str, list[str]]:
    """Top / middle / bottom of sources ranked best first (the module doc's rule)."""
    k = len(ranked)
    edge = 2 if k >= 5 else 1 if k >= 3 else 0
    if edge == 0:
        return {"top": list(ranked[:1]), "middle": [], "bottom": list(ranked[1:])}
    return {"top": list(ranked[:edge]), "middle": list(ranked[edge:k - edge]), "bottom": list(ranked[k - edge:])}


def _groups(rows: list[dict], sources: Sequence[str], scales: Sequence[float], rank: dict[str, float]) -> dict:
    groups = group_sources(sorted(sources, key=lambda s: (-rank[s], list(sources).index(s))))
    out = {}
    for scale in scales:
        at = [r for r in rows if r["scale"] == scale]
        reference = _mean(r["reference"] for r in {(r["rep"]): r for r in at}.values())
        cell: dict[str, Any] = {"extra_target": {"marginal": reference}}
        for name in GROUPS:
            mine = [r for r in at if r["source"] in groups[name]]
            cell[name] = {"sources": groups[name], "marginal": _mean(r["marginal"] for r in mine),
                          "helpful": _mean(float(r["marginal"] < 0) for r in mine)}
        top = cell["top"]["marginal"]
        cell["share"] = top / reference if reference < 0 and not math.isnan(top) else math.nan
        out[str(scale)] = cell
    return out


def summarise(target: str, sources: Sequence[str], scales: Sequence[float], rows: list[dict],
              scores: dict[str, float], signature: str | None) -> dict[str, Any]:
    """One target at one seed: the table per (source, scale) and every statistic above."""
    table = []
    for s in sources:
        for scale in scales:
            mine = [r for r in rows if r["source"] == s and r["scale"] == scale]
            table.append({"source": s, "scale": scale, "n": len(mine),
                          "cosine": _mean(r["cosine"] for r in mine),
                          "source_only": _mean(r["source_only"] for r in mine),
                          "marginal": _mean(r["marginal"] for r in mine),
                          "reference": _mean(r["reference"] for r in mine),
                          "helpful": _mean(float(r["marginal"] < 0) for r in mine)})
    cosine = {s: _mean(r["cosine"] for r in rows if r["source"] == s) for s in sources}
    out: dict[str, Any] = {
        "target": target, "sources": list(sources), "scales": list(scales), "table": table, "rows": rows,
        "rho_within": {str(scale): _rho([r for r in rows if r["scale"] == scale]) for scale in scales},
        "rho_pooled": _rho(rows),
        "groups": _groups(rows, sources, scales, scores or cosine), "grouped_by": signature if scores else "cosine"}
    if scores:
        mean_marginal = {s: _mean(r["marginal"] for r in rows if r["source"] == s) for s in sources}
        out["signature"] = {"kind": signature, "scores": scores,
                            "rho": spearman([scores[s] for s in sources], [cosine[s] for s in sources]),
                            "rho_descent": spearman([scores[s] for s in sources],
                                                    [-mean_marginal[s] for s in sources])}
    return out


def _stat(values: list[float]) -> dict:
    values = [v for v in values if v is not None and not math.isnan(v)]
    n = len(values)
    if not n:
        return {"mean": math.nan, "se": math.nan, "n": 0}
    se = statistics.stdev(values) / math.sqrt(n) if n > 1 else math.nan
    return {"mean": statistics.fmean(values), "se": se, "n": n}


def aggregate(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per target (over its seeds) and over targets: every statistic as mean ± se; a target's
    value over targets is its mean over seeds."""
    by_target: dict[str, list[dict]] = {}
    for r in results:
        by_target.setdefault(r["target"], []).append(r)
    targets = {t: _over(rs) for t, rs in by_target.items()}
    return {"targets": targets, "over_targets": _over_targets(list(targets.values()))}


def _over(rs: list[dict]) -> dict:
    scales = [str(s) for s in rs[0]["scales"]]
    out: dict[str, Any] = {"seeds": [r.get("seed") for r in rs], "scales": scales,
                           "rho_within": {sc: {k: _stat([r["rho_within"][sc][k] for r in rs]) for k in KINDS}
                                          for sc in scales},
                           "rho_pooled": {k: _stat([r["rho_pooled"][k] for r in rs]) for k in KINDS},
                           "groups": {}}
    for sc in scales:
        cell = {name: {"marginal": _stat([r["groups"][sc][name]["marginal"] for r in rs]),
                       "helpful": _stat([r["groups"][sc][name]["helpful"] for r in rs])} for name in GROUPS}
        cell["extra_target"] = {"marginal": _stat([r["groups"][sc]["extra_target"]["marginal"] for r in rs])}
        cell["share"] = _stat([r["groups"][sc]["share"] for r in rs])
        out["groups"][sc] = cell
    if all("signature" in r for r in rs):
        out["signature"] = {"kind": rs[0]["signature"]["kind"],
                            "rho": _stat([r["signature"]["rho"] for r in rs]),
                            "rho_descent": _stat([r["signature"]["rho_descent"] for r in rs])}
    return out


def _over_targets(targets: list[dict]) -> dict:
    if not targets:
        return {}
    scales = targets[0]["scales"]
    out: dict[str, Any] = {"rho_within": {sc: {k: _stat([t["rho_within"][sc][k]["mean"] for t in targets])
                                               for k in KINDS} for sc in scales},
                           "groups": {sc: {name: {"marginal": _stat([t["groups"][sc][name]["marginal"]["mean"]
                                                                     for t in targets]),
                                                  "helpful": _stat([t["groups"][sc][name]["helpful"]["mean"]
                                                                    for t in targets])}
                                           for name in (*GROUPS, "extra_target") if name != "extra_target"}
                                      for sc in scales}}
    for sc in scales:
        out["groups"][sc]["extra_target"] = {"marginal": _stat([t["groups"][sc]["extra_target"]["marginal"]["mean"]
                                                                for t in targets])}
        out["groups"][sc]["share"] = _stat([t["groups"][sc]["share"]["mean"] for t in targets])
    if all("signature" in t for t in targets):
        out["signature"] = {"rho": _stat([t["signature"]["rho"]["mean"] for t in targets])}
    return out


def _f(stat, signed: bool = True, pct: bool = False) -> str:
    """``mean ± se`` (the mean alone for one value), ``-`` where there is none."""
    if isinstance(stat, dict):
        mean, se = stat.get("mean", math.nan), stat.get("se", math.nan)
    else:
        mean, se = stat, math.nan
    if mean is None or math.isnan(mean):
        return "-"
    if pct:
        return f"{mean:.0%}" + ("" if math.isnan(se) else f" ± {se:.0%}")
    text = f"{mean:+.2f}" if signed else f"{mean:.2f}"
    return text + ("" if math.isnan(se) else f" ± {se:.2f}")


def _table_over_seeds(rs: list[dict]) -> list[dict]:
    """Each (source, scale) row of a target averaged over its seeds."""
    keys = [(row["source"], row["scale"]) for row in rs[0]["table"]]
    out = []
    for source, scale in keys:
        rows = [row for r in rs for row in r["table"] if row["source"] == source and row["scale"] == scale]
        out.append({"source": source, "scale": scale, **{k: _mean(row[k] for row in rows)
                                                         for k in ("cosine", "source_only", "marginal", "reference",
                                                                   "helpful")}})
    return out


def markdown(results: list[dict[str, Any]]) -> str:
    """The report: the paper's statistics per target (mean ± se over seeds) and over targets,
    then each target's per-source table averaged over its seeds."""
    agg = aggregate(results)
    targets, over = agg["targets"], agg["over_targets"]
    lines = ["# Local intervention", "",
             "Changes are the held-out target loss after minus before (negative helps). ρ within target: "
             "Spearman over repetitions × sources at one step scale, gradient cosine against loss reduction "
             "(the paper's statistic). Pooled over scales: ours. Mean ± standard error over seeds; "
             "over targets: mean ± se of the targets' seed means.", "",
             "## Within-target ρ", "",
             "| target | seeds | ε scale | ρ source-only | ρ marginal | pooled over scales (ours): source-only / marginal |",
             "|---|---|---|---|---|---|"]
    for t, a in targets.items():
        pooled = f"{_f(a['rho_pooled']['source_only'])} / {_f(a['rho_pooled']['marginal'])}"
        for i, sc in enumerate(a["scales"]):
            lines.append(f"| {t} | {len(a['seeds'])} | {sc} | {_f(a['rho_within'][sc]['source_only'])} | "
                         f"{_f(a['rho_within'][sc]['marginal'])} | {pooled if i == 0 else ''} |")
    for sc in over.get("rho_within", {}):
        lines.append(f"| mean over targets | | {sc} | {_f(over['rho_within'][sc]['source_only'])} | "
                     f"{_f(over['rho_within'][sc]['marginal'])} | |")
    lines += _signature_lines(targets, over) + _group_lines(targets, over)
    by_target: dict[str, list[dict]] = {}
    for r in results:
        by_target.setdefault(r["target"], []).append(r)
    for t, rs in by_target.items():
        where = f" Perturbed from {rs[0]['state']}." if rs[0].get("state") else ""
        lines += ["", f"## {t}", "", f"Mean over {len(rs)} seed(s).{where}", "",
                  "| source | ε scale | cosine | source-only ΔL | marginal ΔL | reference ΔL (extra target batch) | helpful |",
                  "|---|---|---|---|---|---|---|"]
        for row in _table_over_seeds(rs):
            lines.append(f"| {row['source']} | {row['scale']:g} | {row['cosine']:+.3f} | {row['source_only']:+.4f} | "
                         f"{row['marginal']:+.4f} | {row['reference']:+.4f} | {row['helpful']:.0%} |")
    return "\n".join(lines) + "\n"


def _signature_lines(targets: dict, over: dict) -> list[str]:
    if not all("signature" in a for a in targets.values()) or not targets:
        return []
    kind = next(iter(targets.values()))["signature"]["kind"]
    lines = ["", f"## The stored signature ({kind})", "",
             "ρ: Spearman over the target's sources between the signature's scores and the current-gradient "
             "cosines (the paper's); against the sources' mean marginal reduction: ours.", "",
             "| target | ρ (scores, gradient cosines) | ρ (scores, mean marginal reduction; ours) |", "|---|---|---|"]
    for t, a in targets.items():
        lines.append(f"| {t} | {_f(a['signature']['rho'])} | {_f(a['signature']['rho_descent'])} |")
    if "signature" in over:
        lines.append(f"| mean over targets | {_f(over['signature']['rho'])} | |")
    return lines


def _group_lines(targets: dict, over: dict) -> list[str]:
    lines = ["", "## Sources grouped by the signature", "",
             "Mean marginal ΔL of each group (helpful-step rate), the extra target batch's, and the share of "
             "its descent the top group gives.", "",
             "| target | ε scale | top | middle | bottom | extra target batch | share |", "|---|---|---|---|---|---|---|"]

    def row(label: str, sc: str, g: dict) -> str:
        cells = [f"{_f(g[n]['marginal'])} ({_f(g[n]['helpful'], pct=True)})" if g[n]["marginal"]["n"] else "-"
                 for n in GROUPS]
        return (f"| {label} | {sc} | {' | '.join(cells)} | {_f(g['extra_target']['marginal'])} | "
                f"{_f(g['share'], pct=True)} |")

    for t, a in targets.items():
        lines += [row(t, sc, a["groups"][sc]) for sc in a["scales"]]
    lines += [row("mean over targets", sc, g) for sc, g in over.get("groups", {}).items()]
    return lines
