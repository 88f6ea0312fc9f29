"""Stream metrics as pure functions of the results matrix ``A[after][on]``.

Overall, Plasticity and BWT follow the reference paper's Eqs. 2-4 (and FWT, with a zero-shot row,
GEM's definition), restricted to the tasks
given (classification tasks for accuracy; generation tasks for loss, where lower is
better, so a positive loss-BWT means forgetting), and of each generation metric over the tasks it
scores (:func:`generation_metrics`; higher is better, as for accuracy). A metric over no task
(the loss metrics of a stream without generation tasks, the BWT of a one-task stream) is None,
as ``results.json`` writes it (null): never NaN, which would pass for a number.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..data.example import GEN_METRICS

Matrix = Sequence[Sequence[float | None]]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def overall(matrix: Matrix, tasks: Sequence[int]) -> float | None:
    """Mean score on ``tasks`` after the last task: (1/K) sum_i A[K, i]."""
    last = len(matrix) - 1
    return _mean([matrix[last][i] for i in tasks])


def plasticity(matrix: Matrix, tasks: Sequence[int]) -> float | None:
    """Mean score on each task right after learning it: (1/K) sum_i A[i, i]."""
    return _mean([matrix[i][i] for i in tasks])


def bwt(matrix: Matrix, tasks: Sequence[int]) -> float | None:
    """Backward transfer: mean of A[K, i] - A[i, i] over ``tasks`` before the last one."""
    last = len(matrix) - 1
    return _mean([matrix[last][i] - matrix[i][i] for i in tasks if i < last])


def kept(matrix: Matrix, tasks: Sequence[int]) -> float | None:
    """The share of what was learnt that the end keeps: mean of A[K, i] / A[i, i] over ``tasks``
    before the last one (a task scored 0 right after learning it has no share and is left out).
    Where BWT is a difference, this is a ratio: SeqFT's kept share is the retention that the
    reference paper's Qwen2.5-0.5B puts at about two thirds."""
    last = len(matrix) - 1
    return _mean([matrix[last][i] / matrix[i][i] for i in tasks if i < last and matrix[i][i]])


def retention(final: float | None, plas: float | None) -> float | None:
    """Overall / Plas (``final`` is Overall): the share of its end-of-learning accuracy a run's
    end keeps (the regime map's calibration quantity); None where either is missing or NaN, or
    Plas is 0."""
    if final is None or plas is None or math.isnan(final) or math.isnan(plas) or not plas:
        return None
    return final / plas


def fwt(matrix: Matrix, zero_shot: Sequence[float | None], tasks: Sequence[int]) -> float | None:
    """Forward transfer (Lopez-Paz and Ranzato, 2017, "Gradient Episodic Memory"): the mean over
    ``tasks`` after the first of A[i-1, i] - b_i, the score on task i just before learning it
    against the untrained model's b_i (the zero-shot row, here the base with the shared
    initialisation). None when a needed cell was not scored (only `eval.all_tasks` scores tasks
    before they are learnt)."""
    cells = [(matrix[i - 1][i], zero_shot[i]) for i in tasks if i >= 1]
    if any(a is None or b is None for a, b in cells):
        return None
    return _mean([a - b for a, b in cells])


def stream_metrics(acc: Matrix, loss: Matrix, kinds: Sequence[str]) -> dict[str, float | None]:
    """Overall/Plas/BWT on accuracy over classification tasks, and on loss over generation tasks."""
    cls = [i for i, k in enumerate(kinds) if k == "classification"]
    gen = [i for i, k in enumerate(kinds) if k == "generation"]
    return {
        "overall": overall(acc, cls), "plas": plasticity(acc, cls), "bwt": bwt(acc, cls),
        "overall_loss": overall(loss, gen), "plas_loss": plasticity(loss, gen),
        "bwt_loss": bwt(loss, gen),
    }


def generation_metrics(gen: Matrix, task_metrics: Sequence[str | None]) -> dict[str, float | None]:
    """Overall/Plas/BWT of each generation metric (``rouge_l``, ``edit_sim``, ``sari``) over the
    tasks it scores, as ``overall_<metric>``, ``plas_<metric>``, ``bwt_<metric>``, from the matrix
    ``gen[after][on]`` of each task's own metric; only the metrics some task uses."""
    out: dict[str, float | None] = {}
    for name in GEN_METRICS:
        tasks = [i for i, m in enumerate(task_metrics) if m == name]
        if tasks:
            out |= {f"overall_{name}": overall(gen, tasks), f"plas_{name}": plasticity(gen, tasks),
                    f"bwt_{name}": bwt(gen, tasks)}
    return out
