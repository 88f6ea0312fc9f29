"""A run records the machine it was made on, and each resume the machine it went on on."""

import json
from pathlib import Path

import pytest
import torch

from conftest import run_interrupted
from tsr.engine.machine import cpu_model
from tsr.engine.run import execute


def test_run_json_and_each_start_record_the_machine(make_config, monkeypatch):
    threads = torch.get_num_threads()
    try:
        first = make_config("method.name=er", "name=moved", "model.threads=1")
        assert run_interrupted(monkeypatch, first, 1) == 1
        execute(make_config("method.name=er", "name=moved", "model.threads=2"))  # model.threads names no new run
    finally:
        torch.set_num_threads(threads)
    run = Path(first.out_dir) / "moved"
    made = json.loads((run / "run.json").read_text())["machine"]
    assert made == {"cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                    "torch": torch.__version__, "threads": 1, "compiled": False,
                    "deterministic": torch.are_deterministic_algorithms_enabled()}
    events = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    starts = [(e["event"], e["machine"]["threads"]) for e in events if e["event"] in ("run_start", "resume")]
    assert starts == [("run_start", 1), ("resume", 2)]


def test_the_cpu_model_is_the_processors_name():
    info = Path("/proc/cpuinfo")
    if not info.is_file():
        pytest.skip("no /proc/cpuinfo on this system")
    names = [line.split(":", 1)[1].strip() for line in info.read_text().splitlines() if line.startswith("model name")]
    assert cpu_model() == names[0]
