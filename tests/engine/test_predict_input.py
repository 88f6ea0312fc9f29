"""`tsr predict` records the text the model read (``input``, ``input_cut``), and that text fed to
the exported adapter in plain PEFT gives the same greedy answers (docs/deploy.md's snippet)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tsr.engine.answer_file import predict
from tsr.engine.learner_dir import learn
from tsr.interface.cli import main

from toy import WORDS

TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</{{ m['role'] }}>{% endfor %}"
            "{% if add_generation_prompt %}<assistant>{% endif %}")
NEW_TOKENS = 6


def chat(words: list[str], answer: bool = True) -> dict:
    turns = [{"role": "user", "content": f"Repeat: {' '.join(words)}"}]
    return {"messages": turns + ([{"role": "assistant", "content": " " + " ".join(words)}] if answer else [])}


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def chat_learner(model_factory, tmp_path_factory):
    """A learner on a copy of the tiny base whose tokenizer has a chat template, taught a chat task."""
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("chat-learner")
    base = root / "base"
    shutil.copytree(model_factory("qwen2"), base)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(str(base))
    pairs = [[WORDS[i % 20], WORDS[(3 * i + 1) % 20]] for i in range(40)]
    task = root / "task"
    task.mkdir()
    jsonl(task / "train.jsonl", [chat(p) for p in pairs[:30]])
    jsonl(task / "test.jsonl", [chat(p) for p in pairs[30:]])
    learn(root / "learner", task, name="repeat", kind="generation",
          overrides=[f"model.path={base}", "model.compile=false", "model.threads=1", "train.steps=8",
                     "train.lr=3e-3", "stream.budget=10", "stream.replay_per_task=6", "stream.test_cap=4",
                     "stream.max_length=48", "method.name=seqft"])
    return root / "learner", base, tokenizer


def test_predict_records_the_text_the_model_read_and_peft_reproduces_it(chat_learner, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    learner, base, tokenizer = chat_learner
    long_prompt = "Repeat: " + " ".join(WORDS * 3)  # more tokens than max_length=48 leaves
    records = [chat(["apple", "river"]), chat(["stone", "cloud"], answer=False), {"prompt": "Repeat: tiger lemon"},
               {"prompt": long_prompt}]
    out = tmp_path / "answers.jsonl"
    predict(learner, jsonl(tmp_path / "in.jsonl", records), out, max_new_tokens=NEW_TOKENS)
    rows = [json.loads(line) for line in out.open()]

    for row, record in zip(rows[:2], records[:2]):  # chat records: the chat template's text, not the plain one
        turns = [m for m in record["messages"] if m["role"] == "user"]
        assert row["input"] == tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
        assert row["input"] != row["prompt"] and "input_cut" not in row
    assert "input" not in rows[2] and "input_cut" not in rows[2]  # read as written
    ids = tokenizer(long_prompt, add_special_tokens=False)["input_ids"]
    assert "input" not in rows[3] and rows[3]["input_cut"] == len(ids) - 47  # max_length - 1 tokens kept

    assert main(["export", str(learner / "run"), "--out", str(tmp_path / "adapter")]) == 0
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    peft = PeftModel.from_pretrained(model, str(tmp_path / "adapter")).eval()
    eos = tokenizer.eos_token_id
    for row in rows:  # the snippet of docs/deploy.md
        text = row.get("input", row["prompt"])
        read = tokenizer(text, add_special_tokens=False)["input_ids"][row.get("input_cut", 0):]
        with torch.no_grad():
            got = peft.generate(input_ids=torch.tensor([read]), attention_mask=torch.ones(1, len(read), dtype=torch.long),
                                max_new_tokens=NEW_TOKENS, do_sample=False, eos_token_id=eos, pad_token_id=eos)
        answer = tokenizer.decode(got[0, len(read):], skip_special_tokens=True)
        assert answer == row["prediction"], row
    assert any(row["prediction"].strip() for row in rows)
