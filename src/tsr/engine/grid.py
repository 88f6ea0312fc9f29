"""A grid of runs of one config: its points (method x variant x seed), planned once, and run
in parallel, resumably. The one grid planner: `tsr compare` (with ``--vary``), the Python API
and the audits that vary one thing (`tsr audit kd`, `orders`, `regime`) all plan here.

A point is an ordinary run: ``CONFIG overrides method.name=M seed=S variant...``, in the run
directory ``tsr run`` of that config uses (:func:`point_dir`), so grids share finished runs
with each other and with `tsr table`, and an interrupted grid resumes run by run. A *variant*
is a name and the ``key=value`` overrides that make it (``random`` ->
``method.reference=random``; ``reversed`` -> ``stream.order=reversed``). A ``method.*``
override given to the grid applies to every method in it that has that parameter (after each
point's ``method.name``, which would otherwise drop it, as ``tsr run method.name=M method.key=v``
keeps it). Runs report each finished task as it happens (through a queue from worker
processes), so a long grid is never silent.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from ..config import RunConfig, load_config
from ..errors import ConfigError
from ..methods.registry import method_names, resolve_method
from .executor import Executor
from .launch import launch_run
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


@dataclass(frozen=True)
class Grid:
    """Every point of a grid with its run directory; ``overrides`` are the grid's own, without
    its ``method.*`` ones (those are in each point's)."""

    config: str | None
    overrides: tuple[str, ...]
    points: tuple[Point, ...]
    dirs: dict[Point, Path]


def check_methods(methods: list[str]) -> list[str]:
    """The names, each a known method or preset (``--methods``)."""
    if not methods:
        raise ConfigError("--methods: give at least one method")
    for m in methods:
        try:
            resolve_method({"name": m})
        except ConfigError:
            raise ConfigError(f"--methods: unknown method {m!r} (see `tsr methods`)") from None
    return methods


def param_name(key: str) -> str:
    """The method parameter a ``method.*`` key (or ``method.key=value`` override) sets: ``alpha``."""
    return key.split("=", 1)[0].strip()[len("method."):].split(".")[0]


def method_keys(method: str) -> set[str]:
    """The parameter names of a method or preset (``reference``, ``kd_weight``, ...)."""
    return {f.name for f in dataclasses.fields(resolve_method({"name": method}).params)}


def _axes(vary: list[str]) -> list[tuple[str, list[str]]]:
    """``KEY=V1,V2,...`` specs as (key, values), each checked."""
    axes: list[tuple[str, list[str]]] = []
    for spec in vary:
        key, eq, values = spec.partition("=")
        key = key.strip()
        items = [v.strip() for v in values.split(",") if v.strip()]
        if not eq or not key or not items:
            raise ConfigError(f"--vary: expected KEY=V1,V2,... (got {spec!r})")
        if key in ("name", "method.name", "seed"):
            raise ConfigError(f"--vary {key}: use --methods and --seeds for that")
        if key in (k for k, _ in axes):
            raise ConfigError(f"--vary: {key} is varied twice")
        axes.append((key, items))
    return axes


def plan_points(methods: list[str] | None, seeds: list[int], vary: list[str] = ()) -> list[Point]:
    """Every method (None or ``["all"]``: every registered method and preset) on every seed, and
    with ``vary`` (``KEY=V1,V2,...``, ``tsr compare --vary``) every combination of the values, as
    variants named ``key=value, ...``. A ``method.*`` key varies only the methods that have that
    parameter; the others run once per seed (variant ``""``), and a key no method of the grid has
    is an error. A value cannot hold a comma (so no list values)."""
    names = method_names() if not methods or methods == ["all"] else check_methods(list(methods))
    axes = _axes(list(vary))
    params = {m: method_keys(m) for m in names} if axes else {}

    def applies(key: str, method: str) -> bool:
        return not key.startswith("method.") or param_name(key) in params[method]

    for key, _ in axes:
        if not any(applies(key, m) for m in names):
            raise ConfigError(f"--vary {key}: no method of the grid ({', '.join(names)}) has a parameter "
                              f"{param_name(key)!r}")
    points: list[Point] = []
    for m in names:
        combos: list[tuple[tuple[str, str], ...]] = [()]
        for key, items in axes:
            if applies(key, m):
                combos = [(*c, (key, v)) for c in combos for v in items]
        for combo in combos:
            overrides = tuple(f"{k}={v}" for k, v in combo)
            variant = ", ".join(f"{k.removeprefix('method.')}={v}" for k, v in combo)
            points.extend(Point(m, s, overrides, variant) for s in seeds)
    return points


def split_overrides(overrides: list[str]) -> tuple[list[str], list[str]]:
    """(run overrides, ``method.*`` overrides); ``name=`` and ``method.name=`` are refused (the
    grid names its runs by their configs, and ``--methods`` chooses the methods)."""
    run, method = [], []
    for o in overrides:
        key = o.split("=", 1)[0].strip()
        if key == "name":
            raise ConfigError(f"{o}: a grid's runs are named by their configs (one folder each); drop 'name='")
        if key == "method.name":
            raise ConfigError(f"{o}: the grid's methods come from --methods; drop 'method.name='")
        (method if key.startswith("method.") else run).append(o)
    return run, method


def plan_grid(config: str | None, overrides: list[str], points: list[Point]) -> Grid:
    """Every point's run directory, every config checked before anything runs; nothing is written.
    The grid's ``method.*`` overrides join each point's own, before them, for every method that
    has that parameter (``method.probe_batches=1`` reaches TSR and not SeqFT); a parameter no
    method of the grid has is one :class:`ConfigError` line."""
    run, method = split_overrides(list(overrides))
    params = {p.method: method_keys(p.method) for p in points}
    for o in method:  # a key no method of the grid has is a typo, not a parameter of some other method
        if not any(param_name(o) in keys for keys in params.values()):
            raise ConfigError(f"{o}: no method of the grid ({', '.join(params)}) has a parameter {param_name(o)!r}")
    points = [dataclasses.replace(p, overrides=(*(o for o in method if param_name(o) in params[p.method]), *p.overrides))
              for p in points]
    dirs = {p: point_dir(config, run, p) for p in points}
    return Grid(config, tuple(run), tuple(points), dirs)


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


def _setup(config: str | None, overrides: list[str], threads: int, processes: int = 1) -> tuple:
    torch.set_num_threads(threads)
    return config, overrides, threads, processes


def _execute(state: tuple, point: Point, emit: Callable[[TaskDone], Any]) -> tuple[Point, str]:
    config, overrides, threads, processes = state
    if processes > 1:  # one run on several processes, launched from this worker (tsr.engine.launch)
        cfg = point_config(config, overrides, point)
        stream = check_stream(cfg)
        path = Path(cfg.out_dir) / run_name(cfg, stream, cfg.method.name)
        launch_run(config, [*overrides, f"method.name={point.method}", f"seed={point.seed}", *point.overrides],
                   processes, path, threads,
                   lambda e: emit(TaskDone(point, e["task"], len(stream), e["name"], round(e["seconds"], 1))))
        return point, str(path)
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

    processes = executor.processes_per_run if executor is not None else 1
    run_pool(_setup, (config, list(overrides), threads, processes), _execute, points, workers, finished, task_done,
             executor, threads * processes)
    return paths


def run_grid(grid: Grid, workers: int = 1, progress: Callable[[Point, str, int, int], None] | None = None,
             task_done: Callable[[TaskDone], None] | None = None, executor: Executor | None = None) -> list[str]:
    """Train (or resume) every point of ``grid`` that has not finished; finished runs return at once."""
    return run_sweep(grid.config, list(grid.overrides), list(grid.points), workers, progress, task_done, executor)
