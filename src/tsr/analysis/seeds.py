"""Which seeds each cell of a comparison covers, and the refusal to compare cells that cover
different ones.

A mean over seeds 0-4 beside a mean over seeds 0-2 is not a comparison: the two cells differ
in the seeds as well as in the method (or teacher, or budget). Every comparison table names
the seeds of each cell (:func:`seed_label`), and the commands that print one refuse uneven
cells (:func:`check_even`) unless the user asks for them (``--uneven-seeds``); paired
differences already use only the seeds both cells share (:func:`tsr.analysis.cells.paired`).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..errors import RunError

UNEVEN_FLAG = "--uneven-seeds"


def seed_label(seeds: Iterable[int]) -> str:
    """The seeds as a short list: runs of three or more consecutive seeds as ``a-b``
    (``0-4``, ``0,2,5-7``), ``-`` for none."""
    values = sorted(set(int(s) for s in seeds))
    if not values:
        return "-"
    parts, start = [], values[0]
    for prev, cur in zip(values, values[1:] + [None]):
        if cur is not None and cur == prev + 1:
            continue
        if prev - start >= 2:
            parts.append(f"{start}-{prev}")
        else:
            parts.extend(str(s) for s in range(start, prev + 1))
        start = cur
    return ",".join(parts)


def uneven(groups: Mapping[str, Iterable[int]]) -> str | None:
    """``None`` when every non-empty group covers the same seeds, otherwise one phrase naming
    each distinct seed set and the groups that have it (``tsr: 0-4; seqft, er: 0-2``)."""
    by_set: dict[tuple[int, ...], list[str]] = {}
    for name, seeds in groups.items():
        key = tuple(sorted(set(int(s) for s in seeds)))
        if key:
            by_set.setdefault(key, []).append(str(name))
    if len(by_set) <= 1:
        return None
    ordered = sorted(by_set.items(), key=lambda kv: (-len(kv[0]), kv[0]))
    return "; ".join(f"{', '.join(names)}: {seed_label(seeds)}" for seeds, names in ordered)


def check_even(groups: Mapping[str, Iterable[int]], where: str, allow: bool = False) -> str | None:
    """Raise a one-line :class:`RunError` when the groups of ``where`` cover different seeds
    (unless ``allow``); return the phrase of :func:`uneven` (``None`` when even) so a table
    printed anyway can say it."""
    phrase = uneven(groups)
    if phrase and not allow:
        raise RunError(f"{where}: cells cover different seeds ({phrase}); finish the missing seeds, or pass "
                       f"{UNEVEN_FLAG} to compare them anyway (each cell then lists its seeds)")
    return phrase
