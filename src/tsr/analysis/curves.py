"""Learning curves of probe arms: each target's score against the step, from probe checkpoints.

A probe run with ``--checkpoints`` scores every arm on the way to its last step (see
:mod:`tsr.analysis.probe`). The curves show what one budget hides: whether the target arm is still
improving when the budget ends (then a mixed arm, which gives the target only half of its
steps, is at a disadvantage that has nothing to do with its source), and when the full arm
pulls away from it (headroom as a function of the step budget).
"""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_figure
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
    """One panel per target: the target and full arms in bold, each mixed arm dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    targets = [t for t in order if t in points]
    cols = min(4, len(targets))
    rows = -(-len(targets) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows + 0.6), squeeze=False)
    styles = {"target": dict(color="black", lw=2.2), "full": dict(color="#2e8b3d", lw=2.2)}
    tab10 = matplotlib.colormaps["tab10"]
    palette = [tab10(i) for i in (0, 1, 3, 4, 5, 6, 8, 9)]  # no green: that is the full arm's
    for ax, target in zip(axes.flat, targets):
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
    for ax in list(axes.flat)[len(targets):]:
        ax.axis("off")
    fig.suptitle(title + " (mean over seeds; bands: ± standard error)", fontsize=9)
    fig.tight_layout()
    return write_figure(path, fig, dpi=120)
