"""The engine: one stream loop and one task-training loop.

For each task of the stream: the method prepares (TSR probes and routes), a fresh AdamW
trains the adapter for ``train.steps`` steps, the task's record (signature, replay data,
snapshot) is written into the task memory, every task seen so far is evaluated, and a
checkpoint is saved. The engine owns the optimiser, the steps, evaluation, the memory and
checkpoints; methods only choose batches and loss terms.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

import torch

from ..cl.memory import TaskMemory, TaskRecord, save_record
from ..cl.teachers import Teachers, auto_mode
from ..config import RunConfig, TrainConfig
from ..data.collate import Encoded
from ..data.example import Example, Stream, Task
from ..errors import RunError
from ..methods.base import Method
from ..methods.context import TaskContext
from ..model.learner import Learner
from ..rng import derive_seed
from .evaluation import Score, evaluate, scored_tasks
from .lr_schedule import lr_at, scheduled
from .parallel import SINGLE, Group
from .predict import predict_tasks, round_folder
from .progress import FOLDER, Checkpoints, TaskProgress, capture, drop_progress, misfit, restore, save_progress
from ..runs.results import Results
from .rundir import RunDir
from ..runs.store import record_run
from .scalar_logs import ScalarLogs, scalar_logs
from .streams import task_context


@dataclass
class Plan:
    """Everything a run needs, prepared and checked before anything is written."""

    cfg: RunConfig
    stream: Stream
    learner: Learner
    train: list[list[Example]]     # the budget of each task
    replay: list[list[Example]]    # the replay data each task leaves in the memory
    tests: list[list[Encoded]]     # each task's encoded test set
    group: Group = SINGLE          # the processes of a data-parallel run (:mod:`tsr.engine.parallel`)


class Reporter(Protocol):
    def task_start(self, t: int, plan: Plan, info: dict) -> None: ...
    def step(self, t: int, step: int, steps: int, terms: dict[str, float]) -> None: ...
    def task_end(self, t: int, plan: Plan, results: Results, seconds: float) -> None: ...


class Log(Protocol):
    def log(self, event: str, **fields) -> None: ...


def notify(report: Reporter, event: str, *args) -> None:
    """Call ``report.<event>(*args)`` where the reporter has it: the optional events (``run_begin``
    before the model loads, ``run_ready`` once it has, ``task_begin`` before a task's method
    prepares it) that a reporter may leave out."""
    hear = getattr(report, event, None)
    if hear is not None:
        hear(*args)


class Silent:
    def task_start(self, t: int, plan: Plan, info: dict) -> None:
        pass

    def step(self, t: int, step: int, steps: int, terms: dict[str, float]) -> None:
        pass

    def task_end(self, t: int, plan: Plan, results: Results, seconds: float) -> None:
        pass

    def log(self, event: str, **fields) -> None:
        pass


def evaluate_tasks(plan: Plan, indices: Sequence[int], predictions: Path | None = None) -> dict[int, Score]:
    """Scores of the test sets of ``indices``; with ``eval.predictions`` and a ``predictions``
    folder, also the greedy answers, written there (:mod:`tsr.engine.predict`). In a
    data-parallel run the first process scores and the others hear its scores (with the base
    sharded, every process scores and the first one's scores are kept)."""
    ev = plan.cfg.eval
    if not plan.group.main and not plan.group.sharded:  # sharded: every forward needs every process
        return plan.group.broadcast(None)
    if ev.predictions and predictions is not None:
        scores = predict_tasks(plan.learner, plan.stream, plan.tests, indices, predictions, ev.batch_size,
                               ev.extra_tokens, ev.logits_mb)
    else:
        scores = {i: evaluate(plan.learner, plan.tests[i], ev.batch_size, ev.logits_mb) for i in indices}
    return plan.group.broadcast(scores)


def make_optimiser(params: list[torch.nn.Parameter], train: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """A fresh AdamW; the fused kernel where torch has one (CPU and CUDA).

    The fused update does the same arithmetic as the per-tensor loop in one kernel; on the
    bundled base that saves about 4 ms of a 50 ms step.
    """
    fused = True if device.type in ("cpu", "cuda") else None
    return torch.optim.AdamW(params, lr=train.lr, weight_decay=train.weight_decay, fused=fused)


def clip_and_schedule(learner: Learner, optimiser: torch.optim.Optimizer, train: TrainConfig, step: int) -> torch.Tensor:
    """Before step ``step`` (from 0) is taken: the adapter's gradients clipped to ``train.grad_clip``
    (where set) and the learning rate of the schedule set; returns the gradient norm before clipping."""
    if train.grad_clip is not None:
        norm = torch.nn.utils.clip_grad_norm_(learner.adapter.trainable(), train.grad_clip)
    else:
        norm = grad_norm(learner.adapter.trainable())
    if scheduled(train.schedule, train.warmup):
        for param_group in optimiser.param_groups:
            param_group["lr"] = lr_at(train.lr, train.schedule, train.warmup, train.steps, step)
    return norm


# A step callback hears (task index, step number from 1, steps, the step's loss terms).
OnStep = Callable[[int, int, int, dict[str, float]], None]


def train_on(learner: Learner, method: Method, task: Task, examples: Sequence[Example], train: TrainConfig, *,
             seed: int, index: int = 0, memory: Iterable[TaskRecord] = (), teachers: Teachers | None = None,
             dropout: bool = False, on_step: Sequence[OnStep] = (),
             on_begin: Callable[[dict[str, Any]], None] | None = None,
             resume: TaskProgress | None = None, checkpoints: Checkpoints | None = None,
             on_drop: Callable[[str], None] | None = None, group: Group = SINGLE) -> dict[str, Any]:
    """Train the adapter on one task with ``method``: ``begin_task``, ``train.steps`` steps,
    ``end_task``. Returns what the method reported (``begin_task``'s facts and ``end_task``'s).

    ``index`` is the task's position in its stream and ``memory`` the records of the tasks
    before it (the replay data and snapshots the method may use). ``on_step`` callbacks run
    after every optimiser step (logging, progress, evaluation on the way); ``on_begin`` hears
    ``begin_task``'s facts before the first step. The optimiser is built after ``begin_task``,
    so a method may change the trainable parameters there.

    ``resume``: the task's saved progress (:mod:`tsr.engine.progress`), loaded after
    ``begin_task`` and the optimiser are rebuilt; the steps go on from there. One that does not
    fit the task (:func:`tsr.engine.progress.misfit`) is handed to ``on_drop`` with the reason,
    and the task starts from its first step (without ``on_drop`` it is a :class:`RunError`).
    ``checkpoints`` says after which steps to save the progress. ``group``: the processes of a
    data-parallel run (:mod:`tsr.engine.parallel`); each trains on its part of every batch and
    the gradients are summed over them before ``after_backward``.
    """
    ctx = task_context(index, task, examples, learner, memory, seed, train.batch_size, teachers,
                       train.steps * train.accumulate, part=(group.rank, group.size))
    given = getattr(method, "training_examples", None)
    if given is not None:  # the method trains on other examples than the task's (SDFT's rewrites)
        ctx = task_context(index, task, given(ctx), learner, memory, seed, train.batch_size, ctx.teachers,
                           ctx.steps, part=ctx.part)
    streams = ctx.streams
    info = method.begin_task(ctx)
    torch.manual_seed(derive_seed(seed, "torch", index))  # only LoRA dropout draws from it
    learner.train_mode(dropout)
    learner.checkpointing(True)
    optimiser = make_optimiser(learner.adapter.trainable(), train, learner.device)
    after_backward = getattr(method, "after_backward", None)
    after_step = getattr(method, "after_step", None)
    draws = ctx.rng("draw")
    first, spent = 0, 0.0
    why = misfit(resume, ctx, optimiser, train.steps) if resume is not None else None
    if why is not None:  # before anything is restored, and before on_begin logs the task's start
        if on_drop is None:
            raise RunError(f"{resume.folder or 'progress'}: the saved progress of task {index + 1} ({task.name!r}) "
                           f"does not fit this run ({why}); delete that folder to start the task from its beginning")
        on_drop(why)
        resume = None
    if resume is not None:
        restore(resume, ctx, streams, optimiser, draws, method)
        first, spent = resume.step, resume.seconds
    if on_begin is not None:
        on_begin(info)
    started = time.perf_counter()
    if checkpoints is not None:
        checkpoints.start()
    for step in range(first, train.steps):
        values, batch, draw = backward_step(ctx, method, draws, train.accumulate, step, group)
        group.sum_gradients(learner.adapter.trainable())
        if after_backward is not None:
            after_backward(ctx.at((step + 1) * train.accumulate - 1), batch, draw)
        norm = clip_and_schedule(learner, optimiser, train, step)
        # what every logger shows beside the loss terms: the step's learning rate and the
        # adapter's gradient norm (before clipping)
        values = {**values, "lr": float(optimiser.param_groups[0]["lr"]), "grad_norm": float(norm)}
        optimiser.step()
        if after_step is not None:
            after_step(ctx.at((step + 1) * train.accumulate - 1))
        optimiser.zero_grad(set_to_none=True)
        for callback in on_step:
            callback(index, step + 1, train.steps, values)
        if checkpoints is not None and checkpoints.due(step + 1, train.steps):
            checkpoints.save(capture(step + 1, spent + time.perf_counter() - started, ctx, streams, optimiser, draws,
                                     method))
    learner.checkpointing(False)
    learner.train_mode(False)
    return {**info, **(method.end_task(ctx) or {})}


def grad_norm(params) -> torch.Tensor:
    """The L2 norm of the gradients of ``params`` (those that have one), as clipping computes it."""
    grads = [p.grad.detach() for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))


def backward_step(ctx: TaskContext, method: Method, draws, accumulate: int, step: int,
                  group: Group = SINGLE) -> tuple[dict, Any, Any]:
    """Draw, loss and backward of the ``accumulate`` batches of one optimiser step (their
    gradients summed, each loss divided by ``accumulate``); returns the step's mean loss terms,
    and the last batch and draw (what ``after_backward`` hears). In a data-parallel run each
    process's loss is weighted by its share of the batch's scored tokens, and the terms returned
    are the whole batch's (summed over the processes)."""
    parts: list[dict[str, float]] = []
    for k in range(accumulate):
        at = ctx.at(step * accumulate + k)
        draw = method.draw(at, draws)
        batch = at.batch(draw)
        terms = method.loss(at, batch, draw)
        loss = sum(terms.values())
        share = group.share(batch)
        if share is None:
            value, term_values = float(loss.detach()), None
        else:
            terms = {k: v * share for k, v in terms.items()}
            loss = loss * share
            summed = group.sum(torch.stack([loss.detach(), *(v.detach() for v in terms.values())]).double())
            value, term_values = float(summed[0]), dict(zip(terms, summed[1:].tolist()))
        if not math.isfinite(value):
            raise RunError(f"task {ctx.task.name!r}, step {step}: the loss is {value} "
                           f"(terms {', '.join(terms)}); lower train.lr")
        (loss if accumulate == 1 else loss / accumulate).backward()
        if term_values is None:
            term_values = {k: float(v.detach()) for k, v in terms.items()}
        parts.append(term_values | {"loss": value})
    if accumulate == 1:
        return parts[0], batch, draw
    keys = dict.fromkeys(k for part in parts for k in part)  # a term some batches lack counts 0 there
    return {k: sum(part.get(k, 0.0) for part in parts) / accumulate for k in keys}, batch, draw


class StepLog:
    """A step callback that writes the mean loss terms of every ``every`` steps to the run log,
    and to ``also`` (TensorBoard) when given."""

    def __init__(self, run: Log, every: int, also: "ScalarLogs | None" = None):
        self.run, self.every, self.also, self.window = run, every, also, {}

    def __call__(self, index: int, step: int, steps: int, terms: dict[str, float]) -> None:
        for k, v in terms.items():
            self.window[k] = self.window.get(k, 0.0) + v
        if step % self.every == 0 or step == steps:
            n = ((step - 1) % self.every) + 1
            means = {k: round(v / n, 6) for k, v in self.window.items()}
            self.run.log("steps", task=index, step=step, **means)
            if self.also is not None:
                self.also.steps(index, step, steps, means)
            self.window = {}


def peak_rss_mb() -> float | None:
    """The process's peak resident memory so far (Linux and macOS; None elsewhere)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)  # bytes on macOS, KiB on Linux


class PhaseClock:
    """Wall time of a task's phases: ``begin`` (the method's ``begin_task``: TSR's probe and
    routing), ``train`` (the steps), of which ``teacher`` (teacher forwards), ``record``
    (writing the task record), ``eval`` (scoring) and ``checkpoint``."""

    def __init__(self, teachers: Teachers):
        self.teachers, self.teacher_start = teachers, teachers.seconds
        self.last, self.seconds = time.perf_counter(), {}

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self.last
        self.last = now

    def phases(self) -> dict[str, float]:
        out = {k: round(v, 3) for k, v in self.seconds.items()}
        out["teacher"] = round(self.teachers.seconds - self.teacher_start, 3)
        return out


class Within:
    """The saved progress the next task goes on from (:mod:`tsr.engine.progress`), and what
    dropping it resets: the log window it reopened, and TensorBoard's purge point."""

    def __init__(self, run: RunDir, progress: TaskProgress | None, steplog: StepLog, board: ScalarLogs | None,
                 steps: int):
        self.run, self.progress, self.steplog, self.board, self.steps = run, progress, steplog, board, steps
        self.current: TaskProgress | None = None

    def take(self, t: int) -> TaskProgress | None:
        """The progress to resume task ``t`` from (once), with the loss window it had open."""
        resume, self.progress = (self.progress if self.progress is not None and self.progress.task == t else None), None
        self.steplog.window = dict(resume.log_window) if resume is not None else {}
        self.current = resume
        return resume

    def drop(self, t: int, why: str) -> None:
        """The progress does not fit task ``t``: logged, removed, and the task starts over."""
        folder = self.current.folder if self.current is not None else FOLDER
        self.run.log("progress_dropped", task=t, reason=f"{folder}: does not fit this run's task ({why})")
        drop_progress(self.run.path)
        self.current, self.steplog.window = None, {}
        if self.board is not None:  # TensorBoard purges from the task's first step, not from the dropped one's
            self.board.restart(t)


def run_stream(plan: Plan, method: Method, memory: TaskMemory, results: Results, run: RunDir,
               report: Reporter | None = None, progress: TaskProgress | None = None) -> Results:
    """Train through the tasks not yet in ``results``; checkpoint after each one, and within a
    task every ``train.checkpoint_minutes`` (:mod:`tsr.engine.progress`). ``progress``: the
    saved progress of the first task to train, to go on from."""
    report = report or Silent()
    cfg, learner, stream = plan.cfg, plan.learner, plan.stream
    mode = cfg.train.teacher
    if mode == "auto":
        mode = auto_mode(learner)
    teachers = Teachers(learner, mode, cfg.train.teacher_cache_mb)
    within = progress.step if progress is not None and progress.task == results.completed else 0
    board = scalar_logs(cfg, run.path, results.completed, within, stream.name)
    k = len(stream)
    steplog = StepLog(run, cfg.log.every, board)  # one per run: every task's last step closes its window
    saved = Within(run, progress, steplog, board, cfg.train.steps)
    checkpoints = (Checkpoints(lambda state: save_progress(run.path, state), cfg.train.checkpoint_minutes,
                               lambda: steplog.window) if cfg.train.checkpoint_minutes > 0 else None)
    if results.completed == 0 and cfg.eval.all_tasks and results.zero_shot is None:
        results.set_zero_shot(evaluate_tasks(plan, range(k), round_folder(run.predictions_root, None)))
        run.log("zero_shot", **results.zero_shot)
    for t in range(results.completed, k):
        started = time.time()
        task = stream[t]
        clock = PhaseClock(teachers)
        saved.take(t)

        def begin(info: dict[str, Any]) -> None:
            clock.lap("begin")  # begin_task: TSR's signature and routing, SDFT's rewrites, ...
            resumed = {"resume_step": saved.current.step} if saved.current is not None else {}
            if resumed:
                run.log("resume_within_task", task=t, step=saved.current.step)
            run.log("task_start", task=t, name=task.name, **info, **resumed)
            report.task_start(t, plan, {**info, **resumed})

        notify(report, "task_begin", t, plan)
        info = train_on(learner, method, task, plan.train[t], cfg.train, seed=cfg.seed, index=t, memory=memory,
                        teachers=teachers, dropout=cfg.lora.dropout > 0,
                        on_step=[steplog, report.step], on_begin=begin, resume=saved.current,
                        checkpoints=checkpoints, on_drop=lambda why: saved.drop(t, why), group=plan.group)
        clock.lap("train")
        if saved.current is not None:  # the steps before the interruption count too
            clock.seconds["train"] += saved.current.seconds
            started -= saved.current.seconds
        seconds = _finish_task(plan, method, memory, results, run, t, info, clock, time.time() - started)
        if saved.board is not None:
            saved.board.task_end(t, results)
        report.task_end(t, plan, results, seconds)
    if saved.board is not None:
        saved.board.close()
    return results


def _finish_task(plan: Plan, method: Method, memory: TaskMemory, results: Results, run: RunDir, t: int,
                 info: dict[str, Any], clock: PhaseClock, elapsed: float) -> float:
    """After task ``t`` trained: its record, the scores, the checkpoint, the log line; returns
    the task's seconds."""
    cfg, learner, task, k = plan.cfg, plan.learner, plan.stream[t], len(plan.stream)
    started = time.time() - elapsed
    record = TaskRecord(t, task.name, task.kind.value, method.signature(), tuple(plan.replay[t]),
                        learner.adapter.state())
    memory.add(record)
    save_record(run.memory_root, record)
    clock.lap("record")
    scores = evaluate_tasks(plan, scored_tasks(t, k, cfg.eval.period(), cfg.eval.all_tasks),
                            round_folder(run.predictions_root, t, task.name))
    results.add_row(scores, info)
    clock.lap("eval")
    run.save_checkpoint(t + 1, learner.adapter.state(), method.state_dict(), results)
    run.write_results(results)
    drop_progress(run.path)  # the task's end is saved: its progress is superseded
    clock.lap("checkpoint")
    seconds = time.time() - started
    teachers = clock.teachers
    run.log("task_end", task=t, name=task.name, seconds=round(seconds, 2),
            acc=results.acc[-1], loss=results.loss[-1], **({"gen": results.gen[-1]} if results.gen else {}),
            teacher_forwards=teachers.forwards,
            phases=clock.phases(), teacher_cache_mb=round(teachers.cached_mb, 1), peak_rss_mb=peak_rss_mb())
    record_run(Path(cfg.out_dir), run.path)  # the results store; best effort, never stops a run
    return seconds
