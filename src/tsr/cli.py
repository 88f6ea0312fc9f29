"""Command-line interface. Thin: every command calls a library function a test also calls."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

from rich.console import Console

from .errors import TsrError

EXAMPLES = {
    "run": """examples:
  tsr run                                   # TSR on the bundled synth-trace stream
  tsr run method.name=er seed=1             # ER instead, another seed
  tsr run my_stream.yaml                    # your own config file
  tsr run paper model.path=/models/qwen2.5-0.5b stream.source=trace8 stream.root=/data/TRACE
Running the same command again resumes an interrupted run after its last finished task.""",
    "table": """examples:
  tsr table runs/                           # every finished run under runs/
  tsr table runs/a runs/b --format md       # markdown for a report""",
    "show": """example:
  tsr show runs/synth-trace-tsr-s0-1a2b3c4d5e""",
    "methods": """example:
  tsr methods""",
    "config": """example:
  tsr config paper train.steps=100          # print the resolved config""",
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
    from .display import ConsoleReporter, metrics_table, results_table
    from .runner import execute

    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    outcome = execute(cfg, None if args.quiet else ConsoleReporter(Console(stderr=True)))
    if outcome.already_finished:
        console.print(f"[dim]{outcome.run.path} is already finished; showing its results[/]")
    elif outcome.resumed_from:
        console.print(f"[dim]resumed after task {outcome.resumed_from}[/]")
    console.print(results_table(outcome.results, title=f"results · {outcome.results.method}"))
    console.print(metrics_table(outcome.results))
    console.print(f"saved to {outcome.run.path}")
    return 0


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    from .display import metrics_table, results_table
    from .results import load_results

    for path in args.runs:
        results = load_results(Path(path))
        console.print(results_table(results, title=f"{path} · {results.method} · seed {results.seed}"))
        if results.finished:
            console.print(metrics_table(results))
    return 0


def cmd_table(args: argparse.Namespace, console: Console) -> int:
    from . import aggregate as agg

    runs = agg.find_runs([Path(p) for p in args.runs])
    if not runs:
        raise TsrError(f"no finished runs under {', '.join(args.runs)}")
    summaries = [agg.summarise(p) for p in runs]
    metrics = agg.METRICS + (agg.LOSS_METRICS if args.loss else ())
    cells, settings, methods = agg.aggregate(summaries, metrics)
    if args.format == "md":
        sys.stdout.write(agg.markdown_table(cells, settings, methods, metrics))
    elif args.format == "csv":
        sys.stdout.write(agg.csv_table(cells, settings, methods, metrics))
    else:
        console.print(agg.rich_table(cells, settings, methods, metrics))
        console.print(f"[dim]{len(runs)} runs[/]")
    return 0


def cmd_methods(args: argparse.Namespace, console: Console) -> int:
    from .methods.registry import METHODS, PRESETS, describe

    for name in sorted(METHODS):
        console.print(f"[bold]{name:16}[/] {describe(name)}")
    for name in sorted(PRESETS):
        console.print(f"[bold]{name:16}[/] preset of {PRESETS[name][0]}: {PRESETS[name][2]}")
    return 0


def cmd_config(args: argparse.Namespace, console: Console) -> int:
    from .config import dump_yaml, load_config, with_method
    from .methods.registry import resolve_method

    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    cfg = with_method(cfg, resolve_method(cfg.method).to_config())
    sys.stdout.write(dump_yaml(cfg))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tsr", description="Continual fine-tuning with Transfer-Selective Replay.")
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
    p.add_argument("--format", choices=("text", "md", "csv"), default="text")
    p.add_argument("--loss", action="store_true", help="add the generation-loss metrics")

    p = add("show", "Print the results matrix and metrics of runs.", cmd_show)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")

    add("methods", "List the methods and presets.", cmd_methods)

    p = add("config", "Print a resolved config (defaults, preset, file and overrides).", cmd_config)
    p.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    return parser


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="peft")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    console = Console()
    try:
        return args.func(args, console)
    except TsrError as err:
        Console(stderr=True).print(f"[red]tsr: error:[/] {err}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted; finished tasks are saved: run the same command again to resume")
        return 130


if __name__ == "__main__":
    sys.exit(main())
