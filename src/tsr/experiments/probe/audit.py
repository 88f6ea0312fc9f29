"""``tsr probe`` as data: its params and the object that plans, runs and reports the paper's
probe protocol (the headroom audit and the pairwise transfer matrix, :mod:`tsr.experiments.probe`),
with the signature audit (:mod:`tsr.experiments.signatures`) and the arm table of its folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import SEEDS
from ..audit import Audit, Report, Session, param

EXAMPLES = """examples:
  tsr probe arms=target,full seeds=0,1,2,3            # headroom audit of synth-trace
  tsr probe seeds=0,1,2 signatures=all --workers 2    # full transfer matrix + signature audit
  tsr probe stream.source=synth-numglue arms=target,full
  tsr probe arms=target,full checkpoints=250,500,750 # also score every arm after these steps
  tsr probe arms=target,full report_at=500           # headroom at a 500-step budget from those scores
  tsr probe seeds=0,1,2 --executor ray --ray-address auto --workers 16   # the arms on a Ray cluster
  tsr probe arms=target,full,mixed,random seeds=0,1,2 # + random-source arm; arm-table.md adds the oracle
  tsr probe stream.budget=100 arms=target,full full=500   # headroom against a fixed N_max = 500
Arms already saved in the output folder are not run again."""


@dataclass(frozen=True)
class Params:
    seeds: tuple[int, ...] = param("seeds, comma-separated", SEEDS)
    targets: tuple[str, ...] = param("target tasks, comma-separated (default: all)", ())
    sources: tuple[str, ...] = param("source tasks for mixed arms, comma-separated (default: all)", ())
    arms: tuple[str, ...] | None = param("arms, comma-separated: target, full, mixed, random, init, anchor "
                                         "(init/anchor: tsr audit carriers)",
                                         default_from="tsr.experiments.probe.plan:DEFAULT_ARMS")
    full: int | None = param("examples of the full arm (default: %(fallback)s x stream.budget)",
                             shows="tsr.experiments.probe.plan:FULL_FACTOR")
    out: str | None = param("output folder (default: <out_dir>/probe-<stream>-<fingerprint>)")
    signatures: str | None = param("also audit task signatures against the matrix: names, comma-separated, or "
                                   "'all' (empty: %(fallback)s; docs/signatures.md)", bare="",
                                   shows="tsr.cl.signatures:SIGNATURE_KINDS")
    checkpoints: tuple[int, ...] = param("steps after which each arm is also scored, comma-separated (a learning "
                                         "curve; the score after step s equals an s-step arm's)", ())
    report_at: int | None = param("report the scores after this step (saved by checkpoints) into <out>/at-STEP")


@dataclass(frozen=True)
class Planned:
    params: Params
    cfg: Any  # RunConfig
    stream: Any  # Stream
    jobs: list  # the probe's Jobs
    full: int  # the full arm's examples
    signatures: list[str] | None
    out: Path


class ProbeAudit(Audit):
    name = "probe"
    summary = "Headroom audit and pairwise transfer matrix (the paper's probe protocol)."
    examples = EXAMPLES
    Params = Params
    flags = ("workers", "executor")

    def plan(self, params: Params, session: Session) -> Planned:
        from ...cl.signatures import signature_names
        from ...config import load_config
        from .plan import FULL_FACTOR, arm_examples, load_probe_stream, plan_jobs, probe_dir

        signatures = None if params.signatures is None else signature_names(params.signatures)
        cfg = load_config(session.config, list(session.overrides))
        stream = load_probe_stream(cfg)
        budget = cfg.stream.budget
        full = params.full or budget * FULL_FACTOR
        jobs = plan_jobs(stream, list(params.seeds) or list(SEEDS), list(params.targets) or None,
                         list(params.sources) or None, list(params.arms), full, budget)
        for job in jobs:  # a budget over a pool is one error line, before the header
            arm_examples(stream.task(job.target), budget, job.arm, job.seed, job.size)
        out = Path(params.out) if params.out else probe_dir(cfg, stream)
        return Planned(params, cfg, stream, jobs, full, signatures, out)

    def run(self, plan: Planned, session: Session) -> list[dict]:
        """Every job's arm, saved ones read back: those of the tasks probed now, full arms of one size."""
        from .plan import FULL_FACTOR
        from .run import run_probe

        stream, budget = plan.stream, plan.cfg.stream.budget
        session.reporter.say(f"probe of {stream.name}: {len(plan.jobs)} arms, {session.workers} worker(s) -> {plan.out}")

        def progress(result: dict, done: int, total: int) -> None:
            source = f":{result['source']}" if result["source"] else ""
            session.reporter.progress(done, total, f"arms ({result['target']} {result['arm']}{source})")

        arms = run_probe(plan.cfg, plan.jobs, plan.out, session.workers, progress, plan.params.checkpoints,
                         session.executor)
        # the folder is shared by every order and subset of the stream: report the tasks probed now
        arms = [a for a in arms if a["target"] in stream.names and a["source"] in (None, *stream.names)]
        # full arms of one size (files from before sizes were recorded are 10N ones)
        return [a for a in arms if a["arm"] != "full" or a.get("examples", budget * FULL_FACTOR) == plan.full]

    def report(self, plan: Planned, found: list[dict], session: Session) -> Report:
        from .report import designed_relations, write_report

        steps, at = plan.cfg.train.steps, plan.params.report_at
        arms, out = (found, plan.out) if at is None or at == steps else _arms_at(session, found, at, steps, plan.out)
        relations = designed_relations(plan.cfg.stream.source, plan.cfg.stream.options)
        signatures = None
        if plan.signatures:
            from ..signatures.run import probe_audit

            signatures = probe_audit(plan.cfg, plan.stream, arms, out, plan.signatures, relations)
        report = write_report(out, arms, plan.stream, relations, signatures, steps if out == plan.out else None)
        return Report(out, report_text(report, plan.stream.names, signatures, out))


def _arms_at(session: Session, arms: list[dict], step: int, steps: int, out: Path) -> tuple[list[dict], Path]:
    """``report_at=STEP``: the arms' scores after that step, reported into ``out/at-STEP``."""
    from ...analysis.transfer import arms_at
    from ...errors import ConfigError

    arms = arms_at(arms, step, steps)
    if not arms:
        raise ConfigError(f"--report-at: no arm in {out} was scored after step {step} (run it with --checkpoints)")
    session.reporter.say(f"report after step {step} of {steps}: {len(arms)} arms -> {out / f'at-{step}'}")
    return arms, out / f"at-{step}"


def report_text(report: dict, names: list[str], signatures: dict | None, out: Path) -> str:
    """What a probe's report found: headroom, the transfer matrix, the relation checks, the signature
    audit and the arm table, each where the report has it."""
    from ...analysis.arms import table_markdown
    from ...analysis.transfer import headroom_markdown, matrix_markdown

    parts = []
    if "headroom" in report:
        parts += ["headroom (S(10N) - S(N); for generation tasks the loss gap)",
                  headroom_markdown(report["headroom"], names)]
    if "matrix" in report:
        parts += ["transfer matrix (rows: source, columns: target; bold: column best)",
                  matrix_markdown(report["matrix"], report["kinds"], names)]
    for row in report.get("relation_checks", []):
        checks = [f"partner {s}: {'ok' if v['pass'] else 'FAIL'}" for s, v in row["partners"].items()]
        checks += [f"conflict {s}: {'ok' if v['pass'] else 'FAIL'}" for s, v in row["conflicts"].items()]
        checks += [f"contrast {s}: {v['benefit']:+.3f}" for s, v in row.get("contrasts", {}).items()]
        if "unrelated" in row:
            checks.append(f"unrelated: {'ok' if row['unrelated']['pass'] else 'FAIL'}")
        parts.append(f"  {row['target']}: best {row['best']}; " + "; ".join(checks))
    if "exposure_matched" in report:
        parts.append(f"exposure-matched matrix (mixed arms against the target arm after step "
                     f"{report['exposure_matched']['half_step']}): {out / 'exposure-matched.md'}")
    for kind, sig in (signatures or {}).items():
        parts.append(f"  signature {kind}: top-1 {sig['hit_rate']}, mean rank correlation {sig['mean_spearman']:+.2f}")
    if signatures:
        parts.append(f"signature audit: {out / 'signatures.md'} (.csv, .json, .png)")
    if "arm_table" in report:
        parts += ["arms (mean ± std over seeds; oracle: each seed's best mixed arm)",
                  table_markdown(report["arm_table"], names)]
    return "\n".join(parts)


AUDIT = ProbeAudit()
