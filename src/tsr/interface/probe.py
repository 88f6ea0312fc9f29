"""`tsr probe`: the headroom audit and the pairwise transfer matrix (the paper's probe protocol),
with the signature audit and the arm table of its folder (docs/calibration.md, docs/audits.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.console import Console

from ..cli import _add_executor_flags, _csv, _executor, _split_args


def cmd_probe(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..experiments.probe.plan import DEFAULT_ARMS, FULL_FACTOR, arm_examples, load_probe_stream, plan_jobs, probe_dir

    from ..experiments.probe.run import run_probe
    from ..experiments.probe.report import designed_relations, write_report
    from ..analysis.transfer import arms_at, headroom_markdown, matrix_markdown
    from ..config import load_config
    from ..errors import ConfigError

    sig_names = None
    if args.signatures is not None:
        from ..cl.signatures import signature_names

        if "=" in args.signatures:  # a bare --signatures followed by a key=value override
            args.items, args.signatures = [*args.items, args.signatures], ""
        sig_names = signature_names(args.signatures)
    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    seeds = _csv(args.seeds, int) or [0]
    full = args.full or cfg.stream.budget * FULL_FACTOR
    jobs = plan_jobs(stream, seeds, _csv(args.targets), _csv(args.sources), _csv(args.arms) or list(DEFAULT_ARMS),
                        full, cfg.stream.budget)
    out = Path(args.out) if args.out else probe_dir(cfg, stream)
    for job in jobs:  # a budget over a pool is one error line, before the header
        arm_examples(stream.task(job.target), cfg.stream.budget, job.arm, job.seed, job.size)
    console.print(f"probe of {stream.name}: {len(jobs)} arms, {args.workers} worker(s) -> {out}")
    err = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err, disable=not err.is_terminal) as bar:
        task = bar.add_task("arms", total=len(jobs))

        def progress(result: dict, done: int, total: int) -> None:
            bar.update(task, completed=done, description=f"{result['target']} {result['arm']}"
                       + (f":{result['source']}" if result["source"] else ""))
            if not err.is_terminal and (done % 10 == 0 or done == total):
                err.print(f"  {done}/{total} arms")

        arms = run_probe(cfg, jobs, out, args.workers, progress, _csv(args.checkpoints, int) or (),
                            _executor(args))
    # the folder is shared by every order and subset of the stream: report the tasks probed now
    arms = [a for a in arms if a["target"] in stream.names and a["source"] in (None, *stream.names)]
    # full arms of one size (files from before sizes were recorded are 10N ones)
    arms = [a for a in arms if a["arm"] != "full" or a.get("examples", cfg.stream.budget * FULL_FACTOR) == full]
    if args.report_at is not None and args.report_at != cfg.train.steps:
        arms = arms_at(arms, args.report_at, cfg.train.steps)
        if not arms:
            raise ConfigError(f"--report-at: no arm in {out} was scored after step {args.report_at} "
                              "(run it with --checkpoints)")
        out = out / f"at-{args.report_at}"
        console.print(f"report after step {args.report_at} of {cfg.train.steps}: {len(arms)} arms -> {out}")
    signatures = None
    relations = designed_relations(cfg.stream.source, cfg.stream.options)
    if sig_names:
        from ..experiments.signatures.run import probe_audit

        signatures = probe_audit(cfg, stream, arms, out, sig_names, relations)
    at_end = args.report_at is None or args.report_at == cfg.train.steps
    report = write_report(out, arms, stream, relations, signatures, cfg.train.steps if at_end else None)
    if "headroom" in report:
        console.print("[bold]headroom[/] (S(10N) - S(N); for generation tasks the loss gap)")
        console.print(headroom_markdown(report["headroom"], stream.names), markup=False)
    if "matrix" in report:
        console.print("[bold]transfer matrix[/] (rows: source, columns: target; bold: column best)")
        console.print(matrix_markdown(report["matrix"], report["kinds"], stream.names), markup=False)
    for row in report.get("relation_checks", []):
        parts = [f"partner {s}: {'ok' if v['pass'] else 'FAIL'}" for s, v in row["partners"].items()]
        parts += [f"conflict {s}: {'ok' if v['pass'] else 'FAIL'}" for s, v in row["conflicts"].items()]
        parts += [f"contrast {s}: {v['benefit']:+.3f}" for s, v in row.get("contrasts", {}).items()]
        if "unrelated" in row:
            parts.append(f"unrelated: {'ok' if row['unrelated']['pass'] else 'FAIL'}")
        console.print(f"  {row['target']}: best {row['best']}; " + "; ".join(parts))
    if "exposure_matched" in report:
        console.print(f"exposure-matched matrix (mixed arms against the target arm after step "
                      f"{report['exposure_matched']['half_step']}): {out / 'exposure-matched.md'}")
    for kind, sig in (signatures or {}).items():
        console.print(f"  signature {kind}: top-1 {sig['hit_rate']}, mean rank correlation {sig['mean_spearman']:+.2f}")
    if signatures:
        console.print(f"signature audit: {out / 'signatures.md'} (.csv, .json, .png)")
    if "arm_table" in report:
        from ..analysis.arms import table_markdown

        console.print("[bold]arms[/] (mean ± std over seeds; oracle: each seed's best mixed arm)")
        console.print(table_markdown(report["arm_table"], stream.names), markup=False)
    console.print(f"saved to {out}")
    return 0


def add_probe_parser(add) -> None:
    """``tsr probe``: ``add`` is build_parser's helper that adds one command."""
    p = add("probe", "Headroom audit and pairwise transfer matrix (the paper's probe protocol).", cmd_probe)
    p.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    p.add_argument("--targets", help="comma-separated target tasks (default: all)")
    p.add_argument("--sources", help="comma-separated source tasks for mixed arms (default: all)")
    p.add_argument("--arms", help="comma-separated arms: target, full, mixed, random, init, anchor "
                   "(default: target,full,mixed; init/anchor: tsr audit carriers)")
    p.add_argument("--full", type=int, metavar="M", help="examples of the full arm (default: 10 x stream.budget)")
    p.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1), help="parallel processes")
    p.add_argument("--out", help="output folder (default: <out_dir>/probe-<stream>-<fingerprint>)")
    p.add_argument("--signatures", nargs="?", const="", metavar="NAMES",
                   help="also audit task signatures against the matrix: comma-separated names or 'all' "
                   "(bare: gradb,gradb_norm,gradb_last4; docs/signatures.md)")
    p.add_argument("--checkpoints", help="comma-separated steps after which each arm is also scored "
                   "(a learning curve; the score after step s equals an s-step arm's)")
    p.add_argument("--report-at", type=int, metavar="STEP",
                   help="report the scores after this step (saved by --checkpoints) into <out>/at-STEP")
    _add_executor_flags(p)
