"""``tsr audit regime`` as data: its params and the object that plans, runs and reports it
(SeqFT, ER and TSR at points of the map, :mod:`tsr.experiments.regime.plan`, on the engine's
grid, and with ``relations`` each point's probe arms)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import SEEDS
from ..audit import Audit, GRID_FLAGS, Report, Session, param

EXAMPLES = """examples:
  tsr audit regime seeds=0,1,2 --workers 2                  # the map of docs/synthetic.md: SeqFT, ER, TSR
  tsr audit regime points=my-points.yaml relations=true seeds=0,1,2   # your points, with C4's relation checks
A points file maps each point's name to its overrides (points: {fast: [train.steps=300, train.lr=3e-4]}).
Writes regime.json, regime.md and regime.png (SeqFT's retention against its BWT, ER's BWT against
TSR's, the calibration targets shaded) to <out_dir>/audit-regime-<stream>-<fingerprint> (or out=DIR)."""


@dataclass(frozen=True)
class Params:
    points: str | None = param("a YAML file: 'points: {name: [key=value, ...]}' (default: the map of "
                               "docs/synthetic.md)")
    methods: tuple[str, ...] | None = param("methods, comma-separated",
                                            default_from="tsr.experiments.regime.plan:DEFAULT_METHODS")
    seeds: tuple[int, ...] = param("seeds, comma-separated", SEEDS)
    relations: bool = param("also each point's probe arms for the designed-relation checks (C4: target and mixed "
                            "arms of stance, policy, irony, arith-cm, arith-ds)", False)
    out: str | None = param("report folder (default: <out_dir>/audit-regime-<stream>-<fingerprint>)")


@dataclass(frozen=True)
class Planned:
    params: Params
    stream: str
    points: list  # the RegimePoints of the map
    grid: Any  # tsr.engine.grid.Grid
    out: Path


class RegimeAudit(Audit):
    name = "regime"
    summary = ("Regime map: SeqFT, ER and TSR at points of learning rate, steps, LoRA size, budget and base; "
               "how much the world forgets, against the calibration targets.")
    examples = EXAMPLES
    Params = Params
    flags = GRID_FLAGS

    def plan(self, params: Params, session: Session) -> Planned:
        from ...engine.grid import plan_grid
        from ..variants import audit_dir, base_stream
        from .plan import DEFAULT_POINTS, plan_points, read_points

        overrides = list(session.overrides)
        points = read_points(params.points) if params.points else list(DEFAULT_POINTS)
        cfg, stream = base_stream(session.config, overrides)
        grid = plan_grid(session.config, overrides, plan_points(list(params.methods), points,
                                                                 list(params.seeds or SEEDS)))
        out = Path(params.out) if params.out else audit_dir(cfg, stream, "regime", overrides)
        return Planned(params, stream.name, points, grid, out)

    def run(self, plan: Planned, session: Session) -> tuple[dict, str, dict]:
        """The grid's finished runs, the machines line, and each point's relation rows (with ``relations``)."""
        from ..variants import grid_runs
        from .run import relation_rows

        runs, machines = grid_runs(plan.grid, session, plan.out, f"regime map of {plan.stream}")
        rows = {point.name: relation_rows(session.config, list(session.overrides), point,
                                          list(plan.params.seeds or SEEDS), session.workers, not session.report_only,
                                          session.executor)
                for point in plan.points if plan.params.relations}
        return runs, machines, rows

    def report(self, plan: Planned, found: tuple[dict, str, dict], session: Session) -> Report:
        from ...analysis.cells import cells
        from .report import point_summary, regime_markdown, write_regime_report

        runs, machines, rows = found
        table = cells(runs)
        summaries = [point_summary(table, point.name, rows.get(point.name)) for point in plan.points]
        write_regime_report(plan.out, summaries, plan.stream, session.command, machines)
        return Report(plan.out, regime_markdown(summaries))


AUDIT = RegimeAudit()
