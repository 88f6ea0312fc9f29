"""The bad-input corpus, part three: bad `tsr predict` and `tsr learn` calls on a learner, and
learner folders someone sent (the rules of every case: tests/interface/test_bad_inputs.py); a
learner whose saved config asks for the model's own code runs only with the caller's
--trust-remote-code."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from badinputs import jsonl, refuse, write
from tsr.interface.cli import main
from tsr.config import load_config
from tsr.engine.learner_dir import learn
from tsr.engine.run import portable_fingerprint


@pytest.fixture(scope="module")
def taught(tiny_model, toy_stream, tmp_path_factory):
    """A learner taught one task (parity), and a prompts file."""
    root = tmp_path_factory.mktemp("learner")
    settings = [f"model.path={tiny_model}", "model.compile=false", "model.threads=1", "train.steps=3",
                "stream.budget=8", "stream.replay_per_task=4", "stream.test_cap=4", "stream.max_length=48",
                "method.probe_batches=1"]
    learn(root / "learner", toy_stream.parent / "parity", name="parity", kind="classification", overrides=settings)
    prompts = write(root / "in.jsonl", jsonl([{"prompt": "Is 12 even? Answer:"}, {"prompt": "Is 3 even? Answer:"}]))
    return root / "learner", prompts, toy_stream.parent


def copy(taught, tmp):
    folder = tmp / "learner"
    shutil.copytree(taught[0], folder)
    return folder


def reconfigured(folder, **model) -> None:
    """Set ``model.*`` keys in learner.yaml and record the new config's fingerprint in the run: a
    consistent learner, as someone could send one."""
    data = yaml.safe_load((folder / "learner.yaml").read_text())
    data["model"].update(model)
    (folder / "learner.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    fixed = [f"out_dir={folder}", "name=run", f"stream.source={folder / 'stream.yaml'}"]
    if model.get("trust_remote_code"):  # only the command line may turn it on, never the file
        fixed.append("model.trust_remote_code=true")
    meta = json.loads((folder / "run" / "run.json").read_text())
    meta["fingerprint"] = portable_fingerprint(load_config(str(folder / "learner.yaml"), fixed))
    (folder / "run" / "run.json").write_text(json.dumps(meta))


def flip(path) -> None:
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside a tensor's values: the file still parses
    path.write_bytes(bytes(data))


def predict_args(folder, prompts, out, *extra):
    return ["predict", str(folder), str(prompts), "--out", str(out), *extra]


PREDICT_CASES = [
    ("batch-size-zero", lambda f, tmp: ["--batch-size", "0"], None, "--batch-size: must be >= 1 (got 0)"),
    ("batch-size-too-large", lambda f, tmp: ["--batch-size", "1025"], None, "--batch-size: must be at most 1024"),
    ("max-new-tokens-negative", lambda f, tmp: ["--max-new-tokens", "-1"], None, "--max-new-tokens: must be >= 1"),
    ("unknown-metric", lambda f, tmp: ["--metric", "rouge_l,bleu"], None,
     "--metric: unknown metric 'bleu' (valid: rouge_l, edit_sim, sari)"),
    ("out-is-a-folder", lambda f, tmp: (tmp / "answers").mkdir(), None, "answers: is a folder; give a file name"),
    ("out-under-a-file", lambda f, tmp: write(tmp / "answers", "x"), "answers/out.jsonl", "answers is not a folder"),
    ("learner-yaml-empty", lambda f, tmp: write(f / "learner.yaml", ""), None,
     "learner.yaml: empty or not a mapping of config keys; this learner's config is lost"),
    ("learner-yaml-a-list", lambda f, tmp: write(f / "learner.yaml", "- a\n"), None, "learner.yaml: empty or not a"),
    ("learner-yaml-edited", lambda f, tmp: write(f / "learner.yaml", (f / "learner.yaml").read_text().replace(
        "  r: 16\n", "  r: 8\n")), None, "learner.yaml: is not the config the learner's run was made with"),
    ("adapter-flipped-bytes", lambda f, tmp: flip(f / "run" / "checkpoint" / "adapter.safetensors"), None,
     "checkpoint/adapter.safetensors: corrupt or damaged adapter checkpoint (damaged: its SHA-256 differs"),
    # an output path that is the learner's own file would replace it (issue 77)
    ("out-is-the-learners-config", lambda f, tmp: None, "learner/learner.yaml",
     "learner/learner.yaml: is one of the files of the learner folder"),
    ("out-inside-the-learners-run", lambda f, tmp: None, "learner/run/results.json",
     "learner/run/results.json: is one of the files of the run folder"),
    ("asks-for-remote-code", lambda f, tmp: reconfigured(f, trust_remote_code=True), None,
     "learner.yaml: this learner's model runs its own code (model.trust_remote_code: true); pass "
     "--trust-remote-code if you trust the code of"),
]


@pytest.mark.parametrize("edit,out,fragment", [c[1:] for c in PREDICT_CASES], ids=[c[0] for c in PREDICT_CASES])
def test_a_bad_predict_call_is_one_line(taught, tmp_path, capsys, edit, out, fragment):
    folder = copy(taught, tmp_path)
    extra = edit(folder, tmp_path)
    argv = predict_args(folder, taught[1], tmp_path / (out or "answers"), *(extra if isinstance(extra, list) else []))
    refuse(capsys, tmp_path, argv, fragment)


def test_predict_into_a_read_only_folder_is_one_line(taught, tmp_path, tmpfs, capsys):
    ro = tmpfs("size=1m,ro")
    refuse(capsys, tmp_path, predict_args(taught[0], taught[1], ro / "answers.jsonl"),
           "answers.jsonl: cannot write into")


def test_bad_learn_calls_on_a_learner_someone_sent_are_one_line(taught, tmp_path, capsys):
    data = taught[2]
    folder = copy(taught, tmp_path)
    reconfigured(folder, trust_remote_code=True)
    refuse(capsys, tmp_path, ["learn", str(folder), str(data / "vowel")], "pass --trust-remote-code")
    folder = copy(taught, tmp_path / "b")
    write(folder / "learner.yaml", "")
    refuse(capsys, tmp_path, ["learn", str(folder), str(data / "vowel")], "learner.yaml: empty or not a mapping")
    folder = copy(taught, tmp_path / "c")
    write(folder / "stream.yaml", "- parity\n")
    refuse(capsys, tmp_path, ["learn", str(folder), str(data / "vowel")],
           "stream.yaml: not a learner's stream file")
    folder = copy(taught, tmp_path / "d")
    shutil.move(str(folder / "tasks" / "01-parity"), str(tmp_path / "elsewhere"))
    (folder / "tasks" / "01-parity").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    refuse(capsys, tmp_path, ["learn", str(folder), str(data / "vowel")],
           "tasks/01-parity: is a symbolic link inside the learner folder")


def test_remote_code_runs_only_with_the_callers_flag(taught, tmp_path, capsys):
    """A new learner asked for remote code by an override alone is refused; a learner that asks for
    it in its saved config predicts and learns with --trust-remote-code (the flag lets it run, and
    changes nothing else: the same answers as without remote code)."""
    folder, prompts, data = taught
    refuse(capsys, tmp_path, ["learn", str(tmp_path / "new"), str(data / "parity"), "model.trust_remote_code=true"],
           "model.trust_remote_code=true: this learner's model runs its own code")
    assert main(predict_args(folder, prompts, tmp_path / "plain.jsonl")) == 0
    mine = copy(taught, tmp_path)
    reconfigured(mine, trust_remote_code=True)
    assert main(predict_args(mine, prompts, tmp_path / "trusted.jsonl", "--trust-remote-code")) == 0
    assert (tmp_path / "trusted.jsonl").read_text() == (tmp_path / "plain.jsonl").read_text()
    assert main(["learn", str(mine), str(data / "vowel"), "--quiet", "--trust-remote-code"]) == 0


def renamed_task(folder) -> None:
    (folder / "stream.yaml").write_text((folder / "stream.yaml").read_text().replace("name: parity", "name: odd"))


def edited_answer(folder) -> None:
    path = folder / "tasks" / "01-parity" / "train.jsonl"
    path.write_text(path.read_text().replace('" yes"', '" no"', 1))


def edited_replay(path) -> None:
    """The first replay example's answer changed, the file still valid."""
    lines = path.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["answer"] = " no" if first["answer"].strip() != "no" else " yes"
    path.write_text(json.dumps(first) + "\n" + "".join(lines[1:]))


def hard_link(folder, rel: str) -> None:
    """``folder / rel`` becomes a hard link to a copy outside the learner folder: an append or an
    in-place write through it would change that copy too."""
    import os

    path, outside = folder / rel, folder.parent / f"outside-{rel.replace('/', '_')}"
    shutil.move(str(path), str(outside))
    os.link(outside, path)


LEARN_CASES = [  # a learner edited or damaged: refused before the new task is added (issue 77, item 4)
    ("learner-yaml-an-empty-mapping", lambda f: write(f / "learner.yaml", "{}\n"), "synth-trace:policy",
     "learner.yaml: is not the config the learner's run was made with"),
    ("learner-yaml-edited", lambda f: write(f / "learner.yaml", (f / "learner.yaml").read_text().replace(
        "  r: 16\n", "  r: 8\n")), None, "learner.yaml: is not the config the learner's run was made with"),
    ("stream-yaml-a-task-renamed", renamed_task, None,
     "stream.yaml: lists the tasks ['odd'], but the learner's run learnt ['parity'] in that order"),
    ("stored-data-edited", edited_answer, None, "tasks: the data of the tasks learnt (parity) changed since"),
    ("adapter-flipped-bytes", lambda f: flip(f / "run" / "checkpoint" / "adapter.safetensors"), None,
     "checkpoint/adapter.safetensors: corrupt checkpoint"),
    ("memory-record-missing", lambda f: shutil.rmtree(f / "run" / "memory" / "00-parity"), None,
     "memory/00-parity: task-memory record missing"),
    ("memory-replay-edited", lambda f: edited_replay(f / "run" / "memory" / "00-parity" / "replay.jsonl"), None,
     "00-parity/replay.jsonl: corrupt task-memory record (damaged or edited"),
    ("stream-yaml-a-hard-link", lambda f: hard_link(f, "stream.yaml"), None,
     "learner/stream.yaml: is a hard link inside the learner folder"),
    ("run-log-a-hard-link", lambda f: hard_link(f, "run/progress.jsonl"), None,
     "run/progress.jsonl: is a hard link inside the learner folder"),
]


@pytest.mark.parametrize("edit,data,fragment", [c[1:] for c in LEARN_CASES], ids=[c[0] for c in LEARN_CASES])
def test_a_refused_learn_call_changes_nothing(taught, tmp_path, capsys, edit, data, fragment):
    """The learner folder is checked whole (config against its run, stored data, checkpoint, task
    memory) before the new task is listed in stream.yaml or copied under tasks/; the line names
    the file to restore, not `name=` or `out_dir=`, which a learner does not take."""
    folder = copy(taught, tmp_path)
    edit(folder)
    refuse(capsys, tmp_path, ["learn", str(folder), data or str(taught[2] / "vowel")], fragment)
    assert not (folder / "tasks" / "02-vowel").exists() and not (folder / "tasks" / "02-policy").exists()
