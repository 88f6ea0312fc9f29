"""TensorBoard events of a run (``log.tensorboard``): loss terms, scores, routing and metrics.

Optional: only this module imports TensorBoard's writer, and only when a run asks for it.
Steps are counted across the stream (``task * train.steps + step``); scores, routing weights
and metrics are indexed by the number of tasks learnt. A resumed run restarts the interrupted
task (or goes on from the step its mid-task checkpoint saved), so its writer purges the events
from there on: TensorBoard then shows each step once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .results import Results


class TensorBoardLog:
    def __init__(self, folder: Path, steps_per_task: int, completed: int = 0, resume_step: int = 0):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:  # torch's writer needs the tensorboard package
            raise ConfigError("log.tensorboard: needs the 'tensorboard' package (pip install tensorboard)") from err
        self.steps_per_task = steps_per_task
        purge = completed * steps_per_task + resume_step + 1 if completed or resume_step else None
        self.writer = SummaryWriter(str(folder), purge_step=purge)

    def steps(self, index: int, step: int, steps: int, means: dict[str, float]) -> None:
        """The mean loss terms of a window of steps, at the window's last step."""
        at = index * self.steps_per_task + step
        for name, value in means.items():
            self.writer.add_scalar(f"train/{name}", value, at)
        self.writer.flush()  # what a live TensorBoard shows, and what a kill cannot take back

    def task_end(self, index: int, results: Results) -> None:
        """Scores of the tasks scored after task ``index``, its routing weights, and the
        stream metrics once the stream is finished."""
        at = index + 1
        for name, kind, acc, loss in zip(results.tasks, results.kinds, results.acc[index], results.loss[index]):
            value = acc if kind == "classification" else loss
            if value is not None:
                self.writer.add_scalar(f"{'acc' if kind == 'classification' else 'loss'}/{name}", value, at)
        if results.gen_metrics is not None:  # eval.predictions: each task's generation metric, as <metric>/<task>
            for name, metric, value in zip(results.tasks, results.gen_metrics, results.gen[index]):
                if metric is not None and value is not None:
                    self.writer.add_scalar(f"{metric}/{name}", value, at)
        info: dict[str, Any] = results.task_info[index] if index < len(results.task_info) else {}
        for source, weight in (info.get("weights") or {}).items():
            self.writer.add_scalar(f"routing/{results.tasks[index]}/{source}", weight, at)
        for name, value in results.metrics().items():
            if value is not None:
                self.writer.add_scalar(f"metrics/{name}", value, at)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
