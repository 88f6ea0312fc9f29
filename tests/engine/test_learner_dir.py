"""The persistent learner: `tsr learn` one task at a time equals a stream run; `tsr predict`."""

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from tsr.config import load_config
from tsr.engine.answer_file import predict
from tsr.engine.learner_dir import infer_kind, learn
from tsr.engine.run import execute
from tsr.runs.text_metrics import score

from badinputs import jsonl, refuse, write

TASKS = [("parity", "classification"), ("vowel", "classification"), ("copy", "generation")]


def settings(tiny_model):
    return [f"model.path={tiny_model}", "model.compile=false", "model.threads=1", "train.steps=6", "train.lr=3e-3",
            "stream.budget=10", "stream.replay_per_task=6", "stream.test_cap=8", "stream.max_length=48",
            "method.probe_batches=2"]


@pytest.fixture(scope="module")
def taught(tiny_model, toy_stream, tmp_path_factory):
    """A learner taught the toy stream's three tasks one call at a time, and the stream run."""
    root = tmp_path_factory.mktemp("learner")
    data = toy_stream.parent
    for name, kind in TASKS:
        learn(root / "learner", data / name, name=name, kind=kind, overrides=settings(tiny_model))
    stream = execute(load_config(None, [*settings(tiny_model), f"stream.source={toy_stream}",
                                         f"out_dir={root / 'runs'}"]))
    return root / "learner", stream


def test_a_learner_taught_task_by_task_equals_the_stream_run(taught):
    folder, stream = taught
    mine = json.loads((folder / "run" / "results.json").read_text())
    theirs = json.loads((stream.run.path / "results.json").read_text())
    assert mine["tasks"] == theirs["tasks"] == [n for n, _ in TASKS]
    a = load_file(str(folder / "run" / "checkpoint" / "adapter.safetensors"))
    b = load_file(str(stream.run.path / "checkpoint" / "adapter.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert mine["task_info"] == theirs["task_info"]  # the same routing at every task
    assert mine["acc"][-1] == theirs["acc"][-1] and mine["loss"][-1] == theirs["loss"][-1]
    assert mine["metrics"] == theirs["metrics"]
    for t in range(3):  # the diagonal too; the learner also scored every task after every call
        assert mine["acc"][t][t] == theirs["acc"][t][t]
    assert mine["acc"][1][0] is not None and theirs["acc"][1][0] is None
    for t, (name, _) in enumerate(TASKS):  # each snapshot of the task memory
        snap = f"memory/{t:02d}-{name}/snapshot.safetensors"
        x, y = load_file(str(folder / "run" / snap)), load_file(str(stream.run.path / snap))
        assert all(torch.equal(x[k], y[k]) for k in x)


def test_predict_answers_with_the_current_adapter(taught, tmp_path):
    folder, _ = taught
    inputs = write(tmp_path / "in.jsonl", jsonl([{"prompt": "Is 12 even? Answer:", "answer": " yes"},
                                                 {"instruction": "Copy the word.", "input": "cat"},
                                                 {"messages": [{"role": "user", "content": "Hi"}]}]))
    answered = predict(folder, inputs, tmp_path / "out.jsonl", batch_size=2, max_new_tokens=6)
    assert (answered.count, answered.scored, answered.kind) == (3, 1, "generation")  # one answer: not labels
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r.get("answer") for r in rows] == [" yes", None, None]
    # the Alpaca prompt is longer than max_length=48 leaves a bare record (47 tokens): cut from the left
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert set(rows[1]) == {"index", "prompt", "input_cut", "prediction", "stop"} and rows[1]["input_cut"] > 0
    # the first answer is the learner's own greedy continuation, decoded
    from tsr.model.learner import build_learner

    learner = build_learner(load_config(str(folder / "learner.yaml"), []))
    learner.adapter.load(load_file(str(folder / "run" / "checkpoint" / "adapter.safetensors")))
    ids = learner.greedy(list(learner.encoder.encode(__import__("tsr").data.example.Example(
        "Is 12 even? Answer:", "")).prompt_ids), 6)
    eos = learner.encoder.eos_id
    assert rows[0]["prediction"] == learner.tokenizer.decode(ids[:-1] if ids[-1] == eos else ids,
                                                              skip_special_tokens=True)


@pytest.fixture(scope="module")
def scoring(tiny_model, toy_stream, tmp_path_factory):
    """A learner made with eval.predictions, taught parity (classification) then copy (generation):
    its run wrote predictions files after each call."""
    folder = tmp_path_factory.mktemp("scoring") / "learner"
    for name, kind in (("parity", "classification"), ("copy", "generation")):
        learn(folder, toy_stream.parent / name, name=name, kind=kind,
              overrides=[*settings(tiny_model), "eval.predictions=true", "eval.extra_tokens=3"])
    return folder


def first_tests(folder, t: int, name: str, tmp_path, n: int = 8):
    """The test records the learner's run scored for task ``t`` (its first ``stream.test_cap``)."""
    lines = (folder / "tasks" / f"{t + 1:02d}-{name}" / "test.jsonl").read_text().splitlines()[:n]
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_predict_writes_the_fields_of_the_runs_predictions_files(scoring, tmp_path):
    """Records with answers are scored as the run scored its test sets: every field of the run's
    predictions file, equal, plus each generation metric of the prediction for a generation task."""
    results = json.loads((scoring / "run" / "results.json").read_text())
    last = scoring / "run" / "predictions" / "after-01-copy"
    for t, (name, kind) in enumerate((("parity", "classification"), ("copy", "generation"))):
        theirs = [json.loads(line) for line in (last / f"0{t}-{name}.jsonl").read_text().splitlines()]
        answered = predict(scoring, first_tests(scoring, t, name, tmp_path), tmp_path / "out.jsonl")
        ours = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert len(ours) == len(theirs) == 8 and answered.kind == kind
        assert [{k: row[k] for k in mine} for row, mine in zip(ours, theirs)] == theirs
        extra = {"rouge_l", "edit_sim", "sari"} if kind == "generation" else set()
        assert all(set(row) == set(mine) | extra for row, mine in zip(ours, theirs))
        for row in ours:
            assert all(row[m] == score(m, row["prompt"], row["answer"], row["prediction"]) for m in extra)
        # the summary is the run's own cell of the results matrix, and the rows' means
        assert answered.accuracy == results["acc"][-1][t] == sum(r["correct"] for r in ours) / 8
        assert answered.loss == results["loss"][-1][t]
        assert answered.metrics == {m: pytest.approx(sum(r[m] for r in ours) / 8) for m in sorted(extra)}
    assert any(0 < row["edit_sim"] < 1 for row in ours)  # predictions the metric tells apart


@pytest.mark.slow
def test_predict_prints_the_summary_and_nothing_else(scoring, tmp_path):
    """stdout: the answers' count and the scores; stderr: nothing (no deprecation warning of
    transformers, which the KV cache's old argument name printed on every call)."""
    inputs = first_tests(scoring, 0, "parity", tmp_path)
    out = tmp_path / "answers.jsonl"
    proc = subprocess.run([sys.executable, "-m", "tsr", "predict", str(scoring), str(inputs), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    results = json.loads((scoring / "run" / "results.json").read_text())
    acc, loss = results["acc"][-1][0], results["loss"][-1][0]
    assert proc.stdout.splitlines() == [
        f"8 answers written to {out}",
        f"8 with answers, scored as classification: accuracy {acc:.3f} ({round(acc * 8)} of 8), answer loss {loss:.3f}"]
    proc = subprocess.run([sys.executable, "-m", "tsr", "predict", str(scoring), str(first_tests(scoring, 1, "copy", tmp_path)),
                           "--out", str(out), "--metric", "sari,rouge_l"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    sari, rouge = (sum(r[m] for r in rows) / 8 for m in ("sari", "rouge_l"))
    assert proc.stdout.splitlines()[1] == (f"8 with answers, scored as generation: SARI {sari:.3f}, ROUGE-L {rouge:.3f}, "
                                           f"answer loss {results['loss'][-1][1]:.3f}")


def test_the_kv_cache_goes_by_the_name_transformers_takes_without_a_warning(scoring):
    """The warning's cause: the cache passed as ``past_key_values`` and read back under that name,
    which transformers 5.2x renamed ``cache``; decoding now uses the model's own name."""
    import logging

    from tsr.model.generate import greedy_batch
    from tsr.model.learner import build_learner

    learner = build_learner(load_config(str(scoring / "learner.yaml"), []))
    heard: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: heard.append(record.getMessage())
    logger = logging.getLogger("transformers")  # it does not propagate to the root logger
    logging.Logger.warning_once.cache_clear()  # transformers' once-per-process memory of warnings
    logger.addHandler(handler)
    try:
        greedy_batch(learner, [[5, 6, 7], [8, 9]], 4, 2)
        assert learner.greedy([5, 6, 7], 4, cache=True) == learner.greedy([5, 6, 7], 4)
    finally:
        logger.removeHandler(handler)
    assert not [m for m in heard if "deprecated" in m], heard


def test_bad_learn_calls_leave_the_learner_unchanged(taught, capsys, tmp_path):
    folder, _ = taught
    data = folder / "tasks" / "01-parity"
    refuse(capsys, folder, ["learn", str(folder), str(data), "--name", "parity"], "already learnt")
    refuse(capsys, folder, ["learn", str(folder), str(data), "method.name=er", "--name", "again"],
           "made with another config")
    bad = write(tmp_path / "bad" / "train.jsonl", jsonl([{"question": "x", "reply": "y"}]))
    write(tmp_path / "bad" / "test.jsonl", jsonl([{"prompt": "x", "answer": "y"}]))
    refuse(capsys, folder, ["learn", str(folder), str(bad.parent)], "train.jsonl:1")
    few = write(tmp_path / "few" / "train.jsonl", jsonl([{"prompt": "x", "answer": " y"}] * 3))
    write(tmp_path / "few" / "test.jsonl", jsonl([{"prompt": "x", "answer": " y"}]))
    refuse(capsys, folder, ["learn", str(folder), str(few.parent)], "stream.budget")
    refuse(capsys, folder, ["predict", str(folder), str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o")],
           "none.jsonl")


def test_a_folder_that_is_not_a_learner_is_refused(capsys, tmp_path, toy_stream):
    other = tmp_path / "other"
    write(other / "notes.txt", "mine")
    refuse(capsys, other, ["learn", str(other), str(toy_stream.parent / "parity")], "not a tsr learner")


def test_kind_is_inferred_from_the_answers():
    assert infer_kind([" yes", " no"] * 5).value == "classification"
    assert infer_kind([f"answer {i}" for i in range(10)]).value == "generation"


def test_a_task_of_a_bundled_benchmark_by_name_in_a_relative_folder(tiny_model, tmp_path, monkeypatch):
    from tsr.data.streams import load_stream

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "learner"
    outcome = learn("learner", "synth-trace:stance", overrides=[*settings(tiny_model), "train.steps=2"])
    second = learn("learner", "synth-trace:policy")  # the learnt tasks' files, found from a relative folder
    assert second.results.tasks == ["stance", "policy"] and second.results.completed == 2
    task = load_stream("synth-trace").tasks[0]
    assert outcome.results.tasks == ["stance"] and outcome.results.kinds == [task.kind.value]
    lines = (folder / "tasks" / "01-stance" / "train.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [e.record() for e in task.pool]
    with pytest.raises(Exception, match="synth-trace has no task 'nope'"):
        learn(folder, "synth-trace:nope")


@pytest.mark.parametrize("minutes", ["0", "1e-9"])
def test_a_learn_call_killed_within_its_task_is_finished_by_the_next(taught, tiny_model, toy_stream, tmp_path,
                                                                     monkeypatch, minutes):
    """The second task's call dies after step 5: the next call of that task finishes it (it was
    once reported as already finished, and the learner stuck), from its start or, with progress
    saved at steps 2 and 4, from step 4; the learner ends as the one taught without a kill."""
    from conftest import interrupting

    folder, _ = taught
    data, mine = toy_stream.parent, tmp_path / "learner"
    every = [*settings(tiny_model), "log.every=2", f"train.checkpoint_minutes={minutes}"]
    learn(mine, data / "parity", name="parity", kind="classification", overrides=every)
    with interrupting(monkeypatch, 1, 5), pytest.raises(KeyboardInterrupt):
        learn(mine, data / "vowel", name="vowel", kind="classification", overrides=every)
    out = learn(mine, data / "vowel", name="vowel", kind="classification", overrides=every)
    assert not out.already_finished and out.results.tasks == ["parity", "vowel"] and out.results.finished
    events = [json.loads(line) for line in (mine / "run" / "progress.jsonl").read_text().splitlines()]
    assert [e["step"] for e in events if e["event"] == "resume_within_task"] == ([4] if minutes != "0" else [])
    learn(mine, data / "copy", name="copy", kind="generation", overrides=every)
    a = load_file(str(mine / "run" / "checkpoint" / "adapter.safetensors"))
    b = load_file(str(folder / "run" / "checkpoint" / "adapter.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ours, theirs = (json.loads((f / "run" / "results.json").read_text()) for f in (mine, folder))
    assert ours["acc"] == theirs["acc"] and ours["loss"] == theirs["loss"]
