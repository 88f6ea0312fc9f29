"""Need-aware routing, TSR's ``method.need`` (this project's extension of the reference paper):
the transfer weights mixed with each past task's measured need of replay, with a floor, and
a headroom gate (the maths: :mod:`tsr.cl.need`).

- ``need: loss`` measures, when a task starts, each past task's replay-data loss under the
  current adapter relative to the shared initialisation's and mixes ``need_weight`` of it into
  the routing weights. Forwards only, no training: the K past tasks' replay data under the
  current adapter, and the newest one's under the initialisation (a task's replay data and the
  initialisation never change, so each initial loss is computed once per process and kept;
  a resumed run recomputes them, to the same value);
  ``need_floor`` keeps every past task at least that share of the uniform 1/K.
- ``need_gate`` (a budget audit's ``budget.json``): when the new task's measured headroom at the
  run's budget N, S(N_max) - S(N), is below ``need_gate_min``, its own data already reach its
  ceiling and transfer cannot help: the routing falls back to the need term alone (and the
  floor). A task the file does not cover is not gated. Cost: the budget sweep, beforehand; at
  run time nothing.

``need: none`` (the default) leaves TSR's routing exactly as the paper's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ...cl.need import combine, need_weights, replay_loss
from ...errors import ConfigError
from ...schema import added, require
from ..context import TaskContext


@dataclass
class NeedParams:
    """The need-aware routing's knobs (part of ``method.*`` of TSR)."""

    need: Literal["none", "loss"] = added("none")
    need_weight: float = added(0.5)
    need_floor: float = added(0.5)
    need_gate: str = added("")
    need_gate_min: float = added(0.05)

    def check(self, path: str) -> None:
        require(0.0 <= self.need_weight <= 1.0, f"{path}.need_weight", "must be in [0, 1]")
        require(0.0 <= self.need_floor <= 1.0, f"{path}.need_floor", "must be in [0, 1] (a share of 1/K)")
        require(self.need_gate_min >= 0.0, f"{path}.need_gate_min", "must be >= 0")


def read_headroom(path: str) -> dict[str, dict[str, float]]:
    """``{task: {N: mean headroom}}`` from a budget audit's ``budget.json``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return {t: {n: float(c["mean"]) for n, c in v["headroom"].items() if c.get("mean") is not None}
                for t, v in data["targets"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ConfigError(f"config key 'method.need_gate': {path} is not a budget audit's budget.json "
                          f"({type(err).__name__}: {err})") from None


def need_router(params: NeedParams) -> "NeedRouter | None":
    """The router of ``method.need`` (None for ``none``: the paper's routing)."""
    if params.need == "none":
        return None
    return NeedRouter(params.need_weight, params.need_floor, params.need_gate, params.need_gate_min)


class NeedRouter:
    def __init__(self, weight: float, floor: float, gate: str = "", gate_min: float = 0.05):
        self.weight, self.floor, self.gate_min = weight, floor, gate_min
        self.headroom = read_headroom(gate) if gate else {}
        self._initial: dict[int, float] = {}  # task index -> its replay data's loss under theta_0

    def gated(self, ctx: TaskContext) -> bool:
        """The new task's measured headroom at its budget is below the gate's minimum."""
        room = self.headroom.get(ctx.task.name, {}).get(str(len(ctx.train)))
        return room is not None and room < self.gate_min

    def weights(self, ctx: TaskContext, transfer: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """The routing weights over the past tasks, and what they were made of (for the run log)."""
        learner, past = ctx.learner, list(ctx.memory)
        current = [replay_loss(learner, r.replay, None, ctx.batch_size * 4) for r in past]
        for r in past:
            if r.index not in self._initial:
                self._initial[r.index] = replay_loss(learner, r.replay, learner.init_state, ctx.batch_size * 4)
        initial = [self._initial[r.index] for r in past]
        need = need_weights(current, initial)
        gated = self.gated(ctx)
        weights = combine(transfer, need, 1.0 if gated else self.weight, self.floor)
        return weights, {"need": {r.name: round(float(w), 6) for r, w in zip(past, need)},
                         "need_ratio": {r.name: round(c / i, 6) if i > 0 else None
                                        for r, c, i in zip(past, current, initial)},
                         "gated": gated}
