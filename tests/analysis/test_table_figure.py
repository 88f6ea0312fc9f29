"""tsr table --plot: the figure's cells are the table's, each run kept (tsr.analysis.table_figure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tsr.analysis.table import RunSummary, aggregate
from tsr.analysis.table_figure import comparison_figure, family, figure_cells


def _run(method: str, seed: int, overall: float, steps: str = "1000") -> RunSummary:
    cfg = {"method.name": method, "train.steps": steps, "seed": str(seed)}
    return RunSummary(Path(f"/r/{method}-{seed}-{steps}"), method, seed, "toy · base",
                      {"overall": overall, "plas": 0.5, "bwt": overall - 0.5}, cfg)


def test_figure_cells_are_the_tables_with_each_run():
    runs = [_run("tsr", 0, 0.80), _run("tsr", 1, 0.70), _run("seqft", 0, 0.10), _run("er", 0, 0.60),
            _run("er", 1, 0.64), _run("er", 0, 0.30, steps="300")]
    cells, settings, methods = figure_cells(runs, ("overall", "bwt"))
    table, table_settings, table_methods = aggregate(runs, ("overall", "bwt"))
    assert (settings, methods) == (table_settings, table_methods) == (
        ["toy · base · train.steps=1000", "toy · base · train.steps=300"], ["seqft", "er", "tsr"])
    for setting, rows in table.items():
        for method, stats in rows.items():
            for metric, (mean, std, n) in stats.items():
                assert cells[setting][method][metric] == {"mean": mean, "std": std, "n": n}
    tsr = cells["toy · base · train.steps=1000"]["tsr"]
    assert sorted(v["overall"] for v in tsr["seeds"].values()) == [0.70, 0.80]
    assert tsr["overall"]["mean"] == pytest.approx(0.75)
    assert list(cells["toy · base · train.steps=300"]) == ["er"]  # another config: its own panel row
    assert [family(m) for m in ("seqft", "ewc (lam=3.0)", "er", "tsr", "my_method")] == [0, 1, 2, 3, 3]


def test_one_row_of_panels_per_setting_and_rules_between_groups():
    runs = [_run(m, s, 0.1 * i + 0.01 * s) for i, m in enumerate(("seqft", "ewc", "lwf", "er", "tsr")) for s in (0, 1)]
    runs.append(_run("er", 0, 0.3, steps="300"))
    fig = comparison_figure(runs, ("overall", "bwt"))
    axes = fig.axes
    assert len(axes) == 4
    first, bwt, other = axes[0], axes[1], axes[2]
    assert [t.get_text() for t in first.get_xticklabels()] == ["seqft", "ewc", "lwf", "er", "tsr"]
    rules = sorted(line.get_xdata()[0] for line in first.get_lines() if line.get_linestyle() == ":")
    assert rules == [0.5, 2.5, 3.5]  # seqft | ewc lwf | er | tsr
    assert any(line.get_ydata()[0] == 0 for line in bwt.get_lines() if line.get_linestyle() == "-")  # BWT's zero
    assert [t.get_text() for t in other.get_xticklabels()] == ["er"]
    four = comparison_figure(runs[:4], ("overall", "bwt", "overall_loss"))  # two a row, the spare one off
    assert len(four.axes) == 4 and not four.axes[3].axison and four.axes[2].get_title().endswith("loss ↓")


def test_a_terminal_table_of_one_setting_names_it_once():
    from rich.console import Console

    from tsr.analysis.table import rich_table

    def shown(runs) -> str:
        cells, settings, methods = aggregate(runs, ("overall",))
        seeds = {s: {m: (0,) for m in methods} for s in settings}
        console = Console(width=200, record=True)
        console.print(rich_table(cells, settings, methods, ("overall",), seeds=seeds))
        return console.export_text()

    one = shown([_run("er", 0, 0.6), _run("tsr", 0, 0.7)])
    assert one.count("toy · base") == 1  # in the title, not over the columns
    two = shown([_run("er", 0, 0.6), _run("er", 0, 0.3, steps="300")])
    assert two.count("toy · base") == 4  # two settings: each names its own two columns
