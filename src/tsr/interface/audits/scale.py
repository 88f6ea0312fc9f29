"""`tsr audit scale`: the same probe on several base models, headroom per model and which
best-source choices stay the same (:mod:`tsr.experiments.scale`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ...errors import TsrError
from ..args import Default, add, add_executor_flags, add_items, add_workers, csv_list, executor, option, split_items
from .common import SEEDS, arm_progress, command_line, print_saved

EXAMPLES = """examples:
  tsr audit scale --models models/qwen2.5-0.5b,models/qwen2.5-7b --seeds 0,1,2,3,4 --workers 2
  tsr audit scale --models A,B,C --labels 0.5B,1.5B,3B --arms target,full,mixed --signatures gradb --seeds 0,1,2
  tsr audit scale --models A,B --labels small,big --report-only          # the arms saved so far
Each model is an ordinary probe (tsr probe model.path=PATH): its arms live in that config's probe
folder, so saved arms are reused and a rerun resumes. Writes scale.json, scale.md and scale.png to
<out_dir>/audit-scale-<stream>-<hash> (or --out): headroom and S(N) per target and model, the
matrix's best source (with mixed arms), each signature's top-1 source, and which choices are
the same at every model ("k of n targets stable")."""

ARMS = Default("tsr.experiments.scale.plan:DEFAULT_ARMS")
PROBE_BATCHES = Default("tsr.experiments.scale.plan:PROBE_BATCHES")


def cmd_audit_scale(args: argparse.Namespace, console: Console) -> int:
    from ...config import load_config
    from ...experiments.probe.plan import load_probe_stream
    from ...experiments.scale.plan import audit_dir, jobs_of, plan_scale
    from ...experiments.scale.report import scale_markdown, write_scale_report
    from ...experiments.scale.run import run_scale, saved_arms

    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    signatures = None
    if args.signatures:
        from ...cl.signatures import signature_names

        signatures = signature_names(args.signatures)
    plan = plan_scale(cfg, stream, csv_list(args.models) or [], csv_list(args.labels),
                      SEEDS.listed(args.seeds, int, "--seeds") or [], csv_list(args.targets), csv_list(args.sources),
                      csv_list(args.arms), signatures, PROBE_BATCHES.fill(args.probe_batches))
    out = Path(args.out) if args.out else audit_dir(cfg, stream, plan)
    if args.report_only:
        arms = saved_arms(cfg, stream, plan)
        if not any(a["arm"] == "target" for rows in arms.values() for a in rows):
            raise TsrError(f"--report-only: no target arm of this audit is saved yet (in the probe folders "
                           f"of {', '.join(plan.labels)} under {cfg.out_dir})")
        console.print(f"scale audit of {stream.name} (saved arms only): {', '.join(plan.labels)} -> {out}")
    else:
        jobs = len(jobs_of(stream, plan)) * len(plan.models)
        console.print(f"scale audit of {stream.name}: {', '.join(plan.labels)}; {jobs} arms, "
                      f"{args.workers} worker(s) -> {out}")
        progress = arm_progress(lambda result: f"{result['model']} {result['target']} {result['arm']}")
        arms = run_scale(cfg, stream, plan, args.workers, progress, executor(args))
    summary = _summary(console, cfg, stream, plan, arms, out)
    summary = write_scale_report(out, summary, stream.name, command_line(args, "scale"))
    print_saved(console, scale_markdown(summary), out)
    return 0


def _summary(console: Console, cfg, stream, plan, arms: dict, out: Path) -> dict:
    """The audit's summary of ``arms``, with each model's signature tables when the plan asks for them."""
    from ...experiments.probe.report import designed_relations
    from ...experiments.scale.report import scale_summary
    from ...experiments.scale.run import run_signatures

    tables = None
    if plan.signatures:
        console.print(f"signatures {', '.join(plan.signatures)} at each model's shared initialisation")
        tables = run_signatures(cfg, stream, plan, arms, out, designed_relations(cfg.stream.source, cfg.stream.options))
    kinds = {t.name: t.kind.value for t in stream}
    return scale_summary(arms, list(plan.labels), list(plan.models), [t for t in stream.names if t in plan.targets],
                         kinds, tables, list(plan.sources) if plan.sources else None)


def add_parser(audits) -> None:
    q = add(audits, "scale", "Scale audit: the same probe on several base models; headroom per model and "
            "which best-source choices are the same at every model.", cmd_audit_scale, EXAMPLES)
    add_items(q)
    q.add_argument("--models", metavar="PATH,PATH,...", help="comma-separated model.path values (folders or hub "
                   "ids), at least two, in the order of the x axis")
    q.add_argument("--labels", help="comma-separated names of the models, one each (default: the folder names)")
    option(q, "--arms", fallback=ARMS, help="comma-separated arms: target, full, mixed (default: %(fallback)s)")
    q.add_argument("--signatures", metavar="NAMES", help="comma-separated signatures whose top-1 source is "
                   "compared across models (all: every signature)")
    option(q, "--probe-batches", type=int, fallback=PROBE_BATCHES,
           help="probe batches per task of a signature (default %(fallback)s)")
    option(q, "--seeds", fallback=SEEDS, help="comma-separated seeds (default %(fallback)s)")
    q.add_argument("--targets", help="comma-separated target tasks (default: all)")
    q.add_argument("--sources", help="comma-separated sources of the mixed arms and signature picks (default: all)")
    add_workers(q)
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-scale-<stream>-<hash>)")
    q.add_argument("--report-only", action="store_true", help="train nothing: report the arms saved so far")
    add_executor_flags(q)
