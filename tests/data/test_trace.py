"""TRACE-8 from the official folder layout: real files, ScienceQA letters, substitutes, bad input."""

from __future__ import annotations

import json

import pytest

from conftest import shared_data
from tsr.interface.cli import main
from tsr.data.streams import load_stream
from tsr.data.benchmarks.trace import TRACE8
from tsr.errors import ConfigError, DataError

pytestmark = pytest.mark.shared_data


def raw(path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def root():
    return shared_data("trace", "LLM-CL-Benchmark_500")


@pytest.fixture(scope="module")
def stream(root):
    return load_stream("trace8", str(root), {"missing_train": "eval"})


def test_real_files_load_in_canonical_order_with_their_counts(root, stream):
    assert stream.names == list(TRACE8)
    for task in stream:
        folder = root / task.name
        pool_file = folder / ("train.json" if (folder / "train.json").is_file() else "eval.json")
        assert len(task.pool) == len(raw(pool_file))
        assert len(task.test) == len(raw(folder / "test.json"))
        assert task.kind is TRACE8[task.name]
    assert stream.task("MeetingBank").meta["pool_split"] == "eval"
    assert stream.task("FOMC").meta["pool_split"] == "train"
    assert [t.name for t in stream if t.is_classification] == [
        "C-STANCE", "FOMC", "ScienceQA", "NumGLUE-cm", "NumGLUE-ds"]


def test_non_scienceqa_examples_are_the_files_records(root, stream):
    records = raw(root / "NumGLUE-cm" / "test.json")
    task = stream.task("NumGLUE-cm")
    assert [(e.prompt, e.answer) for e in task.test] == [(r["prompt"], r["answer"]) for r in records]


def test_scienceqa_scores_and_trains_on_the_leading_letter(root, stream):
    task = stream.task("ScienceQA")
    test_records = raw(root / "ScienceQA" / "test.json")
    assert [e.answer for e in task.test] == [r["answer"].split("\n")[0] for r in test_records]
    assert all(len(e.answer) == 1 and e.answer.isupper() for e in task.pool + task.test)
    assert task.labels == tuple(sorted({e.answer for e in task.pool + task.test}))
    assert task.meta["targets"] == "letter"


def test_scienceqa_rationale_option_keeps_training_targets_only(root):
    s = load_stream("trace8", str(root), {"tasks": ["ScienceQA"], "scienceqa_rationale": True})
    task = s.task("ScienceQA")
    train_records = raw(root / "ScienceQA" / "train.json")
    assert [e.answer for e in task.pool] == [r["answer"] for r in train_records]
    assert all(len(e.answer) == 1 for e in task.test)


def test_missing_train_split_is_an_error_naming_the_file_and_the_substitute(root):
    with pytest.raises(DataError) as err:
        load_stream("trace8", str(root))
    message = str(err.value)
    assert str(root / "MeetingBank" / "train.json") in message
    assert "missing_train=eval" in message and "\n" not in message


def test_tasks_option_selects_and_keeps_canonical_order(root):
    s = load_stream("trace8", str(root), {"tasks": ["NumGLUE-ds", "FOMC"]})
    assert s.names == ["FOMC", "NumGLUE-ds"]


@pytest.mark.parametrize("options, key", [({"tasks": ["FOMX"]}, "stream.options.tasks"),
                                          ({"rationale": True}, "stream.options.rationale")])
def test_bad_options_name_the_key(root, options, key):
    with pytest.raises(ConfigError) as err:
        load_stream("trace8", str(root), options)
    assert key in str(err.value)
    if "tasks" in options:
        assert "C-STANCE" in str(err.value)  # lists the valid names


def test_root_errors_say_what_to_set(root):
    with pytest.raises(ConfigError, match="set stream.root"):
        load_stream("trace8", None)
    with pytest.raises(DataError, match="LLM-CL-Benchmark_500: point stream.root"):
        load_stream("trace8", str(root.parent))


def write_task(folder, train, test):
    folder.mkdir(parents=True)
    (folder / "train.json").write_text(json.dumps(train))
    (folder / "test.json").write_text(json.dumps(test))


def test_malformed_record_names_file_and_index(tmp_path):
    good = {"prompt": "p", "answer": "A"}
    write_task(tmp_path / "FOMC", [good, good, {"prompt": "p"}], [good])
    with pytest.raises(DataError) as err:
        load_stream("trace8", str(tmp_path), {"tasks": ["FOMC"]})
    assert str(err.value) == f"{tmp_path / 'FOMC' / 'train.json'}: record 2: missing 'answer'"


def test_scienceqa_answer_without_letter_names_file_and_index(tmp_path):
    write_task(tmp_path / "ScienceQA", [{"prompt": "p", "answer": "B\nbecause"}],
               [{"prompt": "p", "answer": "A"}, {"prompt": "p", "answer": "maybe\nB"}])
    with pytest.raises(DataError, match=r"ScienceQA/test.json: record 1: ScienceQA answer does not start"):
        load_stream("trace8", str(tmp_path), {"tasks": ["ScienceQA"]})


def test_cli_reports_a_missing_split_in_one_line(root, capsys, tmp_path):
    code = main(["run", "paper", "stream.source=trace8", f"stream.root={root}", f"out_dir={tmp_path}"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "MeetingBank" in err and "train.json" in err
    assert not any(tmp_path.iterdir())  # nothing was written
