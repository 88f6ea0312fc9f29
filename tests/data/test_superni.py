"""SuperNI: native task JSON, SAPT's orders, kinds, pair streams, bad input."""

from __future__ import annotations

import json

import pytest

from conftest import shared_data
from tsr.data.streams import load_stream
from tsr.data.benchmarks.superni import CLASSIFICATION, ORDERS, pair_stream
from tsr.errors import ConfigError, DataError


def raw(path):
    return json.loads(path.read_text(encoding="utf-8"))


def outputs(instance):
    out = instance["output"]
    return [out] if isinstance(out, str) else out


@pytest.fixture(scope="module")
def root():
    return shared_data("superni")


@pytest.fixture(scope="module")
def stream(root):
    return load_stream("superni", str(root))


@pytest.mark.shared_data
def test_real_tasks_load_in_sapt_order_with_their_counts(root, stream):
    assert sorted(ORDERS["order1"]) == sorted(p.name for p in root.iterdir() if p.is_dir())
    assert stream.names == list(ORDERS["order1"])
    for task in stream:
        for split, examples in (("train", task.pool), ("test", task.test)):
            instances = raw(root / task.name / f"{split}.json")["Instances"]
            usable = [i for i in instances if any(o.strip() for o in outputs(i))]
            assert len(examples) == len(usable)
            assert task.meta["dropped_empty_output"][split] == len(instances) - len(usable)
            first = next(o.strip() for o in outputs(usable[0]) if o.strip())
            assert examples[0].answer == first
            assert examples[0].prompt.endswith(f"Input: {usable[0]['input'].strip()}\nOutput:")


@pytest.mark.shared_data
def test_kinds_and_labels(root, stream):
    for task in stream:
        assert task.is_classification == (task.name in CLASSIFICATION)
        if task.is_classification:
            instances = raw(root / task.name / "train.json")["Instances"]
            assert task.labels == tuple(sorted({outputs(i)[0].strip() for i in instances}))
            assert len(task.labels) <= 6
    assert stream.task("task875_emotion_classification").labels == ("anger", "fear", "joy", "love", "sadness", "surprise")


@pytest.mark.shared_data
def test_prompt_is_the_definition_then_the_instance(root, stream):
    data = raw(root / "task591_sciq_answer_generation" / "test.json")
    ex = stream.task("task591_sciq_answer_generation").test[0]
    assert ex.prompt == (f"Definition: {data['Definition'][0].strip()}\n\nNow complete the following example -\n"
                         f"Input: {data['Instances'][0]['input'].strip()}\nOutput:")


@pytest.mark.shared_data
def test_orders_and_pairs(root):
    assert sorted(ORDERS["order2"]) == sorted(ORDERS["order1"])
    s2 = load_stream("superni", str(root), {"sequence": "order2", "tasks": list(ORDERS["order1"][:3])})
    assert s2.names == [t for t in ORDERS["order2"] if t in ORDERS["order1"][:3]]
    target, source = "task363_sst2_polarity_classification", "task1687_sentiment140_classification"
    pair = pair_stream(root, source, target)
    assert pair.names == [source, target] and pair.name == "superni-pair"
    same = load_stream("superni", str(root), {"pair": [source, target]})
    assert same.names == pair.names


def write_task(folder, data):
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        (folder / f"{split}.json").write_text(json.dumps(data))


def test_malformed_instance_names_file_and_index(tmp_path):
    name = "task363_sst2_polarity_classification"
    good = {"id": "a", "input": "x", "output": ["POS"]}
    write_task(tmp_path / name, {"Definition": ["Classify."], "Instances": [good, {"id": "b", "input": "y", "output": []}]})
    with pytest.raises(DataError) as err:
        load_stream("superni", str(tmp_path), {"tasks": [name]})
    assert str(err.value) == (f"{tmp_path / name / 'train.json'}: instance 1: 'output' must be a string or a "
                              "non-empty list of strings")


def test_missing_definition_and_split(tmp_path):
    name = "task591_sciq_answer_generation"
    write_task(tmp_path / name, {"Instances": [{"id": "a", "input": "x", "output": ["y"]}]})
    with pytest.raises(DataError, match="'Definition' must be"):
        load_stream("superni", str(tmp_path), {"tasks": [name]})
    (tmp_path / name / "test.json").unlink()
    (tmp_path / name / "train.json").write_text(json.dumps({"Definition": "d", "Instances": [
        {"id": "a", "input": "x", "output": "y"}]}))
    with pytest.raises(DataError, match=r"test.json: split 'test' of SuperNI task"):
        load_stream("superni", str(tmp_path), {"tasks": [name]})


def test_bad_options(tmp_path):
    with pytest.raises(ConfigError, match="has no task 'task999'"):
        load_stream("superni", str(tmp_path), {"tasks": ["task999"]})
    with pytest.raises(ConfigError, match="two different tasks"):
        load_stream("superni", str(tmp_path), {"pair": ["task875_emotion_classification"]})
