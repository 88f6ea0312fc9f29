"""``tsr audit orders`` as data: its params and the object that plans, runs and reports it (each
method on several task orders, :mod:`tsr.experiments.orders.plan`; every run an ordinary run of
the engine's grid, shared with ``tsr compare`` and resumable)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import SEEDS
from ..audit import Audit, GRID_FLAGS, Report, Session, param

EXAMPLES = """examples:
  tsr audit orders methods=er,tsr orders=canonical,reversed shuffles=2 seeds=0,1,2
  tsr audit orders greedy=runs/probe-synth-trace-1a2b3c4d5e shuffles=3 seeds=0,1,2,3,4 --workers 2
  tsr audit orders methods=seqft,er,tsr shuffles=2 seeds=0,1,2 --report-only
  tsr audit orders "orders=canonical,mine=code>stance>policy>summary>irony>arith-cm>arith-ds>simplify" seeds=0,1
Each (method, order, seed) is the ordinary run of `tsr run method.name=M stream.order=ORDER seed=S`.
shuffles=K adds K distinct shuffle:k orders (fixed across seeds); greedy=PROBE_DIR the best-source
curriculum of that probe folder's transfer matrix (greedy) and its reversal (greedy-reversed). Writes
orders.json, orders.md, orders.png to <out_dir>/audit-orders-<stream>-<fingerprint> (or out=DIR): Overall,
Plas, BWT per order, the range of the order means per method (C8: the replay family moves <= 0.03) and
a per-task view."""


@dataclass(frozen=True)
class Params:
    methods: tuple[str, ...] | None = param("methods, comma-separated",
                                            default_from="tsr.experiments.orders.plan:DEFAULT_METHODS")
    orders: tuple[str, ...] | None = param("orders, comma-separated: canonical, reversed, shuffle:<k>, or an explicit "
                                           "NAME=t1>t2>... naming every task once",
                                           default_from="tsr.experiments.orders.plan:DEFAULT_ORDERS")
    shuffles: int | None = param("add K distinct shuffle:k orders, k = 0, 1, ...",
                                 default_from="tsr.experiments.orders.plan:DEFAULT_SHUFFLES")
    greedy: str | None = param("add the greedy best-source curriculum of this probe folder's transfer matrix "
                               "and its reversal (needs its target and mixed arms)")
    seeds: tuple[int, ...] = param("seeds, comma-separated", SEEDS)
    out: str | None = param("report folder (default: <out_dir>/audit-orders-<stream>-<fingerprint>)")


@dataclass(frozen=True)
class Planned:
    params: Params
    stream: str
    orders: dict[str, dict]  # label -> its stream.order value, tasks and twin (plan_orders)
    grid: Any  # tsr.engine.grid.Grid
    out: Path


class OrdersAudit(Audit):
    name = "orders"
    summary = ("Order robustness: each method on canonical, reversed, shuffled and greedy curriculum orders; "
               "the range of Overall across orders.")
    examples = EXAMPLES
    Params = Params
    flags = GRID_FLAGS

    def plan(self, params: Params, session: Session) -> Planned:
        from ...engine.grid import check_methods, plan_grid
        from ..variants import audit_dir, base_stream
        from .plan import greedy_from_probe, plan_orders, plan_points

        overrides = list(session.overrides)
        methods = check_methods(list(params.methods))
        cfg, stream = base_stream(session.config, overrides)
        greedy = greedy_from_probe(Path(params.greedy), stream)[0] if params.greedy else None
        orders = plan_orders(stream, list(params.orders), params.shuffles, greedy)
        grid = plan_grid(session.config, overrides, plan_points(methods, orders, list(params.seeds or SEEDS)))
        out = Path(params.out) if params.out else audit_dir(cfg, stream, "orders", overrides)
        return Planned(params, stream.name, orders, grid, out)

    def run(self, plan: Planned, session: Session) -> tuple[dict, str]:
        from ..variants import grid_runs

        return grid_runs(plan.grid, session, plan.out, f"order audit of {plan.stream} ({', '.join(plan.orders)})")

    def report(self, plan: Planned, found: tuple[dict, str], session: Session) -> Report:
        from ...analysis.cells import cells, results_by_variant
        from .report import orders_markdown, per_task, write_orders_report

        runs, machines = found
        summary = write_orders_report(plan.out, cells(runs), plan.orders, plan.stream, session.command,
                                      plan.params.greedy, per_task(results_by_variant(runs)), machines)
        return Report(plan.out, orders_markdown(summary))


AUDIT = OrdersAudit()
