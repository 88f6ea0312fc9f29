"""The paired section of `tsr report --against METHOD`: every method minus METHOD, run by run.

The comparison table gives each method's mean ± std over seeds; a claim is judged on the
difference of two methods' runs of the same seed (docs/claims.md). This section shows that
difference for each setting: a table (:func:`tsr.analysis.versus.versus`: mean ± standard
error, ``*`` beyond two, the seeds ahead on Overall), its Overall column shaded green where the
method is ahead and red where it is behind, by the difference over two standard errors (so a
shade is never stronger than the noise allows), a figure of every seed's difference
(:mod:`tsr.analysis.versus_figure`), and, where they exist, the pairs whose two runs were made
on different kinds of machine, which are two samples rather than a pair.
"""

from __future__ import annotations

import math

from .cells import fmt_paired
from .html import Cell, diverging, esc, figure, png_bytes, table, text
from .table import METRICS, axes
from .versus import mixed_pairs, mixed_pairs_line, seed_differences, versus
from .versus_figure import paired_figure

HEADERS = {"overall": "Overall", "plas": "Plas", "bwt": "BWT"}
CAPTION = ("Each method's run minus {ref}'s run of the same seed, over the seeds both finished: mean ± "
           "standard error of the differences (* beyond two standard errors); ahead: the seeds where the "
           "method's Overall is higher. Overall's cell is shaded green where the method is ahead on the mean, "
           "red where it is behind, deeper as the difference grows against its standard error (deepest at "
           "two standard errors or beyond).")


def _shade(d: dict) -> str:
    """Overall's background: green ahead, red behind, by the difference in units of two standard
    errors (white at zero, deepest at two or beyond); none for fewer than two seeds."""
    if d["n"] < 2 or not math.isfinite(d["mean"]) or not math.isfinite(d["se"]):
        return ""
    if d["se"] == 0:  # every seed's difference the same: beyond any noise unless it is zero
        return diverging(0.0 if d["mean"] == 0 else math.copysign(1.0, d["mean"]))
    return diverging(d["mean"] / (2 * d["se"]))


def _table(rows: dict[str, dict[str, dict]], order: list[str], reference: str) -> str:
    methods = [m for m in order if m in rows] + sorted(m for m in rows if m not in order)
    body = []
    for method in methods:
        d = rows[method]
        cells = [text(method)]
        for metric in METRICS:
            shade = _shade(d[metric]) if metric == "overall" else ""
            cells.append(Cell(esc(fmt_paired(d[metric])), num=True, style=shade))
        ahead = d["overall"]
        cells.append(Cell(f"{ahead['wins']} of {ahead['n']}" if ahead["n"] else "–", num=True))
        body.append(cells)
    return table(["method", *(f"{HEADERS[m]} − {reference}" for m in METRICS), "ahead (Overall)"], body,
                 CAPTION.format(ref=esc(reference)), numeric={1, 2, 3, 4})


def paired_section(found, reference: str) -> str:
    """The section for a :class:`tsr.analysis.report.Found`; a reference without a finished run
    is :func:`versus`'s one-line error."""
    summaries = [r.summary for r in found.runs]
    vs = versus(summaries, reference, METRICS, found.labels)
    settings, methods = axes(summaries, found.labels)
    parts = [f'<h2 id="paired">Paired against {esc(reference)}</h2>']
    for setting in [s for s in settings if vs.get(s)] + sorted(s for s in vs if s not in settings and vs[s]):
        parts.append(found.heading(setting) + _table(vs[setting], methods, reference))
    diffs = seed_differences(summaries, reference, "overall", found.labels)
    if any(diffs.values()):
        fig = paired_figure(diffs, vs, reference, settings, methods,
                            title=f"paired against {reference} · {found.root.resolve().name}")
        parts.append(figure(png_bytes(fig), f"each method minus {reference}, seed by seed",
                            f"Overall − {esc(reference)} for each seed (small dots) and its mean with bars of "
                            "one (thick) and two (thin) standard errors, one panel per setting."))
    if line := mixed_pairs_line(mixed_pairs(summaries, reference, found.labels), reference):
        parts.append(f'<p class="problem">{esc(line)}</p>')
    return "\n".join(parts)
