"""The bad-input corpus, part four: faults of the disk a run writes to, a full disk (ENOSPC) at
any write and a read-only one (an out_dir that is a file or lies under one: test_bad_inputs.py).
Each is one line and exit 2, what was saved stays saved, and running the same command again once
the disk is fixed ends as an uninterrupted run.

A full and a read-only disk are real where the machine lets the test mount a small tmpfs (as
root); a full disk at a chosen write is also injected, which runs everywhere.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from badinputs import TINY, snapshot
from tsr import atomic
from tsr.interface.cli import main


@pytest.fixture(scope="module")
def reference(tmp_path_factory, toy_stream):
    """The uninterrupted run of the command every case below runs, and that command."""
    def argv(out_dir: Path) -> list[str]:
        return ["run", f"stream.source={toy_stream}", f"out_dir={out_dir}", "name=r", *TINY, "--quiet"]

    out = tmp_path_factory.mktemp("reference") / "runs"
    assert main(argv(out)) == 0
    return argv, json.loads((out / "r" / "results.json").read_text())


def same_results(folder: Path, expected: dict) -> bool:
    return json.loads((folder / "results.json").read_text()) == expected


def one_line(capsys, argv: list[str], fragment: str) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tsr: error:") and fragment in lines[0], lines
    assert "Traceback" not in out + err


@pytest.mark.parametrize("at", [1, 2, 3, 6, 9, 14, 17])
def test_a_full_disk_at_any_write_is_one_line_and_the_rerun_ends_as_an_uninterrupted_run(
        reference, tmp_path, monkeypatch, capsys, at):
    """ENOSPC at the ``at``-th file the run writes (its config, run.json, a task's record, replay
    data or snapshot, a checkpoint file, results.json, ...): one line naming the file; no
    temporary file stays behind; the same command, once there is room, resumes to the same results."""
    argv, expected = reference
    real, count = atomic._atomic, [0]

    def full(path, write):
        count[0] += 1
        if count[0] == at:
            def no_room(p):
                p.write_bytes(b"\0" * 7)  # a write the disk cut short
                raise OSError(errno.ENOSPC, "No space left on device", str(p))
            return real(path, no_room)
        return real(path, write)

    with monkeypatch.context() as patch:
        patch.setattr(atomic, "_atomic", full)
        one_line(capsys, argv(tmp_path / "runs"), "cannot write (No space left on device)")
    assert [p.name for p in (tmp_path / "runs").rglob(".*")] == []  # no temporary file or folder left
    assert main(argv(tmp_path / "runs")) == 0
    assert same_results(tmp_path / "runs" / "r", expected)


def test_a_really_full_disk_is_one_line_and_the_rerun_resumes(reference, tmpfs, capsys):
    """A tmpfs filled up before the run: one line; freed, the same command runs to the same results."""
    argv, expected = reference
    disk = tmpfs("size=32m")
    filler = disk / "filler"
    with open(filler, "wb") as fh:
        try:
            fh.write(b"\0" * (64 * 2**20))
        except OSError:
            pass
    one_line(capsys, argv(disk / "runs"), "No space left on device")
    filler.unlink()
    assert main(argv(disk / "runs")) == 0
    assert same_results(disk / "runs" / "r", expected)


def test_a_read_only_disk_is_one_line_and_changes_nothing(reference, tmpfs, capsys, monkeypatch):
    """A run interrupted on a disk that then became read-only: the resume is one line and changes
    nothing; writable again, it ends as the uninterrupted run. A new run there is one line too."""
    from tsr.engine import loop

    argv, expected = reference
    disk = tmpfs("size=64m")
    original = loop.train_on

    def interrupt(*a, **kw):
        if kw["index"] == 1:
            raise KeyboardInterrupt
        return original(*a, **kw)

    with monkeypatch.context() as patch:
        patch.setattr(loop, "train_on", interrupt)
        assert main(argv(disk / "runs")) == 130
    assert subprocess.run(["mount", "-o", "remount,ro", str(disk)]).returncode == 0
    before = snapshot(disk)
    one_line(capsys, argv(disk / "runs"), "cannot write (Read-only file system)")
    one_line(capsys, [*argv(disk / "other"), "name=new"], "Read-only file system")
    assert snapshot(disk) == before
    assert subprocess.run(["mount", "-o", "remount,rw", str(disk)]).returncode == 0
    assert main(argv(disk / "runs")) == 0
    assert same_results(disk / "runs" / "r", expected)
    shutil.rmtree(disk / "runs")


def test_what_the_system_refuses_anywhere_in_a_command_is_one_line(monkeypatch, capsys):
    """A write outside tsr's own writers (a library's, a folder removal) that the system refuses
    reaches the command line as one line naming the file, exit 2; other OS errors stay bugs."""
    from tsr.engine import run

    def refused(*a, **kw):
        raise OSError(errno.EROFS, "Read-only file system", "/mnt/runs/r/.checkpoint.old")

    monkeypatch.setattr(run, "execute", refused)
    one_line(capsys, ["run", "--quiet"], "tsr: error: /mnt/runs/r/.checkpoint.old: Read-only file system")

    def bug(*a, **kw):
        raise OSError(errno.ECONNREFUSED, "Connection refused")

    monkeypatch.setattr(run, "execute", bug)
    with pytest.raises(ConnectionRefusedError):
        main(["run", "--quiet"])
