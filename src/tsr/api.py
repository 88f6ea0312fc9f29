"""The functions of the public Python API that are more than a re-exported name (docs/api.md).

Each one is the library call behind a command: :func:`run` behind ``tsr run``, :func:`compare`
behind ``tsr compare``, :func:`probe` behind ``tsr probe``, :func:`export` behind ``tsr export``.
A config is given as a :class:`RunConfig` (from :func:`tsr.load_config`) or as what the command
line takes: a bundled config preset's name or a YAML file (None: the defaults), plus
``key.sub=value`` overrides.
"""

from __future__ import annotations

import numbers
import tempfile
from pathlib import Path
from typing import Sequence

from .config import RunConfig, apply_override, dump_yaml, from_plain, load_config
from .data import streams
from .engine.export import Exported, export_run
from .runs.results import Results, load_results
from .engine.run import Outcome, execute
from .errors import ConfigError
from .methods import registry

Config = RunConfig | str | Path | None


def resolve(config: Config = None, overrides: Sequence[str] = ()) -> RunConfig:
    """The checked :class:`RunConfig` of ``config`` with ``overrides`` applied."""
    if isinstance(overrides, str):
        overrides = [overrides]
    if not all(isinstance(o, str) for o in overrides):
        raise ConfigError(f"overrides: expected 'key.sub=value' strings, got {list(overrides)!r}")
    if not isinstance(config, RunConfig):
        return load_config(config, list(overrides))
    if not overrides:
        return config
    data = config.to_dict()
    for text in overrides:  # as on the command line: choosing another method drops its parameters
        data = apply_override(data, text)
    return from_plain(data)


def run(config: Config = None, overrides: Sequence[str] = (), *, progress: bool = False) -> Outcome:
    """Train through the config's stream and save the run (``tsr run``): a finished run with the
    same config returns its saved results, an interrupted one resumes after its last finished
    task. ``progress`` shows the progress bars and per-task lines on stderr."""
    reporter = None
    if progress:
        from .interface.display import ConsoleReporter

        reporter = ConsoleReporter()  # its own plain console on stderr
    return execute(resolve(config, overrides), reporter)


def _names(value: str | Sequence[str] | None, what: str) -> list[str] | None:
    """A list of names given as one name, a sequence of them, or None (every one)."""
    if value is None:
        return None
    names = [value] if isinstance(value, str) else list(value)
    if not names:
        raise ConfigError(f"{what}: an empty list (None means every one)")
    if not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"{what}: expected names, got {names!r}")
    return names


def _whole(value: object, least: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= least


def _seeds(value: int | Sequence[int]) -> list[int]:
    seeds = [value] if isinstance(value, (numbers.Integral, str)) else list(value)  # a string is refused below
    if not seeds or not all(_whole(s, 0) for s in seeds):
        raise ConfigError(f"seeds: expected one or more whole numbers >= 0, got {value!r}")
    return [int(s) for s in seeds]


def _workers(value: int) -> int:
    if not _whole(value, 1):
        raise ConfigError(f"workers: expected a whole number of at least 1, got {value!r}")
    return int(value)


def _local_only(cfg: RunConfig, methods: Sequence[str], workers: int) -> None:
    """Worker processes see built-in and installed (entry-point) methods and benchmarks, not what
    this process registered: refuse such a grid with one line instead of failing in a worker."""
    if workers <= 1:
        return
    for name, table in [(m, registry.ENTRIES) for m in methods] + [(cfg.stream.source, streams.ENTRIES)]:
        if table.is_local(name):
            raise ConfigError(f"{table.kind} {name!r} is registered in this process only, and worker processes "
                              "cannot see it: use workers=1, or install it as an entry point (docs/api.md)")


def compare(config: Config = None, overrides: Sequence[str] = (), *, methods: str | Sequence[str] | None = None,
            seeds: int | Sequence[int] = (0,), workers: int = 1) -> dict[tuple[str, int], Path]:
    """A grid of runs of one config (``tsr compare``): every method (None: every built-in method
    and preset) with every seed, ``workers`` at a time. Returns each (method, seed)'s run
    directory; finished runs are reused, interrupted ones resume."""
    from .engine.grid import plan_points, run_sweep

    cfg = resolve(config, overrides)
    workers = _workers(workers)
    points = plan_points(_names(methods, "methods"), _seeds(seeds))
    _local_only(cfg, [p.method for p in points], workers)
    folders: dict[tuple[str, int], Path] = {}

    def finished(point, path: str, done: int, total: int) -> None:
        folders[(point.method, point.seed)] = Path(path)

    with tempfile.TemporaryDirectory(prefix="tsr-compare-") as tmp:
        path = Path(tmp) / "config.yaml"  # what worker processes load: this config, resolved
        path.write_text(dump_yaml(cfg), encoding="utf-8")
        # the caller's own choice, given as the command line would give it: no file turns it on
        trusted = ["model.trust_remote_code=true"] if cfg.model.trust_remote_code else []
        run_sweep(str(path), trusted, points, workers, finished)
    return {key: folders[key] for key in sorted(folders)}


def probe(config: Config = None, overrides: Sequence[str] = (), *, arms: Sequence[str] | None = None,
          seeds: int | Sequence[int] = (0,), targets: Sequence[str] | None = None, sources: Sequence[str] | None = None,
          workers: int = 1, out: str | Path | None = None) -> dict:
    """The probe protocol (``tsr probe``): train the ``arms`` of every target (and source, for
    ``mixed``) task, and write the report into ``out`` (default
    ``<out_dir>/probe-<stream>-<fingerprint>``). Arms saved there before are not run again.
    Returns what ``report.json`` holds: ``headroom`` with ``full`` arms, the transfer ``matrix``
    with ``mixed`` arms."""
    from .experiments.probe.plan import DEFAULT_ARMS, load_probe_stream, plan_jobs, probe_dir
    from .experiments.probe.run import run_probe
    from .experiments.probe.report import designed_relations, write_report

    cfg = resolve(config, overrides)
    workers = _workers(workers)
    _local_only(cfg, [], workers)
    stream = load_probe_stream(cfg)
    jobs = plan_jobs(stream, _seeds(seeds), _names(targets, "targets"), _names(sources, "sources"),
                     _names(arms, "arms") or list(DEFAULT_ARMS))
    folder = Path(out) if out is not None else probe_dir(cfg, stream)
    done = run_probe(cfg, jobs, folder, workers)
    done = [a for a in done if a["target"] in stream.names and a["source"] in (None, *stream.names)]
    return write_report(folder, done, stream, designed_relations(cfg.stream.source, cfg.stream.options),
                        None, cfg.train.steps)


def export(run_dir: str | Path, out: str | Path, *, task: int | str | None = None, merge: bool = False,
           trust_remote_code: bool = False, push_to_hub: str | None = None, private: bool = False) -> Exported:
    """A run's final adapter, or the snapshot of ``task`` (its name, or its position from 1), as a
    PEFT LoRA adapter folder ``out`` with a model card; with ``merge``, the base model with it
    merged in (``tsr export``); ``push_to_hub``: then uploaded to that hub repository. A run
    whose config asks for ``model.trust_remote_code`` is refused unless ``trust_remote_code``
    is given: a run folder someone sent never runs code by itself."""
    return export_run(Path(run_dir), Path(out), None if task is None else str(task), merge, trust_remote_code,
                      push_to_hub, private)


def metrics(run: str | Path | Results | Outcome) -> dict[str, float | None]:
    """Overall, Plasticity, BWT (and their loss twins for generation tasks, and each generation
    metric's with ``eval.predictions``) of a finished run, recomputed from its results matrix:
    equal to ``results.json``'s ``metrics``, None where that holds null (a metric over no task);
    empty for an unfinished run."""
    if isinstance(run, Outcome):
        run = run.results
    return (run if isinstance(run, Results) else load_results(Path(run))).metrics()
