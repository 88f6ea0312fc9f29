"""Mid-task checkpoints: a task's training saved between two steps, and resumed there.

The run's checkpoint (:mod:`tsr.engine.rundir`) is taken when a task ends, so an interrupted
run redoes the task it was in. Where a task takes long (A-GEM's reference gradient on a CPU,
a 7B backbone on a GPU) the run also saves the task's progress every
``train.checkpoint_minutes`` (at the first step after the interval has passed) into
``<run>/progress/``:

- the adapter and the optimiser's state (AdamW's moments and step counts);
- every random stream the remaining steps draw from: the engine's draw generator, each
  batch stream the task opened (:class:`tsr.data.sampling.BatchStream`), torch's generator
  (LoRA dropout), and the method's own (:meth:`tsr.methods.base.Method.state_dict` of scope ``step``: A-GEM's
  memory draws, DER++'s buffer draws, TSR's step count and teacher tallies);
- the step count and the training seconds spent so far;
- the loss terms summed over the steps since the last logged window (``log.every``), so the
  window that was open when the progress was saved is logged whole after a resume.

A resume restores the task's start as before (the last task-end checkpoint), calls the
method's ``begin_task`` again (it depends only on that start, the task memory and seeded
generators, so it rebuilds the same per-task state), then loads the progress over it and
trains the remaining steps: the run ends bitwise as an uninterrupted one would (a test pins
this for every registered method). The folder is removed once the task's end is saved; one
left from an earlier task, or one that cannot be read, is dropped and the task starts from its
beginning (nothing finished is lost).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from safetensors import SafetensorError

from ..atomic import (SELF, check_seal, read_tensors, remove_leftovers, replace_dir, required_checksums, sealed,
                      temp_dir, write_bytes, write_json, write_tensors)
from ..errors import RunError, reason
from ..methods.base import MethodState
from ..methods.context import TaskContext
from ..rng import restore_rng, rng_state
from ..runs.saved import FOLDER, saved_folder as _saved
from .streams import TaskStreams

TENSOR_FILES = ("adapter.safetensors", "optimiser.safetensors", "method.safetensors", "rng.safetensors")


@dataclass
class TaskProgress:
    """Everything the remaining steps of task ``task`` depend on after ``step`` steps."""

    task: int
    step: int
    adapter: dict[str, torch.Tensor]
    optimiser: dict[str, Any]
    draws: dict[str, Any]                      # the engine's draw generator (NumPy state)
    streams: list[dict[str, Any]]              # {"purpose", "source", "state"} per batch stream
    method: MethodState
    torch_rng: torch.Tensor
    cuda_rng: list[torch.Tensor] = field(default_factory=list)
    seconds: float = 0.0                       # training seconds of the task so far
    log_window: dict[str, float] = field(default_factory=dict)  # loss sums of the open log window
    folder: str = ""                           # where it was read from (for errors)


def optimiser_parts(state: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """An optimiser's ``state_dict`` as (tensors, JSON): ``state.<param>.<key>`` tensors, the
    rest (param groups, non-tensor entries) as plain data."""
    tensors, plain = {}, {"param_groups": state["param_groups"], "scalars": {}}
    for index, entries in state["state"].items():
        for key, value in entries.items():
            if isinstance(value, torch.Tensor):
                tensors[f"state.{index}.{key}"] = value
            else:
                plain["scalars"][f"{index}.{key}"] = value
    return tensors, plain


def optimiser_state(tensors: dict[str, torch.Tensor], plain: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`optimiser_parts`."""
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        _, index, key = name.split(".", 2)
        state.setdefault(int(index), {})[key] = value
    for name, value in plain.get("scalars", {}).items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    return {"state": state, "param_groups": plain["param_groups"]}


def save_progress(run_path: Path, progress: TaskProgress) -> None:
    """Write ``progress`` into ``<run>/progress/`` as a whole (built aside, then swapped in)."""
    final = Path(run_path) / FOLDER
    tmp = temp_dir(final)
    try:
        opt_tensors, opt_plain = optimiser_parts(progress.optimiser)
        rng = {"torch_cpu": progress.torch_rng, **{f"cuda.{i}": s for i, s in enumerate(progress.cuda_rng)}}
        sha256 = {name: write_tensors(tmp / name, tensors) for name, tensors in (
            ("adapter.safetensors", progress.adapter), ("optimiser.safetensors", opt_tensors),
            ("method.safetensors", progress.method.tensors), ("rng.safetensors", rng))}
        write_json(tmp / "state.json", sealed({"task": progress.task, "step": progress.step,
                                               "seconds": progress.seconds, "draws": progress.draws,
                                               "streams": progress.streams, "log_window": progress.log_window,
                                               "optimiser": opt_plain, "method_meta": progress.method.meta,
                                               "sha256": sha256}))
        replace_dir(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def load_progress(run_path: Path, sealed_format: bool = True) -> TaskProgress:
    """The saved progress; raises ValueError (with the file it could not read) when it is
    missing a part, damaged or edited: its state.json is sealed as a whole (step, seconds, the
    draw generator, ...: :func:`tsr.atomic.sealed`) and lists the SHA-256 of its four tensor
    files. ``sealed_format`` False: a run made before the seal was recorded, whose progress may
    lack it."""
    folder = _saved(run_path) or Path(run_path) / FOLDER
    current = folder / "state.json"
    try:
        state = json.loads(current.read_text(encoding="utf-8"))
        sha256 = required_checksums(state, TENSOR_FILES)
        check_seal(state, sealed_format or SELF in state)
        current = folder / "adapter.safetensors"
        adapter = read_tensors(current, sha256.get(current.name))
        current = folder / "optimiser.safetensors"
        optimiser = optimiser_state(read_tensors(current, sha256.get(current.name)), state["optimiser"])
        current = folder / "method.safetensors"
        method = MethodState(read_tensors(current, sha256.get(current.name)), state["method_meta"])
        current = folder / "rng.safetensors"
        rng = read_tensors(current, sha256.get(current.name))
        cuda = [rng[f"cuda.{i}"] for i in range(sum(k.startswith("cuda.") for k in rng))]
        return TaskProgress(int(state["task"]), int(state["step"]), adapter, optimiser, state["draws"],
                            list(state["streams"]), method, rng["torch_cpu"], cuda,
                            seconds=float(state.get("seconds", 0.0)), folder=str(folder),
                            log_window={str(k): float(v) for k, v in state.get("log_window", {}).items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError, SafetensorError) as err:
        raise ValueError(f"{current}: {err}") from None


def forget_steps_after(run_path: Path, task: int, step: int) -> int:
    """Before task ``task`` goes on from its saved progress at ``step``: remove the ``steps``
    lines of that task past ``step`` since the task last started, which the interrupted process
    logged after saving the progress and the resume logs again. So however often a task is
    killed and resumed, each of its windows is logged once. The log is rewritten atomically,
    only when there is something to remove; returns how many lines were removed."""
    log = Path(run_path) / "progress.jsonl"
    if not log.is_file():
        return 0
    lines = log.read_bytes().splitlines(keepends=True)
    try:
        events = [json.loads(line) if line.strip() else None for line in lines]
    except ValueError:  # checked whole before a resume (RunDir._check_log); changed since, it is left as it is
        return 0
    starts = [i for i, e in enumerate(events) if isinstance(e, dict) and e.get("event") == "task_start"
              and e.get("task") == task]
    if not starts:
        return 0
    stale = {i for i, e in enumerate(events) if i > starts[-1] and isinstance(e, dict)
             and e.get("event") == "steps" and e.get("task") == task and isinstance(e.get("step"), int)
             and e["step"] > step}
    if stale:
        write_bytes(log, b"".join(line for i, line in enumerate(lines) if i not in stale))
    return len(stale)


def drop_progress(run_path: Path) -> None:
    """Remove the progress folder (and what a killed write of it left)."""
    while (folder := _saved(run_path)) is not None:
        shutil.rmtree(folder)
    remove_leftovers(Path(run_path), FOLDER)


def has_progress(run_path: Path) -> bool:
    return _saved(run_path) is not None


class Checkpoints:
    """When a task saves its progress: after the first step (not the last: the task's end saves
    everything) once ``minutes`` have passed since the task (re)started or since the last save.
    ``minutes <= 0`` never saves. ``window`` gives the loss sums of the log window still open
    (:class:`tsr.engine.loop.StepLog`), saved with the progress."""

    def __init__(self, save: Callable[[TaskProgress], None], minutes: float,
                 window: Callable[[], dict[str, float]] = dict, clock: Callable[[], float] = time.monotonic):
        self.save_to, self.minutes, self.window, self.clock = save, float(minutes), window, clock
        self.last = clock()
        self.saved = 0

    def start(self) -> None:
        """A task (re)starts: the interval counts from now."""
        self.last = self.clock()

    def due(self, step: int, steps: int) -> bool:
        return self.minutes > 0 and step < steps and self.clock() - self.last >= self.minutes * 60

    def save(self, progress: TaskProgress) -> None:
        self.save_to(replace(progress, log_window=dict(self.window())))
        self.saved += 1
        self.last = self.clock()


def capture(step: int, seconds: float, ctx: TaskContext, streams: TaskStreams, optimiser: torch.optim.Optimizer,
            draws: np.random.Generator, method) -> TaskProgress:
    """The progress of the task ``ctx`` describes, after ``step`` steps; ``streams`` are its batch streams."""
    learner = ctx.learner
    cuda = torch.cuda.get_rng_state_all() if learner.device.type == "cuda" else []
    return TaskProgress(ctx.index, step, learner.adapter.state(), optimiser.state_dict(), rng_state(draws),
                        streams.states(), method.state_dict("step"), torch.get_rng_state(), cuda, seconds)


def misfit(progress: TaskProgress, ctx: TaskContext, optimiser: torch.optim.Optimizer, steps: int) -> str | None:
    """Why ``progress`` cannot go on in the task ``ctx`` describes (``begin_task`` has run, the
    optimiser is fresh), or None: another task, a step outside ``0 < step < steps``, adapter or
    optimiser tensors of other names or shapes (crafted, or saved by another version of a
    method). Checked before anything is restored, so the task can start from its beginning."""
    if progress.task != ctx.index:
        return f"it is of task {progress.task + 1}"
    if not 0 < progress.step < steps:
        return f"its step {progress.step} is not between 0 and the task's {steps} steps"
    state = ctx.learner.adapter.state()
    if set(progress.adapter) != set(state):
        return "its adapter holds other tensors than this run's"
    for name, tensor in state.items():
        saved = progress.adapter[name]
        if saved.shape != tensor.shape or saved.dtype != tensor.dtype:
            return f"its adapter tensor {name} is {_describe(saved)}, this run's {_describe(tensor)}"
    try:
        groups = progress.optimiser["param_groups"]
        params = [p for g in optimiser.param_groups for p in g["params"]]
        if [len(g["params"]) for g in groups] != [len(g["params"]) for g in optimiser.param_groups]:
            return "its optimiser has other parameter groups"
        for index, entries in progress.optimiser["state"].items():
            for key, value in entries.items():
                if isinstance(value, torch.Tensor) and value.dim() and value.shape != params[index].shape:
                    return f"its optimiser state {index}.{key} is {_describe(value)}, the parameter's " \
                           f"{tuple(params[index].shape)}"
    except (KeyError, TypeError, IndexError) as err:
        return f"its optimiser state is malformed ({reason(err)})"
    return None


def _describe(tensor: torch.Tensor) -> str:
    return f"{tuple(tensor.shape)} {str(tensor.dtype).removeprefix('torch.')}"


def restore(progress: TaskProgress, ctx: TaskContext, streams: TaskStreams, optimiser: torch.optim.Optimizer,
            draws: np.random.Generator, method) -> None:
    """Put the task and its batch ``streams`` back where ``progress`` left it (``begin_task`` has run again, the optimiser
    is fresh). A progress that does not fit this run (crafted, or written by another version of a
    method) is a one-line :class:`RunError` naming the folder."""
    try:
        if progress.task != ctx.index:
            raise ValueError(f"it is of task {progress.task + 1}")
        ctx.learner.adapter.load(progress.adapter)
        optimiser.load_state_dict(progress.optimiser)
        restore_rng(draws, progress.draws)
        streams.load(progress.streams)
        method.load_state_dict(ctx.learner, progress.method, "step")
        torch.set_rng_state(progress.torch_rng)
        if progress.cuda_rng and ctx.learner.device.type == "cuda":
            torch.cuda.set_rng_state_all(progress.cuda_rng)
    except (ValueError, RuntimeError, KeyError, TypeError, IndexError) as err:
        where = progress.folder or FOLDER
        raise RunError(f"{where}: the saved progress of task {ctx.index + 1} ({ctx.task.name!r}) does not fit "
                       f"this run ({reason(err)}); delete that folder to start the task from its beginning") from None
