"""Shared inputs of the bad-input corpus (tests/interface/test_bad_inputs.py and
test_bad_run_folders.py): how a case is run and checked, file builders, and two real runs."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest

from tsr.interface.cli import main
from tsr.engine import loop

from toy import write_toy_stream

# -- helpers ----------------------------------------------------------------------------------

TINY = ["model.compile=false", "model.threads=1", "train.steps=2", "stream.test_cap=4", "stream.budget=4",
        "stream.replay_per_task=4", "method.probe_batches=1"]


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under ``root``: its bytes (None for a folder) and its mtime."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def refuse(capsys, root: Path, argv: list[str], fragment: str) -> None:
    """Run ``tsr argv``; assert exit 2, one ``tsr: error:`` line naming ``fragment``, nothing changed."""
    if argv[:1] == ["run"]:
        argv = [*argv, "--quiet"]  # after every positional item
    capsys.readouterr()
    before = snapshot(root)
    code = main(argv)
    out, err = capsys.readouterr()
    text = out + err
    lines = [line for line in text.splitlines() if line.strip()]
    assert code == 2, f"exit {code}: {text}"
    assert "Traceback" not in text, text
    assert len(lines) == 1, text
    assert lines[0].startswith("tsr: error:"), text
    assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert snapshot(root) == before, "the bad input changed the folder"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def jsonl(rows: list) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


GOOD = [{"prompt": f"Is {n} even? Answer:", "answer": " yes" if n % 2 == 0 else " no"} for n in range(8)]


def safetensors_bytes(header: bytes | dict, data: bytes = b"", length: int | None = None) -> bytes:
    """A safetensors file: 8-byte little-endian header length, JSON header, data."""
    blob = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(blob) if length is None else length) + blob + data


# -- each test module's shared inputs: a toy stream and two real runs ----------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The toy stream and two real runs of a tiny config: ``finished`` and ``interrupted``
    (Ctrl-C as task 2 starts, so one task is saved)."""
    base = tmp_path_factory.mktemp("bad-inputs")
    stream = write_toy_stream(base / "data", pool=16, test=4)
    runs = base / "runs"

    def args(out: Path, name: str) -> list[str]:
        return ["run", f"stream.source={stream}", f"out_dir={out}", f"name={name}", *TINY]

    assert main([*args(runs, "finished"), "--quiet"]) == 0
    original = loop.train_on

    def interrupt(*a, **kw):
        if kw["index"] == 1:
            raise KeyboardInterrupt
        return original(*a, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loop, "train_on", interrupt)
        assert main([*args(runs, "interrupted"), "--quiet"]) == 130
    assert (runs / "interrupted" / "checkpoint" / "state.json").is_file()
    assert not (runs / "interrupted" / "memory" / "01-vowel").exists()
    return SimpleNamespace(stream=stream, runs=runs, args=args)


def run_args(env, tmp: Path, *extra: str) -> list[str]:
    """``tsr run`` of a tiny config on the toy stream into an existing, empty ``tmp/runs``."""
    (tmp / "runs").mkdir(exist_ok=True)
    return ["run", f"stream.source={env.stream}", f"out_dir={tmp / 'runs'}", *TINY, *extra]


def case(id: str, build, fragment: str):
    return pytest.param(build, fragment, id=id)

