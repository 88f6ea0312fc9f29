"""Model layer: backbone loading, the LoRA adapter and its state operations, the learner."""

from .adapter import Adapter, State
from .learner import Learner, build_learner

__all__ = ["Adapter", "Learner", "State", "build_learner"]
