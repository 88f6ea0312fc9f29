"""`tsr probe`: the headroom audit and the pairwise transfer matrix (the paper's probe protocol),
with the signature audit and the arm table of its folder (docs/calibration.md, docs/audits.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import Default, add, add_executor_flags, add_items, add_workers, csv_list, executor, option, split_items
from ..console import plain_console

EXAMPLES = """examples:
  tsr probe --arms target,full --seeds 0,1,2,3            # headroom audit of synth-trace
  tsr probe --seeds 0,1,2 --workers 2 --signatures all    # full transfer matrix + signature audit
  tsr probe stream.source=synth-numglue --arms target,full
  tsr probe --arms target,full --checkpoints 250,500,750 # also score every arm after these steps
  tsr probe --arms target,full --report-at 500           # headroom at a 500-step budget from those scores
  tsr probe --seeds 0,1,2 --executor ray --ray-address auto --workers 16   # the arms on a Ray cluster
  tsr probe --arms target,full,mixed,random --seeds 0,1,2 # + random-source arm; arm-table.md adds the oracle
  tsr probe stream.budget=100 --arms target,full --full 500   # headroom against a fixed N_max = 500
Arms already saved in the output folder are not run again."""

SEEDS = Default("tsr.experiments:SEEDS")
ARMS = Default("tsr.experiments.probe.plan:DEFAULT_ARMS")
FULL_FACTOR = Default("tsr.experiments.probe.plan:FULL_FACTOR")
BARE_SIGNATURES = Default("tsr.cl.signatures:SIGNATURE_KINDS")


def cmd_probe(args: argparse.Namespace, console: Console) -> int:
    from ...config import load_config
    from ...experiments.probe.plan import arm_examples, load_probe_stream, plan_jobs, probe_dir
    from ...experiments.probe.report import designed_relations, write_report

    sig_names = _signature_names(args)
    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    seeds = csv_list(args.seeds, int) or list(SEEDS.value())
    factor = FULL_FACTOR.value()
    full = args.full or cfg.stream.budget * factor
    jobs = plan_jobs(stream, seeds, csv_list(args.targets), csv_list(args.sources),
                     csv_list(args.arms) or list(ARMS.value()), full, cfg.stream.budget)
    out = Path(args.out) if args.out else probe_dir(cfg, stream)
    for job in jobs:  # a budget over a pool is one error line, before the header
        arm_examples(stream.task(job.target), cfg.stream.budget, job.arm, job.seed, job.size)
    console.print(f"probe of {stream.name}: {len(jobs)} arms, {args.workers} worker(s) -> {out}")
    arms = _run_arms(args, cfg, jobs, out)
    # the folder is shared by every order and subset of the stream: report the tasks probed now
    arms = [a for a in arms if a["target"] in stream.names and a["source"] in (None, *stream.names)]
    # full arms of one size (files from before sizes were recorded are 10N ones)
    arms = [a for a in arms if a["arm"] != "full" or a.get("examples", cfg.stream.budget * factor) == full]
    if args.report_at is not None and args.report_at != cfg.train.steps:
        arms, out = _arms_at(console, arms, args.report_at, cfg.train.steps, out)
    signatures = None
    relations = designed_relations(cfg.stream.source, cfg.stream.options)
    if sig_names:
        from ...experiments.signatures.run import probe_audit

        signatures = probe_audit(cfg, stream, arms, out, sig_names, relations)
    at_end = args.report_at is None or args.report_at == cfg.train.steps
    report = write_report(out, arms, stream, relations, signatures, cfg.train.steps if at_end else None)
    _print_report(console, report, stream.names, signatures, out)
    console.print(f"saved to {out}")
    return 0


def _signature_names(args: argparse.Namespace) -> list[str] | None:
    """--signatures NAMES (bare: the default set), or None without it."""
    if args.signatures is None:
        return None
    from ...cl.signatures import signature_names

    if "=" in args.signatures:  # a bare --signatures followed by a key=value override
        args.items, args.signatures = [*args.items, args.signatures], ""
    return signature_names(args.signatures)


def _run_arms(args: argparse.Namespace, cfg, jobs: list, out: Path) -> list[dict]:
    """Every job's arm, saved ones read back, with a progress bar on a terminal (lines otherwise)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ...experiments.probe.run import run_probe

    err = plain_console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err, disable=not err.is_terminal) as bar:
        task = bar.add_task("arms", total=len(jobs))

        def progress(result: dict, done: int, total: int) -> None:
            bar.update(task, completed=done, description=f"{result['target']} {result['arm']}"
                       + (f":{result['source']}" if result["source"] else ""))
            if not err.is_terminal and (done % 10 == 0 or done == total):
                err.print(f"  {done}/{total} arms")

        return run_probe(cfg, jobs, out, args.workers, progress, csv_list(args.checkpoints, int) or (),
                         executor(args))


def _arms_at(console: Console, arms: list[dict], step: int, steps: int, out: Path) -> tuple[list[dict], Path]:
    """--report-at STEP: the arms' scores after that step, reported into ``out/at-STEP``."""
    from ...analysis.transfer import arms_at
    from ...errors import ConfigError

    arms = arms_at(arms, step, steps)
    if not arms:
        raise ConfigError(f"--report-at: no arm in {out} was scored after step {step} (run it with --checkpoints)")
    out = out / f"at-{step}"
    console.print(f"report after step {step} of {steps}: {len(arms)} arms -> {out}")
    return arms, out


def _print_report(console: Console, report: dict, names: list[str], signatures: dict | None, out: Path) -> None:
    """What a probe's report found: headroom, the transfer matrix, the relation checks, the signature
    audit and the arm table, each where the report has it."""
    from ...analysis.transfer import headroom_markdown, matrix_markdown

    if "headroom" in report:
        console.print("[bold]headroom[/] (S(10N) - S(N); for generation tasks the loss gap)", markup=True)
        console.print(headroom_markdown(report["headroom"], names), markup=False)
    if "matrix" in report:
        console.print("[bold]transfer matrix[/] (rows: source, columns: target; bold: column best)", markup=True)
        console.print(matrix_markdown(report["matrix"], report["kinds"], names), markup=False)
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
        from ...analysis.arms import table_markdown

        console.print("[bold]arms[/] (mean ± std over seeds; oracle: each seed's best mixed arm)", markup=True)
        console.print(table_markdown(report["arm_table"], names), markup=False)


def add_parser(sub) -> None:
    p = add(sub, "probe", "Headroom audit and pairwise transfer matrix (the paper's probe protocol).", cmd_probe,
            EXAMPLES)
    add_items(p)
    option(p, "--seeds", fallback=SEEDS, help="comma-separated seeds (default %(fallback)s)")
    p.add_argument("--targets", help="comma-separated target tasks (default: all)")
    p.add_argument("--sources", help="comma-separated source tasks for mixed arms (default: all)")
    option(p, "--arms", fallback=ARMS, help="comma-separated arms: target, full, mixed, random, init, anchor "
           "(default: %(fallback)s; init/anchor: tsr audit carriers)")
    option(p, "--full", type=int, metavar="M", fallback=FULL_FACTOR,
           help="examples of the full arm (default: %(fallback)s x stream.budget)")
    add_workers(p)
    p.add_argument("--out", help="output folder (default: <out_dir>/probe-<stream>-<fingerprint>)")
    option(p, "--signatures", nargs="?", const="", metavar="NAMES", fallback=BARE_SIGNATURES,
           help="also audit task signatures against the matrix: comma-separated names or 'all' "
           "(bare: %(fallback)s; docs/signatures.md)")
    p.add_argument("--checkpoints", help="comma-separated steps after which each arm is also scored "
                   "(a learning curve; the score after step s equals an s-step arm's)")
    p.add_argument("--report-at", type=int, metavar="STEP",
                   help="report the scores after this step (saved by --checkpoints) into <out>/at-STEP")
    add_executor_flags(p)
