"""What a run ran on: the processor, the instruction set torch's kernels use, torch's version
and thread count, whether the blocks ran compiled, whether torch's deterministic algorithms were
on, and the accelerator.

Float rounding differs between instruction sets (AVX2 against AVX-512 kernels), thread counts
and compiled against eager kernels, and over thousands of steps the difference grows into a
different run: the same config and seed on another machine is another sample of the run, not
the same one (docs/rundir.md). A run records the machine it was made on in ``run.json`` and,
at each start and resume, in ``progress.jsonl``, so that runs compared by seed can be checked
to come from one kind of machine.
"""

from __future__ import annotations

import platform
from pathlib import Path

import torch


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux), or what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def describe(device: torch.device | str, compiled: bool, processes: int = 1) -> dict[str, object]:
    """The machine facts recorded with a run that computes on ``device``, its blocks compiled
    or not (``model.compile`` auto decides by the machine), on ``processes`` data-parallel
    processes (recorded only when more than one)."""
    device = torch.device(device)
    facts: dict[str, object] = {"cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                                "torch": torch.__version__, "threads": torch.get_num_threads(), "compiled": compiled,
                                "deterministic": torch.are_deterministic_algorithms_enabled()}
    if device.type == "cuda":
        facts["gpu"] = torch.cuda.get_device_name(device)
    if processes > 1:
        facts["processes"] = processes
    return facts
