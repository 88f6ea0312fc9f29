"""The bad-input corpus, part two: run folders corrupted before a resume, and folders that
are not runs, given to `tsr run`, `tsr show` and `tsr table` (the rules of every case:
tests/interface/test_bad_inputs.py)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import badinputs
from badinputs import case, refuse, safetensors_bytes, write
from tsr.atomic import sealed

built = badinputs.built  # the module-scoped fixture: the toy stream and two real runs

# -- run folders corrupted before a resume, `tsr show` and `tsr table` -----------------------------


def corrupt(which: str, edit, command: str = "run"):
    """A copy of the module's ``which`` run with ``edit(run_folder)`` applied, then ``tsr <command>``
    on it: ``run`` re-runs the same config (a resume), ``show`` and ``table`` read the folder."""
    def build(env, tmp):
        folder = tmp / "runs" / which
        shutil.copytree(env.runs / which, folder)
        edit(folder)
        if command == "run":
            return env.args(tmp / "runs", which)
        return [command, str(folder)]
    return build


def exported(which: str, edit, task: str | None = None):
    """A copy of the module's ``which`` run with ``edit`` applied, then ``tsr export`` of it (its final
    adapter, or the snapshot of ``task``)."""
    def build(env, tmp):
        folder = tmp / "runs" / which
        shutil.copytree(env.runs / which, folder)
        edit(folder)
        return ["export", str(folder), "--out", str(tmp / "exported"), *(["--task", task] if task else [])]
    return build


def output(command: str, rel: str):
    """``tsr <command> ... --out runs/<rel>``, on a copy of the module's runs: an output path inside a
    run folder."""
    def build(env, tmp):
        shutil.copytree(env.runs, tmp / "runs")
        first = {"report": [str(tmp / "runs")], "export": [str(tmp / "runs" / "finished")]}.get(command, [])
        return [command, *first, "--out", str(tmp / "runs" / rel)]
    return build


def put(rel: str, content: str | bytes):
    return lambda folder: write(folder / rel, content)


def put_listed(rel: str, content: bytes):
    """Write a tensor file and record its checksum where the folder lists it (the checkpoint's
    state.json, the record's record.json): a crafted file that passes the checksum, so that the
    reader's own checks are what refuses it."""
    def edit(folder):
        import hashlib

        write(folder / rel, content)
        manifest = folder / rel.rsplit("/", 1)[0] / ("state.json" if rel.startswith("checkpoint/") else "record.json")
        data = json.loads(manifest.read_text(encoding="utf-8"))
        data["sha256"][rel.rsplit("/", 1)[1]] = hashlib.sha256(content).hexdigest()
        manifest.write_text(json.dumps(sealed(data)), encoding="utf-8")  # consistent, as a crafted file would be
    return edit


def flip(rel: str):
    """Flip the bits of one byte near a file's end (inside a tensor's values: the file still parses)."""
    def edit(folder):
        data = bytearray((folder / rel).read_bytes())
        data[-3] ^= 0xFF
        (folder / rel).write_bytes(bytes(data))
    return edit


def linked(rel: str):
    """Move ``rel`` (a file or folder of the run, or the run folder itself: "") out of the run folder
    and leave a symbolic link to it in its place: a folder someone sent, whose resume would write
    outside it."""
    def edit(folder):
        path = folder / rel if rel else folder
        outside = folder.parent.parent / "outside" / (rel.replace("/", "_") or folder.name)
        outside.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), str(outside))
        path.symlink_to(outside, target_is_directory=outside.is_dir())
    return edit


def truncate(rel: str):
    """Keep the first half of a file."""
    def edit(folder):
        data = (folder / rel).read_bytes()
        (folder / rel).write_bytes(data[: len(data) // 2])
    return edit


def tear_line(rel: str, number: int):
    """Cut line ``number`` of a log in half (an edit; a crash can only tear the last line)."""
    def edit(folder):
        lines = (folder / rel).read_bytes().split(b"\n")
        lines[number - 1] = lines[number - 1][: len(lines[number - 1]) // 2]
        (folder / rel).write_bytes(b"\n".join(lines))
    return edit


def remove(rel: str):
    def edit(folder):
        path = folder / rel
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return edit


def edit_json(rel: str, change):
    def edit(folder):
        data = json.loads((folder / rel).read_text(encoding="utf-8"))
        (folder / rel).write_text(json.dumps(change(data)), encoding="utf-8")
    return edit


def _set(data: dict, **fields) -> dict:
    return {**data, **fields}


def _drop(data: dict, key: str) -> dict:
    return {k: v for k, v in data.items() if k != key}


def edited_answer(rel: str):
    """Change the answer of the first example of a replay file, keeping it valid JSONL: the edit a
    resume once trained on (issue 77)."""
    def edit(folder):
        lines = (folder / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        first = json.loads(lines[0])
        first["answer"] = " no" if first["answer"].strip() != "no" else " yes"
        (folder / rel).write_text(json.dumps(first) + "\n" + "".join(lines[1:]), encoding="utf-8")
    return edit


def hard_linked(rel: str):
    """Replace ``rel`` with a hard link to a file outside the run folder (same content): a resume
    that appended to it would change that file too."""
    def edit(folder):
        outside = folder.parent.parent / "outside" / rel.replace("/", "_")
        outside.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder / rel), str(outside))
        os.link(outside, folder / rel)
    return edit


def both(*edits):
    def edit(folder):
        for one in edits:
            one(folder)
    return edit


def _drop_listed(data: dict, name: str) -> dict:
    return {**data, "sha256": {k: v for k, v in data["sha256"].items() if k != name}}


HUGE_HEADER = safetensors_bytes(b"{}", length=2 ** 60)
GARBAGE_HEADER = safetensors_bytes(b"not json at all!")
OUT_OF_RANGE = safetensors_bytes({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 4)
WRONG_NAMES = safetensors_bytes({"not.a.lora.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
                                b"\0" * 4)

CORRUPT_CHECKPOINT = "corrupt checkpoint"
CORRUPT_RECORD = "corrupt task-memory record"
CORRUPT_RESULTS = "results.json: corrupt results file"

RUN_CASES = [
    # the interrupted run, resumed with the same command
    case("resume-run-json-malformed", corrupt("interrupted", truncate("run.json")),
         "run.json: unreadable run metadata"),
    case("resume-run-json-not-an-object", corrupt("interrupted", put("run.json", "[1, 2]")),
         "run.json: unreadable run metadata (expected an object, found list)"),
    case("resume-run-json-other-fingerprint", corrupt("interrupted", edit_json(
        "run.json", lambda d: _set(d, fingerprint="0123456789"))), "interrupted: holds a run of a different config"),
    case("resume-run-json-other-data-digest", corrupt("interrupted", edit_json(
        "run.json", lambda d: _set(d, data_digest="0123456789abcdef"))), "interrupted: holds a run of this config on "
                                                                         "other data"),
    case("resume-results-json-truncated", corrupt("interrupted", truncate("results.json")), CORRUPT_RESULTS),
    case("resume-results-json-wrong-structure", corrupt("interrupted", put("results.json", '{"tasks": 3}')),
         CORRUPT_RESULTS + " (missing 'kinds')"),
    case("resume-progress-jsonl-torn-inside", corrupt("interrupted", tear_line("progress.jsonl", 2)),
         "progress.jsonl:2: malformed JSON line"),  # a torn last line is a crash's, and is dropped
    case("resume-checkpoint-state-malformed", corrupt("interrupted", truncate("checkpoint/state.json")),
         "checkpoint/state.json: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-state-missing-completed", corrupt("interrupted", edit_json(
        "checkpoint/state.json", lambda d: _drop(d, "completed"))),
         f"checkpoint/state.json: {CORRUPT_CHECKPOINT} (missing 'completed')"),
    case("resume-checkpoint-state-not-an-object", corrupt("interrupted", put("checkpoint/state.json", "[]")),
         "checkpoint/state.json: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-folder-missing", corrupt("interrupted", remove("checkpoint")),
         "checkpoint: checkpoint missing, but results.json records finished tasks"),
    case("resume-checkpoint-adapter-truncated", corrupt("interrupted", truncate("checkpoint/adapter.safetensors")),
         "checkpoint/adapter.safetensors: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-adapter-missing", corrupt("interrupted", remove("checkpoint/adapter.safetensors")),
         f"checkpoint/adapter.safetensors: {CORRUPT_CHECKPOINT} (No such file or directory)"),
    case("resume-checkpoint-adapter-huge-header-length",
         corrupt("interrupted", put_listed("checkpoint/adapter.safetensors", HUGE_HEADER)),
         f"checkpoint/adapter.safetensors: {CORRUPT_CHECKPOINT} (Error while deserializing: header too large)"),
    case("resume-checkpoint-adapter-garbage-header",
         corrupt("interrupted", put_listed("checkpoint/adapter.safetensors", GARBAGE_HEADER)),
         f"checkpoint/adapter.safetensors: {CORRUPT_CHECKPOINT} (Error while deserializing: invalid JSON in header"),
    case("resume-checkpoint-adapter-offsets-out-of-range",
         corrupt("interrupted", put_listed("checkpoint/adapter.safetensors", OUT_OF_RANGE)),
         "checkpoint/adapter.safetensors: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-adapter-wrong-tensor-names",
         corrupt("interrupted", put_listed("checkpoint/adapter.safetensors", WRONG_NAMES)),
         "checkpoint/adapter.safetensors: does not fit this run's model and method"),
    case("resume-checkpoint-adapter-flipped-bytes", corrupt("interrupted", flip("checkpoint/adapter.safetensors")),
         f"checkpoint/adapter.safetensors: {CORRUPT_CHECKPOINT} (damaged: its SHA-256 differs from the one recorded"),
    case("resume-checkpoint-method-state-flipped-bytes", corrupt("interrupted", flip("checkpoint/method.safetensors")),
         f"checkpoint/method.safetensors: {CORRUPT_CHECKPOINT} (damaged: its SHA-256 differs"),
    case("resume-checkpoint-checksums-malformed", corrupt("interrupted", edit_json(
        "checkpoint/state.json", lambda d: _set(d, sha256=["x"]))),
         f"checkpoint/state.json: {CORRUPT_CHECKPOINT} ('sha256' must map file names to hex digests)"),
    case("resume-memory-snapshot-flipped-bytes", corrupt("interrupted", flip("memory/00-parity/snapshot.safetensors")),
         f"00-parity/snapshot.safetensors: {CORRUPT_RECORD} (damaged: its SHA-256 differs"),
    case("resume-memory-signature-listed-but-missing",
         corrupt("interrupted", remove("memory/00-parity/signature.safetensors")),
         f"00-parity/signature.safetensors: {CORRUPT_RECORD} (No such file or directory)"),
    case("resume-checkpoint-method-state-truncated", corrupt("interrupted", truncate("checkpoint/method.safetensors")),
         "checkpoint/method.safetensors: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-rng-garbage-header",
         corrupt("interrupted", put_listed("checkpoint/rng.safetensors", GARBAGE_HEADER)),
         "checkpoint/rng.safetensors: " + CORRUPT_CHECKPOINT),
    case("resume-memory-record-missing", corrupt("interrupted", remove("memory/00-parity")),
         "memory/00-parity: task-memory record missing"),
    case("resume-memory-snapshot-truncated", corrupt("interrupted", truncate("memory/00-parity/snapshot.safetensors")),
         "00-parity/snapshot.safetensors: " + CORRUPT_RECORD),
    case("resume-memory-snapshot-huge-header-length",
         corrupt("interrupted", put_listed("memory/00-parity/snapshot.safetensors", HUGE_HEADER)),
         "00-parity/snapshot.safetensors: " + CORRUPT_RECORD),
    case("resume-memory-snapshot-missing", corrupt("interrupted", remove("memory/00-parity/snapshot.safetensors")),
         f"00-parity/snapshot.safetensors: {CORRUPT_RECORD} (No such file or directory)"),
    case("resume-memory-signature-garbage-header",
         corrupt("interrupted", put_listed("memory/00-parity/signature.safetensors", GARBAGE_HEADER)),
         "00-parity/signature.safetensors: " + CORRUPT_RECORD),
    case("resume-memory-record-json-malformed", corrupt("interrupted", truncate("memory/00-parity/record.json")),
         "00-parity/record.json: " + CORRUPT_RECORD),
    case("resume-memory-record-json-other-task", corrupt("interrupted", edit_json(
        "memory/00-parity/record.json", lambda d: _set(d, index=5, name="vowel"))),
         f"00-parity/record.json: {CORRUPT_RECORD} (it names task 5 'vowel', not task 0 'parity')"),
    case("resume-memory-replay-malformed-line", corrupt("interrupted", put("memory/00-parity/replay.jsonl", "{\n")),
         "00-parity/replay.jsonl: " + CORRUPT_RECORD),
    case("resume-memory-replay-wrong-fields", corrupt("interrupted", put("memory/00-parity/replay.jsonl",
                                                                         '{"q": "a"}\n')),
         "00-parity/replay.jsonl: " + CORRUPT_RECORD),
    # edits that once changed a later score (exit 0), refused by the checksums (issue 77, item 5)
    case("resume-memory-replay-answer-edited", corrupt("interrupted", edited_answer("memory/00-parity/replay.jsonl")),
         f"00-parity/replay.jsonl: {CORRUPT_RECORD} (damaged or edited: its SHA-256 differs"),
    case("resume-memory-replay-edited-checksum-removed", corrupt("interrupted", both(
        edited_answer("memory/00-parity/replay.jsonl"),
        edit_json("memory/00-parity/record.json", lambda d: _drop_listed(d, "replay.jsonl")))),
         f"00-parity/record.json: {CORRUPT_RECORD} (no SHA-256 recorded for replay.jsonl"),
    case("resume-memory-record-kind-edited", corrupt("interrupted", edit_json(
        "memory/00-parity/record.json", lambda d: _set(d, kind="generation"))),
         f"00-parity/record.json: {CORRUPT_RECORD} (edited: its content differs from the checksum recorded"),
    case("resume-memory-record-seal-removed", corrupt("interrupted", edit_json(
        "memory/00-parity/record.json", lambda d: _drop(d, "self_sha256"))),
         f"00-parity/record.json: {CORRUPT_RECORD} (no self_sha256 recorded"),
    case("resume-memory-snapshot-checksum-removed", corrupt("interrupted", both(
        flip("memory/00-parity/snapshot.safetensors"),
        edit_json("memory/00-parity/record.json", lambda d: _set(d, sha256={})))),
         f"00-parity/record.json: {CORRUPT_RECORD} (no SHA-256 recorded for replay.jsonl"),
    case("resume-checkpoint-completed-edited", corrupt("interrupted", edit_json(
        "checkpoint/state.json", lambda d: _set(d, completed=0))),
         f"checkpoint/state.json: {CORRUPT_CHECKPOINT} (edited: its content differs"),
    case("resume-checkpoint-checksums-removed", corrupt("interrupted", both(
        flip("checkpoint/adapter.safetensors"), edit_json("checkpoint/state.json", lambda d: _drop(d, "sha256")))),
         f"checkpoint/state.json: {CORRUPT_CHECKPOINT} (no SHA-256 recorded for adapter.safetensors"),
    case("resume-checkpoint-one-checksum-removed", corrupt("interrupted", edit_json(
        "checkpoint/state.json", lambda d: _drop_listed(d, "rng.safetensors"))),
         f"checkpoint/state.json: {CORRUPT_CHECKPOINT} (no SHA-256 recorded for rng.safetensors"),
    case("resume-checkpoint-seal-removed", corrupt("interrupted", edit_json(
        "checkpoint/state.json", lambda d: _drop(d, "self_sha256"))),
         f"checkpoint/state.json: {CORRUPT_CHECKPOINT} (no self_sha256 recorded"),
    case("export-checkpoint-checksums-removed", exported("finished", both(
        flip("checkpoint/adapter.safetensors"), edit_json("checkpoint/state.json", lambda d: _drop(d, "sha256")))),
         "checkpoint/state.json: corrupt or damaged adapter checkpoint (no SHA-256 recorded for adapter.safetensors"),
    case("export-task-snapshot-checksum-removed", exported("finished", both(
        flip("memory/00-parity/snapshot.safetensors"),
        edit_json("memory/00-parity/record.json", lambda d: _drop_listed(d, "snapshot.safetensors"))), "parity"),
         "00-parity/snapshot.safetensors: corrupt, damaged or missing adapter file (edited"),
    # hard links: a file someone shares with another path is never written through (issue 77, item 6)
    case("resume-progress-jsonl-a-hard-link", corrupt("interrupted", hard_linked("progress.jsonl")),
         "interrupted/progress.jsonl: is a hard link inside the run folder"),
    case("resume-results-json-a-hard-link", corrupt("interrupted", hard_linked("results.json")),
         "interrupted/results.json: is a hard link inside the run folder"),
    # output flags that name a run's own file would replace it (issue 77, item 6)
    case("report-out-a-runs-results-json", output("report", "finished/results.json"),
         "finished/results.json: is one of the files of the run folder"),
    case("signatures-out-a-runs-adapter", output("signatures", "finished/checkpoint/adapter.safetensors"),
         "finished/checkpoint/adapter.safetensors: is one of the files of the run folder"),
    case("export-out-a-runs-memory", output("export", "finished/memory/00-parity"),
         "finished/memory/00-parity: is one of the files of the run folder"),
    # symbolic links inside a run folder (or the folder itself a link): nothing is written through them
    case("resume-progress-jsonl-a-symlink", corrupt("interrupted", linked("progress.jsonl")),
         "interrupted/progress.jsonl: is a symbolic link inside the run folder; tsr writes it only through plain "
         "files and folders"),
    case("resume-memory-folder-a-symlink", corrupt("interrupted", linked("memory")),
         "interrupted/memory: is a symbolic link inside the run folder"),
    case("resume-memory-record-a-symlink", corrupt("interrupted", linked("memory/00-parity")),
         "interrupted/memory/00-parity: is a symbolic link inside the run folder"),
    case("resume-checkpoint-a-symlink", corrupt("interrupted", linked("checkpoint")),
         "interrupted/checkpoint: is a symbolic link inside the run folder"),
    case("resume-results-json-a-symlink", corrupt("interrupted", linked("results.json")),
         "interrupted/results.json: is a symbolic link inside the run folder"),
    case("resume-run-folder-a-symlink", corrupt("interrupted", linked("")),
         "runs/interrupted: is a symbolic link; tsr writes a run folder only through plain folders"),
    # the finished run: the same command reports it, `tsr show` and `tsr table` read it
    case("rerun-finished-results-json-truncated", corrupt("finished", truncate("results.json")), CORRUPT_RESULTS),
    case("rerun-finished-run-json-malformed", corrupt("finished", put("run.json", "{")),
         "run.json: unreadable run metadata"),
    case("show-results-json-truncated", corrupt("finished", truncate("results.json"), "show"), CORRUPT_RESULTS),
    case("show-results-json-rows-too-short", corrupt("finished", edit_json(
        "results.json", lambda d: _set(d, acc=[[0.5]] * 3, loss=[[1.0]] * 3)), "show"),
         CORRUPT_RESULTS + " ('acc' must be a list of rows of 3 scores)"),
    case("show-results-json-kinds-missing", corrupt("finished", edit_json(
        "results.json", lambda d: _drop(d, "kinds")), "show"), CORRUPT_RESULTS + " (missing 'kinds')"),
    case("show-results-json-too-many-rows", corrupt("finished", edit_json(
        "results.json", lambda d: _set(d, acc=d["acc"] * 2, loss=d["loss"] * 2)), "show"),
         CORRUPT_RESULTS + " ('acc' and 'loss' must have the same number of rows, at most 3)"),
    case("show-results-json-unknown-kind", corrupt("finished", edit_json(
        "results.json", lambda d: _set(d, kinds=["classification", "poetry", "generation"])), "show"),
         CORRUPT_RESULTS + " ('kinds' must list"),
    case("table-results-json-non-numeric-score", corrupt("finished", edit_json(
        "results.json", lambda d: _set(d, acc=[["x"] * 3] * 3)), "table"),
         CORRUPT_RESULTS + " ('acc' holds 'x', which is not a score)"),
    case("table-config-yaml-malformed", corrupt("finished", put("config.yaml", "seed: 0\nmodel: {path: [\n"), "table"),
         "config.yaml:3: malformed YAML"),
    case("table-config-yaml-not-a-mapping", corrupt("finished", put("config.yaml", "- a\n- b\n"), "table"),
         "config.yaml: not a run config"),
    case("table-config-yaml-section-not-a-mapping", corrupt("finished", put("config.yaml", "model: qwen\n"), "table"),
         "config.yaml: not a run config"),
    case("table-config-yaml-python-tag", corrupt("finished", put(
        "config.yaml", "model: !!python/object/apply:os.system ['echo hi']\n"), "table"),
         "config.yaml:1: malformed YAML (could not determine a constructor"),
    case("table-config-yaml-not-utf8", corrupt("finished", put("config.yaml", b"seed: \xff\n"), "table"),
         "config.yaml:1: not UTF-8 text"),
]  # an interrupted run is not bad input for `tsr table`: it is listed apart (tests/interface/test_cli.py)


@pytest.mark.parametrize("build,fragment", RUN_CASES)
def test_bad_run_folder(build, fragment, built, tmp_path, capsys):
    refuse(capsys, tmp_path, build(built, tmp_path), fragment)


# -- `tsr show` / `tsr table` on folders that are not runs ------------------------------------------


def not_a_run(command: str, make):
    def build(env, tmp):
        return [command, str(make(tmp))]
    return build


def folder(rel: str, files: dict[str, str | bytes] | None = None):
    def make(tmp):
        (tmp / rel).mkdir(parents=True, exist_ok=True)
        for name, content in (files or {}).items():
            write(tmp / rel / name, content)
        return tmp / rel
    return make


NOT_A_RUN_CASES = [
    case("show-empty-folder", not_a_run("show", folder("empty")), "empty/results.json: no results.json"),
    case("show-missing-folder", not_a_run("show", lambda tmp: tmp / "none"), "none: no results.json"),
    case("show-plain-text-file", not_a_run("show", lambda tmp: write(tmp / "notes.txt", "hello\n")),
         "notes.txt: corrupt results file"),
    case("show-results-json-a-list", not_a_run("show", folder("r", {"results.json": "[1, 2]"})),
         "r/results.json: corrupt results file (expected an object, found list)"),
    case("show-results-json-not-utf8", not_a_run("show", folder("r", {"results.json": b"{\xff}"})),
         "r/results.json: corrupt results file ('utf-8' codec can't decode"),
    case("table-empty-folder", not_a_run("table", folder("empty")), "no runs under "),
    case("table-missing-folder", not_a_run("table", lambda tmp: tmp / "none"), "none: not a run directory"),
    case("table-plain-text-file", not_a_run("table", lambda tmp: write(tmp / "notes.txt", "hello\n")),
         "notes.txt: not a run directory"),
    case("table-folder-with-bad-results-json", not_a_run("table", folder("runs", {"x/results.json": "{"})),
         "x/results.json: corrupt results file"),
]


@pytest.mark.parametrize("build,fragment", NOT_A_RUN_CASES)
def test_not_a_run(build, fragment, tmp_path, capsys):
    refuse(capsys, tmp_path, build(None, tmp_path), fragment)
