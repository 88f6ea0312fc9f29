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


def test_off_a_terminal_every_tenth_arm_line_gives_the_time_in_and_left(monkeypatch, capsys):
    from tsr.interface import grid_output
    from tsr.interface.grid_output import AuditLines, pace

    assert pace(38, 192, 38, 0.0, 60.0) == ""  # nothing finished by this process yet: no rate
    assert pace(50, 192, 38, 0.0, 1440.0) == " · 24 min in, about 4.7 h left"  # 12 arms in 24 min, 142 left
    assert pace(192, 192, 0, 0.0, 7200.0) == " · 2.0 h in"
    clock = iter([100.0, 160.0, 700.0])
    monkeypatch.setattr(grid_output.time, "monotonic", lambda: next(clock))
    lines = AuditLines(Console(file=io.StringIO()))
    for done in (8, 9, 10):
        lines.progress(done, 20, f"arms (a{done})")
    assert capsys.readouterr().err.splitlines() == ["  10/20 arms (a10) · 10 min in, about 50 min left"]  # 2 arms in 600 s, 10 left
