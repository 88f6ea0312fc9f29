"""docs/streams.md: every file the page shows is written out and loaded through the library.

A fenced block whose info string says ``file=NAME`` is a file of the page's examples; one that
also says ``same-as=OTHER`` is the prompt/answer file OTHER must load to; ``python`` files are
run (in the folder of the files); ``template=NAME`` blocks are formats' templates; the
error table's messages are the errors the inputs below produce.
"""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest

from tsr.data import formats
from tsr.data.jsonl import examples_from_jsonl, load_jsonl_task
from tsr.data.example import TaskKind
from tsr.data.streams import load_stream
from tsr.errors import DataError

DOC = Path(__file__).resolve().parents[2] / "docs" / "streams.md"
BLOCK = re.compile(r"^```(\w+)((?: [\w-]+=\S+)*)\n(.*?)^```$", re.M | re.S)


def blocks() -> list[tuple[str, dict[str, str], str]]:
    """(language, attributes, text) of every fenced block of the page."""
    text = DOC.read_text(encoding="utf-8")
    return [(lang, dict(a.split("=", 1) for a in attrs.split()), body) for lang, attrs, body in BLOCK.findall(text)]


def files() -> dict[str, tuple[str, dict[str, str], str]]:
    out = {attrs["file"]: (lang, attrs, body) for lang, attrs, body in blocks() if "file" in attrs}
    assert len(out) == len([b for b in blocks() if "file" in b[1]]), "two blocks write the same file"
    return out


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The page's files, written under a temporary folder that is also the working folder."""
    for name, (_, _, body) in files().items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_page_shows_every_shape_and_format():
    names = files()
    assert {"parity.jsonl", "completion.jsonl", "alpaca.jsonl", "chat.jsonl", "my-stream.yaml"} <= set(names)
    text = DOC.read_text(encoding="utf-8")
    for fmt in ("`jsonl`", "`trace`", "`hf`"):
        assert fmt in text


def test_every_jsonl_file_loads_to_its_prompt_answer_twin(folder):
    pairs = [(attrs["same-as"], name) for name, (_, attrs, _) in files().items() if "same-as" in attrs]
    assert {a for a, _ in pairs} == {"completion.jsonl", "alpaca.jsonl", "chat.jsonl", "chat-parts.jsonl",
                                     "sharegpt.jsonl"}
    for shaped, plain in pairs:
        got, shape = examples_from_jsonl(folder / shaped)
        want, plain_shape = examples_from_jsonl(folder / plain)
        assert plain_shape == "prompt/answer" and shape == shaped.split(".")[0].replace("chat-parts", "chat")
        assert [(e.prompt, e.answer) for e in got] == [(e.prompt, e.answer) for e in want], shaped
        assert len(got) == 2
    for name in files():
        if name.endswith(".jsonl"):
            assert len(examples_from_jsonl(folder / name)[0]) == 2, name


def test_the_templates_shown_are_the_ones_used():
    shown = {attrs["template"]: body for _, attrs, body in blocks() if "template" in attrs}
    assert shown == {"ALPACA": formats.ALPACA}
    assert formats.plain_chat([("system", "S"), ("user", "U")]) == "System:\nS\n\nUser:\nU\n\nAssistant:\n"


def test_stream_files_without_datasets_load(folder):
    stream = load_stream(str(folder / "first.yaml"))
    assert stream.name == "first-stream" and stream.names == ["sums", "parity"]
    labelled = load_stream(str(folder / "labelled.yaml"))
    assert labelled[0].labels == ("yes", "no")


def test_the_python_example_and_the_full_stream_file_load(folder):
    pytest.importorskip("datasets", reason="the optional 'datasets' package is not installed")
    for name in files():
        if name.endswith(".py"):
            runpy.run_path(str(folder / name), run_name="__main__")
    stream = load_stream(str(folder / "my-stream.yaml"))
    assert stream.names == ["fomc", "parity", "sums", "colours", "cities", "capitals"]
    shapes = {t.name: (t.meta.get("format"), t.meta.get("shape")) for t in stream}
    assert shapes == {"fomc": ("trace", None), "parity": ("jsonl", "prompt/answer"), "sums": ("jsonl", "alpaca"),
                      "colours": ("jsonl", "chat"), "cities": ("jsonl", "completion"), "capitals": ("hf", "completion")}
    assert all(len(t.pool) == 2 for t in stream) and stream.task("fomc").labels == ("A", "B", "C")


# the inputs behind the error table, in its order
ERROR_INPUTS = [
    [{"text": "t", "label": "l"}],
    [{"prompt": "p", "answer": "a"}, {"prompt": "p", "answer": "a"}, {"prompt": "p", "completion": "c"}],
    [{"instruction": "i", "output": "o", "messages": []}],
    [{"messages": [{"role": "user", "content": "u"}]}],
    [{"messages": [{"role": "user", "content": [{"type": "text", "text": "What is it?"},
                                                {"type": "image_url", "image_url": {"url": "cat.png"}}]},
                   {"role": "assistant", "content": "a cat"}]}],
    [{"conversations": [{"from": "human", "value": "u"}]}],
    [{"conversations": [{"from": "human", "value": "u"}, {"from": "gpt", "value": "a"},
                        {"from": "observation", "value": "o"}]}],
    [{"instruction": "i", "output": "o"}, {"instruction": "i"}],
    [{"prompt": "p", "completion": ""}],
]


def test_the_error_table_quotes_the_errors(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("### Errors"):text.index("## Hugging Face datasets")]
    quoted = re.findall(r"^\|[^|]+\| `(.+)` \|$", table, re.M)
    assert len(quoted) == len(ERROR_INPUTS)
    path = tmp_path / "a.jsonl"
    for rows, message in zip(ERROR_INPUTS, quoted):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        with pytest.raises(DataError) as err:
            load_jsonl_task("t", TaskKind.CLASSIFICATION, path, path)
        assert str(err.value) == f"{path.parent}/{message}"
