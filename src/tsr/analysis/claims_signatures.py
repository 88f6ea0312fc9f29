"""A claims cell read from a signature audit: C5's rows on the ``signatures.json`` that
``tsr probe --signatures`` writes (:mod:`tsr.experiments.signatures`), committed as a file
under measurements/, with the rule of :mod:`tsr.analysis.verdicts`.

Two readings, each over the audit's seeds (one value per seed, mean ± standard error):

- ``top1-margin``: GradB's top-1 hits minus those of the best signature of ``versus`` (the
  one with the most hits summed over the seeds; the first listed on a tie), paired by seed;
- ``spearman``: a signature's mean rank correlation with the matrix column, per seed.

The audit records the machine each signature was taken on; a file without it reads "machine
not recorded".
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from .machines import recorded_name
from .verdicts import margin, number_text, standard_error, verdict


def _per_seed(audit: dict, kind: str, key: str, file: Path) -> dict[str, float]:
    if kind not in audit:
        raise ValueError(f"{file}: no signature {kind!r} in the audit (it has: {', '.join(audit)})")
    return {seed: float(v[key]) for seed, v in audit[kind]["per_seed"].items()}


def seed_values(audit: dict, spec: dict, file: Path) -> tuple[list[float], list[str]]:
    """(one value per seed, the signatures it used) of a ``signatures:`` spec."""
    kind = spec.get("kind", "gradb")
    if spec["reading"] == "spearman":
        values = _per_seed(audit, kind, "mean_spearman", file)
        return [values[s] for s in sorted(values, key=int)], [kind]
    if spec["reading"] != "top1-margin":
        raise ValueError(f"{file}: unknown signature reading {spec['reading']!r} (top1-margin, spearman)")
    ours = _per_seed(audit, kind, "hits", file)
    rivals = {k: _per_seed(audit, k, "hits", file) for k in spec["versus"]}
    best = max(rivals, key=lambda k: sum(rivals[k].values()))  # max keeps the first on a tie
    seeds = sorted(ours, key=int)
    if sorted(rivals[best], key=int) != seeds:
        raise ValueError(f"{file}: {kind} and {best} cover different seeds")
    return [ours[s] - rivals[best][s] for s in seeds], [kind, best]


def signature_cell_parts(spec: dict, root: Path, criterion: str) -> tuple[str, str, str, float, str] | None:
    """(measured "mean ± se (n)", verdict, machines, margin, member) of a ``signatures:`` spec;
    None while the audit has fewer than two seeds."""
    file = root / spec["signatures"]
    if not file.exists():  # not yet committed: the page gives claims.yaml's reason instead
        return None
    audit = json.loads(file.read_text(encoding="utf-8"))
    values, kinds = seed_values(audit, spec, file)
    if len(values) < 2:  # one seed has no standard error: no cell yet
        return None
    mean, se = statistics.fmean(values), standard_error(values)
    v = verdict(mean, se, len(values), criterion)
    machines = sorted({recorded_name(audit[k].get("machine")) for k in kinds})
    member = f"versus {kinds[1]}" if len(kinds) > 1 else ""
    return (number_text(mean, se, len(values), criterion, v), v, " + ".join(machines), margin(mean, se, criterion),
            member)
