"""The comparison section of `tsr report`: one table per setting, its generation metrics, the
table as a figure, and the unfinished runs.

The cells are :func:`tsr.analysis.table.aggregate`'s (what `tsr table` prints), labelled by the
page's one call of :func:`tsr.analysis.table.run_labels`. Runs that computed generation metrics
(``eval.predictions``) add one small table per metric (ROUGE-L, edit similarity, SARI: Overall,
Plas and BWT over the tasks it scores), beside each other so the page stays narrow.
"""

from __future__ import annotations

import math
from typing import Any

from ..data.example import GEN_METRICS
from ..runs.results import Results
from ..runs.text_metrics import NAMES
from .html import Cell, esc, figure, number, png_bytes, table, text
from .seeds import seed_label, uneven
from .table import LOSS_METRICS, METRICS, aggregate, gen_metrics, seed_sets
from .table_figure import PLOTTED, comparison_figure

STATS = {"overall": "Overall", "plas": "Plas", "bwt": "BWT"}
HEADERS = {**STATS, "overall_loss": "Overall (L)", "plas_loss": "Plas (L)", "bwt_loss": "BWT (L)",
           **{f"{stat}_{m}": f"{head} {NAMES[m]}" for m in GEN_METRICS for stat, head in STATS.items()}}
LOWER_IS_BETTER = set(LOSS_METRICS)
CAPTION = ("Mean ± sample standard deviation over seeds (one seed: the mean alone), recomputed from each "
           "run's results.json. Overall, Plas and BWT: accuracy over the classification tasks (higher is "
           "better); (L): answer loss over the generation tasks (lower is better; a positive BWT (L) is "
           "forgetting). Runs share a row only when their configs differ in nothing but the seed. "
           "Bold: the best in its column; seeds: the seeds each row covers.")
GEN_CAPTION = ("{name} of the greedy predictions (eval.predictions) over the tasks scored by it: Overall, "
               "Plas and BWT as for accuracy (higher is better). Bold: the best in its column.")


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _cells(rows_of: dict[str, dict], seeds: dict[str, tuple[int, ...]], shown: list[str],
           headers: dict[str, str], caption: str) -> str:
    """The table of ``rows_of`` (method -> {metric: (mean, std, n)}) over the ``shown`` metrics;
    ``seeds``: the seeds each row covers."""
    best = {}
    for m in shown:
        means = [c[m][0] for c in rows_of.values() if _finite(c[m][0])]
        if len(set(means)) > 1:  # a column where every row ties has no best
            best[m] = min(means) if m in LOWER_IS_BETTER else max(means)
    rows = []
    for method, stats in rows_of.items():
        row = [text(method), Cell(seed_label(seeds.get(method, ())), num=True)]
        for m in shown:
            mean, std, n = stats[m]
            value = "–" if not _finite(mean) else number(mean, signed=m.startswith("bwt")) + (
                f" ± {number(std)}" if n > 1 else "")
            row.append(Cell(value, num=True, best=best.get(m) == mean))
        rows.append(row)
    return table(["method", "seeds", *(headers[m] for m in shown)], rows, caption,
                 numeric=set(range(1, len(shown) + 2)))


def _setting_tables(rows_of: dict[str, dict], seeds: dict[str, tuple[int, ...]], gen: tuple[str, ...]) -> str:
    def present(m: str) -> bool:
        return any(_finite(c[m][0]) for c in rows_of.values())

    spread = uneven(seeds)
    warn = (f" <strong>The rows cover different seeds ({esc(spread)}): compare them with care</strong> "
            "(<code>tsr table</code> refuses them without --uneven-seeds)." if spread else "")
    html = _cells(rows_of, seeds, [m for m in METRICS + LOSS_METRICS if present(m)], HEADERS, CAPTION + warn)
    blocks = []
    for name in GEN_METRICS:
        shown = [f"{stat}_{name}" for stat in STATS if f"{stat}_{name}" in gen and present(f"{stat}_{name}")]
        if shown:
            headers = {m: STATS[m.split("_", 1)[0]] for m in shown}
            blocks.append(f'<div><h4>{esc(NAMES[name])}</h4>'
                          + _cells(rows_of, seeds, shown, headers, GEN_CAPTION.format(name=NAMES[name])) + "</div>")
    return html + (f'<div class="grid">{"".join(blocks)}</div>' if blocks else "")


def comparison_section(found) -> str:
    """The page's comparison section for a :class:`tsr.analysis.report.Found`."""
    summaries = [r.summary for r in found.runs]
    gen = gen_metrics(summaries)
    cells, settings, methods = aggregate(summaries, METRICS + LOSS_METRICS + gen, found.labels)
    seeds = seed_sets(summaries, found.labels)
    parts = []
    for setting in settings:
        rows_of = {m: cells[setting][m] for m in methods if m in cells.get(setting, {})}
        parts.append(found.heading(setting) + _setting_tables(rows_of, seeds.get(setting, {}), gen))
    if len(methods) > 1:  # the table as a figure: each run a dot, so the spread is seen
        plotted = tuple(m for m in PLOTTED
                        if any(_finite(c[m][0]) for rows in cells.values() for c in rows.values()))
        fig = comparison_figure(summaries, plotted, f"comparison · {found.root.resolve().name}", found.labels)
        parts.append(figure(png_bytes(fig), "the comparison table as a figure",
                            "Each method's runs as small dots, the mean ± std over seeds as the large point, "
                            "one row of panels per setting; colours: the paper's row groups."))
    pending = [r for r in found.runs if not r.results.finished]
    if pending or found.started:
        rows = [[text(found.rel(r.path)), text(r.method), Cell(str(r.results.seed), num=True),
                 Cell(f"{r.results.completed} of {len(r.results.tasks)}", num=True)] for r in pending]
        rows += [[text(found.rel(p)), text(meta.get("method", "?")), Cell(esc(meta.get("seed", "?")), num=True),
                  Cell(f"0 of {len(meta.get('tasks', [])) or '?'}", num=True)] for p, meta in found.started]
        parts.append("<h3>Unfinished runs (not in the table)</h3>" + table(
            ["folder", "method", "seed", "tasks finished"], rows, numeric={2, 3}))
    if not settings:
        parts.insert(0, '<p class="note">No run has finished yet.</p>')
    return '<h2 id="table">Comparison table</h2>\n' + "\n".join(parts)


def metrics_line(results: Results) -> str:
    """A run's metrics in one line (those it has, generation metrics included)."""
    found = results.metrics()
    parts = [f"{HEADERS[m]} {number(found[m], signed=m.startswith('bwt'))}"
             for m in HEADERS if _finite(found.get(m))]
    return " · ".join(parts) if parts else "not finished"
