"""Running the regime map (its plan: :mod:`tsr.experiments.regime.plan`): every method at every
point and seed through the variant grid, and with ``relations`` each point's probe arms for
the designed-relation checks, all resumable."""

from __future__ import annotations

from typing import Callable

from ...analysis.transfer import check_relations, transfer_matrix
from ...config import load_config
from ...engine.executor import Executor
from ..probe.plan import load_probe_stream, plan_jobs, probe_dir
from ..probe.report import designed_relations
from ..probe.run import run_probe
from .plan import RELATION_TARGETS, RegimePoint


def relation_rows(config: str | None, overrides: list[str], point: RegimePoint, seeds: list[int],
                  workers: int = 1, run: bool = True, executor: Executor | None = None,
                  progress: Callable[[dict, int, int], None] | None = None) -> list[dict] | None:
    """C4's relation rows at ``point`` from its probe arms (target and mixed arms of the checked
    targets, every source; trained first when ``run``); None when the stream has no designed
    relations or, without ``run``, when the point's arms are not all saved."""
    cfg = load_config(config, [*overrides, *point.overrides])
    relations = designed_relations(cfg.stream.source, cfg.stream.options)
    stream = load_probe_stream(cfg)
    targets = [t for t in RELATION_TARGETS if t in stream.names]
    if relations is None or not targets:
        return None
    jobs = plan_jobs(stream, seeds, targets, None, ("target", "mixed"))
    folder = probe_dir(cfg, stream)
    if run:
        arms = run_probe(cfg, jobs, folder, workers, progress, (), executor)
    else:
        files = [folder / "arms" / f"{j.key}.json" for j in jobs]
        if not all(f.is_file() for f in files):
            return None
        import json

        arms = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    keep = {(j.target, j.arm, j.source, j.seed) for j in jobs}
    arms = [a for a in arms if (a["target"], a["arm"], a.get("source"), a["seed"]) in keep]
    kinds = {a["target"]: a["kind"] for a in arms}
    return check_relations(transfer_matrix(arms), kinds, relations)
