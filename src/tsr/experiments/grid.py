"""A grid of run variants: one config, methods x variants x seeds, each point an ordinary run.

A *variant* is a name and the ``key=value`` overrides that make it (``random`` ->
``method.reference=random``; ``reversed`` -> ``stream.order=reversed``). Every point runs through
:func:`tsr.engine.compare.run_sweep` in the run directory ``tsr run`` gives its config
(:func:`tsr.engine.compare.point_dir`), so ``tsr compare``, ``tsr table`` and the audits built on
this module (``tsr audit kd``, ``tsr audit orders``) share finished runs, and an interrupted grid
resumes run by run. A ``method.*`` override given to the grid applies to every method in it (it
is applied after each point's ``method.name``, which would otherwise drop it, as
``tsr run method.name=M method.key=v`` keeps it). Results are read back through
:mod:`tsr.analysis.table`; :mod:`tsr.analysis.cells` makes them cells (mean ± sample std over seeds) and paired differences.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..config import RunConfig, load_config
from ..data.example import Stream
from ..data.streams import load_stream
from ..engine.compare import Point, TaskDone, point_dir, run_sweep
from ..engine.executor import Executor
from ..analysis.table import RunSummary, summarise
from ..errors import ConfigError
from ..methods.registry import resolve_method


@dataclass(frozen=True)
class Grid:
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


def plan_sweep(methods: list[str], seeds: list[int], vary: list[str]) -> list[Point]:
    """``tsr compare --vary KEY=V1,V2,...`` (repeatable): every combination of the values, as
    variants named ``key=value, ...``, for every method and seed. A ``method.*`` key varies only
    the methods that have that parameter; the others run once per seed (variant ``""``), and a
    key no method of the grid has is an error. A value cannot hold a comma (so no list values)."""
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
    params = {m: method_keys(m) for m in methods}

    def applies(key: str, method: str) -> bool:
        return not key.startswith("method.") or param_name(key) in params[method]

    for key, _ in axes:
        if not any(applies(key, m) for m in methods):
            raise ConfigError(f"--vary {key}: no method of the grid ({', '.join(methods)}) has a parameter "
                              f"{param_name(key)!r}")
    points: list[Point] = []
    for m in methods:
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


def base_stream(config: str | None, overrides: list[str]) -> tuple[RunConfig, Stream]:
    """The grid's config without its method settings (before any point's method, seed and
    variant) and its stream in the stream's own order."""
    cfg = load_config(config, split_overrides(overrides)[0])
    return cfg, load_stream(cfg.stream.source, cfg.stream.root, cfg.stream.options)


def audit_dir(cfg: RunConfig, stream: Stream, kind: str, overrides: list[str] = ()) -> Path:
    """``<out_dir>/audit-<kind>-<stream>-<hash>``: the hash of the grid's config and its method overrides."""
    method = split_overrides(list(overrides))[1]
    tag = cfg.fingerprint() if not method else hashlib.sha256(
        json.dumps([cfg.fingerprint(), method]).encode()).hexdigest()[:10]
    return Path(cfg.out_dir) / f"audit-{kind}-{stream.name}-{tag}"


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


def run_grid(grid: Grid, workers: int = 1, progress: Callable[[Point, str, int, int], None] | None = None,
             task_done: Callable[[TaskDone], None] | None = None, executor: Executor | None = None) -> None:
    """Train (or resume) every point that has not finished; finished runs return at once."""
    run_sweep(grid.config, list(grid.overrides), list(grid.points), workers, progress, task_done, executor)


def finished_runs(grid: Grid) -> dict[Point, RunSummary]:
    """The points whose runs have finished, read from their run directories."""
    out = {}
    for point, path in grid.dirs.items():
        if (path / "results.json").is_file():
            summary = summarise(path)
            if summary.finished:
                out[point] = summary
    return out


