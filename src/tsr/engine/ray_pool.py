"""Grids on Ray: the same contract as :func:`tsr.engine.pool.run_pool`, on a local Ray instance
or a cluster.

Each worker is a Ray actor that sets up once (like a local worker process) and then runs one
item at a time; the driver keeps every actor busy and hands the results and events to the
caller as they come. An actor asks Ray for the CPU threads of one run and, where given, a
fraction of a GPU (``gpus_per_run=0.25``: four runs share one GPU). An actor whose process dies
(killed, out of memory, a lost node) is restarted by Ray and its item is run again; items are
runs and probe arms that resume from their folders, so a retried item continues where the
dead one stopped. Run folders must be on a filesystem every node sees (docs/cluster.md).

Ray is optional: only this module imports it, and only when a grid asks for it.
"""

from __future__ import annotations

import logging
import os
import queue as queues
from typing import Any, Callable, Sequence

from ..errors import ConfigError, RunError, TsrError
from .executor import Executor


class _Worker:
    """The actor: ``setup`` once per (re)start, then ``work`` on each item it is given.

    The events queue (an actor handle) comes with each item, not to the constructor: Ray keeps
    a constructor argument that holds an actor handle in its object store, and a restartable
    actor built from such an argument may fail to restart once the argument is gone (Ray warns
    so, as an error line, for every actor: ray-project/ray#53727)."""

    def __init__(self, setup, setup_args, work):
        self.work, self.failed = work, None
        try:
            self.state = setup(*setup_args)
        except Exception as err:  # raised from run(): an error of the grid, not a death to retry
            self.failed = err

    def run(self, item, events):
        if self.failed is not None:
            raise self.failed
        emit = (lambda event: events.put(event)) if events is not None else (lambda event: None)
        return self.work(self.state, item, emit)


def start_ray(address: str | None):
    """Connect to a cluster, or start a local instance; an error is one line."""
    try:
        import ray
    except ImportError as err:
        raise ConfigError("--executor ray: needs the 'ray' package (pip install 'ray>=2.50')") from err
    if not ray.is_initialized():
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local instance has no other users
        try:
            # logging_level: Ray's own INFO lines ("Started a local Ray instance.") stay off
            # the console, which holds tsr's progress; its warnings and errors still show
            if address:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            else:
                # worker_niceness 0: Ray lowers its workers' priority by default (15), which
                # starves the runs, the only work here, whenever anything else uses the CPU
                ray.init(include_dashboard=False, log_to_driver=False, object_store_memory=128 * 2**20,
                         logging_level=logging.WARNING, _system_config={"worker_niceness": 0})
        except Exception as err:  # ConnectionError, RuntimeError, ValueError, depending on the cause
            raise RunError(f"--ray-address {address or '(local)'}: cannot start or reach Ray: {err}") from None
    return ray


def run_ray(setup: Callable, setup_args: tuple, work: Callable, items: Sequence, workers: int,
            on_result: Callable[[Any], None], on_event: Callable[[Any], None] | None, executor: Executor,
            cpus_per_run: int) -> None:
    """:func:`tsr.engine.pool.run_pool` on Ray, ``workers`` actors at a time."""
    ray = start_ray(executor.address)
    from ray.util.queue import Queue

    events = Queue() if on_event is not None else None
    actor = ray.remote(_Worker).options(num_cpus=cpus_per_run, num_gpus=executor.gpus_per_run,
                                         max_restarts=executor.retries, max_task_retries=executor.retries)
    actors = [actor.remote(setup, setup_args, work) for _ in range(min(max(1, workers), len(items)))]
    todo, running = list(items)[::-1], {}
    try:
        for worker in actors:
            running[worker.run.remote(todo.pop(), events)] = worker
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
            _drain(events, on_event)
            for ref in ready:
                worker = running.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as err:  # the item itself failed: the caller's error
                    cause = err.cause
                    raise (cause if isinstance(cause, TsrError) else RunError(f"a worker failed: {cause!r}")) from None
                except ray.exceptions.RayError as err:  # out of retries: the process kept dying
                    raise RunError(f"a Ray worker died {executor.retries + 1} times ({type(err).__name__}); "
                                   "finished work is saved: run the same command again to resume") from None
                _drain(events, on_event)
                on_result(result)
                if todo:
                    running[worker.run.remote(todo.pop(), events)] = worker
    finally:
        for worker in actors:
            ray.kill(worker)
        if events is not None:
            events.shutdown()


def _drain(events, on_event) -> None:
    while events is not None:
        try:
            event = events.get_nowait()
        except queues.Empty:
            return
        on_event(event)
