"""`tsr audit answers RUN_DIR decode=true`: the predictions of a run made without them, decoded
from its task snapshots, are the predictions the same run makes with eval.predictions=true
eval.schedule=full (file for file); an interrupted decoding keeps the rounds it finished; a
round that does not reproduce the run's recorded accuracies is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

from badinputs import refuse
from tsr.analysis.answers import takeover
from tsr.engine.run import execute
from tsr.experiments.answers.decode import DECODED, decode_rounds
from tsr.interface.cli import main


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.jsonl"))}


def test_decoded_predictions_are_the_runs_own(make_config, tmp_path, capsys):
    plain = execute(make_config("method.name=seqft", f"out_dir={tmp_path / 'plain'}")).run.path
    kept = execute(make_config("method.name=seqft", "eval.predictions=true", "eval.schedule=full",
                               f"out_dir={tmp_path / 'kept'}")).run.path
    assert not (plain / "predictions").exists()
    assert main(["audit", "answers", str(plain), "decode=true"]) == 0
    decoded = _files(plain / DECODED)
    assert len(decoded) == 1 + 2 + 3  # after task t, tasks 0..t
    assert decoded == _files(kept / "predictions")
    assert takeover(plain, DECODED)["rows"] == takeover(kept)["rows"]
    assert json.loads((plain / "answers.json").read_text(encoding="utf-8"))["source"] == DECODED

    # interrupted after the first round: that round is kept as it was, the others are decoded again
    first, last = plain / DECODED / "after-00-parity", plain / DECODED / "after-02-copy"
    os.utime(first / "00-parity.jsonl", (1, 1))
    for folder in (plain / DECODED).iterdir():
        if folder != first:
            for f in folder.iterdir():
                f.unlink()
            folder.rmdir()
    heard: list[str] = []
    decode_rounds(plain, say=heard.append)
    assert (first / "00-parity.jsonl").stat().st_mtime == 1
    assert heard[0].endswith("decoded before, kept") and len(heard) == 3
    assert _files(plain / DECODED) == decoded and last.is_dir()

    # a recorded accuracy the snapshot does not give: the round is refused and not written
    results = json.loads((kept / "results.json").read_text(encoding="utf-8"))
    results["acc"][0][0] = 0.5 if results["acc"][0][0] != 0.5 else 0.25
    (kept / "results.json").write_text(json.dumps(results), encoding="utf-8")
    refuse(capsys, kept, ["audit", "answers", str(kept), "decode=true"], "is not its snapshot alone")


def test_decode_refuses_what_it_cannot_read(make_config, tmp_path, capsys):
    run = execute(make_config("method.name=seqft", "stream.test_cap=2", "train.steps=2")).run.path
    refuse(capsys, tmp_path, ["audit", "answers", str(tmp_path / "nothing"), "decode=true"], "not a tsr run")
    refuse(capsys, run, ["audit", "answers", str(run), "all_tasks=true"], "all_tasks")
    for folder in (run / "checkpoint", run / "memory"):
        for f in sorted(folder.rglob("*"), reverse=True):
            f.rmdir() if f.is_dir() else f.unlink()
        folder.rmdir()
    refuse(capsys, run, ["audit", "answers", str(run), "decode=true"], "nothing to decode")
