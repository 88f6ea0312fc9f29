"""The model's config sections: the backbone (``model``) and the LoRA adapter (``lora``).

They live beside the code they configure; :mod:`tsr.config` assembles them with the other
sections into the run config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..schema import require


@dataclass
class ModelConfig:
    """Backbone: ``path`` is ``bundled`` (the package's tiny base), a local folder or a hub id.

    ``compile`` runs each transformer block (forward and backward) through ``torch.compile``
    with dynamic shapes (see :mod:`tsr.model.learner`): one compilation of one block per
    process, then fused kernels; results agree with eager execution to float rounding, not bit
    for bit. ``auto`` compiles on the CPU where a C++ compiler is installed and runs eager
    everywhere else.
    """

    path: str = "bundled"
    preset: str | None = None
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: str = "auto"
    trust_remote_code: bool = False
    chat_template: bool = False
    threads: int = 0
    compile: bool | Literal["auto"] = False

    def check(self, path: str) -> None:
        require(bool(self.path), f"{path}.path", "must not be empty")
        require(self.threads >= 0, f"{path}.threads", "must be >= 0 (0 keeps torch's default)")
        require(self.device == "auto" or self.device.split(":")[0] in ("cpu", "cuda", "mps"),
                f"{path}.device", f"{self.device!r} is not auto, cpu, cuda, cuda:N or mps")


@dataclass
class LoraConfig:
    """One LoRA adapter on the attention projections (paper: r=16, alpha=32, q/k/v/o)."""

    r: int = 16
    alpha: float = 32.0
    dropout: float = 0.0
    targets: str | list[str] = "auto"

    def check(self, path: str) -> None:
        require(self.r >= 1, f"{path}.r", "must be >= 1")
        require(self.alpha > 0, f"{path}.alpha", "must be > 0")
        require(0.0 <= self.dropout < 1.0, f"{path}.dropout", "must be in [0, 1)")
        if isinstance(self.targets, list):
            require(len(self.targets) > 0, f"{path}.targets", "must list at least one module name")
