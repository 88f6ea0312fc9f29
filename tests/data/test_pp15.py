"""PP15 from O-LoRA's CL_Benchmark layout: real files and gaps, prompts, orders, label checks."""

from __future__ import annotations

import json

import pytest

from conftest import shared_data
from tsr.data.benchmarks.pp15 import GROUPS, ORDERS, complete_tasks
from tsr.data.streams import load_stream
from tsr.errors import ConfigError, DataError


def raw(path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def root():
    return shared_data("pp15")


@pytest.fixture(scope="module")
def ready(root):
    """Tasks of the shared copy whose train, test and labels files exist (yahoo, yelp, IMDB,
    MultiRC and dbpedia miss some)."""
    bench = root / "CL_Benchmark"
    return [t for t in ORDERS["order4"]
            if all((bench / GROUPS[t] / t / f).is_file() for f in ("train.json", "test.json", "labels.json"))]


@pytest.mark.shared_data
def test_available_tasks_load_with_their_counts(root, ready):
    assert complete_tasks(root / "CL_Benchmark") == ready
    s = load_stream("pp15", str(root), {"tasks": ready, "outside_labels": "drop"})
    assert s.names == ready
    for task in s:
        folder = root / "CL_Benchmark" / GROUPS[task.name] / task.name
        labels = raw(folder / "labels.json")
        train, test = raw(folder / "train.json"), raw(folder / "test.json")
        assert len(task.pool) == sum(r["label"] in labels for r in train)
        assert len(task.test) == sum(r["label"] in labels for r in test)
        assert task.labels == tuple(labels) and task.is_classification
        assert [e.answer for e in task.test] == [r["label"] for r in test if r["label"] in labels]
    mnli = raw(root / "CL_Benchmark" / "NLI" / "MNLI" / "test.json")
    assert s.task("MNLI").meta["dropped_outside_labels"]["test"] == sum(r["label"] == "-" for r in mnli)


@pytest.mark.shared_data
def test_prompts_follow_olora(root):
    s = load_stream("pp15", str(root), {"tasks": ["SST-2", "COPA"]})
    config = raw(root / "configs" / "instruction_config.json")
    sst = raw(root / "CL_Benchmark" / "SC" / "SST-2" / "test.json")[0]
    assert s.task("SST-2").test[0].prompt == (f"{config['SC'][0]['instruction']}Option: Good, Bad \n"
                                              f"{sst['sentence']}\nAnswer:")
    copa = raw(root / "CL_Benchmark" / "COPA" / "COPA" / "test.json")[0]
    assert s.task("COPA").test[0].prompt == f"{copa['sentence']}\nAnswer:"


@pytest.mark.shared_data
def test_label_outside_labels_json_names_file_and_index(root):
    path = root / "CL_Benchmark" / "NLI" / "MNLI" / "test.json"
    first = next(i for i, r in enumerate(raw(path)) if r["label"] == "-")
    with pytest.raises(DataError) as err:
        load_stream("pp15", str(root), {"tasks": ["MNLI"]})
    assert str(err.value).startswith(f"{path}: record {first}: label '-' is not in labels.json")
    assert "outside_labels=drop" in str(err.value)


@pytest.mark.shared_data
def test_missing_file_names_it_and_lists_the_complete_tasks(root, ready):
    with pytest.raises(DataError) as err:
        load_stream("pp15", str(root), {"tasks": ["yahoo"]})
    message = str(err.value)
    assert message.startswith(str(root / "CL_Benchmark" / "TC" / "yahoo" / "train.json"))
    assert ", ".join(ready) in message and "stream.options.tasks" in message


@pytest.mark.shared_data
def test_sequences_and_stream_orders_on_the_real_benchmark(root, ready):
    """The literature orders restricted to the available tasks, then the generic order options."""
    picked = ["CB", "COPA", "WiC", "RTE"]
    for sequence, order in ORDERS.items():
        assert sorted(order) == sorted(GROUPS)
        s = load_stream("pp15", str(root), {"tasks": picked, "sequence": sequence})
        assert s.names == [t for t in order if t in picked]
    # O-LoRA's scripts/long.sh runs order 6: yelp amazon MNLI CB COPA QQP RTE IMDB SST-2 ...
    assert ORDERS["order6"][:5] == ("yelp", "amazon", "MNLI", "CB", "COPA")
    base = load_stream("pp15", str(root), {"tasks": picked})
    assert load_stream("pp15", str(root), {"tasks": picked}, order="reversed").names == base.names[::-1]
    a = load_stream("pp15", str(root), {"tasks": picked}, order="shuffle:3", seed=0).names
    b = load_stream("pp15", str(root), {"tasks": picked}, order="shuffle:3", seed=9).names
    assert a == b and sorted(a) == sorted(picked)
    assert load_stream("pp15", str(root), {"tasks": picked}, order=["RTE", "CB", "WiC", "COPA"]).names == [
        "RTE", "CB", "WiC", "COPA"]


def write_layout(tmp_path, records, labels=("yes", "no"), config=None):
    folder = tmp_path / "CL_Benchmark" / "BoolQA" / "BoolQA"
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        (folder / f"{split}.json").write_text(json.dumps(records))
    (folder / "labels.json").write_text(json.dumps(list(labels)))
    (tmp_path / "configs").mkdir()
    config = config if config is not None else {"BoolQA": [{"instruction_type": "zero-shot", "instruction": "Q? "}]}
    (tmp_path / "configs" / "instruction_config.json").write_text(json.dumps(config))
    return folder


def test_malformed_record_names_file_and_index(tmp_path):
    folder = write_layout(tmp_path, [{"label": "yes", "sentence": "s"}, {"label": "yes"}])
    with pytest.raises(DataError) as err:
        load_stream("pp15", str(tmp_path), {"tasks": ["BoolQA"]})
    assert str(err.value) == f"{folder / 'train.json'}: record 1: missing 'sentence'"


def test_unknown_label_and_drop_option(tmp_path):
    write_layout(tmp_path, [{"label": "yes", "sentence": "s"}, {"label": "maybe", "sentence": "t"}])
    with pytest.raises(DataError, match=r"record 1: label 'maybe' is not in labels.json \(yes, no\)"):
        load_stream("pp15", str(tmp_path), {"tasks": ["BoolQA"]})
    s = load_stream("pp15", str(tmp_path), {"tasks": ["BoolQA"], "outside_labels": "drop"})
    assert [e.answer for e in s[0].pool] == ["yes"]
    assert s[0].pool[0].prompt == "Q? Option: yes, no \ns\nAnswer:"


def test_missing_instruction_names_the_config(tmp_path):
    write_layout(tmp_path, [{"label": "yes", "sentence": "s"}], config={"NLI": []})
    with pytest.raises(DataError, match=r"instruction_config.json: no zero-shot instruction for group 'BoolQA'"):
        load_stream("pp15", str(tmp_path), {"tasks": ["BoolQA"]})


def test_bad_options(tmp_path):
    with pytest.raises(ConfigError, match=r"stream.options.sequence': 'order7' is not valid"):
        load_stream("pp15", str(tmp_path), {"sequence": "order7"})
    with pytest.raises(ConfigError, match=r"has no task 'sst2' \(valid: MNLI, CB"):
        load_stream("pp15", str(tmp_path), {"tasks": ["sst2"]})
