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
    """ray: the GPU share each run asks for (0: none)"""
    retries: int = 3
    """ray: how often a worker whose process died is restarted and its item run again"""

    def __post_init__(self) -> None:
        if self.kind not in ("local", "ray"):
            raise ConfigError(f"--executor: {self.kind!r} is not valid (valid: local, ray)")
        if self.gpus_per_run < 0:
            raise ConfigError("--gpus-per-run: must be >= 0")
        if self.kind == "local" and (self.address or self.gpus_per_run):
            raise ConfigError("--ray-address and --gpus-per-run need --executor ray")
