"""Running the scale audit (its plan: :mod:`tsr.experiments.scale.plan`): each model's probe arms
and signature tables, resumable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from ...atomic import write_json
from ...config import RunConfig
from ...data.example import Stream
from ...engine.executor import Executor
from ..probe import plan as pr
from ..probe.run import run_probe
from .plan import ScalePlan, at_model, jobs_of, model_dirs


def run_scale(cfg: RunConfig, stream: Stream, plan: ScalePlan, workers: int = 1,
              progress: Callable[[dict, int, int], None] | None = None,
              executor: Executor | None = None) -> dict[str, list[dict]]:
    """Run every arm not yet saved, model after model; return each model's arms of the plan."""
    jobs = jobs_of(stream, plan)
    total, found = len(jobs) * len(plan.models), {}
    for i, (label, folder) in enumerate(model_dirs(cfg, stream, plan).items()):
        def step(result: dict, done: int, _total: int, base: int = i * len(jobs), name: str = label) -> None:
            if progress:
                progress({**result, "model": name}, base + done, total)

        model_cfg = at_model(cfg, plan.models[i])
        found[label] = _of_plan(run_probe(model_cfg, jobs, folder, workers, step, (), executor), model_cfg, plan)
        _release()  # one local worker ran in this process: free its model before the next one loads
    return found


def _release() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def saved_arms(cfg: RunConfig, stream: Stream, plan: ScalePlan) -> dict[str, list[dict]]:
    """The arms saved for the plan in each model's probe folder, running nothing."""
    found = {}
    for path, (label, folder) in zip(plan.models, model_dirs(cfg, stream, plan).items()):
        rows = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((folder / "arms").glob("*.json"))]
        found[label] = _of_plan(rows, at_model(cfg, path), plan)
    return found


def _of_plan(arms: list[dict], cfg: RunConfig, plan: ScalePlan) -> list[dict]:
    """The plan's targets, seeds and sources, and full arms of 10N only (a probe folder may hold
    arms of other sizes, seeds or sources, which would make the models' summaries uneven)."""
    ten_n = cfg.stream.budget * pr.FULL_FACTOR
    keep = []
    for a in arms:
        if a["target"] not in plan.targets or a["seed"] not in plan.seeds or a["arm"] not in plan.arms:
            continue
        if a["arm"] == "full" and a.get("examples", ten_n) != ten_n:
            continue
        if a["arm"] == "mixed" and a["source"] not in (plan.sources or [a["source"]]):
            continue
        keep.append(a)
    return keep


def signature_tables(cfg: RunConfig, stream: Stream, plan: ScalePlan, folder: Path,
                     probe_name: str) -> dict[str, dict[int, dict]]:
    """``tables[kind][seed][target][source]`` of one model for the plan's signatures and seeds:
    read from ``folder/signature-tables.json`` where that holds them (taken on the same probe
    folder's config with as many probe batches), the rest taken and added to it."""
    from ...model.learner import build_learner
    from ..signatures.run import seed_tables

    cache = Path(folder) / "signature-tables.json"
    saved = json.loads(cache.read_text(encoding="utf-8")) if cache.is_file() else {}
    if saved.get("probe_dir") != probe_name or saved.get("probe_batches") != plan.probe_batches:
        saved = {}
    tables = saved.get("tables", {})
    missing = {seed: [k for k in plan.signatures if str(seed) not in tables.get(k, {})] for seed in plan.seeds}
    if any(missing.values()):
        learner = build_learner(cfg)
        for seed, kinds in missing.items():
            if kinds:
                for kind, table in seed_tables(learner, cfg, stream, seed, kinds, plan.probe_batches).items():
                    tables.setdefault(kind, {})[str(seed)] = table
        del learner
        _release()
        write_json(cache, {"probe_dir": probe_name, "probe_batches": plan.probe_batches, "tables": tables})
    return {k: {s: tables[k][str(s)] for s in plan.seeds} for k in plan.signatures}


def run_signatures(cfg: RunConfig, stream: Stream, plan: ScalePlan, arms: dict[str, list[dict]], out: Path,
                   relations: dict | None = None) -> dict[str, dict[str, dict]]:
    """Per model, each signature's seed-mean table (``[label][kind][target][source]``); with mixed
    arms, the model's signature audit against its matrix is written to ``out/<label>/``."""
    from ...analysis.transfer import transfer_matrix
    from ..signatures.report import write_audit
    from ..signatures.run import summarise

    kinds = {t.name: t.kind.value for t in stream}
    found = {}
    for path, (label, folder) in zip(plan.models, model_dirs(cfg, stream, plan).items()):
        model_cfg = at_model(cfg, path)
        per_seed = signature_tables(model_cfg, stream, plan, Path(out) / label, folder.name)
        matrix = transfer_matrix(arms[label]) if any(a["arm"] == "mixed" for a in arms[label]) else {}
        audit = {k: summarise(k, per_seed[k], matrix, kinds, relations) for k in plan.signatures}
        if matrix:
            write_audit(Path(out) / label, audit, stream.names, title=f"signature audit · {stream.name} · {label}")
        found[label] = {k: a["cosine"] for k, a in audit.items()}
    return found


__all__ = ["run_scale", "run_signatures", "saved_arms", "signature_tables"]
