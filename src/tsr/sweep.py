"""Running a grid of (method, seed) runs of one config, in parallel, resumably.

Each grid point is an ordinary run (:func:`tsr.runner.execute`) in its own run directory, so an
interrupted sweep resumes every unfinished run where it stopped and skips finished ones;
:mod:`tsr.aggregate` then turns the run directories into the comparison table.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from dataclasses import dataclass
from typing import Callable

import torch

from .config import RunConfig, load_config
from .methods.registry import method_names, resolve_method


@dataclass(frozen=True)
class Point:
    method: str
    seed: int


def plan_points(methods: list[str] | None, seeds: list[int]) -> list[Point]:
    """The grid; ``methods=None`` or ``["all"]`` means every registered method and preset."""
    names = method_names() if not methods or methods == ["all"] else methods
    for name in names:
        resolve_method({"name": name})  # unknown names fail before anything runs
    return [Point(m, s) for m in names for s in seeds]


def point_config(config: str | None, overrides: list[str], point: Point) -> RunConfig:
    return load_config(config, [*overrides, f"method.name={point.method}", f"seed={point.seed}"])


def _run(args: tuple[str | None, list[str], Point, int]) -> tuple[Point, str]:
    from .runner import execute

    config, overrides, point, threads = args
    torch.set_num_threads(threads)
    outcome = execute(point_config(config, overrides, point))
    return point, str(outcome.run.path)


def run_sweep(config: str | None, overrides: list[str], points: list[Point], workers: int = 1,
              progress: Callable[[Point, str, int, int], None] | None = None) -> list[str]:
    """Run every point (finished ones return at once); returns the run directories."""
    threads = max(1, (os.cpu_count() or 1) // max(1, workers))
    jobs = [(config, list(overrides), p, threads) for p in points]
    done, paths = 0, []
    if workers <= 1:
        results = map(_run, jobs)
        for point, path in results:
            done += 1
            paths.append(path)
            if progress:
                progress(point, path, done, len(points))
        return paths
    with mp.get_context("spawn").Pool(workers) as pool:
        for point, path in pool.imap_unordered(_run, jobs):
            done += 1
            paths.append(path)
            if progress:
                progress(point, path, done, len(points))
    return paths
