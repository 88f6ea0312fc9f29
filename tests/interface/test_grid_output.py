"""The progress lines every grid command prints (tsr compare and tsr audit share them)."""

import io

from rich.console import Console

from tsr.engine.grid import Point, TaskDone
from tsr.interface.grid_output import grid_callbacks, point_name


def _lines(run) -> list[str]:
    err = Console(record=True, width=200, file=io.StringIO())
    run(err)
    return err.export_text().splitlines()


def test_point_names_a_variant_only_when_there_is_one():
    assert point_name(Point("er", 0)) == "er"
    assert point_name(Point("tsr", 3, ("method.kd_weight=0.5",), "kd_weight=0.5")) == "tsr (kd_weight=0.5)"


def test_task_lines_say_where_a_resumed_task_went_on_from():
    point = Point("tsr", 2, ("train.teacher=none",), "teacher=none")

    def emit(err):
        progress, task_done = grid_callbacks(err)
        progress(point, "runs/x", 1, 6)
        task_done(TaskDone(point, 3, 8, "code", 41.6))
        task_done(TaskDone(point, 4, 8, "irony", 12.2, resumed_at=250))

    assert _lines(emit) == [
        "  [1/6] tsr (teacher=none) seed 2 -> runs/x",
        "      tsr (teacher=none) seed 2: task 4/8 code (42 s)",
        "      tsr (teacher=none) seed 2: task 5/8 irony (12 s, resumed at step 250)",
    ]
