"""Running a grid of (method, seed) runs of one config, in parallel, resumably.

A point may also carry overrides of its own (a *variant*: ``method.reference=random``,
``stream.order=reversed``), applied after the method and the seed, so that the audits that vary
one thing (``tsr audit kd``, ``tsr audit orders``) run on this same machinery. A point's run is
exactly the ``tsr run`` of its config: ``CONFIG overrides method.name=M seed=S variant...``.

Each grid point is an ordinary run (:func:`tsr.engine.run.execute`) in its own run directory, so an
interrupted sweep resumes every unfinished run where it stopped and skips finished ones;
:mod:`tsr.analysis.table` then turns the run directories into the comparison table. Runs report
each finished task as it happens (through a queue from worker processes), so a long grid is
never silent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from ..config import RunConfig, load_config
from ..methods.registry import method_names, resolve_method
from .executor import Executor
from .pool import run_pool
from .run import check_stream, execute, run_name

SEEDS = (0, 1, 2)  # a grid's seeds when none are given (`tsr compare`)


@dataclass(frozen=True)
class Point:
    method: str
    seed: int
    overrides: tuple[str, ...] = ()
    """the variant's own ``key=value`` overrides (after ``method.name`` and ``seed``)"""
    variant: str = ""
    """the variant's name in tables and progress lines ("" for a plain point)"""


def plan_points(methods: list[str] | None, seeds: list[int]) -> list[Point]:
    """The grid; ``methods=None`` or ``["all"]`` means every registered method and preset."""
    names = method_names() if not methods or methods == ["all"] else methods
    for name in names:
        resolve_method({"name": name})  # unknown names fail before anything runs
    return [Point(m, s) for m in names for s in seeds]


def plan_variants(methods: list[str], variants: dict[str, tuple[str, ...]], seeds: list[int]) -> list[Point]:
    """Every method with every variant (name -> its overrides) on every seed, in that order."""
    for name in methods:
        resolve_method({"name": name})
    return [Point(m, s, tuple(extra), variant) for m in methods for variant, extra in variants.items() for s in seeds]


def point_config(config: str | None, overrides: list[str], point: Point) -> RunConfig:
    """The point's config; a plain point's is what it always was (same run name, same fingerprint)."""
    return load_config(config, [*overrides, f"method.name={point.method}", f"seed={point.seed}", *point.overrides])


def point_dir(config: str | None, overrides: list[str], point: Point) -> Path:
    """The run directory the point trains in (and ``tsr run`` of its config uses); checks the
    config and the stream (every check ``tsr config`` makes), loads no model, writes nothing."""
    cfg = point_config(config, overrides, point)
    return Path(cfg.out_dir) / run_name(cfg, check_stream(cfg), cfg.method.name)


@dataclass(frozen=True)
class TaskDone:
    """One finished task of one grid point."""

    point: Point
    index: int       # 0-based position in the stream
    tasks: int       # tasks in the stream
    name: str
    seconds: float
    resumed_at: int = 0  # the step a mid-task checkpoint let the task go on from (0: its start)


class _TaskEvents:
    """A reporter that hands every finished task to ``emit``."""

    def __init__(self, point: Point, emit: Callable[[TaskDone], Any]):
        self.point, self.emit, self.resumed_at = point, emit, 0

    def task_start(self, t, plan, info) -> None:
        self.resumed_at = int(info.get("resume_step", 0))

    def step(self, t, step, steps, terms) -> None:
        pass

    def task_end(self, t, plan, results, seconds) -> None:
        self.emit(TaskDone(self.point, t, len(plan.stream), plan.stream[t].name, round(seconds, 1), self.resumed_at))


def _setup(config: str | None, overrides: list[str], threads: int) -> tuple[str | None, list[str]]:
    torch.set_num_threads(threads)
    return config, overrides


def _execute(state: tuple[str | None, list[str]], point: Point, emit: Callable[[TaskDone], Any]) -> tuple[Point, str]:
    config, overrides = state
    outcome = execute(point_config(config, overrides, point), _TaskEvents(point, emit))
    return point, str(outcome.run.path)


def run_sweep(config: str | None, overrides: list[str], points: list[Point], workers: int = 1,
              progress: Callable[[Point, str, int, int], None] | None = None,
              task_done: Callable[[TaskDone], None] | None = None, executor: Executor | None = None,
              threads: int | None = None) -> list[str]:
    """Run every point (finished ones return at once); returns the run directories.

    ``progress`` hears of each finished run, ``task_done`` of each task finished on the way.
    ``threads`` per run defaults to this machine's cores over ``workers`` (on Ray,
    ``model.threads`` where set: what each run asks the cluster for). On Ray
    (``executor``) the output folder is made absolute, so that workers started elsewhere write
    where the driver reads.
    """
    cfg = load_config(config, overrides)
    ray = executor is not None and executor.kind == "ray"
    threads = threads or (ray and cfg.model.threads) or max(1, (os.cpu_count() or 1) // max(1, workers))
    if ray:
        overrides = [*overrides, f"out_dir={Path(cfg.out_dir).resolve()}"]
    paths: list[str] = []

    def finished(result: tuple[Point, str]) -> None:
        point, path = result
        paths.append(path)
        if progress:
            progress(point, path, len(paths), len(points))

    run_pool(_setup, (config, list(overrides), threads), _execute, points, workers, finished, task_done,
             executor, threads)
    return paths
