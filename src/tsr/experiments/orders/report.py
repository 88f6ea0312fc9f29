"""The order-robustness audit's report (its plan and the greedy curriculum:
:mod:`tsr.experiments.orders.plan`): per method and order Overall, Plas and BWT, the
difference to the first order paired by seed, the range, the between-methods table and the
per-task view."""

from __future__ import annotations

import math
from pathlib import Path

from ...analysis.cells import beyond_noise, covered, dot_panel, fmt, fmt_paired, paired
from ...analysis.plotting import panel_grid
from ...analysis.report_files import write_report_files
from ...analysis.table import FAMILY, mean_std

THRESHOLD = 0.03


def replay_family(method: str) -> bool:
    return FAMILY.get(method.split(" (")[0], 3) >= 2


def orders_summary(table: dict[str, dict[str, dict]], plan: dict[str, dict], threshold: float = THRESHOLD) -> dict:
    """Per method: each order's cell (an alias shows its twin's), the ranges of the order means, C8."""
    out: dict = {"orders": {k: {"tasks": v["tasks"], "same_as": v["same_as"]} for k, v in plan.items()},
                 "threshold": threshold, "methods": {}}
    for method, variants in table.items():
        rows = {label: variants[v["same_as"] or label] for label, v in plan.items() if (v["same_as"] or label) in variants}
        ranges = {}
        for m in ("overall", "plas", "bwt"):
            stats = [c[m] for label, c in rows.items()  # each distinct order once
                     if plan[label]["same_as"] is None and c[m]["n"] and not math.isnan(c[m]["mean"])]
            ranges[m] = range_of(stats)
            if m == "overall":
                ranges["overall_se"] = range_se(stats)
        within = None if math.isnan(ranges["overall"]) else bool(round(ranges["overall"], 3) <= threshold)
        first = next(iter(rows), None)  # the reference order: the plan's first (canonical, by default)
        diffs = {label: paired(c, rows[first]) for label, c in rows.items()
                 if label != first and plan[label]["same_as"] is None}
        out["methods"][method] = {"orders": rows, "range": ranges, "replay_family": replay_family(method),
                                  "within": within, "reference": first, "vs_reference": diffs}
    family = [r["range"]["overall"] for r in out["methods"].values()
              if r["replay_family"] and not math.isnan(r["range"]["overall"])]
    moved = [{"method": m, "order": label, **d} for m, r in out["methods"].items() if r["replay_family"]
             for label, d in r["vs_reference"].items() if beyond_noise(d)]
    out["vs_method"] = between_methods(out["methods"], plan)
    out["c8"] = {"replay_family": [m for m, r in out["methods"].items() if r["replay_family"]],
                 "max_range": max(family) if family else math.nan,
                 "holds": bool(round(max(family), 3) <= threshold) if family else None,
                 "beyond_noise": moved}
    return out


def range_of(stats: list[dict]) -> float:
    """max - min of the order means (``{mean, std, n}`` per distinct order); NaN below two orders."""
    means = [c["mean"] for c in stats]
    return max(means) - min(means) if len(means) >= 2 else math.nan


def range_se(stats: list[dict]) -> float:
    """The standard error of that range: the highest and the lowest order means' standard errors
    (std / sqrt(n)) combined, unpaired, as the two means come from different runs (on an exact tie
    the earlier order in the plan). NaN when either has one seed or there is one order."""
    if len(stats) < 2:
        return math.nan
    ends = (max(stats, key=lambda c: c["mean"]), min(stats, key=lambda c: c["mean"]))
    if any(c["n"] < 2 for c in ends):
        return math.nan
    return math.hypot(*(c["std"] / math.sqrt(c["n"]) for c in ends))


def between_methods(methods: dict[str, dict], plan: dict[str, dict]) -> dict:
    """Each later method minus the first one on the same order, paired by seed (Overall):
    ``{"reference": first, "methods": {method: {order: paired difference}}, "half_range":
    {method: {mean, se}}}``; an order that is another's twin shows its twin's difference.
    ``half_range``: the method's Overall range minus half of the first method's (the need-aware
    routing's goal, docs/claims.md C12c), its standard error the two ranges' combined (half of the
    first's); absent for a method without a range. Empty with fewer than two methods."""
    names = list(methods)
    if len(names) < 2:
        return {}
    first = methods[names[0]]["orders"]
    diffs: dict[str, dict] = {}
    for m in names[1:]:
        rows = methods[m]["orders"]
        diffs[m] = {label: paired(rows[label], first[label]) for label in plan if label in rows and label in first}
    ref = methods[names[0]]["range"]
    half = {m: {"mean": methods[m]["range"]["overall"] - ref["overall"] / 2,
                "se": math.hypot(methods[m]["range"]["overall_se"], ref["overall_se"] / 2)}
            for m in names[1:] if not math.isnan(methods[m]["range"]["overall"]) and not math.isnan(ref["overall"])}
    return {"reference": names[0], "methods": diffs, "half_range": half}


def between_markdown(vs: dict) -> str:
    if not vs:
        return ""
    ref, methods = vs["reference"], vs["methods"]
    orders = list(dict.fromkeys(label for d in methods.values() for label in d))
    text = (f"\n**Between methods**: each method − {ref} on the same order, paired by seed (mean ± se; * beyond "
            "two standard errors; in brackets the seeds where the method is ahead)\n\n")
    text += "| order | " + " | ".join(f"{m} − {ref}" for m in methods) + " |\n|---|" + "---|" * len(methods) + "\n"
    for label in orders:
        cells = []
        for m in methods:
            d = methods[m].get(label)
            cells.append(fmt_paired(d) + (f" ({d['wins']} of {d['n']})" if d and d["n"] else ""))
        text += f"| {label} | " + " | ".join(cells) + " |\n"
    half = vs.get("half_range", {})
    if half:
        row = [("-" if m not in half else f"{half[m]['mean']:+.3f}" +
                ("" if math.isnan(half[m]["se"]) else f" ± {half[m]['se']:.3f}")) for m in methods]
        text += f"| range − half of {ref}'s (± se, unpaired) | " + " | ".join(row) + " |\n"
    return text


def routing_ratio(r, i: int) -> float | None:
    """The routed replay task ``i`` of a run (:class:`tsr.runs.results.Results`) got from the
    tasks trained after it: at each later task that logged routing weights, its weight times the
    number of past tasks there (1 = an even split, what ER's replay gives each past task), averaged
    over those tasks; None where none did (ER, SeqFT, the task trained last)."""
    task = r.tasks[i]
    ratios = [info["weights"][task] * len(info["weights"]) for info in r.task_info[i + 1:]
              if isinstance(info, dict) and isinstance(info.get("weights"), dict) and task in info["weights"]]
    return sum(ratios) / len(ratios) if ratios else None


def per_task(results: dict[str, dict[str, list]]) -> dict[str, dict[str, dict]]:
    """Where each order's Overall comes from: ``{method: {order: {task: cell}}}`` over the
    classification tasks (the ones Overall averages), from finished runs' results
    (:class:`tsr.runs.results.Results`, grouped by method and order). A cell holds the task's
    final accuracy and its accuracy right after its own training (mean, std, n over seeds), its
    position in the order (1-based; an order is the same on every seed) and, for methods that
    route replay, its :func:`routing_ratio` (``routing``: mean, std, n over seeds)."""
    out: dict[str, dict[str, dict]] = {}
    for method, orders in results.items():
        for label, runs in orders.items():
            cells: dict[str, dict] = {}
            for r in runs:
                for i, (task, kind) in enumerate(zip(r.tasks, r.kinds)):
                    if kind != "classification":
                        continue
                    c = cells.setdefault(task, {"position": i + 1, "final": [], "own": [], "routing": []})
                    c["final"].append(r.acc[-1][i])
                    c["own"].append(r.acc[i][i])
                    if (ratio := routing_ratio(r, i)) is not None:
                        c["routing"].append(ratio)
            for c in cells.values():
                if not c["routing"]:
                    del c["routing"]
                for key in ("final", "own", "routing"):
                    if key in c:
                        mean, std, n = mean_std(c[key])
                        c[key] = {"mean": mean, "std": std, "n": n}
            out.setdefault(method, {})[label] = cells
    return out


def per_task_markdown(view: dict[str, dict], labels: list[str]) -> str:
    """Per task: one row, one column per order: ``final · own @ position``, and ``· ×routing``
    where the method routes replay."""
    orders = [label for label in labels if label in view]
    tasks = list(dict.fromkeys(t for label in orders for t in view[label]))
    if not orders or not tasks:
        return ""
    routed = any("routing" in c for label in orders for c in view[label].values())
    text = ("\nPer task (the tasks Overall averages): final accuracy · accuracy right after its own task "
            "@ its position in the order"
            + (" · ×the routing weight it got from the tasks after it, as a multiple of an even split over "
               "the past tasks" if routed else "") + " (means over seeds)\n\n")
    text += "| task | " + " | ".join(orders) + " |\n|---|" + "---|" * len(orders) + "\n"
    for task in sorted(tasks):
        row = []
        for label in orders:
            c = view[label].get(task)
            row.append("-" if c is None or not c["final"]["n"] else
                       f"{c['final']['mean']:.2f} · {c['own']['mean']:.2f} @{c['position']}"
                       + (f" · ×{c['routing']['mean']:.2f}" if "routing" in c else ""))
        text += f"| {task} | " + " | ".join(row) + " |\n"
    return text


def orders_markdown(summary: dict) -> str:
    lines = ["| order | tasks |", "|---|---|"]
    for label, o in summary["orders"].items():
        same = f" (= {o['same_as']}: its runs)" if o["same_as"] else ""
        lines.append(f"| {label} | {' → '.join(o['tasks'])}{same} |")
    text = "\n".join(lines) + "\n"
    for method, r in summary["methods"].items():
        text += f"\n**{method}**{' (replay family)' if r['replay_family'] else ''}\n\n"
        ref = r.get("reference")
        text += (f"| order | Overall | Plas | BWT | Overall − {ref} (paired ± se) | seeds |\n"
                 "|---|---|---|---|---|---|\n")
        for label, c in r["orders"].items():
            twin = summary["orders"][label]["same_as"] or label  # an alias shows its twin's difference
            diff = "0 (reference)" if twin == ref else fmt_paired(r["vs_reference"].get(twin))
            text += (f"| {label} | {fmt(c['overall'])} | {fmt(c['plas'])} | {fmt(c['bwt'], True)} | {diff} | "
                     f"{covered(c)} |\n")
        rg = {m: ("-" if math.isnan(v) else f"{v:.3f}") for m, v in r["range"].items()}
        if rg["overall"] != "-" and not math.isnan(r["range"]["overall_se"]):
            rg["overall"] += f" ± {r['range']['overall_se']:.3f}"  # unpaired: the two ends' se combined
        text += f"| range (max − min of the means) | {rg['overall']} | {rg['plas']} | {rg['bwt']} | | |\n"
        text += per_task_markdown(summary.get("per_task", {}).get(method, {}), list(summary["orders"]))
    text += between_markdown(summary.get("vs_method", {}))
    c8 = summary["c8"]
    if c8["holds"] is not None:
        text += (f"\nC8 (the replay family moves <= {summary['threshold']:.2f} across orders): largest range of the "
                 f"Overall means among {', '.join(c8['replay_family'])}: {c8['max_range']:.3f}, "
                 f"**{'holds' if c8['holds'] else 'does not hold'}**. ")
        moved = c8.get("beyond_noise", [])
        text += ("Orders whose Overall differs from the reference order by more than two standard errors, "
                 "paired by seed: " + ("; ".join(f"{d['method']} {d['order']} {d['mean']:+.3f} ± {d['se']:.3f}"
                                                 for d in moved) or "none") + ".\n")
    return text


def orders_figure(summary: dict, title: str):
    """One panel per method: Overall per order (mean ± std over seeds, seeds as dots)."""
    methods = list(summary["methods"])
    labels = list(summary["orders"])
    width = max(4.4, 0.55 * len(labels) + 2.4)  # a panel's: room for every order's label
    fig, axes, cols = panel_grid(len(methods), 3, lambda cols, rows: (width * cols, 3.5 * rows + 0.6))
    colors = {label: "#1f4e9a" if label == "canonical" else "#b5651d" if label.startswith("greedy") else "#1f77b4"
              for label in labels}
    for ax, m in zip(axes, methods):
        r = summary["methods"][m]
        means = [c["overall"]["mean"] for c in r["orders"].values() if c["overall"]["n"]]
        if means:  # C8's window: every order mean inside it moves by at most the threshold
            low = min(means)
            ax.axhspan(low, low + summary["threshold"], color="#2e8b3d", alpha=0.10, lw=0)
        dot_panel(ax, labels, r["orders"].get, colors=colors)
        rng = r["range"]["overall"]
        moved = [label for label, d in r.get("vs_reference", {}).items() if beyond_noise(d)]
        noise = (f"\nbeyond 2 se of {r['reference']}: {', '.join(moved) if moved else 'none'}"
                 if r.get("vs_reference") else "")
        se = r["range"].get("overall_se", math.nan)
        spread = "" if math.isnan(rng) else (f"\nrange of the means {rng:.3f}"
                                             + ("" if math.isnan(se) else f" ± {se:.3f}"))
        ax.set_title(f"{m}" + spread + noise, fontsize=9)
        ax.set_xlabel("task order", fontsize=8)
        ax.set_ylabel("Overall (final mean accuracy)", fontsize=8)
    sep = "; " if cols > 1 else "\n"  # one panel: the legend text on two lines, so it fits its width
    fig.suptitle(title + f"\nmean ± std over seeds; small dots: each seed{sep}green band: the lowest order mean "
                 f"+ {summary['threshold']:.2f} (C8)", fontsize=9)
    fig.tight_layout()
    return fig


def write_orders_report(out: Path, table: dict, plan: dict, title: str, command: str | None = None,
                        greedy_source: str | None = None, tasks: dict | None = None, machines: str = "") -> dict:
    """orders.json, orders.md and orders.png into ``out``; returns the summary. ``tasks``: the
    :func:`per_task` view, kept as ``per_task`` (an order that is another's twin shows its runs).
    ``machines``: the line saying the runs span several kinds of machine, if they do."""
    summary = orders_summary(table, plan)
    if tasks is not None:
        summary["per_task"] = {m: {label: v[plan[label]["same_as"] or label] for label in plan
                                   if (plan[label]["same_as"] or label) in v} for m, v in tasks.items()}
    note = ""
    if greedy_source:
        summary["greedy_from"] = greedy_source
        note = (f"greedy: the best-source curriculum from the transfer matrix of {greedy_source} "
                "(start from the stream's first task, then append the task whose best placed source helps it most)")
    return write_report_files(out, "orders", f"Order robustness · {title}", summary, orders_markdown(summary),
                              orders_figure(summary, f"task-order robustness · {title}"), command, note, machines)
