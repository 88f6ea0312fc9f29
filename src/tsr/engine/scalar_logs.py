"""A run's scalars for experiment loggers: TensorBoard (``log.tensorboard``), Weights & Biases
(``log.wandb``) and MLflow (``log.mlflow``), each optional and imported only when asked for.

One :class:`ScalarLogs` computes what is logged and hands it to every logger: the mean loss
terms of each log window (``train/<term>``), and after each task the scores of the tasks scored
(``acc/<task>`` or ``loss/<task>``, a generation metric as ``<metric>/<task>``), the task's
routing weights (``routing/<task>/<source>``) and the stream metrics (``metrics/<name>``).
Steps are counted across the stream (``task * train.steps + step``); scores, routing and
metrics are indexed by the number of tasks learnt. A resumed run restarts the interrupted task
(or goes on from its mid-task checkpoint): TensorBoard's writer purges its events from there,
so it shows each step once; W&B keeps the first value of a step it has seen and MLflow holds
both (each resumed process is one more MLflow run, tagged with the run folder).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError
from ..runs.results import Results


class Sink(Protocol):
    def scalars(self, values: dict[str, float], step: int) -> None: ...
    def close(self) -> None: ...


class TensorBoardSink:
    def __init__(self, folder: Path, purge: int | None):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:  # torch's writer needs the tensorboard package
            raise ConfigError("log.tensorboard: needs the 'tensorboard' package (pip install tensorboard)") from err
        self.folder = folder
        self.writer = SummaryWriter(str(folder), purge_step=purge)

    def scalars(self, values: dict[str, float], step: int) -> None:
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)
        self.writer.flush()  # what a live TensorBoard shows, and what a kill cannot take back

    def close(self) -> None:
        self.writer.close()


class WandbSink:
    """One W&B run per run folder (its id from the folder's name, resumed by a later process);
    ``WANDB_MODE=offline`` keeps it on disk under ``<run>/wandb``. W&B has one step counter per
    run, so the two x-axes are W&B metrics of their own: ``train_step`` for the loss terms and
    ``tasks_learnt`` for scores, routing and metrics."""

    def __init__(self, run: Path, project: str, config: dict):
        try:
            import wandb
        except ImportError as err:
            raise ConfigError("log.wandb: needs the 'wandb' package (pip install 'tsr[wandb]')") from err
        self.run = wandb.init(project=project, name=run.name, id=run.name[-64:].replace("/", "-"), resume="allow",
                              dir=str(run), config=config, reinit="create_new")
        self.run.define_metric("train_step")
        self.run.define_metric("tasks_learnt")
        self.run.define_metric("train/*", step_metric="train_step")
        for prefix in ("acc", "loss", "routing", "metrics", "rouge_l", "edit_sim", "sari"):
            self.run.define_metric(f"{prefix}/*", step_metric="tasks_learnt")

    def scalars(self, values: dict[str, float], step: int) -> None:
        axis = "train_step" if all(k.startswith("train/") for k in values) else "tasks_learnt"
        self.run.log({**values, axis: step})

    def close(self) -> None:
        self.run.finish()


class MLflowSink:
    """An MLflow run tagged with the run folder; the tracking URI is ``MLFLOW_TRACKING_URI`` where
    set, else a file store beside the runs (``<out_dir>/mlruns``, which MLflow 3 keeps in
    maintenance mode: set ``MLFLOW_TRACKING_URI`` to a server or database for more); the
    experiment is the stream."""

    def __init__(self, run: Path, experiment: str, config: dict):
        try:
            import mlflow
        except ImportError as err:
            raise ConfigError("log.mlflow: needs the 'mlflow' package (pip install 'tsr[mlflow]')") from err
        uri = os.environ.get("MLFLOW_TRACKING_URI")
        if not uri:
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # the default store is the file store
            uri = tracking_uri(run.parent)
        self.client = mlflow.MlflowClient(uri)
        found = self.client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else self.client.create_experiment(experiment)
        self.run_id = self.client.create_run(experiment_id, run_name=run.name, tags={"tsr.run": str(run)}).info.run_id
        for key, value in config.items():
            self.client.log_param(self.run_id, key, str(value)[:500])

    def scalars(self, values: dict[str, float], step: int) -> None:
        for name, value in values.items():
            self.client.log_metric(self.run_id, name.replace("/", "."), value, step=step)

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


def tracking_uri(out_dir: Path) -> str:
    """MLflow's default store for a folder of runs: the file store ``<out_dir>/mlruns``."""
    return (Path(out_dir) / "mlruns").resolve().as_uri()


class ScalarLogs:
    """What a run logs, handed to every logger asked for."""

    def __init__(self, sinks: list[Sink], steps_per_task: int):
        self.sinks, self.steps_per_task = sinks, steps_per_task

    def steps(self, index: int, step: int, steps: int, means: dict[str, float]) -> None:
        """The mean loss terms of a window of steps, at the window's last step."""
        self._emit({f"train/{name}": value for name, value in means.items()}, index * self.steps_per_task + step)

    def task_end(self, index: int, results: Results) -> None:
        """Scores of the tasks scored after task ``index``, its routing weights, and the
        stream metrics once the stream is finished."""
        values: dict[str, float] = {}
        for name, kind, acc, loss in zip(results.tasks, results.kinds, results.acc[index], results.loss[index]):
            value = acc if kind == "classification" else loss
            if value is not None:
                values[f"{'acc' if kind == 'classification' else 'loss'}/{name}"] = value
        if results.gen_metrics is not None:  # eval.predictions: each task's generation metric
            for name, metric, value in zip(results.tasks, results.gen_metrics, results.gen[index]):
                if metric is not None and value is not None:
                    values[f"{metric}/{name}"] = value
        info: dict[str, Any] = results.task_info[index] if index < len(results.task_info) else {}
        for source, weight in (info.get("weights") or {}).items():
            values[f"routing/{results.tasks[index]}/{source}"] = weight
        values.update({f"metrics/{name}": value for name, value in results.metrics().items() if value is not None})
        self._emit(values, index + 1)

    def _emit(self, values: dict[str, float], step: int) -> None:
        values = {k: v for k, v in values.items() if math.isfinite(v)}  # a metric not defined yet is no point
        for sink in self.sinks:
            sink.scalars(values, step)

    def restart(self, completed: int) -> None:
        """A dropped mid-task progress: TensorBoard purges from the task's first step again."""
        for i, sink in enumerate(self.sinks):
            if isinstance(sink, TensorBoardSink):
                sink.close()
                self.sinks[i] = TensorBoardSink(sink.folder, completed * self.steps_per_task + 1 if completed else None)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


def scalar_logs(cfg, run: Path, completed: int, within: int, stream_name: str) -> ScalarLogs | None:
    """The loggers ``cfg.log`` asks for (None when it asks for none)."""
    log, sinks = cfg.log, []
    if log.tensorboard:
        purge = completed * cfg.train.steps + within + 1 if completed or within else None
        sinks.append(TensorBoardSink(run / "tensorboard", purge))
    config = {"method": cfg.method.name, "seed": cfg.seed, "model": cfg.model.path, "stream": stream_name,
              "steps": cfg.train.steps, "lr": cfg.train.lr, "budget": cfg.stream.budget}
    if log.wandb:
        sinks.append(WandbSink(run, log.wandb_project, config))
    if log.mlflow:
        sinks.append(MLflowSink(run, stream_name, config))
    return ScalarLogs(sinks, cfg.train.steps) if sinks else None
