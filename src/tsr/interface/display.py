"""Terminal output: live progress while training, and readable tables of results."""

from __future__ import annotations

import json
import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from ..analysis.numbers import number
from ..engine.loop import Plan
from ..data.example import GEN_METRICS
from ..runs.results import Results
from ..runs.text_metrics import NAMES
from . import banner
from .console import plain_console


def _pairs(mapping: dict[str, float], digits: int = 2) -> str:
    ranked = sorted(mapping.items(), key=lambda kv: -kv[1])
    return " · ".join(f"{name} {value:.{digits}f}" for name, value in ranked)


class ConsoleReporter:
    """A progress bar per task (step, loss, ETA) and one line per finished task."""

    def __init__(self, console: Console | None = None):
        self.console = console or plain_console(stderr=True)
        self.progress: Progress | None = None
        self.bar = None
        self._last_print = 0.0

    def run_begin(self, cfg) -> None:
        # on a terminal the run line comes before the model loads; in a log it comes with the
        # model's, so an error while loading stays the log's one line
        if self.console.is_terminal:
            self.console.print(banner.run_line(cfg), highlight=False, soft_wrap=True)

    def run_ready(self, plan: Plan, folder) -> None:
        if not self.console.is_terminal:
            self.console.print(banner.run_line(plan.cfg), highlight=False, soft_wrap=True)
        self.console.print(banner.model_line(plan, folder), highlight=False, soft_wrap=True)

    def task_begin(self, t: int, plan: Plan) -> None:
        # before the method prepares the task (TSR's signature probe), so that is not silence
        self.console.print(banner.task_line(t, plan), highlight=False, soft_wrap=True)

    def task_start(self, t: int, plan: Plan, info: dict) -> None:
        task = plan.stream[t]
        if info.get("weights"):
            self.console.print(f"  routing: {escape(_pairs(info['weights']))}   top source: "
                               f"[cyan]{escape(str(info['top']))}[/]", markup=True)
        if info.get("resume_step"):
            self.console.print(f"  resuming at step {info['resume_step']}/{plan.cfg.train.steps} (saved progress)")
        self.progress = Progress(TextColumn("  {task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("loss {task.fields[loss]}"), TimeRemainingColumn(),
                                 console=self.console, transient=True, disable=not self.console.is_terminal)
        self.progress.start()
        self.bar = self.progress.add_task(task.name, total=plan.cfg.train.steps, loss="-",
                                          completed=info.get("resume_step", 0))

    def step(self, t: int, step: int, steps: int, terms: dict[str, float]) -> None:
        if self.progress is None:
            return
        self.progress.update(self.bar, completed=step, loss=f"{terms['loss']:.3f}")
        if not self.console.is_terminal and (time.time() - self._last_print > 30 or step == steps):
            self._last_print = time.time()
            self.console.print(f"  step {step}/{steps} loss {terms['loss']:.3f}")

    def task_end(self, t: int, plan: Plan, results: Results, seconds: float) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
        row_acc, row_loss = results.acc[-1], results.loss[-1]
        parts = []
        for i, task in enumerate(plan.stream):
            if row_acc[i] is None:
                continue
            value = f"{row_acc[i]:.2f}" if task.is_classification else f"loss {row_loss[i]:.2f}"
            if task.metric and results.gen and results.gen[-1][i] is not None:
                value += f" {NAMES[task.metric]} {results.gen[-1][i]:.2f}"
            parts.append(f"{task.name} {value}")
        self.console.print(f"  done in {seconds:.0f}s · " + " · ".join(parts))


def results_table(results: Results, title: str | None = None) -> Table:
    """The results matrix: one row per 'after task', accuracy for classification tasks and
    answer loss for generation tasks (marked with L)."""
    table = Table(title=title, show_lines=False)
    # long task names fold onto a second line rather than being cut to an ellipsis
    table.add_column("after \\ on", style="bold", overflow="fold")
    for name, kind in zip(results.tasks, results.kinds):
        table.add_column(name + (" (L)" if kind == "generation" else ""), justify="right", overflow="fold")
    rows = []
    if results.zero_shot is not None:
        rows.append(("zero-shot", results.zero_shot["acc"], results.zero_shot["loss"]))
    rows += [(results.tasks[i], results.acc[i], results.loss[i]) for i in range(results.completed)]
    for label, acc, loss in rows:
        cells = [number(loss[j] if kind == "generation" else acc[j]) for j, kind in enumerate(results.kinds)]
        table.add_row(label, *cells)
    return table


def metrics_table(results: Results) -> Table:
    m = results.metrics()
    table = Table(title="stream metrics")
    forward = "fwt" in m  # eval.all_tasks: the zero-shot row gives forward transfer too
    for col in ("", "Overall", "Plas", "BWT", *(["FWT"] if forward else [])):
        table.add_column(col, justify="right")
    table.add_row("accuracy (classification)", number(m.get("overall")), number(m.get("plas")),
                  number(m.get("bwt"), signed=True), *([number(m.get("fwt"), signed=True)] if forward else []))
    if any(m.get(k) is not None for k in ("overall_loss", "plas_loss")):
        table.add_row("loss (generation, lower is better)", number(m.get("overall_loss")),
                      number(m.get("plas_loss")), number(m.get("bwt_loss"), signed=True),
                      *([number(m.get("fwt_loss"), signed=True)] if forward else []))
    for name in GEN_METRICS:  # with eval.predictions: each generation metric over the tasks it scores
        if f"overall_{name}" in m:
            tasks = ", ".join(t for t, g in zip(results.tasks, results.gen_metrics or []) if g == name)
            table.add_row(f"{NAMES[name]} ({tasks})", number(m.get(f"overall_{name}")), number(m.get(f"plas_{name}")),
                          number(m.get(f"bwt_{name}"), signed=True))
    return table


PHASE_ORDER = ("begin", "train", "eval", "record", "checkpoint")


def phases_line(seconds: dict[str, float]) -> str | None:
    """Where a run's time went, e.g. ``train 312 s (85%, teacher 20 s) · eval 34 s (9%) · ...``."""
    total = sum(seconds.get(p, 0.0) for p in PHASE_ORDER)
    if total <= 0:
        return None
    parts = []
    for phase in PHASE_ORDER:
        value = seconds.get(phase, 0.0)
        extra = f", teacher {seconds['teacher']:.0f} s" if phase == "train" and seconds.get("teacher") else ""
        parts.append(f"{'probe' if phase == 'begin' else phase} {value:.0f} s ({100 * value / total:.0f}%{extra})")
    return "time by phase: " + " · ".join(parts)


def method_meta_lines(method: str, meta: dict) -> list[str]:
    """What a method recorded about its run, one line per entry: a list reads as one value per
    finished task (``agem projected_steps: 0 · 551 · 386``), anything else as it is."""
    lines = []
    for key, value in meta.items():
        if isinstance(value, (list, tuple)):
            text = " · ".join(_meta_value(v) for v in value)
        else:
            text = _meta_value(value)
        lines.append(f"{method} {key}: {text}")
    return lines


def _meta_value(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
