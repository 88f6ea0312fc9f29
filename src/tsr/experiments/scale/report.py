"""The scale audit's report (:mod:`tsr.experiments.scale`): per target and model the headroom,
S(N), the matrix's best source and its gain, each signature's pick, and which choices are the
same at every model. ``scale.json``, ``scale.md`` and ``scale.png``."""

from __future__ import annotations

import math
from pathlib import Path

from ...analysis.numbers import number
from ...analysis.plotting import pyplot
from ...analysis.report_files import write_report_files
from ...analysis.transfer import benefit, column_best, headroom, stat, transfer_matrix

MATRIX = "matrix"  # the choice kind of the measured best source; the others are signature names


# what the report shows per (model entry, target): S(N), headroom, the best source's gain
CELLS = {
    "target": lambda e, t: e.get("headroom", {}).get(t, {}).get("target"),
    "headroom": lambda e, t: e.get("headroom", {}).get(t, {}).get("headroom"),
    "best_gain": lambda e, t: (e.get("best", {}).get(t) or {}).get("gain"),
}


def stability(choices: dict[str, dict[str, str]], labels: list[str], targets: list[str]) -> dict:
    """``choices[label][target]`` = the source chosen at that model. A target is stable when
    every model chose and all chose the same source (None when some model has no choice);
    ``stable`` of ``of`` counts the targets every model chose for, and ``agree_with_first``
    each later model's agreements with the first."""
    rows, first = {}, labels[0]
    for t in targets:
        picks = {label: choices.get(label, {}).get(t) for label in labels}
        rows[t] = {"picks": picks, "stable": None if None in picks.values() else len(set(picks.values())) == 1}
    decided = [r for r in rows.values() if r["stable"] is not None]
    agree = {}
    for label in labels[1:]:
        both = [r for r in rows.values() if r["picks"][first] is not None and r["picks"][label] is not None]
        agree[label] = {"agree": sum(r["picks"][label] == r["picks"][first] for r in both), "of": len(both)}
    return {"targets": rows, "stable": sum(r["stable"] for r in decided), "of": len(decided), "agree_with_first": agree}


def pick(row: dict[str, float], allowed: list[str] | None) -> str | None:
    """The source most similar to the target among ``allowed`` (None: every source in ``row``);
    an undefined similarity (NaN, saved as null) is no candidate."""
    cells = {s: v for s, v in row.items() if (allowed is None or s in allowed) and v is not None and v == v}
    return max(cells, key=cells.get) if cells else None


def tied(cells: dict[str, dict], best: str, kind: str) -> bool:
    """Whether another source's mean benefit equals the column best's exactly (on a model where
    no source moves the score, every source ties): such a target has no best-source choice."""
    top = benefit(cells[best]["mean"], kind)
    return any(s != best and benefit(c["mean"], kind) == top for s, c in cells.items())


def scale_summary(arms: dict[str, list[dict]], labels: list[str], models: list[str], targets: list[str],
                  kinds: dict[str, str], tables: dict[str, dict[str, dict]] | None = None,
                  sources: list[str] | None = None) -> dict:
    """The report of the models' arms (``arms[label]``) and signature tables
    (``tables[label][kind][target][source]``, seed-mean)."""
    per_model, choices = {}, {}
    for label in labels:
        rows = [a for a in arms.get(label, []) if a["target"] in targets]
        entry: dict = {}
        if any(a["arm"] == "full" for a in rows):
            entry["headroom"] = headroom(rows)
        if any(a["arm"] == "mixed" for a in rows):
            matrix = transfer_matrix(rows)
            best = column_best(matrix, kinds)
            entry["best"] = {t: {"source": s, "gain": {**matrix[t][s], "mean": benefit(matrix[t][s]["mean"], kinds[t])},
                                 "tied": tied(matrix[t], s, kinds[t])}
                             for t, s in best.items()}
            choices.setdefault(MATRIX, {})[label] = {t: s for t, s in best.items() if not entry["best"][t]["tied"]}
        for kind, table in (tables or {}).get(label, {}).items():
            picks = {t: pick(table.get(t, {}), sources) for t in targets}
            entry.setdefault("picks", {})[kind] = {t: s for t, s in picks.items() if s is not None}
            choices.setdefault(kind, {})[label] = entry["picks"][kind]
        per_model[label] = entry
    acc = [t for t in targets if kinds[t] == "classification"]
    means = {label: {name: stat([c["mean"] for c in (get(e, t) for t in acc) if c and c.get("n")]).to_dict()
                     for name, get in CELLS.items()} for label, e in per_model.items()}
    return {"models": [{"label": label, "path": path} for label, path in zip(labels, models)],
            "targets": targets, "kinds": {t: kinds[t] for t in targets}, "per_model": per_model,
            "mean_over_accuracy_targets": means,
            "stability": {kind: stability(c, labels, targets) for kind, c in choices.items()}}


def _f(x, signed: bool = True) -> str:
    return number(x, signed)


def _pm(cell: dict | None, signed: bool = True) -> str:
    if not cell or cell.get("n", 0) == 0:
        return "–"
    return _f(cell["mean"], signed) + ("" if cell["se"] is None or math.isnan(cell["se"]) else f" ± {cell['se']:.3f}")


def _choice_name(kind: str) -> str:
    return "matrix best source" if kind == MATRIX else f"{kind} (signature top-1)"


def scale_markdown(summary: dict) -> str:
    labels = [m["label"] for m in summary["models"]]
    targets, kinds, pm = summary["targets"], summary["kinds"], summary["per_model"]
    head = "| target | " + " | ".join(labels) + " |"
    rule = "|---|" + "---|" * len(labels)
    lines = ["Models: " + "; ".join(f"**{m['label']}** = `{m['path']}`" for m in summary["models"]) + ".\n"]
    if any("headroom" in e for e in pm.values()):
        lines += ["## Headroom S(10N) − S(N)\n\nMean ± se over seeds, paired by seed; for a generation target (L) "
                  "the loss gap S(N) − S(10N) in answer loss, so positive always means room to improve.\n", head, rule]
        for t in targets:
            cells = [_pm(pm[x].get("headroom", {}).get(t, {}).get("headroom")) for x in labels]
            lines.append(f"| {t}{' (L)' if kinds[t] == 'generation' else ''} | " + " | ".join(cells) + " |")
        means = summary["mean_over_accuracy_targets"]
        if any(means[x]["headroom"]["n"] for x in labels):
            lines.append("| mean (accuracy targets; ± se over targets) | "
                         + " | ".join(_pm(means[x]["headroom"]) for x in labels) + " |")
        lines += ["\n## Target-only score S(N)\n\nAccuracy (L: answer loss), mean ± se over seeds.\n", head, rule]
        for t in targets:
            cells = [_pm(pm[x].get("headroom", {}).get(t, {}).get("target"), False) for x in labels]
            lines.append(f"| {t}{' (L)' if kinds[t] == 'generation' else ''} | " + " | ".join(cells) + " |")
        if any(means[x]["target"]["n"] for x in labels):
            lines.append("| mean (accuracy targets; ± se over targets) | "
                         + " | ".join(_pm(means[x]["target"], False) for x in labels) + " |")
    stab = summary["stability"]
    if MATRIX in stab:
        lines += ["\n## Best source in the matrix\n\nThe column's best source and its gain over the target arm "
                  "(mean ± se over seeds, oriented so that positive helps); tie: sources share the best mean, no choice.\n", head[:-1] + "| stable |", rule + "---|"]
        for t in targets:
            cells = []
            for x in labels:
                b = pm[x].get("best", {}).get(t)
                cells.append(("tie" if b.get("tied") else b["source"]) + f" ({_pm(b['gain'])})" if b else "–")
            lines.append(f"| {t} | " + " | ".join(cells) + f" | {_mark(stab[MATRIX]['targets'][t]['stable'])} |")
        means = summary["mean_over_accuracy_targets"]
        if any(means[x]["best_gain"]["n"] for x in labels):
            lines.append("| mean gain (accuracy targets; ± se over targets) | "
                         + " | ".join(_pm(means[x]["best_gain"]) for x in labels) + " | |")
    if stab:
        lines += ["\n## Choices across scale\n\nStable: the same source at every model (of the targets every "
                  f"model chose for); agreement of each model with the first ({labels[0]}).\n",
                  "| choice | stable | " + " | ".join(f"{x} agrees" for x in labels[1:]) + " |",
                  "|---|---|" + "---|" * (len(labels) - 1)]
        for kind, s in stab.items():
            agree = [f"{s['agree_with_first'][x]['agree']} of {s['agree_with_first'][x]['of']}" for x in labels[1:]]
            lines.append(f"| {_choice_name(kind)} | {s['stable']} of {s['of']} | " + " | ".join(agree) + " |")
        for kind, s in stab.items():
            if kind == MATRIX:
                continue
            lines += [f"\n### {_choice_name(kind)}\n", head[:-1] + "| stable |", rule + "---|"]
            for t in targets:
                r = s["targets"][t]
                lines.append(f"| {t} | " + " | ".join(r["picks"][x] or "–" for x in labels) + f" | {_mark(r['stable'])} |")
    return "\n".join(lines) + "\n"


def _mark(stable: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "–"}[stable]


def scale_figure(summary: dict, title: str):
    """Panels against the model (x: the labels, in order): S(N) of the classification targets,
    headroom, and (with mixed arms) the best source's gain; one line per target, error bars ± se."""
    matplotlib, plt = pyplot()

    labels = [m["label"] for m in summary["models"]]
    targets, kinds, pm = summary["targets"], summary["kinds"], summary["per_model"]
    acc = [t for t in targets if kinds[t] == "classification"]
    means = summary["mean_over_accuracy_targets"]
    panels = []  # (title, cell, targets, on the accuracy scale)
    if acc and any("headroom" in e for e in pm.values()):
        panels.append(("target-only accuracy S(N)", "target", acc, True))
    if any("headroom" in e for e in pm.values()):
        panels.append(("headroom S(10N) − S(N)", "headroom", targets, False))
    if any("best" in e for e in pm.values()):
        panels.append(("best source's gain over target-only", "best_gain", targets, False))
    fig, axes = plt.subplots(1, len(panels), figsize=(0.8 + 3.8 * len(panels), 4.0), squeeze=False)
    colours = matplotlib.colormaps["tab10"]
    xs = list(range(len(labels)))
    for ax, (name, cell, names, whole) in zip(axes[0], panels):
        for t in names:
            cells = [CELLS[cell](pm[x], t) or {} for x in labels]
            ys = [c["mean"] if c.get("n") else math.nan for c in cells]
            se = [0.0 if c.get("se") is None or math.isnan(c.get("se", math.nan)) else c["se"] for c in cells]
            ax.errorbar(xs, ys, yerr=se, color=colours(targets.index(t) % 10), marker="o", ms=3.5, lw=1.0,
                        capsize=2, alpha=0.8, ls="--" if kinds[t] == "generation" else "-",
                        label=t + (" (loss)" if kinds[t] == "generation" else ""))
        if len(acc) > 1:
            ys = [means[x][cell]["mean"] if means[x][cell]["n"] else math.nan for x in labels]
            ax.plot(xs, ys, color="black", lw=2.4, marker="s", ms=5, label="mean of accuracy targets")
        if whole:
            ax.set_ylim(-0.02, 1.02)  # accuracy on its whole scale
        else:
            ax.axhline(0.0, color="black", lw=0.7)
        ax.set_xticks(xs, labels, fontsize=8)
        ax.set_xlim(-0.3, len(labels) - 0.7)
        ax.set_xlabel("base model", fontsize=8)
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.2)
    handles, names = axes[0][-1].get_legend_handles_labels()
    rows = -(-len(names) // 6)
    fig.legend(handles, names, loc="lower center", ncol=min(6, len(names)), fontsize=7, frameon=False)
    fig.suptitle(title + "\nmean over seeds, paired by seed; bars ± se; dashed: generation targets (answer loss)",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.02 + 0.05 * rows, 1, 1))
    return fig


def write_scale_report(out: Path, summary: dict, title: str, command: str | None = None) -> dict:
    """scale.json, scale.md and scale.png into ``out``; returns the summary (with the command)."""
    return write_report_files(out, "scale", f"Scale audit · {title}", summary, scale_markdown(summary),
                              scale_figure(summary, f"scale audit · {title}"), command)


__all__ = ["MATRIX", "pick", "scale_figure", "scale_markdown", "scale_summary", "stability", "write_scale_report"]
