"""The consoles the commands print on: text as written, styling only where a line asks for it."""

from __future__ import annotations

import sys

from rich.console import Console


def plain_console(stderr: bool = False, **kwargs) -> Console:
    """A console that prints text as written: a name, path or message holding brackets
    (``[bold red]x``) is never read as rich markup. A line styled on purpose says so
    (``markup=True``) and escapes what it quotes (:func:`rich.markup.escape`). Off a terminal
    (a log file, a pipe) a printed line is never wrapped: one record per line."""
    stream = kwargs.get("file") or (sys.stderr if stderr else sys.stdout)
    if not _is_terminal(stream):
        kwargs.setdefault("soft_wrap", True)
    return Console(stderr=stderr, markup=False, **kwargs)


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream: not a terminal
        return False
