"""`tsr audit carriers`: the carrier study, one-shot init from a source adapter, the L2 anchor
toward it and data mixing, per source:target pair (:mod:`tsr.experiments.carriers`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ...errors import TsrError
from ..args import Default, add, add_executor_flags, add_items, add_workers, csv_list, executor, option, split_items
from .common import SEEDS, arm_progress, command_line, print_saved
from ..console import plain_console

EXAMPLES = """examples:
  tsr audit carriers --pairs arith-ds:arith-cm,stance:irony --seeds 0,1,2 --workers 2
  tsr audit carriers --from runs/probe-synth-trace-1a2b3c4d5e --top 5 --seeds 0,1,2,3,4   # the oracle pairs
  tsr audit carriers --pairs arith-ds:arith-cm --mu 0.1,1 --checkpoints 50,100,200,300,400 train.steps=500
Per pair SOURCE:TARGET: target only, data mixing (mixed), one-shot init from the source adapter
(init) and the L2 anchor toward it (anchor, one arm per --mu); all are probe arms saved in the
config's probe folder (shared with tsr probe, resumable; the source adapter is trained once per
source and seed and cached there). Writes carriers.json, carriers.md and carriers.png to
<out_dir>/audit-carriers-<stream>-<fingerprint> (or --out): score, gain over target (paired by
seed) and share of the mixing gain, at the end, after each checkpoint and at step 0 (the starting
points: the shared initialisation and the source adapter, scored once, cached in the probe
folder's starts/): the one-shot carrier's head start and its wash-out."""

MU = Default("tsr.experiments.carriers.arms:DEFAULT_MU")
PARTS = Default("tsr.experiments.carriers.plan:PARTS")


def cmd_audit_carriers(args: argparse.Namespace, console: Console) -> int:
    from ...config import load_config
    from ...experiments.carriers.plan import carrier_jobs, pairs_from_probe, parse_pairs, plan_carriers
    from ...experiments.carriers.report import carrier_summary, carriers_markdown, write_carriers_report
    from ...experiments.carriers.run import run_carriers, saved_carriers, saved_starts
    from ...experiments.probe.plan import load_probe_stream, probe_dir

    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    if (args.pairs is None) == (args.source_dir is None):
        raise TsrError("tsr audit carriers: give exactly one of --pairs SRC:TGT,... and --from PROBE_DIR")
    if args.top is not None and args.source_dir is None:
        raise TsrError("--top: only with --from PROBE_DIR")
    pairs = parse_pairs(args.pairs) if args.pairs is not None else pairs_from_probe(Path(args.source_dir), args.top)
    plan = plan_carriers(stream, pairs, SEEDS.listed(args.seeds, int, "--seeds") or [],
                         csv_list(args.mu, float, "--mu") or [MU.value()],
                         [] if args.checkpoints == "none" else csv_list(args.checkpoints, int, "--checkpoints"),
                         cfg.train.steps)
    folder = probe_dir(cfg, stream)
    out = Path(args.out) if args.out else folder.with_name(folder.name.replace("probe-", "audit-carriers-", 1))
    pairs_text = ", ".join(f"{s}->{t}" for s, t in plan.pairs)
    if args.report_only:
        arms = saved_carriers(cfg, stream, plan)
        if not any(a["arm"] == "target" for a in arms):
            raise TsrError(f"--report-only: no target arm of these pairs is saved yet (in {folder})")
        starts = saved_starts(cfg, stream, plan)
        console.print(f"carrier study of {stream.name} (saved arms only): {pairs_text} -> {out}")
    else:
        jobs = carrier_jobs(stream, plan)
        console.print(f"carrier study of {stream.name}: {pairs_text}; {len(jobs)} arms, {args.workers} worker(s), "
                      f"checkpoints {', '.join(map(str, plan.checkpoints)) or 'none'} -> {out}")
        progress = arm_progress(lambda result: f"{result['target']} {result['arm']}")
        arms = run_carriers(cfg, stream, plan, args.workers, progress, executor(args))
        starts = _score_starts(cfg, stream, plan)
    summary = write_carriers_report(out, carrier_summary(arms, plan, cfg.train.steps, starts), stream.name,
                                    command_line(args, "carriers"))
    print_saved(console, carriers_markdown(summary), out)
    return 0


def _score_starts(cfg, stream, plan):
    """The arms' starting points (step 0) scored, saved ones read back, a stderr line every 10."""
    from ...experiments.carriers.run import run_starts

    err = plain_console(stderr=True)

    def scored(done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            err.print(f"  step 0: {done}/{total} starting points scored")

    return run_starts(cfg, stream, plan, scored)


def add_parser(audits) -> None:
    q = add(audits, "carriers", "Carrier study: one-shot init from the source adapter, L2 anchor toward "
            "it, data mixing; the target's score and gain over the steps, per pair.", cmd_audit_carriers,
            EXAMPLES)
    add_items(q)
    q.add_argument("--pairs", metavar="SRC:TGT,...", help="comma-separated source:target pairs")
    q.add_argument("--from", dest="source_dir", metavar="PROBE_DIR", help="each target's best source in this probe "
                   "folder's transfer matrix (instead of --pairs)")
    q.add_argument("--top", type=int, metavar="K", help="with --from: the K pairs with the largest mixing gain")
    option(q, "--seeds", fallback=SEEDS, help="comma-separated seeds (default %(fallback)s)")
    option(q, "--mu", fallback=MU, help="comma-separated anchor strengths, one anchor arm each (default %(fallback)s)")
    option(q, "--checkpoints", fallback=PARTS, help="comma-separated steps to score on the way (default: every "
           "train.steps/%(fallback)s; none: the last step only)")
    add_workers(q)
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-carriers-<stream>-<fingerprint>)")
    q.add_argument("--report-only", action="store_true", help="train nothing: report the arms saved so far")
    add_executor_flags(q)
