import json

import pytest

from tsr.data.example import Example, Stream, Task, TaskKind
from tsr.data.jsonl import load_jsonl_task
from tsr.data.orders import order_names
from tsr.data.streams import load_stream
from tsr.data.stream_spec import load_stream_file
from tsr.data.benchmarks.trace import load_trace_task
from tsr.errors import ConfigError, DataError


def _write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_jsonl_task_loads(tmp_path):
    tr = _write_jsonl(tmp_path / "tr.jsonl", [{"prompt": "a", "answer": "b"}] * 3)
    te = _write_jsonl(tmp_path / "te.jsonl", [{"prompt": "c", "answer": "d"}])
    task = load_jsonl_task("t", TaskKind.CLASSIFICATION, tr, te)
    assert len(task.pool) == 3 and task.test == (Example("c", "d"),)


def test_malformed_jsonl_names_file_and_line(tmp_path):
    tr = _write_jsonl(tmp_path / "tr.jsonl", [{"prompt": "a", "answer": "b"}, "{not json"])
    with pytest.raises(DataError, match=r"tr.jsonl:2: malformed JSON line"):
        load_jsonl_task("t", TaskKind.CLASSIFICATION, tr, tr)


def test_missing_answer_names_file_and_line(tmp_path):
    tr = _write_jsonl(tmp_path / "tr.jsonl", [{"prompt": "a", "answer": "b"}, {"prompt": "x"}])
    with pytest.raises(DataError, match=r"tr.jsonl:2: missing 'answer'"):
        load_jsonl_task("t", TaskKind.CLASSIFICATION, tr, tr)


def test_empty_task_is_an_error(tmp_path):
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataError, match="e.jsonl: training file holds no examples"):
        load_jsonl_task("t", TaskKind.CLASSIFICATION, empty, empty)


def test_trace_folder_and_malformed_json(tmp_path):
    folder = tmp_path / "FOMC"
    folder.mkdir()
    (folder / "train.json").write_text(json.dumps([{"prompt": "p", "answer": "A"}] * 2))
    (folder / "test.json").write_text('[{"prompt": "p", "answer": "A"},\n {"prompt": }]')
    with pytest.raises(DataError, match=r"test.json:2:\d+: malformed JSON"):
        load_trace_task("fomc", TaskKind.CLASSIFICATION, folder)
    (folder / "test.json").write_text(json.dumps([{"prompt": "p", "answer": "A"}, {"answer": "B"}]))
    with pytest.raises(DataError, match=r"test.json: record 1: missing 'prompt'"):
        load_trace_task("fomc", TaskKind.CLASSIFICATION, folder)
    (folder / "test.json").unlink()
    with pytest.raises(DataError, match=r"test.json: split 'test' not found"):
        load_trace_task("fomc", TaskKind.CLASSIFICATION, folder)


def test_stream_file_errors(tmp_path, toy_stream):
    stream, order = load_stream_file(toy_stream)
    assert stream.names == ["parity", "vowel", "copy"] and order is None
    bad = tmp_path / "s.yaml"
    bad.write_text("tasks:\n  - {name: a, kind: regression, format: jsonl, train: x, test: y}\n")
    with pytest.raises(DataError, match=r"tasks\[0\] \(a\): unknown task kind 'regression'"):
        load_stream_file(bad)
    bad.write_text("tasks:\n  - {name: a, kind: classification, format: trace, path: nowhere}\n")
    with pytest.raises(DataError, match="nowhere: task folder not found"):
        load_stream_file(bad)
    bad.write_text("tasks:\n  - {name: a, kind: classification, format: csv}\n")
    with pytest.raises(DataError, match="unknown format 'csv'"):
        load_stream_file(bad)


def test_unknown_source_lists_valid_ones():
    with pytest.raises(ConfigError, match="neither a stream file nor a known benchmark"):
        load_stream("no-such-benchmark")


def _stream():
    ex = (Example("p", "a"),)
    return Stream("s", tuple(Task(n, TaskKind.CLASSIFICATION, ex, ex) for n in "abcde"))


def test_orders():
    s = _stream()
    assert order_names(s, "canonical") == list("abcde")
    assert order_names(s, "reversed") == list("edcba")
    shuffled = order_names(s, "shuffle:3")
    assert sorted(shuffled) == list("abcde") and shuffled == order_names(s, "shuffle", seed=3)
    assert order_names(s, ["c", "a"]) == ["c", "a"]
    with pytest.raises(ConfigError, match="unknown task 'z'"):
        order_names(s, ["z"])
    with pytest.raises(ConfigError, match="listed twice"):
        order_names(s, ["a", "a"])
    with pytest.raises(ConfigError, match="not valid"):
        order_names(s, "sideways")


def test_duplicate_task_names_rejected():
    ex = (Example("p", "a"),)
    with pytest.raises(DataError, match="duplicate task names"):
        Stream("s", (Task("a", TaskKind.CLASSIFICATION, ex, ex),) * 2)
