"""``tsr audit carriers`` as data: its params and the object that plans, runs and reports it (per
source:target pair, one-shot init from the source adapter, the L2 anchor toward it and data
mixing, all probe arms in the config's probe folder, :mod:`tsr.experiments.carriers.plan`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .. import SEEDS
from ..audit import ARM_FLAGS, Audit, Report, Session, param

EXAMPLES = """examples:
  tsr audit carriers pairs=arith-ds:arith-cm,stance:irony seeds=0,1,2 --workers 2
  tsr audit carriers from_probe=runs/probe-synth-trace-1a2b3c4d5e top=5 seeds=0,1,2,3,4   # the oracle pairs
  tsr audit carriers pairs=arith-ds:arith-cm mu=0.1,1 checkpoints=50,100,200,300,400 train.steps=500
Per pair SOURCE:TARGET: target only, data mixing (mixed), one-shot init from the source adapter
(init) and the L2 anchor toward it (anchor, one arm per mu); all are probe arms saved in the
config's probe folder (shared with tsr probe, resumable; the source adapter is trained once per
source and seed and cached there). Writes carriers.json, carriers.md and carriers.png to
<out_dir>/audit-carriers-<stream>-<fingerprint> (or out=DIR): score, gain over target (paired by
seed) and share of the mixing gain, at the end, after each checkpoint and at step 0 (the starting
points: the shared initialisation and the source adapter, scored once, cached in the probe
folder's starts/): the one-shot carrier's head start and its wash-out."""


@dataclass(frozen=True)
class Params:
    pairs: str | None = param("source:target pairs, comma-separated (SRC:TGT,...)")
    from_probe: str | None = param("each target's best source in this probe folder's transfer matrix (instead of "
                                   "pairs)", flag="--from")
    top: int | None = param("with from_probe: the K pairs with the largest mixing gain")
    seeds: tuple[int, ...] = param("seeds, comma-separated", SEEDS)
    mu: tuple[float, ...] | None = param("anchor strengths, comma-separated, one anchor arm each "
                                         "(default %(fallback)s)", shows="tsr.experiments.carriers.arms:DEFAULT_MU")
    checkpoints: tuple[int, ...] | Literal["none"] | None = param(
        "steps to score on the way, comma-separated (default: every train.steps/%(fallback)s; none: the last "
        "step only)", shows="tsr.experiments.carriers.plan:PARTS")
    out: str | None = param("report folder (default: <out_dir>/audit-carriers-<stream>-<fingerprint>)")


@dataclass(frozen=True)
class Planned:
    cfg: Any  # RunConfig
    stream: Any  # Stream
    carriers: Any  # CarrierPlan
    folder: Path  # the probe folder the arms are saved in
    out: Path


class CarriersAudit(Audit):
    name = "carriers"
    summary = ("Carrier study: one-shot init from the source adapter, L2 anchor toward it, data mixing; the "
               "target's score and gain over the steps, per pair.")
    examples = EXAMPLES
    Params = Params
    flags = ARM_FLAGS

    def plan(self, params: Params, session: Session) -> Planned:
        from ...config import load_config
        from ...errors import TsrError
        from ..probe.plan import load_probe_stream, probe_dir
        from .arms import DEFAULT_MU
        from .plan import pairs_from_probe, parse_pairs, plan_carriers

        cfg = load_config(session.config, list(session.overrides))
        stream = load_probe_stream(cfg)
        if (params.pairs is None) == (params.from_probe is None):
            raise TsrError("tsr audit carriers: give exactly one of --pairs SRC:TGT,... and --from PROBE_DIR")
        if params.top is not None and params.from_probe is None:
            raise TsrError("--top: only with --from PROBE_DIR")
        pairs = parse_pairs(params.pairs) if params.pairs is not None else \
            pairs_from_probe(Path(params.from_probe), params.top)
        checkpoints = [] if params.checkpoints == "none" else params.checkpoints
        plan = plan_carriers(stream, pairs, list(params.seeds), list(params.mu or [DEFAULT_MU]),
                             None if checkpoints is None else list(checkpoints), cfg.train.steps)
        folder = probe_dir(cfg, stream)
        out = Path(params.out) if params.out else folder.with_name(folder.name.replace("probe-", "audit-carriers-", 1))
        return Planned(cfg, stream, plan, folder, out)

    def run(self, plan: Planned, session: Session) -> tuple[list[dict], list[dict]]:
        """The study's arms and the scores of their starting points (step 0)."""
        from ...errors import TsrError
        from .plan import carrier_jobs
        from .run import run_carriers, run_starts, saved_carriers, saved_starts

        what = f"carrier study of {plan.stream.name}"
        pairs = ", ".join(f"{s}->{t}" for s, t in plan.carriers.pairs)
        if session.report_only:
            arms = saved_carriers(plan.cfg, plan.stream, plan.carriers)
            if not any(a["arm"] == "target" for a in arms):
                raise TsrError(f"--report-only: no target arm of these pairs is saved yet (in {plan.folder})")
            session.reporter.say(f"{what} (saved arms only): {pairs} -> {plan.out}")
            return arms, saved_starts(plan.cfg, plan.stream, plan.carriers)
        jobs = carrier_jobs(plan.stream, plan.carriers)
        session.reporter.say(f"{what}: {pairs}; {len(jobs)} arms, {session.workers} worker(s), checkpoints "
                             f"{', '.join(map(str, plan.carriers.checkpoints)) or 'none'} -> {plan.out}")
        arms = run_carriers(plan.cfg, plan.stream, plan.carriers, session.workers,
                            lambda result, done, total: session.reporter.progress(
                                done, total, f"arms ({result['target']} {result['arm']})"), session.executor)
        starts = run_starts(plan.cfg, plan.stream, plan.carriers,
                            lambda done, total: session.reporter.progress(done, total, "starting points scored (step 0)"))
        return arms, starts

    def report(self, plan: Planned, found: tuple[list[dict], list[dict]], session: Session) -> Report:
        from .report import carrier_summary, carriers_markdown, write_carriers_report

        arms, starts = found
        summary = write_carriers_report(plan.out, carrier_summary(arms, plan.carriers, plan.cfg.train.steps, starts),
                                        plan.stream.name, session.command)
        return Report(plan.out, carriers_markdown(summary))


AUDIT = CarriersAudit()
