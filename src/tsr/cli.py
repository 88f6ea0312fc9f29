"""Command-line interface. Thin: every command calls a library function a test also calls."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading
import warnings
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from .errors import TsrError, reason

# what the system refuses (a full or read-only disk, no permission, a file where a folder should
# be) wherever a command writes: one line naming the file, exit 2; what was saved stays saved
SYSTEM_FAULTS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR,
                 errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.EIO}

EXAMPLES = {
    "run": """examples:
  tsr run                                   # TSR on the bundled synth-trace stream
  tsr run method.name=er seed=1             # ER instead, another seed
  tsr run my_stream.yaml                    # your own config file
  tsr run paper model.path=/models/qwen2.5-0.5b stream.source=trace8 stream.root=/data/TRACE
Running the same command again resumes an interrupted run after its last finished task, or
within the task from its last saved progress (every train.checkpoint_minutes).""",
    "table": """examples:
  tsr table runs/                           # every finished run under runs/
  tsr table runs/a runs/b --format md       # markdown for a report
  tsr table runs/table3 --format latex      # the paper's Table-3 layout
A folder of runs is read through its index (runs/index.sqlite), brought up to date first.""",
    "index": """example:
  tsr index runs/                           # rebuild runs/index.sqlite from the run folders""",
    "show": """example:
  tsr show runs/synth-trace-tsr-s0-1a2b3c4d5e""",
    "methods": """example:
  tsr methods
Lists tsr's methods and presets, then those of installed packages (entry points in the group
tsr.methods, docs/api.md), each with where it comes from.""",
    "config": """example:
  tsr config paper train.steps=100          # print the resolved config""",
    "probe": """examples:
  tsr probe --arms target,full --seeds 0,1,2,3            # headroom audit of synth-trace
  tsr probe --seeds 0,1,2 --workers 2 --signatures all    # full transfer matrix + signature audit
  tsr probe stream.source=synth-numglue --arms target,full
  tsr probe --arms target,full --checkpoints 250,500,750 # also score every arm after these steps
  tsr probe --arms target,full --report-at 500           # headroom at a 500-step budget from those scores
  tsr probe --seeds 0,1,2 --executor ray --ray-address auto --workers 16   # the arms on a Ray cluster
  tsr probe --arms target,full,mixed,random --seeds 0,1,2 # + random-source arm; arm-table.md adds the oracle
  tsr probe stream.budget=100 --arms target,full --full 500   # headroom against a fixed N_max = 500
Arms already saved in the output folder are not run again.""",
    "compare": """examples:
  tsr compare --seeds 0,1,2 --workers 2                   # every method on synth-trace, Table-3 layout
  tsr compare --methods seqft,er,tsr --seeds 0,1 train.steps=300
  tsr compare --methods seqft,er,tsr --executor ray --workers 8            # on a local Ray instance
  tsr compare --executor ray --ray-address auto --workers 32 --gpus-per-run 0.25 out_dir=/shared/runs
  tsr compare --methods er,tsr method.alpha=0.25 --seeds 0,1,2     # a method.* key applies to every method
  tsr compare --methods tsr --vary method.kd_weight=0.1,0.5,1,2 --seeds 0,1,2   # one run per value and seed
  tsr compare --methods er,tsr --vary train.steps=300,1000 --vary train.lr=1e-4,5e-4      # every combination
  tsr compare --methods seqft,er,tsr --seeds 0,1,2 --report-only --plot t.png   # a grid in progress, nothing trained
Finished runs are reused; interrupted ones resume.""",
    "report": """examples:
  tsr report runs/table3 --out table3.html                # a compare grid: table, matrices, routing, curves
  tsr report runs/probe-synth-trace-1a2b3c4d5e            # a probe folder (written to <folder>/report.html)
One self-contained HTML file (figures embedded, no network): open it in any browser.""",
    "pretrain-base": """examples:
  tsr pretrain-base --out base/                           # reproduce the bundled base
  tsr pretrain-base --out small/ steps=500 hidden=128     # a smaller, quicker one""",
}


def _split_args(items: list[str]) -> tuple[str | None, list[str]]:
    config, overrides = None, []
    for item in items:
        if "=" in item:
            overrides.append(item)
        elif config is None:
            config = item
        else:
            raise TsrError(f"more than one config given ({config!r} and {item!r})")
    return config, overrides


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    from .config import load_config
    from .display import ConsoleReporter, metrics_table, phases_line, results_table
    from .engine.run import execute
    from .engine.rundir import phase_seconds

    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    outcome = execute(cfg, None if args.quiet else ConsoleReporter(Console(stderr=True)))
    if outcome.already_finished:
        console.print(f"[dim]{outcome.run.path} is already finished; showing its results[/]")
    elif outcome.resumed_from:
        console.print(f"[dim]resumed after task {outcome.resumed_from}[/]")
    console.print(results_table(outcome.results, title=f"results · {outcome.results.method}"))
    console.print(metrics_table(outcome.results))
    line = phases_line(phase_seconds(outcome.run.path))
    if line:
        console.print(line, highlight=False)
    console.print(f"saved to {outcome.run.path}")
    return 0


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    from .display import method_meta_lines, metrics_table, phases_line, results_table
    from .engine.progress import saved_step
    from .engine.results import load_results
    from .engine.rundir import method_meta, phase_seconds

    for path in args.runs:
        results = load_results(Path(path))
        console.print(results_table(results, title=f"{path} · {results.method} · seed {results.seed}"))
        if results.finished:
            console.print(metrics_table(results))
        else:
            within = saved_step(Path(path))
            if within is not None and within[0] == results.completed:
                console.print(f"task {within[0] + 1} ({results.tasks[within[0]]}) in progress: saved at step "
                              f"{within[1]}; the same command resumes there", highlight=False)
        line = phases_line(phase_seconds(Path(path)))
        if line:
            console.print(line, highlight=False)
        for line in method_meta_lines(results.method, method_meta(Path(path))):
            console.print(line, highlight=False, soft_wrap=True)
    return 0


def cmd_table(args: argparse.Namespace, console: Console) -> int:
    from .analysis import table as agg

    summaries = agg.summaries([Path(p) for p in args.runs])
    if not summaries:
        raise TsrError(f"no runs under {', '.join(args.runs)}")
    metrics = agg.METRICS + (agg.LOSS_METRICS if args.loss else ()) + (agg.gen_metrics(summaries) if args.gen else ())
    cells, settings, methods = agg.aggregate(summaries, metrics)
    pending = agg.unfinished(summaries)
    if args.format == "md":
        sys.stdout.write(agg.markdown_table(cells, settings, methods, metrics))
    elif args.format == "csv":
        sys.stdout.write(agg.csv_table(cells, settings, methods, metrics))
    elif args.format == "latex":
        sys.stdout.write(agg.latex_table(cells, settings, methods, metrics))
    elif len(pending) < len(summaries):
        console.print(agg.rich_table(cells, settings, methods, metrics))
        console.print(f"[dim]{len(summaries) - len(pending)} finished runs[/]")
    else:  # a grid that has only started: no table, the runs in progress below
        console.print("no run has finished yet", highlight=False)
    if args.plot:
        from .analysis.table_figure import write_comparison_figure

        write_comparison_figure(Path(args.plot), summaries, metrics)
        Console(stderr=True).print(f"figure written to {args.plot}", highlight=False)
    if pending:  # a grid in progress: what is not in the table yet (stderr, so md/csv stay clean)
        err = Console(stderr=True)
        err.print(f"{len(pending)} unfinished run(s), not in the table:", highlight=False)
        for line in pending:
            err.print(f"  {line}", highlight=False, soft_wrap=True)
    return 0


def cmd_index(args: argparse.Namespace, console: Console) -> int:
    from .engine.store import INDEX, rebuild

    count = rebuild(Path(args.folder))
    console.print(f"indexed {count} run(s) into {Path(args.folder) / INDEX}")
    return 0


def cmd_methods(args: argparse.Namespace, console: Console) -> int:
    from .methods.registry import listing

    for name, line in listing():  # built in, registered, and installed packages' (entry points)
        console.print(f"[bold]{escape(name):16}[/] {escape(line)}", highlight=False, soft_wrap=True)
    return 0


def cmd_config(args: argparse.Namespace, console: Console) -> int:
    from .config import dump_yaml, load_config
    from .engine.run import check_stream

    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    check_stream(cfg)  # the stream's own checks (options, root, order, the method's needs), as `tsr run`
    sys.stdout.write(dump_yaml(cfg))
    return 0


def _executor(args: argparse.Namespace):
    from .engine.pool import Executor

    return Executor(args.executor, args.ray_address, args.gpus_per_run)


def _add_executor_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local worker processes (default) or Ray (docs/cluster.md)")
    p.add_argument("--ray-address", help="ray: auto (the cluster this machine is in) or HOST:PORT; "
                   "default: a local Ray instance")
    p.add_argument("--gpus-per-run", type=float, default=0.0, help="ray: GPU share per run (0.25: four runs a GPU)")


def _csv(text: str | None, cast=str, flag: str = "a list") -> list | None:
    try:
        return None if not text else [cast(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise TsrError(f"{flag}: {text!r} is not a comma-separated list of {cast.__name__}s") from None


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from .analysis.report import write_html_report

    out, found = write_html_report(Path(args.dir), Path(args.out) if args.out else None)
    console.print(f"{len(found.runs)} run(s), {len(found.probes)} probe report(s), {len(found.audits)} audit "
                  f"report(s): written to {out}",
                  highlight=False, soft_wrap=True)
    return 0


def cmd_pretrain(args: argparse.Namespace, console: Console) -> int:
    from .model.pretrain import PretrainConfig, pretrain
    from .schema import build

    data: dict = {}
    for text in args.items:
        data.update({k: v for k, v in parse_override_flat(text).items()})
    cfg = build(PretrainConfig, data)
    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not args.force:
        raise TsrError(f"{out}: exists and is not empty; pass --force to overwrite")
    err = Console(stderr=True)

    def report(step: int, loss: float) -> None:
        if step % 250 == 0 or step == cfg.steps:
            err.print(f"  step {step}/{cfg.steps} loss {loss:.3f}")

    record = pretrain(cfg, out, report)
    console.print(f"saved to {out}: {record['parameters']:,} parameters, final loss {record['final_loss']:.3f}, "
                  f"{record['seconds']:.0f}s, weights sha256 {record['weights_sha256'][:16]}")
    return 0


def parse_override_flat(text: str) -> dict:
    from .config import parse_override

    return parse_override(text)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="tsr", description="Continual fine-tuning with Transfer-Selective Replay.")
    parser.add_argument("--version", action="version", version=f"tsr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str, func) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=EXAMPLES.get(name),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(func=func)
        return p

    p = add("run", "Train one adapter through a stream of tasks and save the run.", cmd_run)
    p.add_argument("items", nargs="*", metavar="CONFIG | key=value",
                   help="a config file or preset name, then key.sub=value overrides")
    p.add_argument("--quiet", action="store_true", help="no live progress")

    p = add("table", "Aggregate finished runs into mean ± std per method (paper's Table 3 layout).", cmd_table)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories or folders of runs")
    p.add_argument("--format", choices=("text", "md", "csv", "latex"), default="text",
                   help="latex: the paper's Table-3 layout (booktabs)")
    p.add_argument("--loss", action="store_true", help="add the generation-loss metrics")
    p.add_argument("--gen", action="store_true", help="add the generation metrics (ROUGE-L, edit similarity, SARI) "
                   "of runs made with eval.predictions")
    p.add_argument("--plot", metavar="FILE.png", help="also draw Overall and BWT (with --loss their loss twins) per "
                   "method, each run a dot, into this image")

    from .interface.deploy import add_export_parser, add_learn_parsers

    add_learn_parsers(add)

    p = add("index", "Rebuild the results store (index.sqlite) of a folder of runs from its run folders.", cmd_index)
    p.add_argument("folder", metavar="DIR")

    p = add("show", "Print the results matrix and metrics of runs.", cmd_show)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")

    add("methods", "List the methods and presets.", cmd_methods)

    p = add("config", "Print a resolved config (defaults, preset, file and overrides).", cmd_config)
    p.add_argument("items", nargs="*", metavar="CONFIG | key=value")

    from .interface.probe import add_probe_parser

    add_probe_parser(add)

    from .interface.audit import add_audit_parser

    add_audit_parser(add)

    from .interface.signatures import add_signatures_parser

    add_signatures_parser(add)

    from .interface.compare import add_compare_parser

    add_compare_parser(add)

    add_export_parser(add)

    p = add("report", "Write one self-contained HTML page for a folder of runs or a probe folder.", cmd_report)
    p.add_argument("dir", metavar="DIR", help="a run folder, a folder of runs (a compare out_dir) or a probe folder")
    p.add_argument("--out", help="the HTML file to write (default: DIR/report.html)")

    p = add("pretrain-base", "Pretrain the bundled tiny base model from its seed.", cmd_pretrain)
    p.add_argument("items", nargs="*", metavar="key=value", help="PretrainConfig overrides (seed, steps, hidden, ...)")
    p.add_argument("--out", default="base", help="output folder (default: ./base)")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty output folder")
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse, letting CONFIG / key=value items sit anywhere among a command's options
    (``tsr probe key=v --arms x key2=w``): argparse alone takes only the first run of them."""
    args, extra = parser.parse_known_args(argv)
    if extra and hasattr(args, "items") and not any(x.startswith("-") for x in extra):
        args.items = [*(args.items or []), *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="peft")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        args = _parse(build_parser(), argv)
    except TsrError as err:
        return _fail(err)
    args.argv_tail = list(argv if argv is not None else sys.argv[1:])[2:] if args.command == "audit" else []
    # `kill` (SIGTERM) stops a command as Ctrl-C does: worker pools are torn down on the way out
    # instead of running on as orphans, and what is finished stays saved
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    console = Console() if sys.stdout.isatty() else Console(width=160)  # logs and pipes: no squeezing
    try:
        return args.func(args, console)
    except TsrError as err:
        return _fail(err)
    except OSError as err:
        if err.errno not in SYSTEM_FAULTS:
            raise
        return _fail(TsrError(f"{err.filename or 'a file'}: {reason(err)}"))
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted; finished tasks are saved: run the same command again to resume")
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _fail(err: TsrError) -> int:
    # the message is text, not markup: a path such as `runs[old]/x.yaml` must print as it is
    Console(stderr=True).print(f"[red]tsr: error:[/] {escape(str(err))}", highlight=False, soft_wrap=True)
    return 2


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
