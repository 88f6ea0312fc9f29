"""ER: experience replay with uniform choice of past task (Chaudhry et al., 2019).

Each step, with probability ``alpha`` the batch is drawn from the replay data of one past
task chosen uniformly, otherwise from the current task. The reference paper runs
``alpha = 0.5`` ("ER") and ``alpha = 0.1`` ("ER (10%)", preset ``er10``), with 100 stored
examples per past task. The uniform choice uses the same draw as TSR's routed choice, so
TSR with tau = inf and no distillation is exactly this method.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cl.routing import choose, uniform_weights
from ..schema import require
from .base import Method, require_replay
from .context import TARGET, Draw, TaskContext


REPLAY_RATIO = 0.5  # the paper's alpha for ER and TSR (Appendix "Full-stream setup")


@dataclass
class ERParams:
    alpha: float = REPLAY_RATIO

    def check(self, path: str) -> None:
        require(0.0 <= self.alpha <= 1.0, f"{path}.alpha", "replay ratio must be in [0, 1]")


def replay_or_target(rng: np.random.Generator, alpha: float, weights: np.ndarray) -> Draw:
    """With probability ``alpha`` a past task drawn from ``weights``, else the current task."""
    if len(weights) == 0:
        return TARGET
    if rng.random() < alpha:
        return Draw(choose(rng, weights))
    return TARGET


class ER(Method):
    name = "er"
    Params = ERParams

    @classmethod
    def validate(cls, params: ERParams, facts) -> None:
        if params.alpha > 0:
            require_replay(facts, cls.name)

    def draw(self, ctx: TaskContext, rng: np.random.Generator) -> Draw:
        return replay_or_target(rng, self.params.alpha, uniform_weights(len(ctx.memory))
                                if len(ctx.memory) else np.zeros(0))
