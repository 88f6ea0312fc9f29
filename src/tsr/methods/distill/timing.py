"""When the distillation term trains within a task (``method.kd_timing``).

``interleaved`` (TSR's default, the paper's "KD during CE") adds it to the cross-entropy on
every step. ``posthoc`` is the distillation audit's "KD after CE" (the reference paper,
Appendix "Timing and weight"), which the paper does not specify further. Our reading keeps the
task's step budget: its first steps train the cross-entropy alone, its last
``round(share * steps)`` (``method.kd_posthoc``, 20% by default) the distillation term alone,
an endpoint correction toward the teachers, on the same draws (routed replay and current
batches). Where a step has no teacher (the first task, unless ``reference: base``) it keeps
the cross-entropy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...schema import added, require

Phase = Literal["joint", "ce", "kd"]


@dataclass
class TimingParams:
    """The timing's knobs (part of ``method.*`` of TSR)."""

    kd_timing: Literal["interleaved", "posthoc"] = added("interleaved")
    kd_posthoc: float = added(0.2)

    def check(self, path: str) -> None:
        require(0.0 < self.kd_posthoc < 1.0, f"{path}.kd_posthoc", "the post-hoc phase's share of a task's "
                "steps must be in (0, 1)")


class Interleaved:
    def phase(self, step: int, steps: int) -> Phase:
        return "joint"


class PostHoc:
    def __init__(self, share: float):
        self.share = share

    def phase(self, step: int, steps: int) -> Phase:
        if steps < 1:
            raise RuntimeError("kd_timing: posthoc needs the task's step count (TaskContext.steps)")
        return "kd" if step >= steps - round(self.share * steps) else "ce"


def timing(kind: str, share: float) -> Interleaved | PostHoc:
    return PostHoc(share) if kind == "posthoc" else Interleaved()


def timing_of(params: TimingParams) -> Interleaved | PostHoc:
    return timing(params.kd_timing, params.kd_posthoc)


def kd_phase(kind: str, share: float, steps: int, step: int) -> Phase:
    """What step ``step`` (from 0) of a task of ``steps`` trains under ``kind``."""
    return timing(kind, share).phase(step, steps)
