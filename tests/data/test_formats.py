"""Record shapes of task data (tsr.data.formats), Hugging Face datasets (tsr.data.hf) and the
stream file's labels: every shape loads to the Examples of its prompt/answer equivalent."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from tsr.data import from_hf
from tsr.data.collate import Encoder
from tsr.data.example import Example, Stream, Task, TaskKind
from tsr.data.jsonl import examples_from_jsonl, load_jsonl_task, prompts_from_jsonl
from tsr.data.stream_spec import load_stream_file
from tsr.errors import DataError, ModelError
from tsr.model.tiny import train_tokenizer

CLS = TaskKind.CLASSIFICATION

# (question, input, answer): the same data in every shape below
DATA = [("Add the numbers.", "2 3", "5"), ("Add the numbers.", "", "7"), ("Name the colour of grass.", "", "green")]

# The documented templates, written out here rather than imported: the test pins the docs.
ALPACA_PROMPTS = ["### Instruction:\nAdd the numbers.\n\n### Input:\n2 3\n\n### Response:\n",
                  "### Instruction:\nAdd the numbers.\n\n### Response:\n",
                  "### Instruction:\nName the colour of grass.\n\n### Response:\n"]


def chat_prompt(q: str, x: str, system: str | None = None) -> str:
    text = f"System:\n{system}\n\n" if system else ""
    return text + f"User:\n{q}{' ' + x if x else ''}\n\nAssistant:\n"


def write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def shapes(system: str | None = None) -> dict[str, list[dict]]:
    """The records of DATA in each shape, and the prompt/answer records each must equal."""
    def chat(q, x, a):
        turns = [{"role": "system", "content": system}] if system else []
        return {"messages": turns + [{"role": "user", "content": f"{q}{' ' + x if x else ''}"},
                                     {"role": "assistant", "content": a}]}

    def sharegpt(q, x, a):
        turns = [{"from": "system", "value": system}] if system else []
        return {"conversations": turns + [{"from": "human", "value": f"{q}{' ' + x if x else ''}"},
                                          {"from": "gpt", "value": a}]}

    def parts(q, x, a):  # OpenAI / Hugging Face content parts: the texts joined by a newline
        turns = [{"role": "system", "content": [{"type": "text", "text": system}]}] if system else []
        texts = [{"type": "text", "text": q}] + ([{"type": "text", "text": x}] if x else [])
        return {"messages": turns + [{"role": "user", "content": texts},
                                     {"role": "assistant", "content": [{"type": "text", "text": a}]}]}
    return {
        "alpaca": [{"instruction": q, "input": x, "output": a} if x else {"instruction": q, "output": a}
                   for q, x, a in DATA],
        "alpaca-equiv": [{"prompt": p, "answer": a} for p, (_, _, a) in zip(ALPACA_PROMPTS, DATA)],
        "completion": [{"prompt": f"{q} {x}", "completion": a} for q, x, a in DATA],
        "completion-equiv": [{"prompt": f"{q} {x}", "answer": a} for q, x, a in DATA],
        "chat": [chat(q, x, a) for q, x, a in DATA],
        "chat-equiv": [{"prompt": chat_prompt(q, x, system), "answer": a} for q, x, a in DATA],
        "sharegpt": [sharegpt(q, x, a) for q, x, a in DATA],
        "sharegpt-equiv": [{"prompt": chat_prompt(q, x, system), "answer": a} for q, x, a in DATA],
        "parts": [parts(q, x, a) for q, x, a in DATA],
        "parts-equiv": [{"prompt": chat_prompt(q, "", system).replace("\n\nAssistant", ("\n" + x if x else "")
                                                                      + "\n\nAssistant"), "answer": a}
                        for q, x, a in DATA],
    }


@pytest.mark.parametrize("shape", ["alpaca", "completion", "chat", "sharegpt", "parts"])
def test_each_shape_loads_to_the_examples_of_its_prompt_answer_file(shape, tmp_path):
    rows = shapes()
    got, name = examples_from_jsonl(write(tmp_path / "a.jsonl", rows[shape]))
    want, plain = examples_from_jsonl(write(tmp_path / "b.jsonl", rows[f"{shape}-equiv"]))
    assert name == {"parts": "chat"}.get(shape, shape) and plain == "prompt/answer"
    assert [(e.prompt, e.answer) for e in got] == [(e.prompt, e.answer) for e in want]
    if shape in ("chat", "sharegpt"):  # the turns before the answer stay on the example, for chat templates
        assert [e.messages for e in got] == [(("user", f"{q}{' ' + x if x else ''}"),) for q, x, _ in DATA]
    elif shape == "parts":
        assert [e.messages for e in got] == [(("user", f"{q}{chr(10) + x if x else ''}"),) for q, x, _ in DATA]
    else:
        assert got == want


def test_sharegpt_speakers_map_to_the_chat_roles_and_system_may_stand_beside_the_turns(tmp_path):
    """human/gpt/system (and user/assistant) become the roles a chat template reads; LLaMA-Factory's
    top-level ``system`` string is a system turn before the others, as a system turn would be."""
    rows = shapes(system="Be brief.")
    (chat, *_), _ = examples_from_jsonl(write(tmp_path / "chat.jsonl", rows["chat"]))
    (turn, *_), _ = examples_from_jsonl(write(tmp_path / "a.jsonl", rows["sharegpt"]))
    beside = {"system": "Be brief.", "conversations": rows["sharegpt"][0]["conversations"][1:]}
    (aside,), _ = examples_from_jsonl(write(tmp_path / "b.jsonl", [beside]))
    spelled = {"conversations": [{"from": "user", "value": "Add the numbers. 2 3"}, {"from": "assistant", "value": "5"}],
               "system": "Be brief."}
    (other,), _ = examples_from_jsonl(write(tmp_path / "c.jsonl", [spelled]))
    assert chat == turn == aside == other
    assert turn.messages == (("system", "Be brief."), ("user", "Add the numbers. 2 3")) and turn.answer == "5"
    (bare,), _ = examples_from_jsonl(write(tmp_path / "d.jsonl", [{**beside, "system": ""}]))
    assert bare.messages == (("user", "Add the numbers. 2 3"),)


def test_predict_inputs_read_sharegpt_and_content_parts(tmp_path):
    """`tsr predict`'s records: the turns are all prompt unless the last is the assistant's."""
    rows = [{"conversations": [{"from": "human", "value": "Hi"}]},
            {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "you"}]}]}]
    got = prompts_from_jsonl(write(tmp_path / "in.jsonl", rows))
    assert [(e.prompt, e.answer) for e in got] == [("User:\nHi\n\nAssistant:\n", ""), ("User:\nHi\n\nAssistant:\n", "Hello"),
                                                   ("User:\nHi\nyou\n\nAssistant:\n", "")]
    assert got[2].messages == (("user", "Hi\nyou"),)
    for record, message in [({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
                             r"in.jsonl:1: messages\[0\]: content\[0\]: a 'image_url' part; only text parts are read"),
                            ({"conversations": [{"from": "bing", "value": "x"}]},
                             r"in.jsonl:1: conversations\[0\]: unknown speaker 'from': 'bing'"),
                            ({"conversations": [{"from": "gpt", "value": "x"}]},
                             r"in.jsonl:1: 'conversations' holds no turn before the answer")]:
        with pytest.raises(DataError, match=message) as err:
            prompts_from_jsonl(write(tmp_path / "in.jsonl", [record]))
        assert "\n" not in str(err.value)


def test_a_stream_file_mixes_formats_and_keeps_prompt_answer_tasks_as_they_were(tmp_path):
    rows = shapes()
    for shape in ("alpaca", "completion", "chat", "completion-equiv"):
        write(tmp_path / f"{shape}.jsonl", rows[shape])
    spec = tmp_path / "s.yaml"
    spec.write_text("tasks:\n" + "".join(
        f"  - {{name: {s.split('-')[0]}{i}, kind: generation, format: jsonl, train: {s}.jsonl, test: {s}.jsonl}}\n"
        for i, s in enumerate(("alpaca", "completion", "chat", "completion-equiv"))))
    stream, _ = load_stream_file(spec)
    assert [t.meta["shape"] for t in stream] == ["alpaca", "completion", "chat", "prompt/answer"]
    assert stream[1].pool == stream[3].pool


def test_system_turns_and_earlier_turns_form_the_prompt(tmp_path):
    rows = shapes(system="You are terse.")
    got, _ = examples_from_jsonl(write(tmp_path / "a.jsonl", rows["chat"]))
    assert [e.prompt for e in got] == [r["prompt"] for r in rows["chat-equiv"]]
    assert got[0].messages[0] == ("system", "You are terse.")
    talk = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                         {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": " 4"}]}
    (ex,), _ = examples_from_jsonl(write(tmp_path / "b.jsonl", [talk]))
    assert ex.prompt == "User:\nHi\n\nAssistant:\nHello\n\nUser:\n2+2?\n\nAssistant:\n" and ex.answer == " 4"
    assert len(ex.messages) == 3


def test_alpaca_input_may_be_missing_empty_or_null(tmp_path):
    rows = [{"instruction": "Say hi.", "output": "hi"}, {"instruction": "Say hi.", "input": "", "output": "hi"},
            {"instruction": "Say hi.", "input": None, "output": "hi"}]
    got, _ = examples_from_jsonl(write(tmp_path / "a.jsonl", rows))
    assert len(set(got)) == 1 and got[0].prompt == "### Instruction:\nSay hi.\n\n### Response:\n"


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(["User: what is two plus two? Assistant: four"] * 20, vocab_size=300)


TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</{{ m['role'] }}>{% endfor %}"
            "{% if add_generation_prompt %}<assistant>{% endif %}")


def test_chat_examples_use_the_tokenizers_chat_template_when_it_has_one(tokenizer, tmp_path):
    (chat,), _ = examples_from_jsonl(write(tmp_path / "a.jsonl", shapes(system="Be brief.")["chat"][:1]))
    plain = Example("Add the numbers. 2 3", "5")
    assert Encoder(tokenizer, 64).text(chat) == chat.prompt  # no template: the plain rendering
    tokenizer.chat_template = TEMPLATE
    try:
        enc = Encoder(tokenizer, 64)
        want = "<system>Be brief.</system><user>Add the numbers. 2 3</user><assistant>"
        assert enc.text(chat) == want
        assert enc.encode(chat).prompt_ids == tuple(tokenizer(want, add_special_tokens=False)["input_ids"])
        assert enc.text(plain) == plain.prompt  # other shapes follow model.chat_template (off)
        assert Encoder(tokenizer, 64, chat_template=True).text(plain) == "<user>Add the numbers. 2 3</user><assistant>"
        tokenizer.chat_template = "{{ raise_exception('System role not supported') }}"
        with pytest.raises(ModelError, match=r"cannot render the turns \['system', 'user'\].*System role not"):
            Encoder(tokenizer, 64).encode(chat)
    finally:
        tokenizer.chat_template = None


BAD = [
    ("unknown-shape", [{"question": "q", "label": "a"}],
     r"a.jsonl:1: unknown record shape \(keys: label, question\); expected one of \{prompt, answer\}"),
    ("mixed-shapes", [{"prompt": "p", "answer": "a"}, {"prompt": "p", "completion": "a"}],
     r"a.jsonl:2: a completion record .* in a file of prompt/answer records .* \(from line 1\); all records"),
    ("mixed-chat-after-alpaca", [{"instruction": "i", "output": "o"},
                                 {"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]}],
     r"a.jsonl:2: a chat record \{messages\} in a file of alpaca records"),
    ("ambiguous", [{"instruction": "i", "output": "o", "messages": []}], r"a.jsonl:1: ambiguous record"),
    ("last-turn-not-assistant", [{"messages": [{"role": "user", "content": "u"}]}],
     r"a.jsonl:1: the last turn must be the assistant's \(the answer\), found role 'user'"),
    ("assistant-only", [{"messages": [{"role": "assistant", "content": "a"}]}], r"a.jsonl:1: 'messages' holds only"),
    ("empty-assistant-answer", [{"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": ""}]}],
     r"a.jsonl:1: messages\[1\]: the assistant's answer is empty"),
    ("turn-without-content", [{"messages": [{"role": "user"}, {"role": "assistant", "content": "a"}]}],
     r"a.jsonl:1: messages\[0\]: missing 'content'"),
    ("content-part-without-text", [{"messages": [{"role": "user", "content": [{"type": "text"}]},
                                                 {"role": "assistant", "content": "a"}]}],
     r"a.jsonl:1: messages\[0\]: content\[0\]: missing 'text'"),
    ("image-part", [{"messages": [{"role": "user", "content": [{"type": "text", "text": "What is it?"},
                                                               {"type": "image", "url": "cat.png"}]},
                                  {"role": "assistant", "content": "a cat"}]}],
     r"a.jsonl:1: messages\[0\]: content\[1\]: a 'image' part; only text parts are read \(tsr trains text models\)$"),
    ("image-url-part-in-the-answer", [{"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}],
     r"a.jsonl:1: messages\[1\]: content\[0\]: a 'image_url' part; only text parts"),
    ("part-without-type", [{"messages": [{"role": "user", "content": [{"text": "u"}]}, {"role": "assistant", "content": "a"}]}],
     r"a.jsonl:1: messages\[0\]: content\[0\]: a part without 'type'; only text parts"),
    ("part-not-an-object", [{"messages": [{"role": "user", "content": ["u"]}, {"role": "assistant", "content": "a"}]}],
     r"a.jsonl:1: messages\[0\]: content\[0\]: expected a \{type, text\} part, found str"),
    ("no-parts", [{"messages": [{"role": "user", "content": []}, {"role": "assistant", "content": "a"}]}],
     r"a.jsonl:1: messages\[0\]: 'content' is an empty list of parts"),
    ("content-a-number", [{"messages": [{"role": "user", "content": 3}, {"role": "assistant", "content": "a"}]}],
     r"a.jsonl:1: messages\[0\]: 'content' must be a string or a list of text parts, found int"),
    ("empty-parts-answer", [{"messages": [{"role": "user", "content": "u"},
                                          {"role": "assistant", "content": [{"type": "text", "text": ""}]}]}],
     r"a.jsonl:1: messages\[1\]: the assistant's answer is empty"),
    ("sharegpt-last-turn-human", [{"conversations": [{"from": "human", "value": "u"}]}],
     r"a.jsonl:1: the last turn must be gpt's \(the answer\), found 'human'$"),
    ("sharegpt-unknown-speaker", [{"conversations": [{"from": "human", "value": "u"}, {"from": "bard", "value": "a"}]}],
     r"a.jsonl:1: conversations\[1\]: unknown speaker 'from': 'bard' \(expected human, gpt or system\)"),
    ("sharegpt-turn-without-value", [{"conversations": [{"from": "human"}, {"from": "gpt", "value": "a"}]}],
     r"a.jsonl:1: conversations\[0\]: missing 'value'"),
    ("sharegpt-turn-not-an-object", [{"conversations": ["hi", {"from": "gpt", "value": "a"}]}],
     r"a.jsonl:1: conversations\[0\]: expected an object with 'from' and 'value', found str"),
    ("sharegpt-value-not-a-string", [{"conversations": [{"from": "human", "value": ["u"]}, {"from": "gpt", "value": "a"}]}],
     r"a.jsonl:1: conversations\[0\]: 'value' must be a string, found list"),
    ("sharegpt-not-a-list", [{"conversations": {"from": "human", "value": "u"}}],
     r"a.jsonl:1: 'conversations' must be a non-empty list of \{from, value\} turns"),
    ("sharegpt-empty-answer", [{"conversations": [{"from": "human", "value": "u"}, {"from": "gpt", "value": ""}]}],
     r"a.jsonl:1: conversations\[1\]: the assistant's answer is empty"),
    ("sharegpt-answer-index-with-system-aside", [{"system": "s", "conversations": [{"from": "human", "value": "u"},
                                                                                   {"from": "gpt", "value": ""}]}],
     r"a.jsonl:1: conversations\[1\]: the assistant's answer is empty"),
    ("sharegpt-only-the-answer", [{"conversations": [{"from": "gpt", "value": "a"}]}],
     r"a.jsonl:1: 'conversations' holds only the answer"),
    ("sharegpt-system-not-a-string", [{"system": 1, "conversations": [{"from": "human", "value": "u"},
                                                                      {"from": "gpt", "value": "a"}]}],
     r"a.jsonl:1: 'system' must be a string, found int"),
    ("sharegpt-and-messages", [{"messages": [], "conversations": []}],
     r"a.jsonl:1: ambiguous record \(keys: conversations, messages\) fits \{messages\} and \{conversations, system\?\}"),
    ("sharegpt-after-chat", [{"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]},
                             {"conversations": [{"from": "human", "value": "u"}, {"from": "gpt", "value": "a"}]}],
     r"a.jsonl:2: a sharegpt record \{conversations, system\?\} in a file of chat records \{messages\} \(from line 1\)"),
    ("messages-not-a-list", [{"messages": "hi"}], r"a.jsonl:1: 'messages' must be a non-empty list"),
    ("empty-completion", [{"prompt": "p", "completion": ""}], r"a.jsonl:1: 'completion' is empty"),
    ("empty-instruction", [{"instruction": " ", "output": "o"}], r"a.jsonl:1: 'instruction' is empty"),
    ("alpaca-input-not-a-string", [{"instruction": "i", "input": 3, "output": "o"}], r"'input' must be a string"),
    ("partial-record-after-shape", [{"instruction": "i", "output": "o"}, {"instruction": "i"}],
     r"a.jsonl:2: missing 'output'"),
    ("not-an-object", [{"prompt": "p", "completion": "c"}, [1]],
     r"a.jsonl:2: expected an object with \{prompt, completion\}, found list"),
]


@pytest.mark.parametrize("rows,message", [pytest.param(r, m, id=i) for i, r, m in BAD])
def test_bad_records_are_one_line_errors_naming_file_and_line(rows, message, tmp_path):
    with pytest.raises(DataError, match=message) as err:
        load_jsonl_task("t", CLS, write(tmp_path / "a.jsonl", rows), write(tmp_path / "b.jsonl", rows))
    assert "\n" not in str(err.value)


# -- Hugging Face datasets ------------------------------------------------------------------------

@pytest.fixture
def datasets():
    return pytest.importorskip("datasets", reason="the optional 'datasets' package is not installed (pip install datasets)")


@pytest.mark.parametrize("shape", ["alpaca", "completion", "chat", "sharegpt", "parts"])
def test_from_hf_equals_the_jsonl_file(shape, tmp_path, datasets):
    rows = shapes(system="Be brief.")[shape]
    want, _ = examples_from_jsonl(write(tmp_path / "a.jsonl", rows))
    table = datasets.Dataset.from_list(rows)  # Arrow fills the missing 'input' keys with None
    task = from_hf(datasets.DatasetDict({"train": table, "test": table}), "t", "generation")
    assert list(task.pool) == want and list(task.test) == want
    assert task.meta["shape"] == {"parts": "chat"}.get(shape, shape)
    assert from_hf(table, "t", CLS, test=table).pool == task.pool


def test_from_hf_errors_name_the_split_and_row(datasets):
    table = datasets.Dataset.from_list([{"prompt": "p", "answer": "a"}, {"prompt": "p", "answer": None}])
    with pytest.raises(DataError, match=r"qa \[train\] row 1: missing 'answer'"):
        from_hf(table, "t", CLS, test=table, source="qa")
    odd = datasets.Dataset.from_list([{"text": "p"}])
    with pytest.raises(DataError, match=r"dataset \[train\] row 0: unknown record shape \(keys: text\)"):
        from_hf(odd, "t", CLS, test=odd)
    with pytest.raises(DataError, match=r"no split 'test' \(splits: train, validation\)"):
        from_hf(datasets.DatasetDict({"train": table, "validation": table}), "t", CLS)
    with pytest.raises(DataError, match="pass its test set as test="):
        from_hf(table, "t", CLS)
    with pytest.raises(DataError, match="unknown task kind 'regression'"):
        from_hf(table, "t", "regression", test=table)


def test_hf_format_in_a_stream_file(tmp_path, datasets):
    rows = shapes()["completion"]
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows),
                          "validation": datasets.Dataset.from_list(rows[:1])}).save_to_disk(str(tmp_path / "qa"))
    spec = tmp_path / "s.yaml"
    spec.write_text("tasks:\n  - {name: qa, kind: generation, format: hf, path: qa, test_split: validation}\n")
    stream, _ = load_stream_file(spec)
    want, _ = examples_from_jsonl(write(tmp_path / "a.jsonl", rows))
    assert list(stream[0].pool) == want and list(stream[0].test) == want[:1]
    for entry, message in [("path: qa", "no split 'test'"), ("path: none", "none: dataset folder not found"),
                           ("path: qa, hub: x/y", "exactly one of 'path'"), ("", "exactly one of 'path'"),
                           ("path: qa, config: c", "'config' names a configuration of a 'hub' dataset"),
                           ("path: qa, train: a.jsonl", "unknown key 'train' for format 'hf'")]:
        spec.write_text(f"tasks:\n  - {{name: qa, kind: generation, format: hf, {entry}}}\n".replace(", }", "}"))
        with pytest.raises(DataError, match=message):
            load_stream_file(spec)


def test_hf_format_without_datasets_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    spec = tmp_path / "s.yaml"
    spec.write_text("tasks:\n  - {name: qa, kind: generation, format: hf, path: qa}\n")
    with pytest.raises(DataError, match=r"pip install datasets"):
        load_stream_file(spec)


# -- labels, digests and the task memory ----------------------------------------------------------


def test_stream_file_labels(tmp_path):
    write(tmp_path / "a.jsonl", [{"prompt": "Is 2 even?", "answer": " yes"}, {"prompt": "Is 3 even?", "answer": " no"}])
    spec = tmp_path / "s.yaml"
    entry = "tasks:\n  - {{name: a, kind: {kind}, format: jsonl, train: a.jsonl, test: a.jsonl, labels: {labels}}}\n"
    spec.write_text(entry.format(kind="classification", labels="['yes', 'no']"))
    assert load_stream_file(spec)[0][0].labels == ("yes", "no")
    for kind, labels, message in [("classification", "['yes']", r"training example 1 has the answer ' no', which is not"),
                                  ("classification", "[yes, no]", "quote them"),
                                  ("classification", "[]", "non-empty list"),
                                  ("generation", "['yes', 'no']", "'labels' is for classification tasks")]:
        spec.write_text(entry.format(kind=kind, labels=labels))
        with pytest.raises(DataError, match=message):
            load_stream_file(spec)


def test_digests_of_prompt_answer_data_are_unchanged_and_chat_turns_count():
    ex = (Example("p", "a"),)
    old = Stream("s", (Task("t", CLS, ex, ex),)).digest()
    assert old == "969a3c93427698af"  # the digest the code before chat examples gave
    one = Example("User:\nhi\n\nAssistant:\n", "a", (("user", "hi"),))
    two = Example("User:\nhi\n\nAssistant:\n", "a", (("User", "hi"),))
    assert Stream("s", (Task("t", CLS, (one,), ex),)).digest() != Stream("s", (Task("t", CLS, (two,), ex),)).digest()


def test_chat_turns_survive_the_task_memory(tmp_path):
    from tsr.cl.memory import TaskRecord, load_record, save_record

    chat = Example("User:\nhi\n\nAssistant:\n", "yo", (("system", "s"), ("user", "hi")))
    replay = (chat, Example("p", " a"))
    folder = save_record(tmp_path, TaskRecord(0, "t", "generation", None, replay, {"w": torch.zeros(2)}))
    assert load_record(folder).replay == replay
    assert json.loads((folder / "replay.jsonl").read_text().splitlines()[1]) == {"prompt": "p", "answer": " a"}


# -- end to end ---------------------------------------------------------------------------------


def test_tsr_run_on_a_stream_whose_tasks_use_different_formats(tmp_path, capsys):
    """``tsr run`` (ER on the bundled base, two steps a task) on four tasks in the four record
    shapes; chat turns reach the task memory. (Hugging Face folders: test_hf_format_in_a_stream_file.)"""
    from tsr.interface.cli import main

    nums = range(8)
    write(tmp_path / "parity.jsonl", [{"instruction": "Is the number even?", "input": str(n),
                                       "output": "yes" if n % 2 == 0 else "no"} for n in nums])
    write(tmp_path / "chat.jsonl", [{"messages": [{"role": "system", "content": "Reply with the number."},
                                                  {"role": "user", "content": f"{n} plus one?"},
                                                  {"role": "assistant", "content": str(n + 1)}]} for n in nums])
    write(tmp_path / "double.jsonl", [{"prompt": f"Double {n}:", "completion": f" {2 * n}"} for n in nums])
    write(tmp_path / "copy.jsonl", [{"prompt": f"Repeat {n}:", "answer": f" {n}"} for n in nums])
    spec = write(tmp_path / "stream.yaml", ["name: mixed", "tasks:"] + [
        f"  - {{name: {name}, kind: {kind}, format: jsonl, train: {name}.jsonl, test: {name}.jsonl}}"
        for name, kind in (("parity", "classification"), ("chat", "generation"), ("double", "generation"),
                           ("copy", "generation"))])
    code = main(["run", f"stream.source={spec}", f"out_dir={tmp_path / 'runs'}", "name=mixed", "model.threads=1",
                 "train.steps=2", "stream.budget=4", "stream.test_cap=4", "stream.replay_per_task=4",
                 "stream.max_length=64", "method.name=er", "model.compile=false", "--quiet"])
    assert code == 0, capsys.readouterr()
    run = tmp_path / "runs" / "mixed"
    results = json.loads((run / "results.json").read_text())
    assert results["tasks"] == ["parity", "chat", "double", "copy"]
    replay = [json.loads(line) for line in (run / "memory" / "01-chat" / "replay.jsonl").read_text().splitlines()]
    assert len(replay) == 4 and all(r["messages"][0] == ["system", "Reply with the number."] for r in replay)
