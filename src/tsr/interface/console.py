"""The consoles the commands print on: text as written, styling only where a line asks for it."""

from __future__ import annotations

from rich.console import Console


def plain_console(stderr: bool = False, **kwargs) -> Console:
    """A console that prints text as written: a name, path or message holding brackets
    (``[bold red]x``) is never read as rich markup. A line styled on purpose says so
    (``markup=True``) and escapes what it quotes (:func:`rich.markup.escape`). Off a terminal
    (a log file, a pipe) a printed line is never wrapped: one record per line."""
    console = Console(stderr=stderr, markup=False, **kwargs)
    if not console.is_terminal and "soft_wrap" not in kwargs:
        console.soft_wrap = True
    return console
