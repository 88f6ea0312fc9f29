"""On which kinds of machine a set of runs was made, read from each run's ``run.json``.

Runs of one config and seed made on different processors, instruction sets, torch versions or
thread counts, or with compiled against eager blocks, are different samples of the run, not the
same run (float rounding grows over thousands of steps: docs/rundir.md), so a comparison paired
by seed is only paired where both runs were made on one kind of machine. The tables and audits
say so when their runs span more than one kind.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Iterable

KEYS = ("cpu", "cpu_capability", "torch", "threads", "compiled", "deterministic", "gpu", "processes")
# what a record made before a key existed means by its absence: tsr never turned torch's
# deterministic algorithms on before it recorded the flag; a run records its processes only
# when a launcher started more than one
ABSENT = {"deterministic": False, "processes": 1}


def machine_key(machine: dict) -> tuple:
    """The recorded facts of :data:`KEYS` in order: equal keys, one kind of machine."""
    return tuple(machine.get(k, ABSENT.get(k)) for k in KEYS)


def machine_label(machine: dict) -> str:
    """``CPU (ISA, torch V, N thread(s)[, eager][, deterministic][, GPU])``."""
    parts = [str(machine.get("cpu_capability", "?")), f"torch {machine.get('torch', '?')}",
             f"{machine.get('threads', '?')} thread(s)"]
    parts += ["eager"] if machine.get("compiled") is False else []
    parts += ["deterministic"] if machine.get("deterministic") else []
    parts += [str(machine["gpu"])] if machine.get("gpu") else []
    parts += [f"{machine['processes']} processes"] if machine.get("processes", 1) > 1 else []
    return f"{machine.get('cpu', '?')} ({', '.join(parts)})"


NOT_RECORDED = "machine not recorded"


def recorded_name(machine: object) -> str:
    """:func:`machine_name` of a recorded machine dict; :data:`NOT_RECORDED` where there is none
    (an arm or audit made before they recorded it)."""
    return machine_name(machine_key(machine)) if isinstance(machine, dict) else NOT_RECORDED


def machine_name(machine: tuple) -> str:
    """``Intel Xeon AVX512, 1 thread`` (``, eager`` for eager blocks; torch where it is not 2.13.0)."""
    m = dict(zip(KEYS, machine))
    cpu = re.sub(r"\((R|TM)\)|Processor|CPU|@.*", "", str(m.get("cpu") or "?")).split()
    name = f"{' '.join(cpu[:3])} {m.get('cpu_capability') or '?'}, {m.get('threads')} thread" \
        + ("s" if m.get("threads") != 1 else "")
    if m.get("compiled") is False:
        name += ", eager"
    if m.get("torch") and not str(m["torch"]).startswith("2.13.0"):
        name += f", torch {m['torch']}"
    return name + (f", {m['gpu']}" if m.get("gpu") else "")


def run_machine(path: Path) -> dict | None:
    """The machine recorded in a run folder's ``run.json``; None for a run that predates the
    record or whose ``run.json`` cannot be read."""
    try:
        meta = json.loads((Path(path) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    machine = meta.get("machine") if isinstance(meta, dict) else None
    return dict(zip(KEYS, machine_key(machine))) if isinstance(machine, dict) else None


def machine_kinds(paths: Iterable[Path]) -> tuple[Counter, int]:
    """(runs per machine label, runs without a record)."""
    kinds: Counter = Counter()
    unknown = 0
    for path in paths:
        machine = run_machine(path)
        if machine is None:
            unknown += 1
        else:
            kinds[machine_label(machine)] += 1
    return kinds, unknown


def machines_note(paths: Iterable[Path]) -> str:
    """One line when the runs were made on more than one kind of machine, or when some recorded
    theirs and some (made before the record) did not; empty otherwise."""
    kinds, unknown = machine_kinds(paths)
    listed = "; ".join(f"{label}: {n} run(s)" for label, n in sorted(kinds.items()))
    if len(kinds) > 1:
        before = f"; {unknown} run(s) from before the record" if unknown else ""
        return (f"made on {len(kinds)} kinds of machine ({listed}{before}): runs of one seed on different kinds "
                "are different samples, not a pair")
    if kinds and unknown:
        return (f"{unknown} run(s) did not record their machine (the others: {listed}): whether the runs of each "
                "seed shared one is not known")
    return ""
