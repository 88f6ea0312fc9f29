"""NumGLUE-8: per-type files and the JSON Lines release, templates, normalisation, fixed split."""

from __future__ import annotations

import json
import math

import pytest

from conftest import shared_data
from tsr.data.benchmarks.numglue import TYPES, normalise_number
from tsr.data.streams import load_stream
from tsr.errors import ConfigError, DataError


def raw(root, k):
    return json.loads((root / f"Type_{k}" / f"type{k}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def root():
    return shared_data("numglue")


@pytest.fixture(scope="module")
def stream(root):
    return load_stream("numglue8", str(root))


@pytest.mark.shared_data
def test_per_type_files_load_in_type_order_with_their_counts(root, stream):
    assert stream.names == list(TYPES)
    for k, task in enumerate(stream, start=1):
        records = raw(root, k)
        assert len(task.pool) + len(task.test) == len(records)
        assert task.is_classification
        groups = len({e.prompt for e in task.pool + task.test})
        assert len({e.prompt for e in task.test}) == math.ceil(0.2 * groups)
        # a question never sits on both sides of the split
        assert not {e.prompt for e in task.pool} & {e.prompt for e in task.test}


@pytest.mark.shared_data
def test_split_is_fixed_by_the_split_seed_not_the_run(root, stream):
    again = load_stream("numglue8", str(root), {"tasks": ["type2"]}, seed=7)
    assert again.task("type2").test == stream.task("type2").test
    other = load_stream("numglue8", str(root), {"tasks": ["type2"], "split_seed": 1})
    assert other.task("type2").test != stream.task("type2").test


@pytest.mark.shared_data
def test_answers_follow_the_documented_rules(root, stream):
    options = {(r["question"].strip(), r[r["answer"].replace(" ", "")].strip()) for r in raw(root, 3)}
    for ex in stream.task("type3").pool:
        question = ex.prompt.split("Question:\n", 1)[1].split("\nOption 1:", 1)[0]
        assert (question, ex.answer) in options
    assert {e.answer for e in stream.task("type7").pool} == {"contradiction", "entailment", "neutral"}
    numbers = {normalise_number(r["answer"], "x") for r in raw(root, 8)}
    assert {e.answer for e in stream.task("type8").pool + stream.task("type8").test} == numbers
    assert "1.666666667" in numbers and "1.6666666669999999" not in numbers
    spans = [r["answer"]["spans"] for r in raw(root, 6) if len(r["answer"]["spans"]) > 1]
    assert ", ".join(s.strip() for s in spans[0]) in {e.answer for e in stream.task("type6").pool + stream.task("type6").test}


@pytest.mark.shared_data
def test_type1_and_type2_read_exactly_as_trace_numglue_cm_and_ds(stream):
    trace = shared_data("trace", "LLM-CL-Benchmark_500")
    for ours, theirs in (("type1", "NumGLUE-cm"), ("type2", "NumGLUE-ds")):
        records = json.loads((trace / theirs / "train.json").read_text(encoding="utf-8"))
        trace_pairs = {r["prompt"]: r["answer"] for r in records}
        task = stream.task(ours)
        shared = [e for e in task.pool + task.test if e.prompt in trace_pairs]
        assert len(shared) > 20
        assert all(normalise_number(trace_pairs[e.prompt], "x") == e.answer for e in shared)


@pytest.mark.parametrize("value, text", [(52, "52"), (14.0, "14"), ("1.4300000000000002", "1.43"),
                                         ("9.583333332999999", "9.583333333"), ("-0.0", "0"),
                                         ("1,200", "1200"), (" June ", "June"), ("100.50", "100.5")])
def test_number_normalisation(value, text):
    assert normalise_number(value, "x") == text


def write_release(folder, lines):
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        (folder / f"NumGLUE_{split}.json").write_text("".join(json.dumps(r) + "\n" for r in lines[split]))


def release_lines():
    q = {"question": "Tom has 3 apples and eats 1. How many are left?", "answer": 2, "type": "Type_1"}
    nli = {"statement1": "a", "statement2": "b", "options": " Entailment or neutral?", "answer": "Entailment",
           "type": "Type_7"}
    drop = {"passage": "p", "question": "When?", "type": "Type_5",
            "answer": {"number": "", "date": {"day": "24", "month": "April", "year": ""}, "spans": []}}
    return {"train": [q, nli, drop], "test": [q, nli, drop]}


def test_release_layout_groups_records_by_type(tmp_path):
    write_release(tmp_path, release_lines())
    s = load_stream("numglue8", str(tmp_path), {"tasks": ["type1", "type5", "type7"]})
    assert s.names == ["type1", "type5", "type7"]
    assert s.task("type1").test[0].answer == "2"
    assert s.task("type1").test[0].prompt.startswith("Solve the following math problem.\nQuestion:\n")
    assert s.task("type5").test[0].answer == "24 April"
    assert s.task("type7").pool[0].answer == "entailment"
    assert s.task("type7").meta["format"] == "numglue-release"


def test_release_record_with_bad_type_names_file_and_line(tmp_path):
    lines = release_lines()
    lines["train"].insert(1, {"question": "q", "answer": 1, "type": "Type_9"})
    write_release(tmp_path, lines)
    with pytest.raises(DataError) as err:
        load_stream("numglue8", str(tmp_path))
    assert str(err.value).startswith(f"{tmp_path / 'NumGLUE_train.json'}:2: 'type' must be one of")


def test_per_type_malformed_record_names_file_and_index(tmp_path):
    folder = tmp_path / "Type_3"
    folder.mkdir()
    good = {"question": "q", "Option1": "a", "Option2": "b", "answer": "Option 1", "type": "Type_3"}
    (folder / "type3.json").write_text(json.dumps([good, dict(good, answer="Option 3")]))
    with pytest.raises(DataError) as err:
        load_stream("numglue8", str(tmp_path), {"tasks": ["type3"], "layout": "per_type"})
    assert str(err.value).startswith(f"{folder / 'type3.json'}: record 1: type 3 answer must be")


def test_options_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="stream.options.test_fraction"):
        load_stream("numglue8", str(tmp_path), {"test_fraction": 1.5})
    with pytest.raises(ConfigError, match="valid: type1, type2"):
        load_stream("numglue8", str(tmp_path), {"tasks": ["T1"]})
    with pytest.raises(DataError, match="neither the NumGLUE release"):
        load_stream("numglue8", str(tmp_path))
