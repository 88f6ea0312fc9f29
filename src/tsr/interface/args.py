"""What the commands' parsers share: adding a command, CONFIG / key=value items, comma-separated
lists, the executor and --trust-remote-code flags, and flags that stand for a default defined
elsewhere.

A flag whose value is a hyperparameter or a protocol constant has no default of its own: it
parses to None when left out, and the command fills in the value from the one place it is
defined (a method's parameters, an audit's plan module), through a :class:`Default` that the
flag's help text prints too. Pure command-line mechanics (``--workers``, ``--format``) keep
ordinary argparse defaults."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import TsrError
from ..schema import defined

ITEMS = "CONFIG | key=value"


def add(sub, name: str, help_text: str, func, epilog: str | None = None) -> argparse.ArgumentParser:
    """The subcommand ``name`` of ``sub`` (an ``add_subparsers`` action): its help line and
    description ``help_text``, its examples ``epilog`` kept as written, run by ``func(args, console)``."""
    p = sub.add_parser(name, help=help_text, description=help_text, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    one_line_errors(p)
    return p


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Usage errors of this parser as one ``tsr: error:`` line (exit 2), not usage + message;
    a subcommand's line names it (``tsr: error: tsr compare: argument --workers: ...``)."""
    def error(message: str):
        raise TsrError(message if parser.prog == "tsr" else f"{parser.prog}: {message}")

    parser.error = error  # type: ignore[method-assign]


def split_items(items: list[str]) -> tuple[str | None, list[str]]:
    """A command's CONFIG / key=value items: at most one config (a file or preset name), then the
    overrides."""
    config, overrides = None, []
    for item in items:
        if "=" in item:
            overrides.append(item)
        elif config is None:
            config = item
        else:
            raise TsrError(f"more than one config given ({config!r} and {item!r})")
    return config, overrides


def csv_list(text: str | None, cast=str, flag: str = "a list") -> list | None:
    """A comma-separated list (None for no text), each entry cast; a bad entry is one error naming ``flag``."""
    try:
        return None if not text else [cast(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise TsrError(f"{flag}: {text!r} is not a comma-separated list of {cast.__name__}s") from None


def shown(value: Any) -> str:
    """A default as a flag's help prints it: a list comma-separated, numbers short (``0.25,0.5,1``)."""
    if isinstance(value, (tuple, list)):
        return ",".join(shown(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


class Default:
    """The value a flag stands for when it is left out, read from where it is defined once
    (``"module:NAME"``, or ``"module:Class.field"`` for a parameters dataclass's default), on first
    use: building the parser imports nothing heavy, and the help text and the command read the
    same constant."""

    def __init__(self, where: str):
        self.module, _, self.name = where.partition(":")

    def value(self) -> Any:
        return defined(f"{self.module}:{self.name}")

    def fill(self, given: Any) -> Any:
        """``given`` when the flag was given, else the default."""
        return self.value() if given is None else given

    def listed(self, text: str | None, cast=str, flag: str = "a list") -> list | None:
        """A comma-separated flag's list: the default's when the flag was left out, else its text's."""
        return list(self.value()) if text is None else csv_list(text, cast, flag)

    def __str__(self) -> str:
        return shown(self.value())


def option(p: argparse.ArgumentParser, *names: str, fallback: Default, **kwargs) -> argparse.Action:
    """A flag that parses to None when left out and stands for ``fallback``; its help may name
    the value as ``%(fallback)s``."""
    action = p.add_argument(*names, **kwargs)
    action.fallback = fallback  # read by the help formatter (argparse expands %(name)s from the action)
    return action


def add_items(p: argparse.ArgumentParser, **kwargs) -> None:
    """The CONFIG / key=value items of a command that runs a config."""
    p.add_argument("items", nargs="*", metavar=ITEMS, **kwargs)


def add_workers(p: argparse.ArgumentParser, help_text: str = "parallel processes") -> None:
    p.add_argument("--workers", type=positive_int, default=max(1, os.cpu_count() or 1), help=help_text)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_uneven_seeds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--uneven-seeds", action="store_true", help="compare cells that cover different seeds "
                   "(refused otherwise); each cell lists the seeds it covers")


def add_against(p: argparse.ArgumentParser) -> None:
    p.add_argument("--against", metavar="METHOD", help="also print each method minus METHOD, paired by seed "
                   "(mean ± se over the seeds both have, and the seeds where it is ahead on Overall)")


def add_executor_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local worker processes (default) or Ray (docs/cluster.md)")
    p.add_argument("--ray-address", help="ray: auto (the cluster this machine is in) or HOST:PORT; "
                   "default: a local Ray instance")
    p.add_argument("--gpus-per-run", type=float, help="ray: GPUs per run (0.25: four runs a GPU; 4: four GPUs, "
                   "with --processes-per-run 4)")
    p.add_argument("--processes-per-run", type=int, help="train each run data-parallel on N processes (torchrun; "
                   "with --gpus-per-run N, one GPU each)")


def executor(args: argparse.Namespace):
    """The :class:`tsr.engine.executor.Executor` of the executor flags (its own defaults for those left out)."""
    from ..engine.executor import Executor

    share = {} if args.gpus_per_run is None else {"gpus_per_run": args.gpus_per_run}
    if args.processes_per_run is not None:
        share["processes_per_run"] = args.processes_per_run
    return Executor(args.executor, args.ray_address, **share)


def add_trust_flag(p: argparse.ArgumentParser, whose: str) -> None:
    p.add_argument("--trust-remote-code", action="store_true",
                   help=f"let {whose}'s model run its own code (model.trust_remote_code in its saved config, which "
                   "alone never turns it on); only for a model whose code you trust")

