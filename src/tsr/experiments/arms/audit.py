"""``tsr audit arms`` as data: its params and the object that reads a probe folder's saved arms
and writes its arm table (target-only, full, random, oracle; :mod:`tsr.analysis.arms`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..audit import Audit, Report, Session, param
from ...schema import require

EXAMPLES = """examples:
  tsr audit arms runs/probe-synth-trace-1a2b3c4d5e        # target-only, full, random, oracle per target
Reads the folder's saved arms (nothing is trained) and writes arm-table.md/.csv/.json into it
(or out=DIR): mean ± std over seeds; oracle = the source with the best mean over seeds (the
seed-mean matrix's column best), oracle-max = each seed's best mixed arm (an upper bound).
Full arms of different sizes are never averaged: choose one with full=N."""


@dataclass(frozen=True)
class Params:
    dir: str = param("the probe folder (PROBE_DIR)", "")
    full: int | None = param("the full arms of N examples (needed where the folder holds full arms of several sizes)")
    out: str | None = param("where arm-table.* go (default: PROBE_DIR)")

    def check(self, path: str) -> None:
        require(bool(self.dir), f"{path}dir", "name the probe folder (tsr audit arms PROBE_DIR)")


@dataclass(frozen=True)
class Planned:
    params: Params
    folder: Path
    out: Path


class ArmsAudit(Audit):
    name = "arms"
    summary = "The arm table of a probe folder: target-only, full, random, oracle."
    examples = EXAMPLES
    Params = Params
    config = False
    positional = ("dir", "PROBE_DIR")

    def plan(self, params: Params, session: Session) -> Planned:
        folder = Path(params.dir)
        return Planned(params, folder, Path(params.out) if params.out else folder)

    def run(self, plan: Planned, session: Session) -> tuple[list[dict], dict]:
        """The folder's arms, and the signature routes of its last ``tsr probe signatures=...``, if any."""
        from ...analysis.arms import arm_table, signature_routes
        from ..probe.plan import read_arms

        arms = read_arms(plan.folder)
        routes = {}
        try:
            report = json.loads((plan.folder / "report.json").read_text(encoding="utf-8"))
            routes = signature_routes(report.get("signatures"))
        except (OSError, ValueError, AttributeError):
            pass
        arm_table(arms, routes, plan.params.full)  # the arms the table needs, checked before anything is written
        return arms, routes

    def report(self, plan: Planned, found: tuple[list[dict], dict], session: Session) -> Report:
        from ...analysis.arms import table_markdown, write_arm_table

        arms, routes = found
        table = write_arm_table(plan.out, arms, routes=routes, full_size=plan.params.full)
        return Report(plan.out, table_markdown(table))


AUDIT = ArmsAudit()
