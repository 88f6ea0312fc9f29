"""Running the probe's arms: each trains a fresh adapter through the engine's task loop and
scores the target (the protocol and the arms: :mod:`tsr.experiments.probe.plan`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import torch

from ...atomic import remove_leftovers, write_json, write_text
from ...cl.memory import TaskRecord
from ...config import RunConfig, dump_yaml
from ...data.example import Stream
from ...data.streams import load_stream
from ...engine.evaluation import evaluate
from ...engine.loop import train_on
from ...engine.machine import describe
from ...engine.executor import Executor
from ...engine.pool import run_pool
from ...errors import ConfigError
from ...methods.base import NoParams
from ...methods.er import ER, REPLAY_RATIO, ERParams
from ...methods.seqft import SeqFT
from ...model.learner import Learner, build_learner
from ..carriers import arms as ca
from .plan import Job, arm_examples, arms_config, load_probe_stream, source_job


class ScoreAt:
    """A step callback that scores the target's test set after the given steps (not the last)."""

    def __init__(self, learner: Learner, test: list, steps: Iterable[int], eval_batch: int, dropout: bool):
        self.learner, self.test, self.steps, self.eval_batch, self.dropout = learner, test, set(steps), eval_batch, dropout
        self.scores: dict[str, dict] = {}
        self.seconds = 0.0

    def __call__(self, index: int, step: int, steps: int, terms: dict[str, float]) -> None:
        if step in self.steps and step < steps:
            started = time.time()
            self.learner.train_mode(False)
            score = evaluate(self.learner, self.test, self.eval_batch)
            self.learner.train_mode(self.dropout)
            self.scores[str(step)] = {"acc": score.acc, "loss": score.loss}
            self.seconds += time.time() - started


def source_adapter(learner: Learner, cfg: RunConfig, stream: Stream, source: str, seed: int,
                   folder: Path | None = None) -> dict:
    """theta_J of ``source`` at ``seed``: read from ``folder`` when cached there, else trained
    (:func:`source_job`) and, with a ``folder``, saved there atomically. Leaves the learner's
    adapter in an unspecified state (every arm starts by resetting it)."""
    path = ca.source_path(folder, source, seed) if folder is not None else None
    if path is not None and path.is_file():
        return ca.load_source(path, learner.device)
    run_job(learner, cfg, stream, source_job(stream, source, seed), {})
    state = learner.adapter.state()
    if path is not None:
        ca.save_source(path, state)
    return state


def run_job(learner: Learner, cfg: RunConfig, stream: Stream, job: Job, tests: dict,
            checkpoints: Iterable[int] = (), sources: Path | None = None) -> dict:
    """Train one arm from the shared initialisation of its seed and score the target, also
    after each of ``checkpoints`` steps (those below ``train.steps``) when given.

    A mixed arm is ER (alpha 1/2) on the target as the second task of a stream whose first
    task left the source's whole pool as its replay data; an ``init`` or ``anchor`` arm is the
    same two-task stream with the source adapter as the first task's snapshot
    (:mod:`tsr.experiments.carriers.arms`; cached in ``sources``); the other arms are SeqFT.
    """
    started = time.time()
    theta = source_adapter(learner, cfg, stream, job.source, job.seed, sources) if job.arm in ca.CARRIERS else None
    learner.reset(job.seed)
    learner.adapter.load(learner.init_state)
    task = stream.task(job.target)
    memory: list[TaskRecord] = []
    if job.arm in ("mixed", "random", "pooled"):
        for j, name in enumerate(job.candidates if job.arm == "pooled" else (job.source,)):
            source = stream.task(name)
            memory.append(TaskRecord(j, source.name, source.kind.value, None, source.pool, learner.init_state))
        method = ER(ERParams(alpha=REPLAY_RATIO))
    elif theta is not None:
        memory.append(ca.source_record(stream.task(job.source), theta))
        method = ca.carrier_method(job.arm, job.mu)
    else:
        method = SeqFT(NoParams())
    examples = arm_examples(task, cfg.stream.budget, job.arm, job.seed, job.size)
    if job.target not in tests:
        tests[job.target] = learner.encoder.encode_all(task.test[: cfg.stream.test_cap], f"task {task.name!r} (test)")
    dropout = cfg.lora.dropout > 0
    curve = ScoreAt(learner, tests[job.target], checkpoints, cfg.eval.batch_size, dropout)
    # the target is the task after its sources in a stream (index 1 after one source)
    train_on(learner, method, task, examples, cfg.train, seed=job.seed, index=max(1, len(memory)), memory=memory,
             dropout=dropout, on_step=[curve])
    score = evaluate(learner, tests[job.target], cfg.eval.batch_size)
    result = {"target": job.target, "arm": job.arm, "source": job.source, "seed": job.seed,
              "kind": task.kind.value, "acc": score.acc, "loss": score.loss, "n": score.n,
              "examples": len(examples), "seconds": round(time.time() - started, 2),
              "machine": describe(learner.device, learner.compiled)}  # an arm's pair is a pair on one kind
    if job.arm in ("random", "pooled"):
        result["candidates"] = list(job.candidates)
    if job.arm == "anchor":  # the label (anchor-mu1:J) keeps arms of several mu apart
        result.update(mu=ca.DEFAULT_MU if job.mu is None else job.mu, label=job.label)
    if curve.scores:
        result["checkpoints"] = curve.scores
        result["checkpoint_seconds"] = round(curve.seconds, 2)  # included in "seconds"
    return result


def score_start(learner: Learner, cfg: RunConfig, stream: Stream, target: str, source: str | None, seed: int,
                tests: dict, sources: Path | None = None) -> dict:
    """The target's score at an arm's starting point, before its first step: the seed's shared
    initialisation (where every arm but ``init`` starts) or, given a ``source``, its adapter
    theta_J (where the ``init`` arm starts; cached in ``sources``, trained when missing)."""
    theta = source_adapter(learner, cfg, stream, source, seed, sources) if source is not None else None
    learner.reset(seed)
    learner.adapter.load(learner.init_state if theta is None else theta)
    task = stream.task(target)
    if target not in tests:
        tests[target] = learner.encoder.encode_all(task.test[: cfg.stream.test_cap], f"task {task.name!r} (test)")
    learner.train_mode(False)
    score = evaluate(learner, tests[target], cfg.eval.batch_size)
    return {"target": target, "source": source, "seed": seed, "kind": task.kind.value,
            "acc": score.acc, "loss": score.loss, "n": score.n}


@dataclass
class Worker:
    """What one worker process holds while it runs arms: the model and the stream, loaded once."""

    cfg: RunConfig
    stream: Stream
    learner: Learner
    checkpoints: tuple[int, ...]
    folder: Path
    tests: dict = field(default_factory=dict)


def _setup(cfg: RunConfig, threads: int, checkpoints: tuple[int, ...], folder: str) -> Worker:
    torch.set_num_threads(threads)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    return Worker(cfg, load_probe_stream(cfg), build_learner(cfg), checkpoints, Path(folder))


def _work(worker: Worker, job: Job, emit) -> dict:
    sources = worker.folder.parent / ca.SOURCES_DIR
    if job.arm == "source":  # theta_J of the carrier arms, cached for them
        source_adapter(worker.learner, worker.cfg, worker.stream, job.target, job.seed, sources)
        return {"target": job.target, "arm": "source", "seed": job.seed}
    result = run_job(worker.learner, worker.cfg, worker.stream, job, worker.tests, worker.checkpoints, sources)
    write_json(worker.folder / f"{job.key}.json", result)
    return result


def _digest(path: Path) -> str | None:
    """The data digest a probe folder's ``data.json`` records (None: none readable)."""
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        return None


def _saved(path: Path, checkpoints: tuple[int, ...]) -> bool:
    """An arm is done when its file exists and holds every checkpoint asked for now."""
    if not path.is_file():
        return False
    if not checkpoints:
        return True
    have = json.loads(path.read_text(encoding="utf-8")).get("checkpoints", {})
    return all(str(s) in have for s in checkpoints)


def run_probe(cfg: RunConfig, jobs: list[Job], out: Path, workers: int = 1,
              progress: Callable[[dict, int, int], None] | None = None,
              checkpoints: Iterable[int] = (), executor: Executor | None = None,
              share_sources: Iterable[Path] = ()) -> list[dict]:
    """Run the jobs not yet saved under ``out/arms`` (each also scored after ``checkpoints``
    steps), on local worker processes or on Ray (``executor``); return every result saved there.
    ``share_sources``: probe folders of the same config but another budget, whose cached source
    adapters (those of the same data) are copied in rather than trained again."""
    if executor is not None and executor.processes_per_run > 1:
        raise ConfigError(f"--processes-per-run {executor.processes_per_run}: probe arms train on one process each "
                          "(a grid of runs, tsr compare or the kd, orders and regime audits, can launch several)")
    checkpoints = tuple(sorted(set(checkpoints)))
    bad = [s for s in checkpoints if not 1 <= s < cfg.train.steps]
    if bad:
        raise ConfigError(f"--checkpoints: step {bad[0]} is not between 1 and train.steps - 1 ({cfg.train.steps - 1})")
    arms_dir = Path(out) / "arms"
    config_text = dump_yaml(dataclasses.replace(arms_config(cfg), seed=cfg.seed))
    saved = Path(out) / "config.yaml"
    if saved.is_file() and saved.read_text() != config_text:
        # arms of two configs must never be mixed in one matrix
        raise ConfigError(f"{out}: holds probe arms of a different config (see its config.yaml); "
                          "choose another --out")
    # the data the arms train on: every task of the stream, whatever order or subset is probed
    every = load_stream(cfg.stream.source, cfg.stream.root, cfg.stream.options)
    digest = every.digest()
    for job in jobs:  # a budget over the pool fails here, before anything is written
        arm_examples(every.task(job.target), cfg.stream.budget, job.arm, job.seed, job.size)
    data = Path(out) / "data.json"
    if data.is_file():
        recorded = _digest(data)
        if recorded is None:  # written by a probe atomically, so edited or damaged since
            raise ConfigError(f"{data}: not a readable record of the data its arms were trained on "
                              "(JSON with a 'digest'); restore it or choose another --out")
        if recorded != digest:
            # the same config over other examples (a changed generator or data files)
            raise ConfigError(f"{out}: holds probe arms of other data (the stream's examples differ from "
                              f"those its arms were trained on; see {data.name}); choose another --out")
    arms_dir.mkdir(parents=True, exist_ok=True)
    remove_leftovers(arms_dir)  # temporary files of arms a kill interrupted
    remove_leftovers(Path(out) / ca.SOURCES_DIR)
    remove_leftovers(Path(out))  # and of the report's files (a kill while the report was written)
    write_text(saved, config_text)
    write_json(data, {"stream": cfg.stream.source, "digest": digest})
    todo = [j for j in jobs if not _saved(arms_dir / f"{j.key}.json", checkpoints)]
    done = len(jobs) - len(todo)
    # a random arm is its source's mixed arm: copied from that arm's file when it is (or will be) saved
    twins = {j: Job(j.target, "mixed", j.seed, j.source) for j in todo if j.arm == "random"}
    copies = [j for j, twin in twins.items() if twin in todo or _saved(arms_dir / f"{twin.key}.json", checkpoints)]
    todo = [j for j in todo if j not in copies]

    def finished(result: dict) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(result, done, len(jobs))

    threads = max(1, (os.cpu_count() or 1) // max(1, workers))
    if (workers <= 1 or (executor is not None and executor.kind == "ray")) and cfg.model.threads:
        threads = cfg.model.threads
    setup = (cfg, threads, checkpoints, str(arms_dir.resolve()))
    # the source adapters the carrier arms need, trained first (once each), then every arm
    needed = dict.fromkeys((j.source, j.seed) for j in todo if j.arm in ca.CARRIERS)
    same_data = [f for f in map(Path, share_sources) if _digest(f / "data.json") == digest]
    ca.share_sources(same_data, Path(out), needed)
    missing = [Job(s, "source", seed) for s, seed in needed
               if not ca.source_path(Path(out) / ca.SOURCES_DIR, s, seed).is_file()]
    run_pool(_setup, setup, _work, missing, workers, lambda _: None, executor=executor, cpus_per_run=threads)
    run_pool(_setup, setup, _work, todo, workers, finished, executor=executor, cpus_per_run=threads)
    for job in copies:
        twin = json.loads((arms_dir / f"{twins[job].key}.json").read_text(encoding="utf-8"))
        result = {**twin, "arm": "random", "candidates": list(job.candidates), "copied_from": twins[job].key}
        write_json(arms_dir / f"{job.key}.json", result)
        finished(result)
    # the folder holds arms of one config only, so its report covers every arm saved in it
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(arms_dir.glob("*.json"))]
