"""What every audit is: a typed params dataclass and one object that plans, runs and reports it.

An audit (``tsr audit NAME``, ``tsr probe``) is data. Its :class:`Audit` object names it, says
in a line what it measures, shows examples, and holds ``Params``: a frozen dataclass whose
fields are what the audit measures (``seeds``, ``targets``, ``teachers``, ...), each declared
with :func:`param` (its help line, its default, and where a default defined elsewhere lives).
How it runs is not a param: the run config (``CONFIG key=value`` items), the worker count, the
executor, ``report_only`` and ``uneven_seeds`` come in a :class:`Session`, and its lines go to
the session's :class:`Reporter`. :func:`conduct` plans (every check, nothing written), runs
(trains what is missing; with ``report_only`` reads what is saved) and reports (writes the
files). The command line's one driver (:mod:`tsr.interface.audits.driver`) turns ``key=value``
items into ``Params`` and calls :func:`conduct`.

Nothing here, and no audit's ``Params``, imports torch: an audit module imports what trains
inside its methods, so the command line lists every audit's params cheaply.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import defined

FLAGS = ("workers", "executor", "report_only", "uneven_seeds")  # the session settings an audit may take
ARM_FLAGS = FLAGS[:3]  # an audit of probe arms: no cells of seeds to compare
GRID_FLAGS = FLAGS  # an audit of a grid of runs


def param(help: str, default: Any = None, *, default_from: str | None = None, shows: str | None = None,
          flag: str | None = None, bare: str | None = None) -> Any:
    """A field of an audit's ``Params``, ``help`` its line in ``--help``.

    ``default_from`` (``"module:NAME"``): the value the field stands for when left at None,
    defined once there and read when the audit runs (:func:`filled`). ``shows``: the constant
    a default the audit derives is made from (``N_max`` from the pools, below ``500``), printed
    by the help as ``%(fallback)s``. ``flag``: the old option spelling when it is not
    ``--name`` (``--from``); ``bare``: what that option stands for given without a value."""
    metadata = {"help": help, "default_from": default_from, "shows": shows, "flag": flag, "bare": bare}
    return dataclasses.field(default=default, metadata={k: v for k, v in metadata.items() if v is not None})


def filled(params: Any) -> Any:
    """``params`` with every field left at None that names a ``default_from`` set to that value."""
    values = {f.name: defined(f.metadata["default_from"]) for f in dataclasses.fields(params)
              if "default_from" in f.metadata and getattr(params, f.name) is None}
    return dataclasses.replace(params, **values) if values else params


class Reporter:
    """Where an audit's lines go. This one drops them (an audit called from Python); the command
    line's prints them (:mod:`tsr.interface.audits.driver`)."""

    def say(self, text: str) -> None:
        """A line of the audit's own output: what it is about to do, a note on what it found."""

    def note(self, text: str) -> None:
        """A line on the side (stderr): how far a run that has not finished got."""

    def progress(self, done: int, total: int, what: str) -> None:
        """One more of ``total`` arms (or starting points) is saved; ``what`` says of what
        (``arms (parity mixed)``)."""

    def run(self, point: Any, path: str, done: int, total: int) -> None:
        """One more of ``total`` runs of a grid has finished (:class:`tsr.engine.grid.Point`)."""

    def task(self, event: Any) -> None:
        """A run of a grid has finished one more task (:class:`tsr.engine.grid.TaskDone`)."""


@dataclass(frozen=True)
class Session:
    """How an audit runs, not what it measures: its run config (a file or preset and
    ``key=value`` overrides), its workers and executor (None: local processes), whether it only
    reports what is saved, whether cells of different seeds may be compared, the command line
    its report records, and where its lines go."""

    config: str | None = None
    overrides: tuple[str, ...] = ()
    workers: int = 1
    executor: Any = None
    report_only: bool = False
    uneven_seeds: bool = False
    command: str | None = None
    reporter: Reporter = dataclasses.field(default_factory=Reporter)


@dataclass(frozen=True)
class Report:
    """What an audit wrote: the folder, and the text the command prints (its markdown)."""

    out: Path
    text: str


class Audit:
    """One audit: its name, its help line and examples, its ``Params``, the :data:`FLAGS` its
    session takes, whether it runs a config (else ``positional`` is the field a bare
    command-line item gives, and how the help names it: ``("run", "RUN_DIR")``), and its three
    steps."""

    name: str
    summary: str
    examples: str
    Params: type
    flags: tuple[str, ...] = ()
    config: bool = True
    positional: tuple[str, str] | None = None

    def plan(self, params: Any, session: Session) -> Any:
        """Every check before anything runs or is written; what :meth:`run` and :meth:`report` need."""
        raise NotImplementedError

    def run(self, plan: Any, session: Session) -> Any:
        """What the report reads: trained where missing, or with ``report_only`` only read back."""
        raise NotImplementedError

    def report(self, plan: Any, found: Any, session: Session) -> Report:
        """Write the report's files."""
        raise NotImplementedError


def conduct(audit: Audit, params: Any, session: Session | None = None) -> Report:
    """Plan, run and report ``audit`` with ``params`` (its defaults filled in)."""
    session = session or Session()
    plan = audit.plan(filled(params), session)
    return audit.report(plan, audit.run(plan, session), session)
