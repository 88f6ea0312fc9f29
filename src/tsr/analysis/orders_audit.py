"""The order-robustness audit (``tsr audit orders``): each method on several task orders.

The reference paper's Appendix "Stream robustness" ("Task order"): across the greedy
best-source curriculum, its reversal, deterministic reshufflings and arbitrary reorderings, the
replay family varies by at most .03, while no-memory baselines track the order's tail (claim
C8). Each order is a value of ``stream.order`` (:mod:`tsr.data.orders`), each (order, seed) an
ordinary run (:mod:`tsr.analysis.variants`):

- ``canonical``, ``reversed``;
- an explicit order ``NAME=t1>t2>...`` (or ``t1>t2>...``, labelled by itself): the paper's
  "arbitrary reorderings", or a curriculum computed elsewhere (a greedy order of a matrix whose
  probe folder is not at hand: the runs are the ones ``--greedy`` would start, the same
  ``stream.order`` list). It must name every task of the stream, each once;
- ``--shuffles K``: K *distinct* shuffles ``shuffle:k`` (fixed across run seeds), k = 0, 1, ...
  skipping a k whose order equals canonical, reversed or an earlier shuffle, so K shuffles are
  K different orders (refused when the stream has fewer left);
- ``greedy``: the best-source curriculum from a probe folder's transfer matrix
  (:func:`greedy_order`), run as an explicit ``stream.order`` list, and ``greedy-reversed``,
  its reversal (the paper compares the curriculum with its reversal: sources after their
  targets). An order equal to an earlier one (a greedy curriculum that is the canonical order)
  shares that order's runs.

The greedy rule (the paper names the curriculum but not its construction): start from the
stream's first task; then repeatedly append the remaining task whose best already-placed source
has the largest measured benefit on it (the transfer matrix's mean, oriented so that positive
helps: accuracy gain for classification targets, loss reduction for generation ones, as
:func:`tsr.analysis.transfer.benefit`); a task with no measured placed source counts as -inf;
ties go to the earlier task of the stream. Benefits of the two kinds are compared as they are
(accuracy and loss units), a choice kept visible in the report.

Per method and order: Overall, Plas, BWT (mean ± std over seeds) and the Overall difference to
the first order of the plan (canonical by default), paired by seed, ± its standard error; per
method the *range* of the order means (max − min), C8's "moves <= 0.03"; with several methods,
each later one minus the first on the same order, paired by seed (``vs_method``: is a method's
lead over another a property of one order?). The range of a few
means grows with seed noise alone, so the report also lists the orders that differ from the
reference by more than two standard errors (``beyond_noise``). The *replay family* is every
method in a rehearsal or TSR row group of the paper's table (:data:`tsr.analysis.table.FAMILY`
>= 2). Under each method's table, :func:`per_task` shows where an order's Overall comes from:
each averaged task's final accuracy, its accuracy right after its own task, and its position.
"""

from __future__ import annotations

import json
import math
from itertools import permutations
from pathlib import Path

from ..data.example import Stream
from ..data.orders import order_names
from ..engine.compare import Point
from ..errors import ConfigError
from .probe import read_arms
from .report_files import write_report_files
from .table import FAMILY, mean_std
from .transfer import benefit, transfer_matrix
from .variants import beyond_noise, check_methods, dot_panel, fmt, fmt_paired, paired

THRESHOLD = 0.03


def greedy_order(matrix: dict[str, dict[str, dict]], kinds: dict[str, str], names: list[str]) -> list[str]:
    """The best-source curriculum over ``names`` (the stream's order; see the module doc)."""
    def gain(target: str, placed: list[str]) -> float:
        cells = matrix.get(target, {})
        values = [benefit(cells[s]["mean"], kinds[target]) for s in placed
                  if s in cells and cells[s].get("n", 1) and not math.isnan(cells[s]["mean"])]
        return max(values, default=-math.inf)

    order, left = names[:1], list(names[1:])
    while left:
        nxt = max(left, key=lambda t: (gain(t, order), -names.index(t)))
        order.append(nxt)
        left.remove(nxt)
    return order


def greedy_from_probe(folder: Path, stream: Stream) -> tuple[list[str], dict]:
    """The curriculum from a probe folder's measured matrix, and the matrix it used."""
    arms = read_arms(folder, "--greedy")
    mixed = [a for a in arms if a.get("arm") == "mixed"]
    if not mixed:
        raise ConfigError(f"--greedy: {folder} holds no mixed arms (run `tsr probe --arms target,mixed`)")
    kinds = {a["target"]: a["kind"] for a in arms}
    matrix = transfer_matrix(arms)
    lacking = [t for t in stream.names[1:]
               if not any(c["n"] for s, c in matrix.get(t, {}).items() if s in stream.names and s != t)]
    if lacking:
        raise ConfigError(f"--greedy: {folder} has no mixed arm (with its target arm) for target "
                          f"{', '.join(lacking)} from another task of {stream.name}")
    return greedy_order(matrix, kinds, stream.names), matrix


def plan_orders(stream: Stream, orders: list[str], shuffles: int, greedy: list[str] | None) -> dict[str, dict]:
    """``{label: {"order": stream.order value, "tasks": [...], "same_as": label | None}}``."""
    plan: dict[str, dict] = {}

    def add(label: str, value, tasks: list[str]) -> None:
        same = next((k for k, v in plan.items() if v["tasks"] == tasks and v["same_as"] is None), None)
        plan[label] = {"order": value, "tasks": tasks, "same_as": same}

    for word in orders:
        w = word.strip()
        if w == "shuffle":
            raise ConfigError("--orders: 'shuffle' changes with the run seed; name shuffle:<k> or use --shuffles")
        if ">" in w:  # an explicit order, NAME=t1>t2>... or t1>t2>...
            label, _, body = w.rpartition("=")
            label = label.strip() or body
            tasks = [t.strip() for t in body.split(">")]
            if label in plan:
                raise ConfigError(f"--orders: the label {label!r} is given twice")
            unknown = [t for t in tasks if t not in stream.names]
            if unknown:
                raise ConfigError(f"--orders: {label}: unknown task {unknown[0]!r} (tasks: {', '.join(stream.names)})")
            if sorted(tasks) != sorted(stream.names):
                missing = [t for t in stream.names if t not in tasks]
                what = f"lacks {', '.join(missing)}" if missing else "names a task twice"
                raise ConfigError(f"--orders: {label}: an order names every task of {stream.name} once; this one {what}")
            add(label, tasks, tasks)
            continue
        if w not in ("canonical", "reversed") and not w.startswith("shuffle:"):
            raise ConfigError(f"--orders: unknown order {w!r} (canonical, reversed, shuffle:<k>, NAME=t1>t2>...; "
                              "--greedy, --shuffles)")
        try:
            add(w, w, order_names(stream, w))
        except ConfigError as e:
            raise ConfigError(f"--orders: {e}") from None
    if shuffles < 0:
        raise ConfigError("--shuffles: must be >= 0")
    seen = [v["tasks"] for v in plan.values()]
    if shuffles and len(stream.names) <= 8:
        left = sum(1 for p in permutations(stream.names) if list(p) not in seen)
        if shuffles > left:
            raise ConfigError(f"--shuffles: {stream.name} has only {left} other orders of its {len(stream.names)} tasks")
    k = found = 0
    while found < shuffles:
        if k > 100 * (shuffles + 10):
            raise ConfigError(f"--shuffles: could not find {shuffles} distinct shuffles of {stream.name}")
        tasks = order_names(stream, f"shuffle:{k}")
        if tasks not in seen:
            add(f"shuffle:{k}", f"shuffle:{k}", tasks)
            seen.append(tasks)
            found += 1
        k += 1
    if greedy is not None:
        if "greedy" in plan:
            raise ConfigError("--orders: the label 'greedy' is taken by --greedy")
        if "greedy-reversed" in plan:
            raise ConfigError("--orders: the label 'greedy-reversed' is taken by --greedy")
        add("greedy", list(greedy), list(greedy))
        add("greedy-reversed", greedy[::-1], greedy[::-1])  # the paper's pair: the curriculum and its reversal
    if not plan:
        raise ConfigError("--orders: no order to run (give --orders, --shuffles or --greedy)")
    return plan


def plan_points(methods: list[str], plan: dict[str, dict], seeds: list[int]) -> list[Point]:
    """Each method on each order that is not an earlier one's twin, every seed."""
    check_methods(methods)
    return [Point(m, s, (override(v["order"]),), label) for m in methods for label, v in plan.items()
            if v["same_as"] is None for s in seeds]


def override(value) -> str:
    """The ``stream.order=...`` override of an order (a list as a YAML flow list)."""
    return f"stream.order={json.dumps(value) if isinstance(value, list) else value}"


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
            means = [c[m]["mean"] for label, c in rows.items()  # each distinct order once
                     if plan[label]["same_as"] is None and c[m]["n"] and not math.isnan(c[m]["mean"])]
            ranges[m] = max(means) - min(means) if len(means) >= 2 else math.nan
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


def between_methods(methods: dict[str, dict], plan: dict[str, dict]) -> dict:
    """Each later method minus the first one on the same order, paired by seed (Overall):
    ``{"reference": first, "methods": {method: {order: paired difference}}}``; an order that is
    another's twin shows its twin's difference. Empty with fewer than two methods."""
    names = list(methods)
    if len(names) < 2:
        return {}
    first = methods[names[0]]["orders"]
    diffs: dict[str, dict] = {}
    for m in names[1:]:
        rows = methods[m]["orders"]
        diffs[m] = {label: paired(rows[label], first[label]) for label in plan if label in rows and label in first}
    return {"reference": names[0], "methods": diffs}


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
    return text


def per_task(results: dict[str, dict[str, list]]) -> dict[str, dict[str, dict]]:
    """Where each order's Overall comes from: ``{method: {order: {task: cell}}}`` over the
    classification tasks (the ones Overall averages), from finished runs' results
    (:class:`tsr.engine.results.Results`, grouped by method and order). A cell holds the task's
    final accuracy and its accuracy right after its own training (mean, std, n over seeds) and its
    position in the order (1-based; an order is the same on every seed)."""
    out: dict[str, dict[str, dict]] = {}
    for method, orders in results.items():
        for label, runs in orders.items():
            cells: dict[str, dict] = {}
            for r in runs:
                for i, (task, kind) in enumerate(zip(r.tasks, r.kinds)):
                    if kind != "classification":
                        continue
                    c = cells.setdefault(task, {"position": i + 1, "final": [], "own": []})
                    c["final"].append(r.acc[-1][i])
                    c["own"].append(r.acc[i][i])
            for c in cells.values():
                for key in ("final", "own"):
                    mean, std, n = mean_std(c[key])
                    c[key] = {"mean": mean, "std": std, "n": n}
            out.setdefault(method, {})[label] = cells
    return out


def per_task_markdown(view: dict[str, dict], labels: list[str]) -> str:
    """Per task: one row, one column per order: ``final · own @ position``."""
    orders = [label for label in labels if label in view]
    tasks = list(dict.fromkeys(t for label in orders for t in view[label]))
    if not orders or not tasks:
        return ""
    text = ("\nPer task (the tasks Overall averages): final accuracy · accuracy right after its own task "
            "@ its position in the order (means over seeds)\n\n")
    text += "| task | " + " | ".join(orders) + " |\n|---|" + "---|" * len(orders) + "\n"
    for task in sorted(tasks):
        row = []
        for label in orders:
            c = view[label].get(task)
            row.append("-" if c is None or not c["final"]["n"] else
                       f"{c['final']['mean']:.2f} · {c['own']['mean']:.2f} @{c['position']}")
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
                     f"{c['overall']['n']} |\n")
        rg = {m: ("-" if math.isnan(v) else f"{v:.3f}") for m, v in r["range"].items()}
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(summary["methods"])
    labels = list(summary["orders"])
    cols = min(3, len(methods))
    rows = -(-len(methods) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(4.4, 0.55 * len(labels) + 2.4) * cols, 3.5 * rows + 0.6),
                             squeeze=False)
    colors = {label: "#1f4e9a" if label == "canonical" else "#b5651d" if label.startswith("greedy") else "#1f77b4"
              for label in labels}
    for ax, m in zip(axes.flat, methods):
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
        ax.set_title(f"{m}" + ("" if math.isnan(rng) else f"\nrange of the means {rng:.3f}") + noise, fontsize=9)
        ax.set_xlabel("task order", fontsize=8)
        ax.set_ylabel("Overall (final mean accuracy)", fontsize=8)
    for ax in list(axes.flat)[len(methods):]:
        ax.axis("off")
    sep = "; " if cols > 1 else "\n"  # one panel: the legend text on two lines, so it fits its width
    fig.suptitle(title + f"\nmean ± std over seeds; small dots: each seed{sep}green band: the lowest order mean "
                 f"+ {summary['threshold']:.2f} (C8)", fontsize=9)
    fig.tight_layout()
    return fig


def write_orders_report(out: Path, table: dict, plan: dict, title: str, command: str | None = None,
                        greedy_source: str | None = None, tasks: dict | None = None) -> dict:
    """orders.json, orders.md and orders.png into ``out``; returns the summary. ``tasks``: the
    :func:`per_task` view, kept as ``per_task`` (an order that is another's twin shows its runs)."""
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
                              orders_figure(summary, f"task-order robustness · {title}"), command, note)
