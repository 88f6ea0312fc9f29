"""``tsr audit intervention`` as data: its params and the object that plans, runs and reports it
(equal-norm gradient steps at an adapter state, :func:`tsr.experiments.intervention.run.intervene`,
one target and seed at a time, each saved as it finishes, so an interrupted audit resumes)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import SEEDS
from ..audit import Audit, Report, Session, param

EXAMPLES = """examples:
  tsr audit intervention targets=stance,irony,arith-ds seeds=0,1,2,3,4   # 30 repetitions, scales 0.25, 0.5, 1
  tsr audit intervention targets=arith-cm reps=10 signature=jointot
  tsr audit intervention targets=irony state=runs/synth-trace-tsr-s0-eea6230d6e:stance   # at a stream's adapter
Writes intervention.json (every repetition of every target and seed), intervention-summary.json and
intervention.md (the paper's statistics, mean ± se over seeds: the within-target rank correlation
of the gradient cosine with the loss reduction at each scale, the stored signature against the
current-gradient cosines, the sources grouped by the signature and the share of an extra target
batch's descent; per source and scale: the changes and helpful-step rate); docs/audits.md."""


@dataclass(frozen=True)
class Params:
    targets: tuple[str, ...] = param("target tasks, comma-separated (default: all)", ())
    sources: tuple[str, ...] = param("sources, comma-separated (default: every other task)", ())
    reps: int | None = param("repetitions (independent batches) per target",
                             default_from="tsr.experiments.intervention.plan:REPS")
    scales: tuple[float, ...] | None = param("multiples of the one-step displacement, comma-separated",
                                             default_from="tsr.experiments.intervention.plan:SCALES")
    seeds: tuple[int, ...] = param("seeds, comma-separated: each a shared initialisation and its batch draws", SEEDS)
    signature: str | None = param("the signature ranked against the measured changes ('' for none)",
                                  default_from="tsr.experiments.intervention.plan:SIGNATURE")
    state: str | None = param("perturb from the adapter a run had after TASK, RUN_DIR[:TASK] (default: its last "
                              "finished task) instead of the shared initialisation")
    out: str | None = param("report folder (default: <out_dir>/audit-intervention-<stream>-s<seeds>)")


@dataclass(frozen=True)
class Planned:
    params: Params
    cfg: Any  # RunConfig
    stream: Any  # Stream
    targets: list[str]
    seeds: list[int]
    out: Path


class InterventionAudit(Audit):
    name = "intervention"
    summary = ("Local intervention: equal-norm gradient steps from the shared initialisation, the target's loss "
               "change, and how the signature ranks the sources by it.")
    examples = EXAMPLES
    Params = Params

    def plan(self, params: Params, session: Session) -> Planned:
        from ...config import load_config
        from ...errors import TsrError
        from ..probe.plan import load_probe_stream

        cfg = load_config(session.config, list(session.overrides))
        stream = load_probe_stream(cfg)
        seeds = list(params.seeds or SEEDS)
        out = Path(params.out) if params.out else \
            Path(cfg.out_dir) / f"audit-intervention-{stream.name}-s{'-'.join(map(str, seeds))}"
        for name in [*params.targets, *params.sources]:
            if name not in stream.names:
                raise TsrError(f"--targets/--sources: no task {name!r} in {stream.name} "
                               f"(tasks: {', '.join(stream.names)})")
        return Planned(params, cfg, stream, list(params.targets) or stream.names, seeds, out)

    def run(self, plan: Planned, session: Session) -> list[dict]:
        """Every (target, seed) not yet saved under ``out/seeds``; every result, in order."""
        from ...atomic import write_json
        from ...model.learner import build_learner
        from .run import intervene

        p, learner = plan.params, build_learner(plan.cfg)
        state, at = _state(p.state, learner)
        results = []
        for target in plan.targets:
            sources = [s for s in (p.sources or plan.stream.names) if s != target]
            for seed in plan.seeds:
                saved = plan.out / "seeds" / f"{target}-s{seed}.json"
                if not saved.is_file():
                    session.reporter.say(f"intervention on {target} at {at}, seed {seed}: {len(sources)} sources, "
                                         f"{p.reps} repetitions, scales {list(p.scales)}")
                    result = intervene(learner, plan.cfg, plan.stream, target, sources, p.reps, list(p.scales), seed,
                                       state=state, signature=p.signature or None)
                    write_json(saved, {**result, "state": at})
                results.append(json.loads(saved.read_text(encoding="utf-8")))
        return results

    def report(self, plan: Planned, found: list[dict], session: Session) -> Report:
        from ...atomic import write_json, write_text
        from .report import aggregate, markdown

        text = markdown(found)
        write_json(plan.out / "intervention.json", found)
        write_json(plan.out / "intervention-summary.json", aggregate(found))
        write_text(plan.out / "intervention.md", text)
        return Report(plan.out, text)


def _state(where: str | None, learner) -> tuple[dict | None, str]:
    """``RUN_DIR[:TASK]``: the adapter a run had after that task (loaded), or the shared initialisation."""
    if not where:
        return None, "the shared initialisation"
    from ...engine.rundir import task_snapshot
    from ...errors import TsrError

    folder, _, task = where.partition(":") if not Path(where).is_dir() else (where, "", "")
    task, state = task_snapshot(Path(folder), task or None)
    try:
        learner.adapter.load(state)
    except ValueError as err:
        raise TsrError(f"--state {where}: its adapter does not fit this config's model ({err})") from None
    return state, f"the adapter of {folder} after {task}"


AUDIT = InterventionAudit()
