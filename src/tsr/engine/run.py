"""Running a config end to end: prepare and check everything, then train or resume.

:func:`prepare` does all the checking (method parameters, stream files, model, lengths)
before anything is written, so bad input never touches a run directory. :func:`execute`
then creates the run directory, or resumes the one a previous invocation of the same config
left, after its last finished task.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from ..cl.memory import TaskMemory, load_memory
from ..config import RunConfig, dump_yaml, grouping_of
from ..atomic import write_json
from ..data.example import Stream
from ..data.names import MAX_RUN_NAME_BYTES, unsafe_reason
from ..data.sampling import draw_indices
from ..data.streams import load_stream
from ..methods.context import RunFacts
from ..errors import ConfigError, RunError, reason
from ..methods.registry import MethodSpec
from ..model.learner import build_learner, transformer_blocks
from ..rng import numpy_rng
from .loop import Plan, Reporter, notify, run_stream
from .progress import TaskProgress, drop_progress, forget_steps_after, has_progress, load_progress
from ..runs.results import Results, load_results
from ..runs.lock import claim
from . import parallel
from .machine import describe
from ..runs.store import record_run
from .rundir import RunDir


@dataclass
class Outcome:
    run: RunDir
    results: Results
    resumed_from: int
    already_finished: bool


def draw_data(cfg: RunConfig, stream: Stream) -> tuple[list, list, list]:
    """Per task: the budget (N examples by seed), the replay data, the capped test set."""
    budgets, replays, tests = [], [], []
    s = cfg.stream
    for task in stream:
        if s.budget > len(task.pool):
            raise ConfigError(f"config key 'stream.budget': {s.budget} exceeds the {len(task.pool)} "
                              f"training examples of task {task.name!r}")
        picked = draw_indices(len(task.pool), s.budget, numpy_rng(cfg.seed, "budget", task.name))
        budget = [task.pool[i] for i in picked]
        if s.replay_source == "pool":
            chosen = draw_indices(len(task.pool), s.replay_per_task, numpy_rng(cfg.seed, "replay-data", task.name))
            replay = [task.pool[i] for i in chosen]
        else:
            replay = budget[: s.replay_per_task]
        budgets.append(budget)
        replays.append(replay)
        tests.append(list(task.test[: s.test_cap]))
    return budgets, replays, tests


def run_name(cfg: RunConfig, stream: Stream, method: str) -> str:
    return cfg.name or f"{stream.name}-{method}-s{cfg.seed}-{cfg.fingerprint()}"


def check_stream(cfg: RunConfig) -> Stream:
    """The run's stream, with every check that needs the stream but not the model: the
    benchmark's options and root, the order, and the method's requirements. ``tsr config``
    runs these too, so it accepts exactly the configs ``tsr run`` accepts."""
    stream = load_stream(cfg.stream.source, cfg.stream.root, cfg.stream.options, cfg.stream.order, cfg.seed)
    cfg.method.cls.validate(cfg.method.params, RunFacts(tuple(stream.names), cfg.stream.replay_per_task,
                                                         cfg.model.path, cfg.seed, cfg.stream.budget))
    too_long = unsafe_reason(run_name(cfg, stream, cfg.method.name), MAX_RUN_NAME_BYTES)
    if too_long:
        raise ConfigError(f"the run folder's name {too_long}; set `name=` to a shorter one")
    return stream


def prepare(cfg: RunConfig, report: Reporter | None = None) -> tuple[Plan, MethodSpec]:
    """Check and load everything a run needs; writes nothing. ``report`` hears ``run_begin``
    once the config and the stream are checked, before the model loads."""
    spec = cfg.method
    group = parallel.current()
    if group.size > cfg.train.batch_size:
        raise ConfigError(f"config key 'train.batch_size': a batch of {cfg.train.batch_size} cannot be shared by "
                          f"the {group.size} processes of this launch (each needs a row); launch at most "
                          f"{cfg.train.batch_size}")
    if cfg.model.fsdp and cfg.model.quantization != "none":
        raise ConfigError("config key 'model.fsdp': a quantised base is placed by bitsandbytes and cannot be "
                          "sharded; set model.fsdp=false or model.quantization=none")
    if cfg.model.fsdp and group.size == 1:
        raise ConfigError("config key 'model.fsdp': shards the base over the processes of a multi-process launch "
                          "(torchrun or accelerate launch), and this is one process; set model.fsdp=false")
    if not group.main:  # the first process's files and loggers only (tsr.engine.parallel)
        cfg = dataclasses.replace(cfg, log=dataclasses.replace(cfg.log, tensorboard=False, wandb=False, mlflow=False))
    stream = check_stream(cfg)
    budgets, replays, tests = draw_data(cfg, stream)
    if report is not None:
        notify(report, "run_begin", cfg)
    # model.fsdp: loaded on the host, the blocks sharded over the processes (each block moved to the
    # device as it is sharded), the adapter whole (tsr.engine.parallel)
    learner = build_learner(cfg, place=False) if cfg.model.fsdp else build_learner(cfg)
    if cfg.model.fsdp:
        group = parallel.shard_blocks(learner.model, transformer_blocks(learner.model),
                                      [p for _, p in learner.adapter.named()], group)
        learner = parallel.placed(learner)
    encoder = learner.encoder
    for task, budget, replay, test in zip(stream, budgets, replays, tests):
        encoder.encode_all(budget, f"task {task.name!r} (training)")
        encoder.encode_all(replay, f"task {task.name!r} (replay data)")
    encoded_tests = [encoder.encode_all(test, f"task {task.name!r} (test)") for task, test in zip(stream, tests)]
    return Plan(cfg, stream, learner, budgets, replays, encoded_tests, group), spec


def portable_fingerprint(cfg: RunConfig) -> str:
    """The fingerprint of a config whose stream file is named without its folder: a persistent
    learner's run keeps it when the learner's folder moves."""
    return dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, source=Path(cfg.stream.source).name)
                               ).fingerprint()


def _grow(run: RunDir, fingerprint: str, stream: Stream) -> bool:
    """A growing run (a persistent learner): the stream may be longer than when the run was
    made, provided the tasks it had are the same tasks on the same data. Records the longer
    stream in run.json; True if it grew."""
    meta = run.meta()
    known = list(meta.get("tasks") or [])
    if stream.names[: len(known)] != known:
        raise RunError(f"{run.path}: this run learnt the tasks {known}; a stream can only grow at its end "
                       f"(got {stream.names})")
    run.verify(fingerprint, Stream(stream.name, stream.tasks[: len(known)]).digest())
    if len(stream) == len(known):
        return False
    write_json(run.path / "run.json", {**meta, "tasks": stream.names, "data_digest": stream.digest()})
    return True


def execute(cfg: RunConfig, report: Reporter | None = None, grow: bool = False, parent_held: bool = False) -> Outcome:
    """Run ``cfg`` to the end of its stream, resuming a matching interrupted run.

    ``grow``: the stream may have gained tasks at its end since the run was made (a persistent
    learner, :mod:`tsr.engine.learner_dir`); the run then goes on with them, and its
    fingerprint leaves out the stream file's folder. ``parent_held``: the caller holds the lock
    of the folder the run folder is in (the learner's)."""
    plan, spec = prepare(cfg, report)
    cfg, stream, group = plan.cfg, plan.stream, plan.group
    run = RunDir(Path(cfg.out_dir) / run_name(cfg, stream, spec.name))
    fingerprint = portable_fingerprint(cfg) if grow else cfg.fingerprint()
    meta = {"fingerprint": fingerprint, "data_digest": stream.digest(), "stream": stream.name,
            "tasks": stream.names, "method": spec.name, "seed": cfg.seed,
            "machine": {**describe(plan.learner.device, plan.learner.compiled, group.size),
                        **({"fsdp_local_share": round(parallel.local_share(plan.learner.model), 4)} if group.sharded else {})},
            "grouping": grouping_of(cfg).record()}
    if group.size > 1:
        if grow:
            raise RunError("a persistent learner (`tsr learn`) runs in one process; launch it without "
                           "`accelerate launch` or `torchrun`")
        if not group.main:
            return _replica(plan, spec, run, fingerprint)

    def make() -> None:
        if not run.exists():
            run.create(dump_yaml(cfg), meta)

    # one process per run directory, locked before anything is written to it: two grids sharing an
    # out_dir, or two learner calls, never write one run at once
    with claim(run.path, f"run directory {run.path}", make, parent_held, "out_dir"):
        run.check_links()
        group.barrier()  # the run folder is made and locked; the other processes copy it ...
        group.barrier()  # ... before this one changes anything in it
        return _execute(plan, spec, run, report, grow, fingerprint)


def _replica(plan: Plan, spec: MethodSpec, run: RunDir, fingerprint: str) -> Outcome:
    """A data-parallel run's process other than the first (:mod:`tsr.engine.parallel`): the
    same run, on a private copy of the run folder as it stood when the processes started, so
    its resume decisions are the first process's and its writes touch nothing of the run's."""
    group = plan.group
    group.barrier()
    copy = RunDir(parallel.replica_folder(group, run.path, run.path.name))
    group.barrier()
    plan.cfg = dataclasses.replace(plan.cfg, out_dir=str(copy.path.parent))
    with claim(copy.path, f"run directory {copy.path}", lambda: None, False, "out_dir"):
        return _execute(plan, spec, copy, None, False, fingerprint)


def _saved_progress(run: RunDir, completed: int, steps: int) -> TaskProgress | None:
    """The saved progress of the task after the last finished one, if the run left one. One that
    belongs to an earlier task (its end was saved just before the kill) is removed, and one that
    cannot be read (a file missing or damaged: its checksum differs) or whose step is not inside
    the task (``0 < step < train.steps``) is dropped with a ``progress_dropped`` line in the log:
    the task then starts from its beginning, and no finished work is lost. Its tensors are
    checked against the task when it starts (:func:`tsr.engine.progress.misfit`)."""
    if not has_progress(run.path):
        drop_progress(run.path)  # what a killed first save left
        return None
    try:
        progress = load_progress(run.path, run.sealed_format())
        if progress.task == completed and not 0 < progress.step < steps:
            raise ValueError(f"{progress.folder}: does not fit this run's task (its step {progress.step} is not "
                             f"between 0 and the task's {steps} steps)")
    except ValueError as err:
        run.log("progress_dropped", task=completed, reason=str(err))
        drop_progress(run.path)
        return None
    if progress.task != completed:
        drop_progress(run.path)
        return None
    forget_steps_after(run.path, progress.task, progress.step)  # what the interrupted process logged past it
    return progress


def _execute(plan: Plan, spec: MethodSpec, run: RunDir, report: Reporter | None, grow: bool,
             fingerprint: str) -> Outcome:
    cfg, stream, learner = plan.cfg, plan.stream, plan.learner
    method = spec.build()
    method.setup(learner)
    grown = _grow(run, fingerprint, stream) if grow else False
    if not grow:
        run.verify(fingerprint, stream.digest())
    # finished means every task of the stream as it stands: a learner killed while learning a
    # new task has already recorded the longer stream (run.json) but not its results
    if not grown and run.is_finished() and len(load_results(run.results_path).tasks) == len(stream):
        run.remove_leftovers()  # e.g. the last checkpoint's previous version, if a kill left it
        return Outcome(run, load_results(run.results_path), len(stream), True)
    if report is not None:
        notify(report, "run_ready", plan, run.path)
    checkpoint = run.load_checkpoint()
    run.remove_leftovers()  # this process now owns the run: clear what a kill left
    machine = describe(learner.device, learner.compiled)
    if checkpoint is None:
        memory = TaskMemory()
        results = Results(stream.names, [t.kind.value for t in stream], spec.name, cfg.seed,
                          gen_metrics=[t.metric for t in stream] if cfg.eval.predictions else None)
        run.log("run_start", tasks=stream.names, method=spec.name, seed=cfg.seed, machine=machine)
    else:
        for part, restore in (("method", lambda: method.load_state_dict(learner, checkpoint.method)),
                              ("adapter", lambda: learner.adapter.load(checkpoint.adapter))):
            try:
                restore()
            except (ValueError, RuntimeError, KeyError, TypeError) as err:
                raise RunError(f"{run.path / 'checkpoint' / (part + '.safetensors')}: does not fit this run's "
                               f"model and method ({reason(err)}); delete the run directory to start over") from None
        torch.set_rng_state(checkpoint.torch_rng)
        memory = load_memory(run.memory_root, stream.names[: checkpoint.completed], learner.device,
                             run.sealed_format())
        results = checkpoint.results
        if len(results.tasks) < len(stream):  # a grown stream: the new tasks join the matrices
            results.grow(stream.names, [t.kind.value for t in stream],
                         [t.metric for t in stream] if cfg.eval.predictions else None)
        run.log("resume", completed=checkpoint.completed, machine=machine)
    resumed_from = results.completed
    progress = _saved_progress(run, results.completed, cfg.train.steps)
    results = run_stream(plan, method, memory, results, run, report, progress)
    run.write_results(results)
    run.log("run_end", metrics=results.metrics())
    record_run(Path(cfg.out_dir), run.path)
    return Outcome(run, results, resumed_from, False)
