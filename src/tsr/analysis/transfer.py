"""Headroom, the pairwise transfer matrix, and checks against designed relations.

Pure functions of the saved probe arms (:mod:`tsr.experiments.probe`). Scores are exact-match accuracy
for classification targets and answer loss for generation targets. Every difference is
paired by seed (the arms of one seed share the shared initialisation and the target's N
examples) and reported as mean and standard error over seeds.

- ``headroom_t = S_t(10N) - S_t(N)`` (reference paper, Eq. 1); for a generation target the
  loss gap ``L_t(N) - L_t(10N)``, so that positive always means room to improve.
- ``transfer(j -> t) = S_t(mixed j) - S_t(N)``: Delta accuracy for classification targets,
  Delta loss for generation targets (negative = the source helps, as in the paper's Table 1).

A mixed arm spends half of its steps on the source, so where the target arm is still
improving at the end of the budget, every source looks harmful (dilution). The
*exposure-matched* matrix separates the two: it compares each mixed arm with the target arm
after half the steps (a probe checkpoint), when that arm has seen its N examples as often as
the mixed arm has. It is a diagnostic of this project, not the paper's protocol.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .numbers import number

Arms = list[dict]


@dataclass(frozen=True)
class Stat:
    mean: float
    se: float
    n: int

    def to_dict(self) -> dict:
        return {"mean": self.mean, "se": self.se, "n": self.n}


def stat(values: list[float]) -> Stat:
    if not values:
        return Stat(math.nan, math.nan, 0)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    return Stat(statistics.fmean(values), se, len(values))


def metric(kind: str) -> str:
    return "acc" if kind == "classification" else "loss"


def _by(arms: Arms) -> dict[tuple, dict]:
    return {(a["target"], a["arm"], a["source"], a["seed"]): a for a in arms}


def _paired(arms: Arms, target: str, arm: str, source: str | None, base_arm: str = "target") -> list[float]:
    index = _by(arms)
    diffs = []
    for (t, a, s, seed), row in index.items():
        if t == target and a == arm and s == source:
            base = index.get((target, base_arm, None, seed))
            if base is not None:
                key = metric(row["kind"])
                diffs.append(row[key] - base[key])
    return diffs


def arms_at(arms: Arms, step: int, last: int) -> Arms:
    """The arms as they scored after ``step`` of their ``last`` steps: the final score at
    ``step == last``, else the checkpoint saved for that step; arms without one are left out."""
    if step == last:
        return list(arms)
    out = []
    for a in arms:
        point = a.get("checkpoints", {}).get(str(step))
        if point is not None:
            out.append({**{k: v for k, v in a.items() if k != "checkpoints"}, **point})
    return out


def exposure_matched(arms: Arms, half: int) -> Arms:
    """The arms with each target arm scored after ``half`` steps (its checkpoint) and every
    other arm as it ended; targets whose target arms lack that checkpoint are left out."""
    early = {}
    for a in arms:
        point = a.get("checkpoints", {}).get(str(half)) if a["arm"] == "target" else None
        if point is not None:
            early[(a["target"], a["seed"])] = {**{k: v for k, v in a.items() if k != "checkpoints"}, **point}
    out = []
    for a in arms:
        key = (a["target"], a["seed"])
        if key in early:
            out.append(early[key] if a["arm"] == "target" else a)
    return out


def headroom(arms: Arms) -> dict[str, dict]:
    """Per target: S(N), S(10N) and the paired headroom (positive = room to improve)."""
    out = {}
    for target in sorted({a["target"] for a in arms}):
        rows = [a for a in arms if a["target"] == target]
        kind = rows[0]["kind"]
        key = metric(kind)
        sign = 1.0 if kind == "classification" else -1.0
        diffs = [sign * d for d in _paired(arms, target, "full", None)]
        out[target] = {"kind": kind, "metric": key,
                       "target": stat([a[key] for a in rows if a["arm"] == "target"]).to_dict(),
                       "full": stat([a[key] for a in rows if a["arm"] == "full"]).to_dict(),
                       "headroom": stat(diffs).to_dict()}
    return out


def transfer_matrix(arms: Arms) -> dict[str, dict[str, dict]]:
    """``matrix[target][source]`` = paired Delta of the mixed arm over the target arm."""
    matrix: dict[str, dict[str, dict]] = {}
    for target in sorted({a["target"] for a in arms}):
        sources = sorted({a["source"] for a in arms if a["target"] == target and a["arm"] == "mixed"})
        matrix[target] = {s: stat(_paired(arms, target, "mixed", s)).to_dict() for s in sources}
    return matrix


def benefit(delta: float, kind: str) -> float:
    """Delta oriented so that positive always means 'the source helps'."""
    return delta if kind == "classification" else -delta


def column_best(matrix: dict[str, dict[str, dict]], kinds: dict[str, str]) -> dict[str, str]:
    return {t: max(cells, key=lambda s: benefit(cells[s]["mean"], kinds[t]))
            for t, cells in matrix.items() if cells}


def check_relations(matrix: dict[str, dict[str, dict]], kinds: dict[str, str],
                    relations: dict[str, dict[str, str]]) -> list[dict]:
    """The designed relations against the measured matrix, one row per target with a partner
    or a conflict.

    - a partner passes if it is the column's best source or within one standard error of it;
    - a conflict passes if it is significantly harmful: its benefit plus two standard errors
      is still below zero;
    - the unrelated sources pass if their mean absolute benefit is smaller than the mean
      benefit of the partners;
    - a contrast has no designed sign: it is listed with ``pass`` None.
    """
    best = column_best(matrix, kinds)
    rows = []
    for target, cells in matrix.items():
        kind = kinds[target]
        rel = {s: relations.get(s, {}).get(target, "unrelated") for s in cells}
        partners = [s for s in cells if rel[s] == "partner"]
        conflicts = [s for s in cells if rel[s] == "conflict"]
        contrasts = [s for s in cells if rel[s] == "contrast"]
        unrelated = [s for s in cells if rel[s] == "unrelated"]
        if not partners and not conflicts and not contrasts:
            continue
        top = benefit(cells[best[target]]["mean"], kind)
        row = {"target": target, "best": best[target], "best_benefit": top, "partners": {}, "conflicts": {},
               "contrasts": {}}
        for s in partners:
            b, se = benefit(cells[s]["mean"], kind), cells[s]["se"]
            row["partners"][s] = {"benefit": b, "se": se, "pass": s == best[target] or top - b <= se}
        for s in conflicts:
            b, se = benefit(cells[s]["mean"], kind), cells[s]["se"]
            row["conflicts"][s] = {"benefit": b, "se": se, "pass": b + 2 * se < 0}
        for s in contrasts:
            row["contrasts"][s] = {"benefit": benefit(cells[s]["mean"], kind), "se": cells[s]["se"], "pass": None}
        if partners and unrelated:
            u = statistics.fmean(abs(benefit(cells[s]["mean"], kind)) for s in unrelated)
            p = statistics.fmean(benefit(cells[s]["mean"], kind) for s in partners)
            row["unrelated"] = {"mean_abs_benefit": u, "partner_mean_benefit": p, "pass": u < p}
        rows.append(row)
    return rows


def count_checks(rows: list[dict]) -> tuple[int, int]:
    """Passed and total of C4's checks (partners, conflicts, unrelated) in relation rows."""
    results = [v["pass"] for r in rows for group in ("partners", "conflicts") for v in r[group].values()]
    results += [r["unrelated"]["pass"] for r in rows if "unrelated" in r]
    return sum(bool(x) for x in results), len(results)


def _f(x: float, signed: bool = True) -> str:
    return number(x, signed)


def matrix_markdown(matrix: dict[str, dict[str, dict]], kinds: dict[str, str], order: list[str]) -> str:
    """Rows are sources, columns targets (as in the paper's Table 1); bold = column best."""
    best = column_best(matrix, kinds)
    targets = [t for t in order if t in matrix]
    head = "| source \\ target | " + " | ".join(f"{t}{' (L)' if kinds[t] == 'generation' else ''}" for t in targets) + " |"
    lines = [head, "|---|" + "---|" * len(targets)]
    for s in order:
        cells = []
        for t in targets:
            if s == t or s not in matrix[t]:
                cells.append("—")
                continue
            c = matrix[t][s]
            text = f"{_f(c['mean'])} ± {_f(c['se'], False)}"
            cells.append(f"**{text}**" if best.get(t) == s else text)
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def matrix_csv(matrix: dict[str, dict[str, dict]], kinds: dict[str, str]) -> str:
    best = column_best(matrix, kinds)
    rows = ["source,target,kind,metric,delta,se,n,column_best"]
    for t, cells in matrix.items():
        for s, c in cells.items():
            rows.append(f"{s},{t},{kinds[t]},{metric(kinds[t])},{c['mean']:.6f},{c['se']:.6f},{c['n']},"
                        f"{int(best.get(t) == s)}")
    return "\n".join(rows) + "\n"


def relations_markdown(rows: list[dict]) -> str:
    """The designed relations against the measured matrix, one line per designed cell. The best
    source carries its own benefit: where it is harmful, a partner passes the one-standard-error
    rule without helping."""
    lines = ["| target | best source | designed | source | benefit ± se | check |", "|---|---|---|---|---|---|"]
    mark = {True: "pass", False: "FAIL", None: "— (no designed sign)"}
    for row in rows:
        best = f"{row['best']} ({_f(row['best_benefit'])})"
        for relation, cells in (("partner", row["partners"]), ("conflict", row["conflicts"]),
                                ("contrast", row.get("contrasts", {}))):
            for source, c in cells.items():
                lines.append(f"| {row['target']} | {best} | {relation} | {source} | {_f(c['benefit'])} ± "
                             f"{_f(c['se'], False)} | {mark[c['pass']]} |")
        if "unrelated" in row:
            u = row["unrelated"]
            lines.append(f"| {row['target']} | {best} | unrelated (mean abs) | all | "
                         f"{_f(u['mean_abs_benefit'], False)} vs partners {_f(u['partner_mean_benefit'])} | "
                         f"{mark[u['pass']]} |")
    return "\n".join(lines) + "\n"


def headroom_markdown(rows: dict[str, dict], order: list[str]) -> str:
    lines = ["| task | metric | S(N) | S(10N) | headroom ± se |", "|---|---|---|---|---|"]
    for t in order:
        if t in rows:
            r = rows[t]
            lines.append(f"| {t} | {r['metric']} | {_f(r['target']['mean'], False)} | {_f(r['full']['mean'], False)} "
                         f"| {_f(r['headroom']['mean'])} ± {_f(r['headroom']['se'], False)} |")
    return "\n".join(lines) + "\n"
