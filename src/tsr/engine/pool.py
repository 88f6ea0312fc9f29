"""Worker processes for grids: each worker sets up once (a model, a stream), then works through
items from a shared queue; results and events come back to the caller as they happen.

The state a worker builds lives in that worker's own loop, not in a module global. A worker that
raises stops the grid with its error; one that dies without a word (killed, out of memory) is
reported as such. Finished items are the caller's to save, so a stopped grid resumes.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import queue as queues
from typing import Any, Callable, Sequence, TypeVar

from ..errors import RunError
from .executor import Executor

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")
Emit = Callable[[Any], None]


def _ignore(event: Any) -> None:
    pass


def run_pool(setup: Callable[..., S], setup_args: tuple, work: Callable[[S, T, Emit], R], items: Sequence[T],
             workers: int, on_result: Callable[[R], None], on_event: Emit | None = None,
             executor: Executor | None = None, cpus_per_run: int = 1) -> None:
    """``work(state, item, emit)`` for every item, ``state = setup(*setup_args)`` once per worker.

    ``on_result`` hears each result and ``on_event`` whatever a worker ``emit``s, in the calling
    process. ``setup``, ``work`` and the items must pickle (module-level functions) when
    ``workers > 1``; with one local worker everything runs in this process. With a Ray
    ``executor`` the workers are Ray actors asking for ``cpus_per_run`` CPUs each
    (:mod:`tsr.engine.ray_pool`).
    """
    if not items:
        return
    if executor is not None and executor.kind == "ray":
        from .ray_pool import run_ray

        return run_ray(setup, setup_args, work, items, workers, on_result, on_event, executor, cpus_per_run)
    if workers <= 1:
        state = setup(*setup_args)
        for item in items:
            on_result(work(state, item, on_event or _ignore))
        return
    ctx = mp.get_context("spawn")
    jobs, replies = ctx.Queue(), ctx.Queue()
    for item in items:
        jobs.put(item)
    count = min(workers, len(items))
    for _ in range(count):
        jobs.put(None)
    procs = [ctx.Process(target=_serve, args=(setup, setup_args, work, jobs, replies, on_event is not None),
                         daemon=True) for _ in range(count)]
    for proc in procs:
        proc.start()
    try:
        done = 0
        while done < len(items):
            try:
                kind, value = replies.get(timeout=1.0)
            except queues.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    raise RunError(f"a worker process died (exit code {dead[0].exitcode}); "
                                   "finished work is saved: run the same command again to resume") from None
                continue
            if kind == "result":
                done += 1
                on_result(value)
            elif kind == "event":
                (on_event or _ignore)(value)
            else:
                raise value
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        for proc in procs:
            proc.join(timeout=5)


def _serve(setup, setup_args, work, jobs, replies, events: bool) -> None:
    emit = (lambda event: replies.put(("event", event))) if events else _ignore
    try:
        state = setup(*setup_args)
        while (item := jobs.get()) is not None:
            replies.put(("result", work(state, item, emit)))
    except BaseException as err:  # the caller re-raises it
        try:
            pickle.dumps(err)
        except Exception:
            err = RunError(f"a worker failed: {err!r}")
        replies.put(("error", err))
