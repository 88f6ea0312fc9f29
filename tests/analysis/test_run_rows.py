"""`tsr table --runs`: one row per run, with the kept share, the machine and what the log says
the run cost."""

import json

import pytest

from tsr.analysis.run_rows import markdown_rows, run_cost, run_rows
from tsr.analysis.table import summaries
from tsr.interface.cli import main
from tsr.runs.metrics import kept
from tsr.runs.results import Results

XEON = {"cpu": "Intel Xeon", "cpu_capability": "AVX512", "torch": "2.13.0+cpu", "threads": 1}


def test_kept_is_the_mean_ratio_of_the_end_to_right_after_learning_over_the_tasks_before_the_last():
    acc = [[0.8, None, None], [0.4, 0.5, None], [0.2, 0.5, 0.9]]
    assert kept(acc, [0, 1, 2]) == pytest.approx((0.2 / 0.8 + 0.5 / 0.5) / 2)
    assert kept(acc, [1]) == pytest.approx(1.0)
    # a task at 0 right after learning it has no share; a one-task stream has nothing kept
    assert kept([[0.0, None], [0.3, 0.6]], [0, 1]) is None
    assert kept([[0.7]], [0]) is None


def write_run(path, method, seed, acc, events, machine=XEON):
    path.mkdir(parents=True)
    res = Results(["a", "b", "c"], ["classification", "classification", "generation"], method, seed)
    for row in acc:
        res.acc.append(row)
        res.loss.append([0.1 if x is not None else None for x in row])
        res.task_info.append({})
    (path / "results.json").write_text(json.dumps(res.to_dict()))
    (path / "run.json").write_text(json.dumps({"fingerprint": "x", "seed": seed, "machine": machine}))
    (path / "progress.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


ACC = [[0.8, None, None], [0.4, 0.5, None], [0.2, 0.5, 0.9]]  # task c is generation: not in kept


def events(t0, *extra):
    return [{"time": t0, "event": "run_start"}, {"time": t0 + 60, "event": "task_end", "peak_rss_mb": 900.0},
            *extra, {"time": t0 + 300, "event": "task_end", "peak_rss_mb": 1400.0},
            {"time": t0 + 360, "event": "run_end"}]


def test_a_run_in_one_process_has_its_wall_time_and_largest_peak_memory(tmp_path):
    run = write_run(tmp_path / "r", "er", 0, ACC, events(1000.0))
    assert run_cost(run) == (360.0, 1400.0)
    # resumed in a second process: the gap between them is not the run's, so no wall time
    resumed = write_run(tmp_path / "q", "er", 1, ACC, events(1000.0, {"time": 2000.0, "event": "resume"}))
    assert run_cost(resumed) == (None, 1400.0)
    (run / "progress.jsonl").write_text('{"time": 5, "event": "run_start"}\nnot json\n')
    assert run_cost(run) == (None, None)
    assert run_cost(tmp_path / "absent") == (None, None)


def test_rows_come_in_the_papers_method_order_then_by_seed_with_the_machine_each_ran_on(tmp_path):
    write_run(tmp_path / "tsr1", "tsr", 1, ACC, events(0.0))
    write_run(tmp_path / "tsr0", "tsr", 0, ACC, events(0.0, {"time": 9.0, "event": "resume"}), machine=XEON | {"cpu": "AMD EPYC"})
    write_run(tmp_path / "seqft0", "seqft", 0, ACC, events(0.0))
    write_run(tmp_path / "half", "er", 0, ACC[:2], events(0.0))  # unfinished: no row
    rows = run_rows(summaries([tmp_path]))
    assert [(r.method, r.seed, r.machine) for r in rows] == [("seqft", 0, "Intel Xeon AVX512, 1 thread"),
                                                             ("tsr", 0, "AMD EPYC AVX512, 1 thread"),
                                                             ("tsr", 1, "Intel Xeon AVX512, 1 thread")]
    assert rows[0].kept == pytest.approx(0.625) and rows[0].metrics["overall"] == pytest.approx(0.35)
    md = markdown_rows(rows).splitlines()
    assert md[2].endswith("| seqft | 0 | Intel Xeon AVX512, 1 thread | 0.350 | 0.650 | -0.300 | 0.62 | 6 min | 1.40 GB |")
    assert md[3].endswith("| 0.62 | - | 1.40 GB |")  # the resumed run has no wall time


def test_the_command_prints_the_rows_and_refuses_what_it_cannot_print(tmp_path, capsys):
    write_run(tmp_path / "r", "er", 0, ACC, events(0.0))
    assert main(["table", str(tmp_path), "--runs", "--format", "md"]) == 0
    assert "| er | 0 | Intel Xeon AVX512, 1 thread | 0.350 |" in capsys.readouterr().out
    assert main(["table", str(tmp_path), "--runs", "--format", "csv"]) == 2
    assert main(["table", str(tmp_path), "--runs", "--against", "er"]) == 2
    assert "--runs prints with --format text or md" in capsys.readouterr().err


def test_retention_is_overall_over_plas_per_run_then_averaged_over_the_seeds(tmp_path, capsys):
    from tsr.analysis.table import aggregate, with_retention

    write_run(tmp_path / "a", "seqft", 0, ACC, events(0.0))  # Overall 0.35, Plas 0.65
    write_run(tmp_path / "b", "seqft", 1, [[0.6, None, None], [0.3, 0.4, None], [0.3, 0.2, 0.9]], events(0.0))
    runs = with_retention(summaries([tmp_path]))
    got = sorted(s.metrics["retention"] for s in runs)
    assert got == pytest.approx(sorted([0.35 / 0.65, 0.25 / 0.5]))
    cells, settings, methods = aggregate(runs, ("overall", "plas", "retention"))
    mean = cells[settings[0]]["seqft"]["retention"][0]
    assert mean == pytest.approx((0.35 / 0.65 + 0.5) / 2)  # the mean of the ratios, not the ratio of the means
    zero = write_run(tmp_path / "z" / "c", "er", 0, [[0.0, None, None], [0.0, 0.0, None], [0.0, 0.0, 0.9]], events(0.0))
    assert with_retention(summaries([zero]))[0].metrics["retention"] is None
    assert main(["table", str(tmp_path / "a"), str(tmp_path / "b"), "--retention", "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "retention" in out.splitlines()[0] and f"{(0.35 / 0.65 + 0.5) / 2:.3f} ± " in out
