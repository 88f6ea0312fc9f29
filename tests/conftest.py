"""Shared fixtures: tiny models built in-process from configs, and a toy JSONL stream.

Nothing is downloaded. Models are saved to a temporary folder and loaded through the same
code path as real checkpoints.
"""

from __future__ import annotations

import contextlib

import os
import shutil
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # one core per test worker: torch's own threads would only contend with the other worker
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)

from tsr.config import load_config  # noqa: E402
from tsr.model.tiny import build_tiny  # noqa: E402

from toy import toy_corpus, write_toy_stream  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

SIZES = {"hidden": 32, "layers": 2, "heads": 4, "kv_heads": 2}


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with the reason."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real benchmark data not available at {path}")
    return path


@pytest.fixture(scope="session")
def toy_stream(tmp_path_factory) -> Path:
    """Stream YAML of three toy tasks (parity, vowel: classification; copy: generation)."""
    return write_toy_stream(tmp_path_factory.mktemp("toy-data"))


@pytest.fixture(scope="session")
def model_factory(tmp_path_factory):
    """``model_factory(arch)`` -> folder of a tiny random model of that architecture."""
    cache: dict[str, Path] = {}

    def make(arch: str = "qwen2") -> Path:
        if arch not in cache:
            folder = tmp_path_factory.mktemp(f"tiny-{arch}")
            cache[arch] = build_tiny(folder, arch, toy_corpus(), vocab_size=320, warm_up_steps=120, **SIZES)
        return cache[arch]

    return make


@pytest.fixture(scope="session")
def tiny_model(model_factory) -> Path:
    return model_factory("qwen2")


@pytest.fixture
def make_config(tiny_model, toy_stream, tmp_path):
    """``make_config(*overrides)``: a small fast config on the toy stream and tiny Qwen2."""

    def make(*overrides: str, model: Path | None = None):
        base = [f"model.path={model or tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}",
                "train.steps=8", "train.lr=3e-3", "stream.budget=12", "stream.replay_per_task=8",
                "stream.test_cap=10", "stream.max_length=48", "model.threads=1"]
        return load_config("paper", base + list(overrides))

    return make


def run_interrupted(monkeypatch, cfg, index: int) -> int:
    """Run ``cfg`` with Ctrl-C arriving as task ``index`` starts (after the tasks before it
    finished and were saved); returns how many tasks trained before the interruption."""
    from tsr.engine import loop
    from tsr.engine.run import execute

    original, trained = loop.train_on, []

    def interrupt(*args, **kwargs):
        if kwargs["index"] == index:
            raise KeyboardInterrupt
        trained.append(kwargs["index"])
        return original(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(loop, "train_on", interrupt)
        with pytest.raises(KeyboardInterrupt):
            execute(cfg)
    return len(trained)


@contextlib.contextmanager
def interrupting(monkeypatch, index: int, step: int):
    """Within the block, Ctrl-C arrives right after step ``step`` of task ``index``."""
    from tsr.engine import loop

    original = loop.train_on

    def interrupt_at(task: int, done: int, steps: int, terms: dict) -> None:
        if (task, done) == (index, step):
            raise KeyboardInterrupt

    def train_on(*args, **kwargs):
        return original(*args, **{**kwargs, "on_step": [*kwargs.get("on_step", ()), interrupt_at]})

    with monkeypatch.context() as patch:
        patch.setattr(loop, "train_on", train_on)
        yield


def run_interrupted_within(monkeypatch, cfg, index: int, step: int) -> None:
    """Run ``cfg`` with Ctrl-C arriving right after step ``step`` of task ``index`` (the tasks
    before it finished and were saved; within it, what its mid-task checkpoints saved)."""
    from tsr.engine.run import execute

    with interrupting(monkeypatch, index, step), pytest.raises(KeyboardInterrupt):
        execute(cfg)


@pytest.fixture
def clean_registries():
    """Forget whatever a test registers (the registries are process-wide)."""
    from tsr.data import streams
    from tsr.methods import registry

    before = {t: set(t.registered()) for t in (registry.ENTRIES, streams.ENTRIES)}
    yield
    for table, names in before.items():
        for name in set(table.registered()) - names:
            table.unregister(name)


@pytest.fixture
def tmpfs(tmp_path):
    """``tmpfs(options)``: a fresh tmpfs folder mounted with ``options``; the test is skipped where
    this process may not mount one."""
    mounted = []

    def mount(options: str) -> Path:
        where = tmp_path / f"mnt{len(mounted)}"
        where.mkdir()
        if shutil.which("mount") is None:
            pytest.skip("no mount command here")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def pytest_collection_modifyitems(config, items):
    """Modules that hold slow tests run first, each module kept whole (its fixtures set up once).

    The test workers take the collection in contiguous halves and steal from the end of each
    other's queue, so with the long tests in front the suite ends on short ones instead of
    one worker finishing a long test while the other waits."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)
