"""The `tsr` command's entry point: the top-level parser (each command adds itself), parsing,
and what every command shares on the way out (errors as one line, Ctrl-C and SIGTERM). Thin:
every command calls a library function a test also calls."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading
import warnings

from rich.markup import escape

from ..errors import TsrError, reason
from .args import one_line_errors
from .console import plain_console
from . import audits
from .commands import (archive, base, compare, config, export, index, learn, methods, predict, pretrain, probe, report,
                       run, show, signatures, table)

# in the order `tsr --help` lists them
COMMANDS = (run, table, learn, predict, index, archive, show, methods, config, probe, audits, signatures, compare,
            export, report, pretrain, base)

# what the system refuses (a full or read-only disk, no permission, a file where a folder should
# be) wherever a command writes: one line naming the file, exit 2; what was saved stays saved
SYSTEM_FAULTS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR,
                 errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.EIO}


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(prog="tsr", description="Continual fine-tuning with Transfer-Selective Replay.")
    parser.add_argument("--version", action="version", version=f"tsr {__version__}")
    one_line_errors(parser)
    sub = parser.add_subparsers(dest="command")
    for command in COMMANDS:
        command.add_parser(sub)
    parser.set_defaults(commands=tuple(sub.choices))  # for the error of a bare `tsr`
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
    if args.command is None:
        names = ", ".join(args.commands)
        return _fail(TsrError(f"name a command, one of: {names} (`tsr --help` says what each does)"))
    args.argv_tail = list(argv if argv is not None else sys.argv[1:])[2:] if args.command == "audit" else []
    if args.command != "run" and "WORLD_SIZE" in os.environ:
        from ..engine.parallel import launched_processes

        if launched_processes() > 1:  # a launcher's processes would each run the whole command
            return _fail(TsrError(f"`tsr {args.command}` runs in one process; only `tsr run` is data-parallel "
                                  "under `accelerate launch` or `torchrun` (docs/cluster.md)"))
    # `kill` (SIGTERM) stops a command as Ctrl-C does: worker pools are torn down on the way out
    # instead of running on as orphans, and what is finished stays saved
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    console = plain_console() if sys.stdout.isatty() else plain_console(width=160)  # logs and pipes: no squeezing
    try:
        return args.func(args, console)
    except TsrError as err:
        return _fail(err)
    except OSError as err:
        if err.errno not in SYSTEM_FAULTS:
            raise
        return _fail(TsrError(f"{err.filename or 'a file'}: {reason(err)}"))
    except KeyboardInterrupt:
        plain_console(stderr=True).print("interrupted; finished tasks are saved: run the same command again to resume")
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _fail(err: TsrError) -> int:
    # the message is text, not markup: a path such as `runs[old]/x.yaml` must print as it is
    plain_console(stderr=True).print(f"[red]tsr: error:[/] {escape(str(err))}", markup=True, highlight=False,
                                     soft_wrap=True)
    return 2


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
