import json
import subprocess
import sys

import pytest

from conftest import interrupting
from tsr.engine.machine import cpu_model
from tsr.errors import TsrError
from tsr.interface.cli import _parse, build_parser, main


def small(tiny_model, toy_stream, out, *extra):
    return [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={out}", "train.steps=4",
            "stream.budget=8", "stream.test_cap=6", "stream.max_length=48", "model.threads=1", *extra]


def test_run_prints_results_and_saves(tiny_model, toy_stream, tmp_path, capsys):
    code = main(["run", "paper", *small(tiny_model, toy_stream, tmp_path, "method.name=er", "name=r1"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "parity" in out and "Overall" in out and "saved to" in out
    assert (tmp_path / "r1" / "results.json").is_file()
    # the same command again reports the finished run instead of retraining
    assert main(["run", "paper", *small(tiny_model, toy_stream, tmp_path, "method.name=er", "name=r1"), "--quiet"]) == 0
    assert "already finished" in " ".join(capsys.readouterr().out.split())


def test_a_run_resumed_within_a_task_says_so(tiny_model, toy_stream, tmp_path, capsys, monkeypatch):
    args = ["run", "paper", *small(tiny_model, toy_stream, tmp_path, "method.name=er", "name=r2", "log.every=2",
                                   "train.checkpoint_minutes=1e-9")]
    with interrupting(monkeypatch, 1, 3):  # progress of task 1 saved at step 2
        assert main(args) == 130
    assert "run the same command again to resume" in capsys.readouterr().err
    main(["table", str(tmp_path), "--format", "md"])  # a grid in progress lists how far the run got
    assert "1 tasks finished, task 2 saved at step 2" in " ".join(capsys.readouterr().err.split())
    assert main(["show", str(tmp_path / "r2")]) == 0
    assert "task 2 (vowel) in progress: saved at step 2" in " ".join(capsys.readouterr().out.split())
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "resumed after task 1" in " ".join(captured.out.split())
    assert "resuming at step 2/4 (saved progress)" in " ".join(captured.err.split())  # the progress reporter


def test_a_grid_says_which_task_went_on_from_saved_progress(tiny_model, toy_stream, tmp_path, capsys, monkeypatch):
    args = ["compare", "paper", "--methods", "er", "--seeds", "0", "--workers", "1",
            *small(tiny_model, toy_stream, tmp_path, "log.every=2", "train.checkpoint_minutes=1e-9")]
    with interrupting(monkeypatch, 1, 3):  # progress of task 2 saved at step 2
        assert main(args) == 130
    capsys.readouterr()
    assert main(args) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().err.splitlines() if "seed 0: task" in line]
    assert [line.split("(")[0] for line in lines] == ["er seed 0: task 2/3 vowel ", "er seed 0: task 3/3 copy "]
    assert lines[0].endswith(", resumed at step 2)") and "resumed" not in lines[1]


def test_compare_against_a_method_of_its_grid(tiny_model, toy_stream, tmp_path, capsys):
    grid = ["compare", "paper", *small(tiny_model, toy_stream, tmp_path / "runs"), "--methods", "seqft,er",
            "--seeds", "0", "--workers", "1"]
    assert main([*grid, "--against", "tsr"]) == 2  # refused before anything runs
    err = capsys.readouterr().err.strip()
    assert err.endswith("--against tsr: not a method of this grid (seqft, er)") and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists()
    assert main([*grid, "--against", "seqft", "--md", str(tmp_path / "t.md")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    overall = {m: json.loads(next((tmp_path / "runs").glob(f"toy-{m}-s0-*/results.json")).read_text())["metrics"]
               ["overall"] for m in ("seqft", "er")}
    assert "paired by seed, method − seqft" in out
    md = (tmp_path / "t.md").read_text()
    row = next(line for line in md.split("paired by seed")[1].splitlines() if line.startswith("| er"))
    diff = overall["er"] - overall["seqft"]
    assert row.split(" | ")[1] == f"{diff if round(diff, 3) else 0.0:+.3f}"  # one seed: no standard error
    assert row.endswith(f" | {int(diff > 0)} of 1 |")
    assert main([*grid, "--report-only", "--against", "er"]) == 0
    assert "paired by seed, method − er" in " ".join(capsys.readouterr().out.split())


def test_table_and_show(tiny_model, toy_stream, tmp_path, capsys):
    for method in ("seqft", "tsr"):
        for seed in (0, 1):
            assert main(["run", "paper", *small(tiny_model, toy_stream, tmp_path, f"method.name={method}",
                                                f"seed={seed}"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["table", str(tmp_path), "--format", "md"]) == 0
    md = capsys.readouterr().out
    lines = [l for l in md.splitlines() if l.startswith("| ")]
    assert lines[1].startswith("| seqft") and lines[2].startswith("| tsr")  # paper's row order
    assert "±" in md
    assert lines[0].split(" | ")[1].endswith("seeds") and lines[1].split(" | ")[1] == "0,1"  # the seeds of a cell
    # one run: the mean alone (a spread of one value is not 0), and the seeds column names its seed
    assert main(["table", str(next(tmp_path.glob("toy-tsr-s0-*"))), "--format", "md"]) == 0
    row = [l for l in capsys.readouterr().out.splitlines() if l.startswith("| tsr")][0]
    assert "±" not in row and row.split(" | ")[1] == "0"
    # rows over different seeds are refused in one line, and shown, each with its seeds, when asked
    uneven = [str(next(tmp_path.glob(f"toy-{m}-s{s}-*"))) for m, s in (("tsr", 0), ("seqft", 0), ("seqft", 1))]
    assert main(["table", *uneven, "--format", "md"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cover different seeds (seqft: 0,1; tsr: 0)" in err
    assert "--uneven-seeds" in err and "Traceback" not in err
    assert main(["table", *uneven, "--format", "md", "--uneven-seeds"]) == 0
    out = capsys.readouterr()
    rows = {l.split(" | ")[0][2:]: l.split(" | ")[1] for l in out.out.splitlines() if l.startswith("| ")}
    assert rows["seqft"] == "0,1" and rows["tsr"] == "0" and "cells cover different seeds" in out.err
    assert main(["table", str(tmp_path), "--format", "csv"]) == 0
    csv = capsys.readouterr().out.splitlines()
    assert csv[0] == "setting,method,metric,mean,std,n,seeds" and csv[1].endswith(",2,0 1")
    # --against: each method minus the reference, paired by seed, from the runs' results.json
    overall = {(m, s): json.loads(next(tmp_path.glob(f"toy-{m}-s{s}-*/results.json")).read_text())["metrics"]["overall"]
               for m in ("seqft", "tsr") for s in (0, 1)}
    diffs = [overall["tsr", s] - overall["seqft", s] for s in (0, 1)]
    se = abs(diffs[0] - diffs[1]) / 2  # the sample std of two numbers over the square root of two
    assert main(["table", str(tmp_path), "--format", "md", "--against", "seqft"]) == 0
    md = capsys.readouterr().out
    row = next(line for line in md.split("paired by seed, method − seqft")[1].splitlines() if line.startswith("| tsr"))
    assert row.split(" | ")[1].startswith(f"{sum(diffs) / 2:+.3f} ± {se:.3f}")
    assert row.endswith(f" | {sum(d > 0 for d in diffs)} of 2 |")
    assert main(["table", str(tmp_path), "--against", "derpp"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("--against derpp: no finished run of that method among these (methods: seqft, tsr)")
    assert len(err.splitlines()) == 1
    assert main(["table", str(tmp_path), "--format", "latex", "--against", "seqft"]) == 2
    assert "--against prints with --format text or md" in capsys.readouterr().err
    assert main(["table", str(tmp_path), "--plot", str(tmp_path / "plots" / "table.png")]) == 0
    assert (tmp_path / "plots" / "table.png").stat().st_size > 10_000
    assert "figure written to" in capsys.readouterr().err
    run_dir = next(tmp_path.glob("toy-tsr-s0-*"))
    assert main(["show", str(run_dir)]) == 0
    shown = capsys.readouterr().out
    assert "stream metrics" in shown and f"made on {cpu_model()} (" in " ".join(shown.split())
    # runs made on more than one kind of machine are named under the table; one kind says nothing
    assert "kinds of machine" not in capsys.readouterr().err
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**meta, "machine": {**meta["machine"], "cpu": "Other CPU"}}))
    assert main(["table", str(tmp_path)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "made on 2 kinds of machine (" in err and "Other CPU (" in err and ": 1 run(s)" in err and ": 3 run(s)" in err
    assert main(["table", str(tmp_path), "--against", "seqft"]) == 0  # the pair that straddles the two is named
    assert ("1 pair(s) against seqft were made on two kinds of machine, so are two samples, not a pair: tsr seed 0"
            in " ".join(capsys.readouterr().err.split()))


@pytest.mark.parametrize("args,fragment", [
    (["run", "paper", "train.lrr=1"], "unknown config key 'train.lrr'"),
    (["run", "paper", "method.name=magic"], "unknown method 'magic'"),
    (["run", "nope"], "unknown preset 'nope'"),
    (["table", "/no/such/dir"], "not a run directory"),
])
def test_bad_input_is_one_line_and_exit_2(args, fragment, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_bad_stream_file_names_the_file_and_line(tmp_path, tiny_model, capsys):
    data = tmp_path / "t.jsonl"
    data.write_text('{"prompt": "a", "answer": "b"}\n{"prompt": "a" "answer": "b"}\n')
    spec = tmp_path / "s.yaml"
    spec.write_text(f"tasks:\n  - {{name: a, kind: classification, format: jsonl, train: {data}, test: {data}}}\n")
    assert main(["run", "paper", f"model.path={tiny_model}", f"stream.source={spec}", f"out_dir={tmp_path}/r"]) == 2
    err = capsys.readouterr().err
    assert "t.jsonl:2: malformed JSON line" in err
    assert not (tmp_path / "r").exists()


def test_bad_input_writes_nothing_into_an_existing_run(tiny_model, toy_stream, tmp_path, capsys):
    args = small(tiny_model, toy_stream, tmp_path, "name=keep")
    assert main(["run", "paper", *args, "--quiet"]) == 0
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "keep").rglob("*")}
    # an answer longer than max_length (refused: the paper preset's own default truncates it)
    assert main(["run", "paper", *args, "stream.max_length=3", "stream.truncate=refuse", "--quiet"]) == 2
    assert "max_length=3" in capsys.readouterr().err
    assert main(["run", "paper", *args, "train.steps=5", "--quiet"]) == 2  # another config, same name
    assert "different config" in capsys.readouterr().err
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "keep").rglob("*")}
    assert before == after


def test_every_command_has_help_with_an_example():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        assert "example" in sub.format_help(), name


def test_the_budget_audit_help_names_every_arm_it_accepts():
    """The --arms help is the list a user picks from: an arm the audit accepts but the help omits
    (pooled and init were, once) is an arm nobody runs."""
    from tsr.experiments.budget.plan import ARMS

    audit = build_parser()._subparsers._group_actions[0].choices["audit"]
    budget = audit._subparsers._group_actions[0].choices["budget"]
    arms_help = next(a.help for a in budget._actions if "--arms" in a.option_strings)
    assert all(arm in arms_help for arm in ARMS), arms_help


def test_config_items_may_sit_between_and_after_options(capsys):
    """`tsr probe key=v --arms x key2=w`: every item is kept in order (argparse alone refused the
    second run of items), and an unknown option is still refused."""
    args = _parse(build_parser(), ["probe", "a=1", "--arms", "target", "--signatures", "all", "b=2", "c=3"])
    assert args.items == ["a=1", "b=2", "c=3"] and args.arms == "target" and args.signatures == "all"
    with pytest.raises(TsrError, match="^unrecognized arguments: --bogus b=2$"):  # main() prints it as one line
        _parse(build_parser(), ["probe", "a=1", "--arms", "target", "--bogus", "b=2"])


@pytest.mark.slow
def test_console_script_exits_cleanly_on_bad_input():
    proc = subprocess.run([sys.executable, "-m", "tsr", "run", "paper", "stream.budget=-1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "stream.budget" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("method,extra,fragment", [
    ("er", [], "stream.replay_per_task"),
    ("tsr", [], "stream.replay_per_task"),
    ("param_init", ["method.source=nowhere"], "no task named 'nowhere'"),
])
def test_stream_dependent_settings_fail_before_anything_is_written(tiny_model, toy_stream, tmp_path, capsys,
                                                                    method, extra, fragment):
    args = small(tiny_model, toy_stream, tmp_path, f"method.name={method}", *extra, "name=never")
    if not extra:
        args.append("stream.replay_per_task=0")
    assert main(["run", "paper", *args, "--quiet"]) == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_compare_runs_a_grid_and_reuses_finished_runs(tiny_model, toy_stream, tmp_path, capsys):
    args = ["compare", "paper", *small(tiny_model, toy_stream, tmp_path), "--methods", "seqft,er", "--seeds", "0,1",
            "--workers", "1", "--md", str(tmp_path / "t.md")]
    assert main(args) == 0
    err = capsys.readouterr().err
    for method in ("seqft", "er"):  # every finished task is reported as it happens, then the run
        assert all(f"{method} seed {s}: task {i}/3" in err for s in (0, 1) for i in (1, 2, 3))
    assert err.index("seqft seed 0: task 3/3") < err.index("[1/4] seqft seed 0")
    table = (tmp_path / "t.md").read_text()
    assert "| seqft" in table and "| er" in table
    runs = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert len(runs) == 4
    stamps = {p: (p / "results.json").stat().st_mtime_ns for p in runs}
    assert main(args) == 0  # nothing is retrained
    assert stamps == {p: (p / "results.json").stat().st_mtime_ns for p in runs}
    assert main(["compare", "paper", "--methods", "seqft,nope"]) == 2


def test_compare_applies_method_overrides_to_every_method(tiny_model, toy_stream, tmp_path, capsys):
    """`tsr compare --methods er,tsr method.alpha=0.25`: both runs train with alpha 0.25 (the
    override used to be reset by each point's method.name, silently); a method without that
    parameter runs as it is; a key no method of the grid has is one line, exit 2, before
    anything runs."""
    import yaml

    base = ["compare", "paper", *small(tiny_model, toy_stream, tmp_path), "--seeds", "0", "--workers", "1"]
    assert main([*base, "--methods", "er,tsr", "method.alpha=0.25"]) == 0
    runs = sorted(p for p in tmp_path.iterdir() if (p / "config.yaml").is_file())
    assert len(runs) == 2
    assert [yaml.safe_load((p / "config.yaml").read_text())["method"]["alpha"] for p in runs] == [0.25, 0.25]
    capsys.readouterr()
    assert main([*base, "--methods", "er,seqft", "method.tau=0", "out_dir=" + str(tmp_path / "x")]) == 2
    assert "method.tau" in capsys.readouterr().err and not (tmp_path / "x").exists()
    plain = sorted(p.name for p in runs)
    assert main([*base, "--methods", "seqft,er", "method.alpha=0.25"]) == 0  # er's run is reused
    new = sorted(p.name for p in tmp_path.iterdir() if (p / "config.yaml").is_file() and p.name not in plain)
    assert len(new) == 1 and "seqft" in new[0]


def test_a_run_on_changed_data_is_refused_not_reported(tiny_model, tmp_path, capsys):
    """Same config, other examples: the finished run's results belong to the old data."""
    from toy import write_toy_stream

    stream = write_toy_stream(tmp_path / "data")
    args = small(tiny_model, stream, tmp_path, "name=d", "--quiet")
    assert main(["run", "paper", *args]) == 0
    assert main(["run", "paper", *args]) == 0  # unchanged data: reported from the saved run
    capsys.readouterr()
    test = tmp_path / "data" / "parity" / "test.jsonl"
    test.write_text(test.read_text().replace('"answer": " yes"', '"answer": " no"', 1))
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "d").rglob("*")}
    assert main(["run", "paper", *args]) == 2
    err = capsys.readouterr().err
    assert "other data" in err and "Traceback" not in err
    assert before == {p: p.stat().st_mtime_ns for p in (tmp_path / "d").rglob("*")}


def test_a_real_backbone_preset_never_falls_back_to_the_synthetic_stream(tmp_path, capsys):
    for preset in ("paper", "qwen2.5-0.5b", "llama3.2-1b"):
        assert main(["run", preset, "model.path=/models/x", f"out_dir={tmp_path}"]) == 2
        err = capsys.readouterr().err.strip()
        assert "'stream.root'" in err and "trace8" in err and len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("bad", ["stream.options.tasks=[stance]", "stream.order=[nope]"])
def test_config_refuses_what_run_refuses(bad, tmp_path, capsys):
    """`tsr config` runs the stream's own checks, so it never prints a config `tsr run` refuses."""
    assert main(["run", bad, f"out_dir={tmp_path}", "--quiet"]) == 2
    refused = capsys.readouterr().err.strip()
    assert main(["config", bad]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == refused and captured.out == ""


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", "a\\b"])
def test_a_run_name_that_would_leave_out_dir_is_refused(name, tiny_model, toy_stream, tmp_path, capsys):
    out = tmp_path / "deep" / "runs"
    args = small(tiny_model, toy_stream, out, f"name={name}")
    assert main(["run", "paper", *args, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "config key 'name'" in err and len(err.splitlines()) == 1
    assert [p for p in tmp_path.rglob("*")] == []


@pytest.mark.parametrize("where", ["task", "stream"])
def test_a_stream_file_name_that_would_leave_out_dir_is_refused(where, tiny_model, toy_stream, tmp_path, capsys):
    data = tmp_path / "t.jsonl"
    data.write_text('{"prompt": "a", "answer": "b"}\n')
    task = "../../escaped" if where == "task" else "fine"
    stream = "../../escaped" if where == "stream" else "s"
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: {stream}\ntasks:\n  - {{name: '{task}', kind: generation, format: jsonl, "
                    f"train: {data}, test: {data}}}\n")
    out = tmp_path / "a" / "b"
    assert main(["run", "paper", f"model.path={tiny_model}", f"stream.source={spec}", f"out_dir={out}"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{spec}" in err and f"{where} name" in err and "path separator" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "a").exists() and not (tmp_path / "escaped").exists()


def test_version(capsys):
    from tsr import __version__

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"tsr {__version__}"


def test_table_never_averages_runs_of_different_configs_and_lists_unfinished_ones(
        tiny_model, toy_stream, tmp_path, capsys, monkeypatch):
    from conftest import run_interrupted
    from tsr.config import load_config

    base = small(tiny_model, toy_stream, tmp_path, "method.name=ewc")
    for extra in (["seed=0"], ["seed=1"], ["seed=0", "train.steps=5"], ["seed=0", "method.lam=3"]):
        assert main(["run", "paper", *base, *extra, "--quiet"]) == 0
    run_interrupted(monkeypatch, load_config("paper", [*base, "seed=2", "name=half"]), 1)  # a grid in progress
    # a run saved before eval.predictions and eval.extra_tokens existed (its config.yaml lacks
    # them) is the same setting as one saved with them off: it shares the cell
    assert main(["run", "paper", *base, "seed=3", "name=older", "--quiet"]) == 0
    saved = tmp_path / "older" / "config.yaml"
    text = saved.read_text()
    assert "predictions: false" in text and "extra_tokens:" in text
    saved.write_text("".join(line for line in text.splitlines(keepends=True)
                             if not line.strip().startswith(("predictions:", "extra_tokens:"))))
    capsys.readouterr()
    assert main(["table", str(tmp_path), "--format", "csv"]) == 2  # lam=100 has seeds 0,1,3, lam=3 seed 0
    assert "ewc (lam=100.0): 0,1,3; ewc (lam=3.0): 0" in capsys.readouterr().err
    assert main(["table", str(tmp_path), "--format", "csv", "--uneven-seeds"]) == 0
    captured = capsys.readouterr()
    rows = [line.split(",") for line in captured.out.splitlines()[1:] if ",overall," in line]
    cells = {(setting.rsplit(" · ", 1)[1], method): (int(n), seeds) for setting, method, _, _, _, n, seeds in rows}
    # the seeds of one config share a cell; another step count or lam gets its own
    assert cells == {("train.steps=4", "ewc (lam=100.0)"): (3, "0 1 3"), ("train.steps=5", "ewc (lam=100.0)"): (1, "0"),
                     ("train.steps=4", "ewc (lam=3.0)"): (1, "0")}
    assert "1 unfinished run(s)" in captured.err and "half" in captured.err and "1 tasks finished" in captured.err


def test_a_grid_with_nothing_finished_lists_its_runs_in_progress(tiny_model, toy_stream, tmp_path, capsys,
                                                                monkeypatch):
    """Before any run of a grid has finished, `tsr table` prints no empty table, and `compare
    --report-only` and an audit's --report-only say how far each started run got before their
    one-line error (TSR's default run is the era row of `tsr audit kd`)."""
    from tsr.engine import loop

    grid = ["compare", *small(tiny_model, toy_stream, tmp_path / "runs"), "--methods", "tsr", "--seeds", "0",
            "--workers", "1"]
    original = loop.train_on

    def interrupt(*args, **kwargs):  # Ctrl-C as the second task starts
        if kwargs["index"] == 1:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(loop, "train_on", interrupt)
        assert main(grid) == 130
    (run,) = (tmp_path / "runs").glob("*tsr-s0-*")
    capsys.readouterr()
    assert main(["table", str(tmp_path / "runs")]) == 0
    out, err = capsys.readouterr()
    assert "no run has finished yet" in out and "method" not in out and "finished runs" not in out
    assert "1 unfinished run(s)" in err and f"{run}: tsr seed 0, 1 tasks finished" in err
    kd = ["audit", "kd", *grid[1:grid.index("--methods")], "--teachers", "era", "--seeds", "0"]
    for argv in ([*grid, "--report-only"], [*kd, "--report-only"]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines[-1].startswith("tsr: error: --report-only: no run of this grid has finished yet"), argv
        assert lines[:-1] == [f"  {run}: tsr seed 0, 1 tasks finished"] and "Traceback" not in err


def test_a_run_saved_before_a_method_key_existed_is_labelled_with_its_neutral_value(
        tiny_model, toy_stream, tmp_path, capsys):
    """TSR runs saved before method.kd_timing existed lack it in config.yaml; beside post-hoc runs
    a --vary table names them kd_timing=interleaved (the value they ran with), not kd_timing=-."""
    base = small(tiny_model, toy_stream, tmp_path)
    grid = ["compare", *base, "--methods", "tsr", "--seeds", "0", "--workers", "1",
            "--vary", "method.kd_timing=interleaved,posthoc"]
    assert main(grid) == 0
    older = [p for p in tmp_path.iterdir() if (p / "config.yaml").is_file()
             and "kd_timing: interleaved" in (p / "config.yaml").read_text()]
    assert len(older) == 1
    text = (older[0] / "config.yaml").read_text()
    (older[0] / "config.yaml").write_text("".join(line for line in text.splitlines(keepends=True)
                                                  if not line.strip().startswith(("kd_timing:", "kd_posthoc:"))))
    md = tmp_path / "t.md"
    assert main([*grid, "--report-only", "--md", str(md)]) == 0
    rows = [line.split(" | ")[0].lstrip("| ") for line in md.read_text().splitlines()[2:]]
    assert rows == ["tsr (kd_timing=interleaved)", "tsr (kd_timing=posthoc)"]


def test_show_prints_what_the_method_recorded(tiny_model, toy_stream, tmp_path, capsys):
    import json

    from tsr.engine.rundir import method_meta

    assert main(["run", "paper", *small(tiny_model, toy_stream, tmp_path, "method.name=agem", "name=a"),
                 "--quiet"]) == 0
    recorded = json.loads((tmp_path / "a" / "checkpoint" / "state.json").read_text())["method_meta"]
    steps = recorded["projected_steps"]
    assert method_meta(tmp_path / "a") == recorded and len(steps) == 3 and steps[0] == 0
    capsys.readouterr()
    assert main(["show", str(tmp_path / "a")]) == 0
    line = [l for l in capsys.readouterr().out.splitlines() if l.startswith("agem projected_steps: ")]
    assert line == ["agem projected_steps: " + " · ".join(str(n) for n in steps)]
    # a damaged checkpoint state costs the line, not the results
    (tmp_path / "a" / "checkpoint" / "state.json").write_text("{")
    assert method_meta(tmp_path / "a") == {}
    assert main(["show", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "stream metrics" in out and "projected_steps" not in out
