"""The probe protocol of the reference paper (§4.1): three kinds of training run per target.

For a target task at budget N, every arm trains a fresh adapter from the shared
initialisation for the same number of steps with the same seeds:

``target``     the N target examples alone;
``full``       10N target examples (a superset of the N, drawn from the same permutation), or
               any other size given (``full_size``: the paper's fixed N_max); since the
               examples are a prefix of one permutation, a full arm of M examples trains
               exactly as the target arm at budget M;
``mixed:J``    a 50/50 mixture of source J's whole pool with the N target examples (each step
               draws its batch from the source with probability 1/2, i.e. ER with alpha = 1/2
               and the source pool as the only replay data);
``random``     the mixed arm of a source drawn uniformly from the other tasks of the probed
               stream (the probe has no order, so every other task counts as a past one;
               ``sources`` limits the mixed arms, not this draw) by a
               generator derived from (seed, purpose, target): :func:`random_source`. It is
               the same training as that source's mixed arm, so a saved twin is copied, not
               rerun. The hindsight oracle is no arm: it is a view of the saved mixed arms
               (:mod:`tsr.analysis.arms`).
``init:J``     one-shot parameter carrier: the adapter starts as source J's trained adapter,
               then trains on the N target examples alone (:mod:`tsr.analysis.carrier_arms`);
``anchor:J``   persistent parameter carrier: from the shared initialisation, CE + mu *
               ||theta - theta_J||^2 over every adapter parameter (``mu`` 0.1 unless given;
               the label and file name carry any other mu: ``anchor-mu1:J``).

The source adapter theta_J of both carrier arms is source J's ``full`` arm with M = its whole
pool (:func:`source_job`), trained once per (source, seed) and cached in the probe folder.

Each arm's score on the target's test set is saved as one JSON file, so an interrupted probe
resumes where it stopped; arms fan out over worker processes. :mod:`tsr.analysis.transfer` turns the
saved arms into headroom and the pairwise transfer matrix.

``checkpoints`` also score each arm after those steps, on the way to its last one. The
learning rate is constant and each step's batch draw does not depend on the step count, so
the score after step s of a longer arm is the score of an arm trained for s steps (a test pins
this): one probe measures every budget up to its own.
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

from ..atomic import remove_leftovers, write_json, write_text
from ..cl.memory import TaskRecord
from ..config import RunConfig, dump_yaml, with_method
from ..data.example import Example, Stream, Task
from ..data.sampling import draw_indices
from ..data.streams import load_stream
from ..engine.evaluation import evaluate
from ..engine.loop import train_on
from ..engine.pool import Executor, run_pool
from ..errors import ConfigError
from ..methods.base import NoParams
from ..methods.er import ER, ERParams
from ..methods.seqft import SeqFT
from ..model.learner import Learner, build_learner
from ..rng import numpy_rng
from . import carrier_arms as ca

ARMS = ("target", "full", "mixed", "random", *ca.CARRIERS)
PAIRED = ("mixed", *ca.CARRIERS)  # arms with one source each, paired with every source asked for
DEFAULT_ARMS = ("target", "full", "mixed")
FULL_FACTOR = 10


@dataclass(frozen=True)
class Job:
    target: str
    arm: str
    seed: int
    source: str | None = None
    size: int | None = None  # a full arm's examples when not 10N
    candidates: tuple[str, ...] = ()  # a random arm's sources to draw from
    mu: float | None = None  # an anchor arm's strength (None: the default, 0.1)

    @property
    def label(self) -> str:
        if self.arm == "full" and self.size is not None:
            return f"full-n{self.size}"
        arm = self.arm
        if arm == "anchor" and self.mu is not None and self.mu != ca.DEFAULT_MU:
            arm = f"anchor-mu{self.mu:g}"
        return arm if self.source is None or arm == "random" else f"{arm}:{self.source}"

    @property
    def key(self) -> str:
        return f"{ca.safe_name(self.target)}__{ca.safe_name(self.label)}__s{self.seed}"


def random_source(seed: int, target: str, candidates: Iterable[str]) -> str:
    """The source of the ``random`` arm of ``target`` at ``seed``: uniform over ``candidates``
    (in the order given), from the generator of (seed, "probe-random-source", target)."""
    candidates = list(candidates)
    if not candidates:
        raise ConfigError(f"the random arm of {target!r} has no source to draw from")
    return candidates[int(numpy_rng(seed, "probe-random-source", target).integers(len(candidates)))]


def plan_jobs(stream: Stream, seeds: Iterable[int], targets: list[str] | None = None,
              sources: list[str] | None = None, arms: Iterable[str] = DEFAULT_ARMS,
              full_size: int | None = None, budget: int | None = None,
              mus: Iterable[float] = (ca.DEFAULT_MU,)) -> list[Job]:
    """Every (target, arm, seed) the probe needs; ``mixed``, ``init`` and ``anchor`` pair each
    target with each source (``anchor`` once per strength in ``mus``), ``random`` draws one
    source per (target, seed). ``full_size`` (with the ``budget``) sets the full arm's
    examples; 10 x budget (or None) is today's full arm."""
    names = stream.names
    for group, label in ((targets, "targets"), (sources, "sources")):
        unknown = [n for n in group or [] if n not in names]
        if unknown:
            raise ConfigError(f"--{label}: unknown task {unknown[0]!r} (tasks: {', '.join(names)})")
    bad = [a for a in arms if a not in ARMS]
    if bad:
        raise ConfigError(f"--arms: unknown arm {bad[0]!r} (valid: {', '.join(ARMS)})")
    arms = list(arms)
    if full_size is not None and budget is not None and full_size == budget * FULL_FACTOR:
        full_size = None  # the same arm as the default full arm: one file
    mus = [float(m) for m in mus]
    if any(m < 0 for m in mus) or not mus:
        raise ConfigError(f"--mu: the anchor strength must be >= 0 (got {', '.join(map(str, mus)) or 'none'})")
    if any(a in arms for a in (*PAIRED, "random")) and "target" not in arms:
        arms.insert(0, "target")  # every mixed or carrier arm is measured against its target arm
    jobs = []
    for target in targets or names:
        for seed in seeds:
            for arm in arms:
                if arm == "anchor":
                    jobs += [Job(target, arm, seed, s, mu=None if m == ca.DEFAULT_MU else m)
                             for s in sources or names if s != target for m in mus]
                elif arm in PAIRED:
                    jobs += [Job(target, arm, seed, s) for s in sources or names if s != target]
                elif arm == "random":
                    # over every other probed task, whatever subset of mixed arms --sources asks for
                    pool = tuple(s for s in names if s != target)
                    jobs.append(Job(target, arm, seed, random_source(seed, target, pool), candidates=pool))
                elif arm == "full":
                    jobs.append(Job(target, arm, seed, size=full_size))
                else:
                    jobs.append(Job(target, arm, seed))
    return jobs


def arm_examples(task: Task, budget: int, arm: str, seed: int, size: int | None = None) -> list[Example]:
    """The target examples an arm trains on: N, or the full arm's 10N (or ``size``), the
    first of one permutation."""
    n = (size or budget * FULL_FACTOR) if arm == "full" else budget
    if n > len(task.pool):
        raise ConfigError(f"task {task.name!r} has {len(task.pool)} training examples; the "
                          f"{arm!r} arm needs {n} (stream.budget={budget})")
    return [task.pool[i] for i in draw_indices(len(task.pool), n, numpy_rng(seed, "budget", task.name))]


class Checkpoints:
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


def source_job(stream: Stream, source: str, seed: int) -> Job:
    """The training that makes source J's adapter theta_J for the carrier arms: J's ``full``
    arm with M = its whole pool (SeqFT from the seed's shared initialisation, ``train.steps``)."""
    return Job(source, "full", seed, size=len(stream.task(source).pool))


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
    (:mod:`tsr.analysis.carrier_arms`; cached in ``sources``); the other arms are SeqFT.
    """
    started = time.time()
    theta = source_adapter(learner, cfg, stream, job.source, job.seed, sources) if job.arm in ca.CARRIERS else None
    learner.reset(job.seed)
    learner.adapter.load(learner.init_state)
    task = stream.task(job.target)
    memory: list[TaskRecord] = []
    if job.arm in ("mixed", "random"):
        source = stream.task(job.source)
        memory.append(TaskRecord(0, source.name, source.kind.value, None, source.pool, learner.init_state))
        method = ER(ERParams(alpha=0.5))
    elif theta is not None:
        memory.append(ca.source_record(stream.task(job.source), theta))
        method = ca.carrier_method(job.arm, job.mu)
    else:
        method = SeqFT(NoParams())
    examples = arm_examples(task, cfg.stream.budget, job.arm, job.seed, job.size)
    if job.target not in tests:
        tests[job.target] = learner.encoder.encode_all(task.test[: cfg.stream.test_cap], f"task {task.name!r} (test)")
    dropout = cfg.lora.dropout > 0
    curve = Checkpoints(learner, tests[job.target], checkpoints, cfg.eval.batch_size, dropout)
    # the target is the second task of its stream (index 1), as in a stream run after the source
    train_on(learner, method, task, examples, cfg.train, seed=job.seed, index=1, memory=memory,
             dropout=dropout, on_step=[curve])
    score = evaluate(learner, tests[job.target], cfg.eval.batch_size)
    result = {"target": job.target, "arm": job.arm, "source": job.source, "seed": job.seed,
              "kind": task.kind.value, "acc": score.acc, "loss": score.loss, "n": score.n,
              "examples": len(examples), "seconds": round(time.time() - started, 2)}
    if job.arm == "random":
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


def read_arms(folder: Path, flag: str = "") -> list[dict]:
    """A probe folder's saved arms (``arms/*.json``); a folder without any, or an unreadable arm
    file, is one :class:`ConfigError` line (``flag``, e.g. ``--from``, names where it was given)."""
    folder, where = Path(folder), f"{flag} " if flag else ""
    files = sorted((folder / "arms").glob("*.json")) if (folder / "arms").is_dir() else []
    if not files:
        raise ConfigError(f"{where}{folder}: not a probe folder (no arms/*.json)")
    try:
        return [json.loads(p.read_text(encoding="utf-8")) for p in files]
    except (OSError, ValueError) as e:
        raise ConfigError(f"{where}{folder}/arms: an arm file is not readable JSON ({e})") from None


def load_probe_stream(cfg: RunConfig) -> Stream:
    """The probed tasks, in ``stream.order`` (which tasks the matrix covers, and its row order)."""
    return load_stream(cfg.stream.source, cfg.stream.root, cfg.stream.options, cfg.stream.order, cfg.seed)


def _arms_config(cfg: RunConfig) -> RunConfig:
    """What an arm's result depends on. Not the order: an arm trains one target (and one
    source) by name from the shared initialisation, so every order shares one folder of arms."""
    base = dataclasses.replace(with_method(cfg, {"name": "seqft"}), seed=0)
    return dataclasses.replace(base, stream=dataclasses.replace(base.stream, order="canonical"))


def probe_dir(cfg: RunConfig, stream: Stream) -> Path:
    return Path(cfg.out_dir) / f"probe-{stream.name}-{_arms_config(cfg).fingerprint()}"


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
              checkpoints: Iterable[int] = (), executor: Executor | None = None) -> list[dict]:
    """Run the jobs not yet saved under ``out/arms`` (each also scored after ``checkpoints``
    steps), on local worker processes or on Ray (``executor``); return every result saved there."""
    checkpoints = tuple(sorted(set(checkpoints)))
    bad = [s for s in checkpoints if not 1 <= s < cfg.train.steps]
    if bad:
        raise ConfigError(f"--checkpoints: step {bad[0]} is not between 1 and train.steps - 1 ({cfg.train.steps - 1})")
    arms_dir = Path(out) / "arms"
    config_text = dump_yaml(dataclasses.replace(_arms_config(cfg), seed=cfg.seed))
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
    if data.is_file() and json.loads(data.read_text(encoding="utf-8")).get("digest") != digest:
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
