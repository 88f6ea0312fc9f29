"""`tsr run` speaks before anything slow: the run as configured before the model loads, the
loaded model and adapter with the run folder before training, and each task's header before
its method prepares it (TSR's signature probe)."""

from __future__ import annotations

from tsr.engine import loop
from tsr.interface.cli import main


def base(tiny_model, toy_stream, tmp_path) -> list[str]:
    return ["run", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path}",
            "train.steps=2", "stream.budget=6", "stream.replay_per_task=4", "stream.test_cap=4",
            "stream.max_length=48", "model.threads=1", "stream.order=[parity,vowel]", "name=b"]


def test_the_banner_comes_first_and_names_model_device_dtype_adapter_and_folder(tiny_model, toy_stream,
                                                                                 tmp_path, capsys, monkeypatch):
    heard = []
    original = loop.train_on
    monkeypatch.setattr(loop, "train_on", lambda *a, **kw: heard.append(capsys.readouterr().err) or original(*a, **kw))
    assert main(base(tiny_model, toy_stream, tmp_path)) == 0
    before_first_task = heard[0].splitlines()
    assert before_first_task[0] == f"tsr: tsr on {toy_stream}, seed 0, 2 steps a task; model {tiny_model}: loading"
    model = before_first_task[1]
    assert "Qwen2ForCausalLM" in model and "parameters, cpu float32" in model
    assert "LoRA r=16 alpha=32 on k_proj, o_proj, q_proj, v_proj" in model and "trainable" in model
    assert model.endswith(f"run folder {tmp_path / 'b'}")
    # the task's header is out before its method prepares it (the routing line comes after)
    assert before_first_task[-1] == "task 1/2 parity (classification)"
    assert heard[1].splitlines()[-1] == "task 2/2 vowel (classification)"


def test_on_a_terminal_the_run_line_is_out_before_the_model_loads_and_in_a_log_an_error_stays_one_line(
        toy_stream, tmp_path, capsys):
    import io

    from rich.console import Console

    from tsr.config import load_config
    from tsr.interface.display import ConsoleReporter

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    argv = base(broken, toy_stream, tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("tsr: error:")  # off a terminal: the error alone
    screen = io.StringIO()
    cfg = load_config("paper", argv[2:])
    ConsoleReporter(Console(file=screen, force_terminal=True, width=200)).run_begin(cfg)
    assert screen.getvalue().strip().endswith(f"model {broken}: loading")


def test_off_a_terminal_every_line_is_one_record_however_long(capsys):
    from types import SimpleNamespace

    from tsr.interface.console import plain_console
    from tsr.interface.display import ConsoleReporter

    reporter = ConsoleReporter()  # stderr is captured: not a terminal
    assert not reporter.console.is_terminal
    names = [f"a-rather-long-task-name-{i}" for i in range(8)]
    plan = SimpleNamespace(stream=[SimpleNamespace(name=n) for n in names], cfg=SimpleNamespace(train=SimpleNamespace(steps=5)))
    reporter.task_start(7, plan, {"weights": {n: 1 / 7 for n in names[:7]}, "top": names[0], "resume_step": 3})
    reporter.progress.stop()
    plain_console(stderr=True).print("x" * 300)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and len(lines[0]) > 200 and lines[0].startswith("  routing: ")
    assert lines[0].endswith(f"top source: {names[0]}") and lines[1].startswith("  resuming at step 3/5")
    assert lines[2] == "x" * 300
