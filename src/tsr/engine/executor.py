"""Where a grid's items run: on worker processes of this machine, or on a Ray cluster."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError


@dataclass(frozen=True)
class Executor:
    """Where a grid's items run: ``local`` (worker processes on this machine) or ``ray``."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = None
    """ray: ``None`` starts a local instance; ``auto`` joins the cluster this machine belongs to;
    ``HOST:PORT`` joins that cluster"""
    gpus_per_run: float = 0.0
    """ray: the GPUs each run asks for, a share of one (0.25) or several (4; 0: none)"""
    processes_per_run: int = 1
    """each run trained data-parallel on this many processes of the node it runs on (a
    ``torchrun`` launch, :mod:`tsr.engine.launch`); with ``gpus_per_run`` equal to it, one GPU each"""
    retries: int = 3
    """ray: how often a worker whose process died is restarted and its item run again"""

    def __post_init__(self) -> None:
        if self.kind not in ("local", "ray"):
            raise ConfigError(f"--executor: {self.kind!r} is not valid (valid: local, ray)")
        if self.gpus_per_run < 0:
            raise ConfigError("--gpus-per-run: must be >= 0")
        if self.kind == "local" and (self.address or self.gpus_per_run):
            raise ConfigError("--ray-address and --gpus-per-run need --executor ray")
        if self.processes_per_run < 1:
            raise ConfigError("--processes-per-run: must be >= 1")
        if self.gpus_per_run > 1 and self.processes_per_run == 1:
            raise ConfigError(f"--gpus-per-run {self.gpus_per_run:g}: one process uses one GPU; give "
                              f"--processes-per-run {int(self.gpus_per_run)} to train each run on all of them")
