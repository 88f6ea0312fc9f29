"""The evaluation schedule: which seen tasks are scored after each task, and that the stream
metrics do not depend on it."""

import pytest

from tsr.config import load_config
from tsr.engine.evaluation import scored_tasks
from tsr.engine.run import execute
from tsr.errors import ConfigError


def scorings(k: int, schedule: str) -> int:
    period = load_config(None, [f"eval.schedule={schedule}"]).eval.period()
    return sum(len(scored_tasks(t, k, period)) for t in range(k))


def test_metrics_schedule_is_linear_in_the_stream_length():
    for k in (1, 8, 64):
        assert scorings(k, "metrics") == 2 * k - 1
        assert scorings(k, "full") == k * (k + 1) // 2
    # full rows after tasks 3, 6 and 8 (the last), the task just learnt after the others
    assert [len(scored_tasks(t, 8, 3)) for t in range(8)] == [1, 1, 3, 1, 1, 6, 1, 8]
    assert scored_tasks(2, 8, 0, all_tasks=True) == list(range(8))


@pytest.mark.parametrize("bad", ["every:0", "every:x", "sometimes", "every:"])
def test_a_bad_schedule_names_the_key(bad):
    with pytest.raises(ConfigError, match="eval.schedule"):
        load_config(None, [f"eval.schedule={bad}"])


def test_metrics_and_full_schedules_give_the_same_stream_metrics(make_config):
    full = execute(make_config("method.name=er", "eval.schedule=full", "name=full")).results
    lean = execute(make_config("method.name=er", "name=lean")).results  # the default: metrics
    assert make_config().eval.schedule == "metrics"
    assert lean.metrics() == full.metrics()
    k = len(full.tasks)
    for t in range(k):
        for i in range(k):
            scored = i == t or t == k - 1
            for ours, theirs in ((lean.acc, full.acc), (lean.loss, full.loss)):
                assert ours[t][i] == (theirs[t][i] if scored else None)
    assert any(full.acc[t][i] is not None for t in range(k - 1) for i in range(t))  # full has more


@pytest.mark.slow
def test_a_64_task_stream_runs_end_to_end_with_linear_evaluation(make_config, toy_stream):
    """A long stream (the toy tasks repeated under new names) runs through TSR, routing over
    up to 63 past tasks, and scores 2K - 1 test sets; bench/long_stream.py times it."""
    import yaml

    spec = yaml.safe_load(toy_stream.read_text())
    k = 64
    tasks = []
    for i in range(k):
        entry = dict(spec["tasks"][i % len(spec["tasks"])])
        for key in ("train", "test"):
            entry[key] = str(toy_stream.parent / entry[key])
        entry["name"] = f"{entry['name']}-{i}"
        tasks.append(entry)
    long = toy_stream.parent / "long.yaml"
    long.write_text(yaml.safe_dump({"name": "long", "tasks": tasks}))
    out = execute(make_config(f"stream.source={long}", "method.name=tsr", "train.steps=1", "method.probe_batches=1",
                              "stream.test_cap=2", "stream.budget=4", "stream.replay_per_task=2", "name=long"))
    results = out.results
    assert results.finished and len(results.tasks) == k
    scored = sum(v is not None for row in results.acc for v in row)
    assert scored == 2 * k - 1
    weights = [info.get("weights", {}) for info in results.task_info]
    assert len(weights[-1]) == k - 1 and abs(sum(weights[-1].values()) - 1) < 1e-5


def test_fwt_is_gems_forward_transfer_from_the_zero_shot_row():
    from tsr.runs.metrics import fwt

    acc = [[0.5, 0.4, 0.1], [0.3, 0.9, 0.6], [0.2, 0.7, 0.8]]
    zero = [0.2, 0.3, 0.5]
    assert fwt(acc, zero, [0, 1, 2]) == pytest.approx(((0.4 - 0.3) + (0.6 - 0.5)) / 2)
    assert fwt(acc, zero, [0, 2]) == pytest.approx(0.6 - 0.5)  # the tasks given only
    assert fwt([[0.5, None], [0.3, 0.9]], zero, [0, 1]) is None  # task 2 not scored before it was learnt


def test_a_run_with_all_tasks_reports_fwt_and_a_plain_run_does_not(make_config):
    plain = execute(make_config("method.name=er", "name=plain")).results
    assert "fwt" not in plain.metrics() and "fwt" not in plain.to_dict()["metrics"]
    every = execute(make_config("method.name=er", "eval.all_tasks=true", "name=every")).results
    m, zero = every.metrics(), every.zero_shot
    cls = [i for i, k in enumerate(every.kinds) if k == "classification"]
    want = [every.acc[i - 1][i] - zero["acc"][i] for i in cls if i >= 1]
    assert m["fwt"] == pytest.approx(sum(want) / len(want))
