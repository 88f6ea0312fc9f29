"""docs/api.md: every Python block of the page runs, in order, in one namespace, in an empty
working folder (the page's tiny settings keep it to seconds on a CPU); the page names every
public name, and its pyproject snippet declares the entry-point groups tsr reads."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import tsr
from tsr.data import streams
from tsr.methods import registry

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


def blocks(lang: str) -> list[str]:
    return [body for kind, body in BLOCK.findall(DOC.read_text(encoding="utf-8")) if kind == lang]


@pytest.mark.slow
def test_every_python_block_runs(tmp_path, monkeypatch, capsys, clean_registries):
    pytest.importorskip("datasets")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    code = blocks("python")
    assert len(code) >= 8
    for i, body in enumerate(code):
        exec(compile(body, f"{DOC.name} block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    # what the comments say the blocks print
    assert "['stance', 'arith-cm']" in out and "['even', 'small', 'backwards']" in out and "enots" in out
    assert "method name 'er' is taken by tsr itself" in out and "unknown config key 'train.lrr'" in out
    runs = sorted(p.name.split("-s0-")[0] for p in (tmp_path / "runs").glob("*-s0-*"))
    assert runs == ["numbers-er", "synth-trace-damped", "synth-trace-er", "synth-trace-seqft"]
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert namespace["report"]["headroom"]["stance"]["headroom"]["n"] == 1


def test_the_page_names_the_whole_public_api():
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in tsr.__all__ if name != "__version__" and f"tsr.{name}" not in text]
    assert not missing, missing


def test_the_entry_point_groups_are_the_ones_tsr_reads():
    (snippet,) = blocks("toml")
    groups = tomllib.loads(snippet)["project"]["entry-points"]
    assert set(groups) == {registry.ENTRIES.group, streams.ENTRIES.group}
