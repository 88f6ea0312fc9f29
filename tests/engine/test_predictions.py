"""eval.predictions: prediction files, generation metrics in results.json and the tables, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tsr.config import load_config
from tsr.engine.predict import prompt_ids
from tsr.runs.results import Results, load_results
from tsr.engine.run import execute
from tsr.runs.text_metrics import score

from conftest import run_interrupted

ON = ("eval.predictions=true", "eval.extra_tokens=3")


@pytest.fixture(scope="module")
def metric_stream(toy_stream) -> Path:
    """The toy tasks with a generation metric each: parity (classification), then copy scored by
    ROUGE-L, SARI and edit similarity (three names over the same files)."""
    path = toy_stream.parent / "metric-stream.yaml"
    rows = ["name: toy-metrics", "tasks:", "  - {name: parity, kind: classification, format: jsonl, "
            "train: parity/train.jsonl, test: parity/test.jsonl}"]
    for name, metric in (("copy", "rouge_l"), ("recopy", "sari"), ("code", "edit_sim")):
        rows.append(f"  - {{name: {name}, kind: generation, metric: {metric}, format: jsonl, "
                    "train: copy/train.jsonl, test: copy/test.jsonl}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def config(make_config, metric_stream):
    def make(*overrides):
        return make_config(f"stream.source={metric_stream}", "stream.test_cap=6", "method.name=seqft", *overrides)
    return make


def read_folder(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_predictions_are_the_learners_greedy_answers(config):
    from safetensors.torch import load_file

    from tsr.engine.run import prepare

    outcome = execute(config(*ON, "name=pred"))
    root = outcome.run.path / "predictions"
    # eval.schedule=metrics: the task just learnt after each task, every task after the last
    assert sorted(p.name for p in root.iterdir()) == ["after-00-parity", "after-01-copy", "after-02-recopy",
                                                      "after-03-code"]
    assert sorted(p.name for p in (root / "after-01-copy").iterdir()) == ["01-copy.jsonl"]
    last = root / "after-03-code"
    assert sorted(p.name for p in last.iterdir()) == ["00-parity.jsonl", "01-copy.jsonl", "02-recopy.jsonl",
                                                      "03-code.jsonl"]
    plan, _ = prepare(config(*ON, "name=pred"))
    learner = plan.learner
    learner.adapter.load(load_file(str(outcome.run.path / "checkpoint" / "adapter.safetensors")))
    results = outcome.results
    for t, task in enumerate(plan.stream):
        rows = [json.loads(line) for line in (last / f"0{t}-{task.name}.jsonl").read_text().splitlines()]
        assert [r["index"] for r in rows] == list(range(6))
        values = []
        for row, example, enc in zip(rows, task.test, plan.tests[t]):
            prompt = prompt_ids(enc, learner.encoder.max_length, learner.encoder.eos_id)
            tokens = learner.greedy(prompt, len(enc.answer_ids) + 3)
            stopped = tokens[-1] == learner.encoder.eos_id
            assert row["prompt"] == example.prompt and row["answer"] == example.answer
            assert row["prediction"] == learner.tokenizer.decode(tokens[:-1] if stopped else tokens)
            assert row["stop"] == ("eos" if stopped else "length")
            assert row["correct"] == (tokens == list(enc.answer_ids))  # teacher-forced = greedy exact match
            if task.metric:
                assert row[task.metric] == score(task.metric, example.prompt, example.answer, row["prediction"])
                values.append(row[task.metric])
            else:
                assert set(row) == {"index", "prompt", "answer", "prediction", "stop", "correct", "loss"}
        assert results.acc[3][t] == sum(r["correct"] for r in rows) / 6
        assert results.gen[3][t] == (pytest.approx(sum(values) / 6) if task.metric else None)
    # the copy task's answers are long enough for the metrics to tell predictions apart
    assert any(0 < v < 1 for row in rows for v in [row["edit_sim"]])


def test_results_carry_the_generation_matrices_and_metrics(config, capsys):
    from tsr.interface.cli import main

    outcome = execute(config(*ON, "name=gen", "log.tensorboard=true"))
    data = json.loads((outcome.run.path / "results.json").read_text())
    log = [json.loads(line) for line in (outcome.run.path / "progress.jsonl").read_text().splitlines()]
    assert [e["gen"] for e in log if e["event"] == "task_end"] == data["gen"]
    board = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator").EventAccumulator(
        str(outcome.run.path / "tensorboard"))
    board.Reload()
    assert [e.value for e in board.Scalars("sari/recopy")] == pytest.approx([data["gen"][2][2], data["gen"][3][2]])
    assert "rouge_l/parity" not in board.Tags()["scalars"]
    assert data["gen_metrics"] == [None, "rouge_l", "sari", "edit_sim"]
    gen, acc = data["gen"], data["acc"]
    assert len(gen) == 4
    for after in range(4):
        for on in range(4):
            assert (gen[after][on] is not None) == (acc[after][on] is not None and on > 0)
    for name, on in (("rouge_l", 1), ("sari", 2), ("edit_sim", 3)):
        assert data["metrics"][f"overall_{name}"] == gen[3][on]
        assert data["metrics"][f"plas_{name}"] == gen[on][on]
        assert data["metrics"][f"bwt_{name}"] == (gen[3][on] - gen[on][on] if on < 3 else None)  # over no task: null
    assert data["metrics"]["overall"] == acc[3][0]  # the accuracy metrics as before
    # recomputed from the matrices alone
    again = Results.from_dict(json.loads(json.dumps(data)))
    assert again.gen == gen and again.gen_metrics == data["gen_metrics"]
    assert again.metrics() == data["metrics"]  # None where results.json has null
    # the tables: --gen adds the metrics that some run has; without it the columns are as before
    assert main(["table", str(outcome.run.path), "--format", "csv", "--gen"]) == 0
    lines = capsys.readouterr().out.splitlines()
    metrics = [line.split(",")[2] for line in lines[1:]]
    assert metrics == ["overall", "plas", "bwt", "overall_rouge_l", "plas_rouge_l", "bwt_rouge_l",
                       "overall_edit_sim", "plas_edit_sim", "bwt_edit_sim", "overall_sari", "plas_sari", "bwt_sari"]
    row = {line.split(",")[2]: float(line.split(",")[3]) for line in lines[1:]}
    assert row["plas_sari"] == pytest.approx(gen[2][2], abs=1e-6)
    assert row["bwt_rouge_l"] == pytest.approx(gen[3][1] - gen[1][1], abs=1e-6)
    # a folder of runs is read through its results store, where a NaN metric (bwt_edit_sim: the
    # last task is the only one scored by it) is null: the same table
    assert main(["table", str(outcome.run.path.parent), "--format", "csv", "--gen"]) == 0
    assert capsys.readouterr().out.splitlines() == lines
    assert main(["table", str(outcome.run.path), "--format", "csv"]) == 0
    assert [line.split(",")[2] for line in capsys.readouterr().out.splitlines()[1:]] == ["overall", "plas", "bwt"]
    assert main(["table", str(outcome.run.path), "--format", "md", "--gen", "--loss"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "plas_loss" in header and header.index("bwt_loss") < header.index("overall_rouge_l")
    assert main(["show", str(outcome.run.path)]) == 0
    shown = capsys.readouterr().out
    assert "ROUGE-L" in shown and "SARI" in shown and "edit similarity" in shown


def test_without_predictions_nothing_changes(config, make_config):
    outcome = execute(config("name=plain"))
    assert not (outcome.run.path / "predictions").exists()
    data = json.loads((outcome.run.path / "results.json").read_text())
    assert "gen" not in data and "gen_metrics" not in data and not any("rouge" in k for k in data["metrics"])
    # the key leaves the fingerprint of runs without predictions as it was; turning it on names another run
    plain = make_config().fingerprint()
    assert make_config("eval.predictions=false", "eval.extra_tokens=5").fingerprint() == plain
    assert make_config("eval.predictions=true").fingerprint() != plain
    assert make_config(*ON).fingerprint() != make_config("eval.predictions=true").fingerprint()


def test_resumed_run_writes_the_same_prediction_files(config, monkeypatch):
    full = execute(config(*ON, "eval.all_tasks=true", "name=full"))
    cfg = config(*ON, "eval.all_tasks=true", "name=cut")
    assert run_interrupted(monkeypatch, cfg, 2) == 2
    folder = Path(cfg.out_dir) / "cut" / "predictions"
    assert sorted(p.name for p in folder.iterdir()) == ["after-00-parity", "after-01-copy", "zero-shot"]
    # a kill between writing the round's predictions and the checkpoint: the round is redone
    (folder / "after-02-recopy").mkdir()
    (folder / "after-02-recopy" / "02-recopy.jsonl").write_text("stale\n")
    (folder / ".after-02-recopy.abc.tmp").mkdir()  # and a half-built folder
    resumed = execute(cfg)
    assert resumed.resumed_from == 2
    assert read_folder(full.run.path / "predictions") == read_folder(resumed.run.path / "predictions")
    assert load_results(full.run.path).to_dict() == load_results(resumed.run.path).to_dict()
    assert json.loads((full.run.path / "results.json").read_text())["zero_shot"]["gen"][0] is None


def test_the_prompt_a_prediction_continues():
    from tsr.data.collate import Encoded

    enc = Encoded((5, 6, 7), (8, 2))
    assert prompt_ids(enc, 10, 2) == [5, 6, 7]
    assert prompt_ids(enc, 3, 2) == [7]              # cut from the left as the teacher-forced pass is
    assert prompt_ids(enc, 2, 2) == [7]              # no room left: the prompt's last token
    assert prompt_ids(Encoded((), (8, 2)), 4, 2) == [2]  # no prompt: EOS as a start token


def test_eval_extra_tokens_is_checked():
    from tsr.errors import ConfigError

    with pytest.raises(ConfigError, match=r"eval\.extra_tokens.*>= 0"):
        load_config("paper", ["eval.extra_tokens=-1"])
