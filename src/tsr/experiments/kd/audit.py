"""``tsr audit kd`` as data: its params and the object that plans, runs and reports it (TSR with
each teacher on the same seeds, :mod:`tsr.experiments.kd.plan`; every run an ordinary run of the
engine's grid, shared with ``tsr compare`` and resumable)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import SEEDS
from ..audit import Audit, GRID_FLAGS, Report, Session, param

EXAMPLES = """examples:
  tsr audit kd teachers=era,random,oracle,recent,base,none seeds=0,1,2,3,4 --workers 2
  tsr audit kd methods=tsr,er teachers=era,none seeds=0,1 train.steps=300
  tsr audit kd teachers=era,none reshape=amplify,residual,repel,selective seeds=0,1,2   # loss reshaping
  tsr audit kd seeds=0,1,2,3,4 --report-only          # the runs finished so far
Each (teacher, seed) is the ordinary run of `tsr run method.name=tsr method.reference=TEACHER seed=S`
(shared with tsr compare / tsr table, resumable). Teachers: era (default), random, oracle
(per-batch min-CE snapshot; one forward per snapshot per batch), recent, base, hybrid, top, none.
Writes kd.json, kd.md, kd.png to <out_dir>/audit-kd-<stream>-<fingerprint> (or out=DIR): Overall,
Plas, BWT per teacher, the difference to era paired by seed, and C9's spread vs anchor drop."""


@dataclass(frozen=True)
class Params:
    teachers: tuple[str, ...] | None = param("teachers, comma-separated (also hybrid, top)",
                                             default_from="tsr.experiments.kd.plan:DEFAULT_TEACHERS")
    methods: tuple[str, ...] | None = param("methods, comma-separated: those with method.reference run every "
                                            "teacher, others (er, seqft) once as baselines",
                                            default_from="tsr.experiments.kd.plan:DEFAULT_METHODS")
    reshape: tuple[str, ...] = param("also the era teacher with each of these loss reshapings (method.kd_reshape: "
                                     "amplify, residual, repel, selective), rows era+<reshape>", ())
    seeds: tuple[int, ...] = param("seeds, comma-separated", SEEDS)
    out: str | None = param("report folder (default: <out_dir>/audit-kd-<stream>-<fingerprint>)")


@dataclass(frozen=True)
class Planned:
    params: Params
    stream: str
    grid: Any  # tsr.engine.grid.Grid
    out: Path


class KdAudit(Audit):
    name = "kd"
    summary = "Distillation audit: TSR with each teacher (method.reference) on the same seeds; teacher identity vs the anchor."
    examples = EXAMPLES
    Params = Params
    flags = GRID_FLAGS

    def plan(self, params: Params, session: Session) -> Planned:
        from ...engine.grid import plan_grid
        from ..variants import audit_dir, base_stream
        from .plan import plan_kd

        overrides = list(session.overrides)
        points = plan_kd(list(params.methods), list(params.teachers), list(params.seeds or SEEDS), list(params.reshape))
        cfg, stream = base_stream(session.config, overrides)
        grid = plan_grid(session.config, overrides, points)
        return Planned(params, stream.name, grid, Path(params.out) if params.out else audit_dir(cfg, stream, "kd", overrides))

    def run(self, plan: Planned, session: Session) -> tuple[dict, str]:
        from ..variants import grid_runs

        return grid_runs(plan.grid, session, plan.out, f"distillation audit of {plan.stream}")

    def report(self, plan: Planned, found: tuple[dict, str], session: Session) -> Report:
        from ...analysis.cells import cells
        from .report import kd_markdown, write_kd_report

        runs, machines = found
        summary = write_kd_report(plan.out, cells(runs), list(plan.params.teachers), plan.stream, session.command,
                                  list(plan.params.reshape), machines)
        return Report(plan.out, kd_markdown(summary))


AUDIT = KdAudit()
