"""A comparison's methods against one of them, paired by seed (``tsr compare --against``,
``tsr table --against``).

The comparison table gives each method mean ± std over seeds; a claim such as "TSR ≥ ER" is
judged on the difference of the two methods' runs of the same seed (docs/claims.md), whose
spread is usually far smaller than either method's. This module computes that difference for
every method of a setting against the reference method of the same setting, over the seeds
both have: mean ± standard error, and the seeds where the method is ahead on Overall (lower is
ahead for a loss metric, which the ``ahead`` count does not cover).
"""

from __future__ import annotations

import math

from rich.table import Table

from ..errors import TsrError
from .cells import fmt_paired, paired
from .machines import machine_label, run_machine
from .numbers import MISSING
from .table import Labels, RunSummary, metric_value, run_labels

Versus = dict[str, dict[str, dict[str, dict]]]  # {setting: {method: {metric: paired difference}}}

TITLE = "paired by seed, method − {ref}: mean ± se over the seeds both have (* beyond two standard errors)"


def reference_row(rows: list[str], reference: str) -> str | None:
    """The row of a setting that ``reference`` names: the row of that label, else the one row of
    that method when its rows carry parameters (``tsr (kd_weight=0.5)``); None where it has none."""
    if reference in rows:
        return reference
    same = [r for r in rows if r.split(" (")[0] == reference]
    if len(same) > 1:
        raise TsrError(f"--against {reference}: the method has several rows ({', '.join(same)}); name one of them")
    return same[0] if same else None


def _runs(summaries: list[RunSummary], labels: Labels) -> dict[str, dict[str, dict[int, RunSummary]]]:
    """``{setting: {method: {seed: run}}}`` of the finished runs."""
    out: dict[str, dict[str, dict[int, RunSummary]]] = {}
    for s in summaries:
        if s.finished:
            setting, method = labels[s.path]
            out.setdefault(setting, {}).setdefault(method, {})[s.seed] = s
    return out


def versus(summaries: list[RunSummary], reference: str, metrics: tuple[str, ...],
           labels: Labels | None = None) -> Versus:
    """``{setting: {method: {metric: paired}}}``: each finished method of a setting minus that
    setting's ``reference`` row, paired by seed (:func:`tsr.analysis.cells.paired`). Settings
    without the reference are left out; none having it is a one-line :class:`TsrError`."""
    runs = _runs(summaries, labels if labels is not None else run_labels(summaries))
    out: Versus = {}
    for setting, rows in runs.items():
        cells = {method: {"seeds": {seed: {m: metric_value(s.metrics, m) for m in metrics} for seed, s in by.items()}}
                 for method, by in rows.items()}
        ref = reference_row(list(rows), reference)
        if ref is not None:
            out[setting] = {method: {m: paired(cell, cells[ref], m) for m in metrics}
                            for method, cell in cells.items() if method != ref}
    if not out:
        methods = sorted({m for rows in runs.values() for m in rows})
        raise TsrError(f"--against {reference}: no finished run of that method among these "
                       f"(methods: {', '.join(methods) or 'none'})")
    return out


def seed_differences(summaries: list[RunSummary], reference: str, metric: str = "overall",
                     labels: Labels | None = None) -> dict[str, dict[str, dict[int, float]]]:
    """``{setting: {method: {seed: difference}}}``: each finished method's ``metric`` minus its
    setting's ``reference`` row, seed by seed, over the seeds both have (the pairs that
    :func:`versus` summarises; a missing value is left out, as there)."""
    runs = _runs(summaries, labels if labels is not None else run_labels(summaries))
    out: dict[str, dict[str, dict[int, float]]] = {}
    for setting, rows in runs.items():
        ref = reference_row(list(rows), reference)
        if ref is None:
            continue
        for method, by in rows.items():
            if method != ref:
                diffs = {seed: metric_value(by[seed].metrics, metric) - metric_value(rows[ref][seed].metrics, metric)
                         for seed in sorted(set(by) & set(rows[ref]))}
                out.setdefault(setting, {})[method] = {s: d for s, d in diffs.items() if not math.isnan(d)}
    return out


def mixed_pairs(summaries: list[RunSummary], reference: str, labels: Labels | None = None) -> list[str]:
    """The pairs of :func:`versus` whose two runs recorded different kinds of machine
    (:mod:`tsr.analysis.machines`): ``method seed N`` (with the setting where there are several).
    Such a difference is two independent samples, not a pair; runs without a record are not
    counted (the machines line says when there are any)."""
    runs = _runs(summaries, labels if labels is not None else run_labels(summaries))
    out = []
    for setting, rows in runs.items():
        ref = reference_row(list(rows), reference)
        for method, by in rows.items():
            if ref is None or method == ref:
                continue
            for seed in sorted(set(by) & set(rows[ref])):
                kinds = [run_machine(s.path) for s in (by[seed], rows[ref][seed])]
                if None not in kinds and machine_label(kinds[0]) != machine_label(kinds[1]):
                    out.append(f"{method} seed {seed}" + (f" ({setting})" if len(runs) > 1 else ""))
    return out


def mixed_pairs_line(pairs: list[str], reference: str) -> str:
    """One line naming the pairs made on two kinds of machine; empty where there are none."""
    return (f"{len(pairs)} pair(s) against {reference} were made on two kinds of machine, so are two samples, "
            f"not a pair: {', '.join(pairs)}") if pairs else ""


def _ahead(diffs: dict[str, dict]) -> str:
    d = diffs.get("overall")
    return f"{d['wins']} of {d['n']}" if d and d["n"] else MISSING


def _rows(vs: Versus, settings: list[str], methods: list[str], metrics: tuple[str, ...]):
    for method in methods:
        if not any(method in vs.get(s, {}) for s in settings):
            continue
        row = [method]
        for setting in settings:
            diffs = vs.get(setting, {}).get(method, {})
            row += [fmt_paired(diffs.get(m)) for m in metrics] + [_ahead(diffs) if diffs else MISSING]
        yield row


def _settings(vs: Versus, order: list[str]) -> list[str]:
    return [s for s in order if s in vs] + sorted(s for s in vs if s not in order)


def rich_versus(vs: Versus, reference: str, settings: list[str], methods: list[str],
                metrics: tuple[str, ...]) -> Table:
    """The paired differences as a console table, in the comparison table's row order."""
    shown = _settings(vs, settings)
    table = Table(title=TITLE.format(ref=reference))
    table.add_column("method", style="bold")
    for s in shown:
        for m in (*metrics, "ahead (overall)"):
            table.add_column(f"{s}\n{m}", justify="right")
    for row in _rows(vs, shown, methods, metrics):
        table.add_row(*row)
    return table


def markdown_versus(vs: Versus, reference: str, settings: list[str], methods: list[str],
                    metrics: tuple[str, ...]) -> str:
    """The same as markdown, under a line that says what the cells are."""
    shown = _settings(vs, settings)
    header = ["method"] + [f"{s} {m}" for s in shown for m in (*metrics, "ahead (overall)")]
    lines = [TITLE.format(ref=reference), "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in _rows(vs, shown, methods, metrics)]
    return "\n".join(lines) + "\n"

