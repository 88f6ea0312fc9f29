"""``tsr audit scale`` as data: its params and the object that plans, runs and reports it (the
same probe on several base models, each an ordinary probe folder, and each model's signature
tables, :mod:`tsr.experiments.scale.plan`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import SEEDS
from ..audit import ARM_FLAGS, Audit, Report, Session, param

EXAMPLES = """examples:
  tsr audit scale models=models/qwen2.5-0.5b,models/qwen2.5-7b seeds=0,1,2,3,4 --workers 2
  tsr audit scale models=A,B,C labels=0.5B,1.5B,3B arms=target,full,mixed signatures=gradb seeds=0,1,2
  tsr audit scale models=A,B labels=small,big --report-only          # the arms saved so far
Each model is an ordinary probe (tsr probe model.path=PATH): its arms live in that config's probe
folder, so saved arms are reused and a rerun resumes. Writes scale.json, scale.md and scale.png to
<out_dir>/audit-scale-<stream>-<hash> (or out=DIR): headroom and S(N) per target and model, the
matrix's best source (with mixed arms), each signature's top-1 source, and which choices are
the same at every model ("k of n targets stable")."""


@dataclass(frozen=True)
class Params:
    models: tuple[str, ...] = param("model.path values (folders or hub ids), comma-separated, at least two, in the "
                                    "order of the x axis", ())
    labels: tuple[str, ...] = param("names of the models, comma-separated, one each (default: the folder names)", ())
    arms: tuple[str, ...] = param("arms, comma-separated: target, full, mixed (default: %(fallback)s)", (),
                                  shows="tsr.experiments.scale.plan:DEFAULT_ARMS")
    signatures: str | None = param("signatures whose top-1 source is compared across models, comma-separated "
                                   "(all: every signature)")
    probe_batches: int | None = param("probe batches per task of a signature",
                                      default_from="tsr.experiments.scale.plan:PROBE_BATCHES")
    seeds: tuple[int, ...] = param("seeds, comma-separated", SEEDS)
    targets: tuple[str, ...] = param("target tasks, comma-separated (default: all)", ())
    sources: tuple[str, ...] = param("sources of the mixed arms and signature picks, comma-separated (default: "
                                     "all)", ())
    out: str | None = param("report folder (default: <out_dir>/audit-scale-<stream>-<hash>)")


@dataclass(frozen=True)
class Planned:
    cfg: Any  # RunConfig
    stream: Any  # Stream
    scale: Any  # ScalePlan
    out: Path


class ScaleAudit(Audit):
    name = "scale"
    summary = ("Scale audit: the same probe on several base models; headroom per model and which best-source "
               "choices are the same at every model.")
    examples = EXAMPLES
    Params = Params
    flags = ARM_FLAGS

    def plan(self, params: Params, session: Session) -> Planned:
        from ...cl.signatures import signature_names
        from ...config import load_config
        from ..probe.plan import load_probe_stream
        from .plan import audit_dir, plan_scale

        cfg = load_config(session.config, list(session.overrides))
        stream = load_probe_stream(cfg)
        signatures = signature_names(params.signatures) if params.signatures else None
        scale = plan_scale(cfg, stream, list(params.models), list(params.labels) or None, list(params.seeds),
                           list(params.targets) or None, list(params.sources) or None, list(params.arms) or None,
                           signatures, params.probe_batches)
        return Planned(cfg, stream, scale, Path(params.out) if params.out else audit_dir(cfg, stream, scale))

    def run(self, plan: Planned, session: Session) -> tuple[dict, dict | None]:
        """Each model's arms, and its signature tables where the plan asks for them."""
        from ...errors import TsrError
        from ..probe.report import designed_relations
        from .plan import jobs_of
        from .run import run_scale, run_signatures, saved_arms

        cfg, stream, scale, labels = plan.cfg, plan.stream, plan.scale, ", ".join(plan.scale.labels)
        if session.report_only:
            arms = saved_arms(cfg, stream, scale)
            if not any(a["arm"] == "target" for rows in arms.values() for a in rows):
                raise TsrError(f"--report-only: no target arm of this audit is saved yet (in the probe folders "
                               f"of {labels} under {cfg.out_dir})")
            session.reporter.say(f"scale audit of {stream.name} (saved arms only): {labels} -> {plan.out}")
        else:
            jobs = len(jobs_of(stream, scale)) * len(scale.models)
            session.reporter.say(f"scale audit of {stream.name}: {labels}; {jobs} arms, {session.workers} worker(s) "
                                 f"-> {plan.out}")
            arms = run_scale(cfg, stream, scale, session.workers, lambda result, done, total: session.reporter.progress(
                done, total, f"arms ({result['model']} {result['target']} {result['arm']})"), session.executor)
        if not scale.signatures:
            return arms, None
        session.reporter.say(f"signatures {', '.join(scale.signatures)} at each model's shared initialisation")
        relations = designed_relations(cfg.stream.source, cfg.stream.options)
        return arms, run_signatures(cfg, stream, scale, arms, plan.out, relations)

    def report(self, plan: Planned, found: tuple[dict, dict | None], session: Session) -> Report:
        from .report import scale_markdown, scale_summary, write_scale_report

        arms, tables = found
        scale, stream = plan.scale, plan.stream
        kinds = {t.name: t.kind.value for t in stream}
        summary = scale_summary(arms, list(scale.labels), list(scale.models),
                                [t for t in stream.names if t in scale.targets], kinds, tables,
                                list(scale.sources) if scale.sources else None)
        summary = write_scale_report(plan.out, summary, stream.name, session.command)
        return Report(plan.out, scale_markdown(summary))


AUDIT = ScaleAudit()
