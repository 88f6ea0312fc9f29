"""The order-robustness audit (``tsr audit orders``): each method on several task orders.

The reference paper's Appendix "Stream robustness" ("Task order"): across the greedy
best-source curriculum, its reversal, deterministic reshufflings and arbitrary reorderings, the
replay family varies by at most .03, while no-memory baselines track the order's tail (claim
C8). Each order is a value of ``stream.order`` (:mod:`tsr.data.orders`), each (order, seed) an
ordinary run (:mod:`tsr.engine.grid`):

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

from ...analysis.transfer import benefit, transfer_matrix
from ...data.example import Stream
from ...data.orders import order_names
from ...engine.grid import Point, check_methods
from ...errors import ConfigError
from ..probe.plan import read_arms

# the plan when none is given: the replay family's two members on the canonical order and its reversal
DEFAULT_METHODS = ("er", "tsr")
DEFAULT_ORDERS = ("canonical", "reversed")
DEFAULT_SHUFFLES = 0


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
