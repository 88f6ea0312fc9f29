"""Running the carrier study (its plan and arms: :mod:`tsr.experiments.carriers.plan`): the
probe arms of every pair and the scores of their starting points, resumable."""

from __future__ import annotations

import json
from typing import Callable

from ...atomic import write_json
from ...config import RunConfig
from ...data.example import Stream
from ...engine.executor import Executor
from ..probe import plan as pr
from ..probe.run import run_probe, score_start
from .plan import CarrierPlan, carrier_jobs, of_plan, start_file, start_points


def run_carriers(cfg: RunConfig, stream: Stream, plan: CarrierPlan, workers: int = 1,
                 progress: Callable[[dict, int, int], None] | None = None,
                 executor: Executor | None = None) -> list[dict]:
    """Run the study's arms not yet saved in the probe folder; return the study's saved arms."""
    arms = run_probe(cfg, carrier_jobs(stream, plan), pr.probe_dir(cfg, stream), workers, progress,
                        plan.checkpoints, executor)
    return of_plan(arms, plan)


def saved_carriers(cfg: RunConfig, stream: Stream, plan: CarrierPlan) -> list[dict]:
    """The study's arms saved so far in the probe folder (nothing is trained)."""
    folder = pr.probe_dir(cfg, stream) / "arms"
    return of_plan([json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))], plan)


def run_starts(cfg: RunConfig, stream: Stream, plan: CarrierPlan,
               progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """Score the starting points not yet saved (in this process, one learner; the source
    adapters are the ones the arms cached); return every saved one of the plan."""
    folder = pr.probe_dir(cfg, stream)
    todo = [p for p in start_points(plan) if not start_file(folder, *p).is_file()]
    if todo:
        from ...model.learner import build_learner

        learner, tests = build_learner(cfg), {}
        for done, (target, source, seed) in enumerate(todo, 1):
            result = score_start(learner, cfg, stream, target, source, seed, tests, folder / "sources")
            write_json(start_file(folder, target, source, seed), result)
            if progress is not None:
                progress(done, len(todo))
    return saved_starts(cfg, stream, plan)


def saved_starts(cfg: RunConfig, stream: Stream, plan: CarrierPlan) -> list[dict]:
    folder = pr.probe_dir(cfg, stream)
    files = [start_file(folder, *p) for p in start_points(plan)]
    return [json.loads(f.read_text(encoding="utf-8")) for f in files if f.is_file()]


