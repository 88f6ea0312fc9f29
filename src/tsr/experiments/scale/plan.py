"""The scale audit (the reference paper's Figure "scale" and §"Transfer follows headroom"): the
same probe on several base models, and which best-source choices stay the same across them.

Each model is an ordinary probe: the config with ``model.path`` set to that model, its arms in
that config's probe folder (:func:`tsr.experiments.probe.plan.probe_dir`), the folder ``tsr probe
model.path=PATH`` uses. The folder's fingerprint covers ``model.path``, so two models' arms
never share a folder, and arms a probe saved are reused (an interrupted audit resumes arm by
arm). With ``signatures``, each model's signature tables (:func:`tsr.experiments.signatures.run.
seed_tables`, at each seed's shared initialisation) are taken once and cached in the audit
folder (``<label>/signature-tables.json``); with mixed arms they are also scored against that
model's matrix there (``<label>/signatures.*``, the signature audit of ``tsr probe --signatures``).

What comes out (:mod:`tsr.experiments.scale.report`): per target and model the headroom
S(10N) - S(N) and S(N), the matrix's best source and its gain (with mixed arms), each
signature's top-1 source, and per choice whether it is the same at every model.

Choices where the paper is silent (parameters here, stated in docs/audits.md):
- a choice is *stable* when it is the same source at every model (for two models, the paper's
  "7B agrees with 0.5B"); the report also counts agreement of each model with the first;
- a signature's pick is the argmax of its seed-mean similarity to the target over the
  sources asked for (``--sources``, default every other task), whatever arms were trained.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

from ...cl.signatures import PROBE_BATCHES
from ...config import RunConfig
from ...data.example import Stream
from ...data.names import unsafe_reason
from ...errors import ConfigError, ModelError
from ..probe import plan as pr

ARMS = pr.DEFAULT_ARMS  # the arms a scale audit may run: the probe's own


DEFAULT_ARMS = ("target", "full")


@dataclass(frozen=True)
class ScalePlan:
    models: tuple[str, ...]  # model.path of each model, in the order of the report's x axis
    labels: tuple[str, ...]
    seeds: tuple[int, ...]
    targets: tuple[str, ...]
    sources: tuple[str, ...] | None
    arms: tuple[str, ...]
    signatures: tuple[str, ...] = ()
    probe_batches: int = PROBE_BATCHES


def check_model(cfg: RunConfig, path: str) -> None:
    """A model path that is neither ``bundled``, an existing model folder nor a hub id is one
    ConfigError naming it (nothing is loaded)."""
    from ...model.backbone import resolve_source

    try:
        resolve_source(dataclasses.replace(cfg.model, path=path))
    except ModelError as err:
        if "neither an existing folder" in str(err):
            raise ConfigError(f"--models: model path {path!r} does not exist (neither a folder nor a hub id "
                              "owner/name)") from None
        raise ConfigError(f"--models: {err}") from None


def plan_scale(cfg: RunConfig, stream: Stream, models: list[str], labels: list[str] | None, seeds: list[int],
               targets: list[str] | None = None, sources: list[str] | None = None, arms: list[str] | None = None,
               signatures: list[str] | None = None, probe_batches: int = PROBE_BATCHES) -> ScalePlan:
    """Check everything before anything runs: at least two models, each one that exists,
    labels one per model, known tasks and arms, pools large enough for every arm."""
    models = list(models or [])
    if len(models) < 2:
        raise ConfigError(f"--models: the scale audit compares at least two models (got {len(models)})")
    twice = [m for i, m in enumerate(models) if m in models[:i]]
    if twice:
        raise ConfigError(f"--models: {twice[0]!r} is given twice")
    for path in models:
        check_model(cfg, path)
    if labels is None:
        labels = [Path(m).name or m for m in models]
        clash = [x for i, x in enumerate(labels) if x in labels[:i]]
        if clash:
            raise ConfigError(f"--labels: two models share the folder name {clash[0]!r}; name them with --labels")
    elif len(labels) != len(models):
        raise ConfigError(f"--labels: {len(labels)} label(s) for {len(models)} models (one per --models entry)")
    elif len(set(labels)) != len(labels):
        raise ConfigError(f"--labels: {next(x for i, x in enumerate(labels) if x in labels[:i])!r} is given twice")
    for label in labels:  # each names a folder of the report
        why = unsafe_reason(label) if label else "a label is empty"
        if why:
            raise ConfigError(f"--labels: {why}")
    bad = [a for a in (arms or []) if a not in ARMS]
    if bad:
        raise ConfigError(f"--arms: unknown arm {bad[0]!r} for the scale audit (valid: {', '.join(ARMS)})")
    arms = list(dict.fromkeys(["target", *(arms or DEFAULT_ARMS)]))
    if "full" not in arms and "mixed" not in arms:
        raise ConfigError("--arms: the scale audit needs full arms (headroom) or mixed arms (best source)")
    if not seeds:
        raise ConfigError("--seeds: no seed given")
    jobs = pr.plan_jobs(stream, seeds, targets, sources, arms)  # unknown task names
    for job in jobs:  # a budget over a pool, before anything runs
        pr.arm_examples(stream.task(job.target), cfg.stream.budget, job.arm, job.seed, job.size)
    if probe_batches < 1:
        raise ConfigError(f"--probe-batches: {probe_batches} is not a positive number of batches")
    return ScalePlan(tuple(models), tuple(labels), tuple(seeds), tuple(targets or stream.names),
                     tuple(sources) if sources else None, tuple(arms), tuple(signatures or ()), probe_batches)


def at_model(cfg: RunConfig, path: str) -> RunConfig:
    """``cfg`` with ``model.path=path``: the config ``tsr probe model.path=PATH`` loads."""
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, path=path))


def model_dirs(cfg: RunConfig, stream: Stream, plan: ScalePlan) -> dict[str, Path]:
    """The probe folder of each model (by label)."""
    dirs = {label: pr.probe_dir(at_model(cfg, path), stream) for label, path in zip(plan.labels, plan.models)}
    assert len(set(dirs.values())) == len(dirs), "two models share a probe folder"
    return dirs


def audit_dir(cfg: RunConfig, stream: Stream, plan: ScalePlan) -> Path:
    """``<out_dir>/audit-scale-<stream>-<hash of the models' probe folders, in order>``."""
    names = "\n".join(p.name for p in model_dirs(cfg, stream, plan).values())
    return Path(cfg.out_dir) / f"audit-scale-{stream.name}-{hashlib.sha1(names.encode()).hexdigest()[:10]}"


def jobs_of(stream: Stream, plan: ScalePlan) -> list[pr.Job]:
    return pr.plan_jobs(stream, plan.seeds, list(plan.targets), list(plan.sources or []) or None, plan.arms)
