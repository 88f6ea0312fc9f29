"""Learning curves: probe arms' scores against the step (from probe checkpoints), and a run's
training loss against the step (from its log).

A probe run with ``--checkpoints`` scores every arm on the way to its last step (see
:mod:`tsr.experiments.probe`). The curves show what one budget hides: whether the target arm is still
improving when the budget ends (then a mixed arm, which gives the target only half of its
steps, is at a disadvantage that has nothing to do with its source), and when the full arm
pulls away from it (headroom as a function of the step budget).
"""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_figure
from .plotting import panel_grid, pyplot
from .titles import fit_titles
from .transfer import metric, stat


def curve_points(arms: list[dict], last: int) -> dict[str, dict[str, list[tuple[int, float, float]]]]:
    """``points[target][label] = [(step, mean, se), ...]`` over seeds, for every step that each
    seed of that arm was scored at (its checkpoints and ``last``); ``label`` is ``target``,
    ``full`` or ``mixed:<source>``."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for a in arms:
        label = a["arm"] if a["source"] is None else f"{a['arm']}:{a['source']}"
        groups.setdefault((a["target"], label), []).append(a)
    points: dict[str, dict[str, list]] = {}
    for (target, label), rows in sorted(groups.items()):
        key = metric(rows[0]["kind"])
        scored = [{**{int(s): p[key] for s, p in r.get("checkpoints", {}).items()}, last: r[key]} for r in rows]
        steps = sorted(set.intersection(*(set(s) for s in scored)))
        if len(steps) > 1:
            points.setdefault(target, {})[label] = [(s, *_mean_se([c[s] for c in scored])) for s in steps]
    return points


def _mean_se(values: list[float]) -> tuple[float, float]:
    found = stat(values)
    return found.mean, found.se


def save_curves(points: dict[str, dict[str, list]], kinds: dict[str, str], order: list[str], path: Path,
                title: str = "learning curves") -> Path:
    return write_figure(path, curves_figure(points, kinds, order, title), dpi=120)


def curves_figure(points: dict[str, dict[str, list]], kinds: dict[str, str], order: list[str],
                  title: str = "learning curves"):
    """One panel per target: the target and full arms in bold, each mixed arm dashed."""
    matplotlib, _ = pyplot()

    targets = [t for t in order if t in points]
    fig, axes, _ = panel_grid(len(targets), 4, lambda cols, rows: (3.2 * cols, 2.6 * rows + 0.6))
    styles = {"target": dict(color="black", lw=2.2), "full": dict(color="#2e8b3d", lw=2.2)}
    tab10 = matplotlib.colormaps["tab10"]
    palette = [tab10(i) for i in (0, 1, 3, 4, 5, 6, 8, 9)]  # no green: that is the full arm's
    for ax, target in zip(axes, targets):
        mixed = sorted(label for label in points[target] if label.startswith("mixed:"))
        for label in ["target", "full", *mixed]:
            if label not in points[target]:
                continue
            steps, means, ses = zip(*points[target][label])
            style = styles.get(label) or dict(color=palette[mixed.index(label) % len(palette)], lw=1.0, ls="--")
            name = label.split(":", 1)[1] if label.startswith("mixed:") else f"{label} arm"
            ax.plot(steps, means, marker="o", ms=2.5, label=name, **style)
            if label in styles:
                low = [m - (s if s == s else 0.0) for m, s in zip(means, ses)]
                high = [m + (s if s == s else 0.0) for m, s in zip(means, ses)]
                ax.fill_between(steps, low, high, color=style["color"], alpha=0.12, lw=0)
        ax.set_title(target, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel("accuracy" if kinds[target] == "classification" else "answer loss", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.2)
        ax.legend(fontsize=6, loc="best")
    fig.suptitle(title + " (mean over seeds; bands: ± standard error)", fontsize=9)
    fit_titles(fig)
    return fig


def loss_curves_figure(panels: dict[str, list[tuple[str, list[tuple[int, float]]]]],
                       tasks: list[tuple[int, str]], title: str):
    """One panel per label (a method), one line per run (a seed) of ``(step, loss)`` points on
    a log scale shared by the panels; ``tasks`` are ``(first step, name)``, drawn as dotted
    boundaries with the task names under the last row (up to 16 tasks; a longer stream is drawn
    against the step alone)."""
    matplotlib, _ = pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    labels = list(panels)
    tasks = tasks if len(tasks) <= 16 else []
    fig, axes, cols = panel_grid(len(labels), 3, lambda cols, rows: (3.6 * cols, 2.3 * rows + 0.7),
                                 sharex=True, sharey=True)
    tab10 = matplotlib.colormaps["tab10"]
    for ax, label in zip(axes, labels):
        for n, (name, points) in enumerate(panels[label]):
            steps, losses = zip(*points)
            ax.plot(steps, losses, lw=1.0, color=tab10(n % 10), label=name,
                    marker="o" if len(steps) < 20 else None, ms=2)  # a few points are dots too
        for first, _ in tasks[1:]:
            ax.axvline(first, color="#777777", lw=0.9, ls=":")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(label, fontsize=9)
        if not tasks:
            ax.set_xlabel("step since the run began", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.2, which="both", axis="y")  # no vertical grid: the task boundaries are the verticals
        if len(panels[label]) > 1:
            ax.legend(fontsize=6, loc="upper right")
    if tasks:
        ax = axes[0]
        ends = [first for first, _ in tasks[1:]] + [max(s for p in panels.values() for _, pts in p for s, _ in pts)]
        ax.set_xticks([(first + end) / 2 for (first, _), end in zip(tasks, ends)], [name for _, name in tasks])
        for n, ax in enumerate(axes):
            # task names under every panel that has none below it
            ax.tick_params(axis="x", labelrotation=45, labelsize=6.5, labelbottom=n + cols >= len(labels))
    fig.suptitle(title, fontsize=9)
    fit_titles(fig)
    return fig
