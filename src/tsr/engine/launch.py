"""A grid point trained as one run on several processes: ``torchrun --standalone
--nproc-per-node N -m tsr run ...`` in a subprocess of the grid's worker, so that a Ray actor
holding a run's GPUs (``--gpus-per-run 4 --processes-per-run 4``) trains it data-parallel on all
of them (:mod:`tsr.engine.parallel`), and a local worker can do the same with CPU processes.

The launched run is an ordinary ``tsr run`` of the point's config: the same run folder, the same
resume. Its finished tasks are read from the run's ``progress.jsonl`` while it trains (every
``poll`` seconds) and handed on as the grid's task events; an error of the run is its own
``tsr: error:`` line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import RunError


def launch_command(config: str | None, overrides: Sequence[str], processes: int) -> list[str]:
    """The command line of one run of ``config`` with ``overrides`` on ``processes`` processes."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
            "-m", "tsr", "run", *([config] if config else []), *overrides, "--quiet"]


def finished_tasks(log: Path, offset: int) -> tuple[list[dict], int]:
    """The ``task_end`` events written to ``log`` after byte ``offset``, and the offset after
    the last whole line read."""
    if not log.exists():
        return [], offset
    with log.open("rb") as f:
        f.seek(offset)
        data = f.read()
    whole = data[: data.rfind(b"\n") + 1]
    events = [json.loads(line) for line in whole.decode("utf-8").splitlines() if line.strip()]
    return [e for e in events if e.get("event") == "task_end"], offset + len(whole)


def launch_run(config: str | None, overrides: Sequence[str], processes: int, run_dir: Path, threads: int,
               on_task: Callable[[dict], Any], poll: float = 1.0) -> None:
    """Train the run in ``run_dir`` on ``processes`` processes of this machine, ``threads`` CPU
    threads each; ``on_task(event)`` hears each task it finishes (its ``task_end`` event)."""
    log = run_dir / "progress.jsonl"
    offset = log.stat().st_size if log.exists() else 0  # a resumed run: only what it finishes now
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        proc = subprocess.Popen(launch_command(config, overrides, processes), stdout=subprocess.DEVNULL,
                                stderr=err, env=env)
        while True:
            code = proc.poll()
            events, offset = finished_tasks(log, offset)
            for event in events:
                on_task(event)
            if code is not None:
                break
            time.sleep(poll)
        if code != 0:
            err.seek(0)
            lines = err.read().splitlines()
            said = next((line for line in lines if line.startswith("tsr: error:")), None)
            raise RunError(said.removeprefix("tsr: error: ") if said else
                           f"a run launched on {processes} processes failed (exit status {code}): "
                           + (lines[-1] if lines else "no output"))
