"""Continual-learning methods behind one contract (see :mod:`tsr.methods.base`)."""

from .base import Method, MethodState, NoParams
from .context import TARGET, Draw, TaskContext
from .registry import METHODS, PRESETS, MethodSpec, method_names, resolve_method

__all__ = ["Draw", "METHODS", "Method", "MethodSpec", "MethodState", "NoParams", "PRESETS",
           "TARGET", "TaskContext", "method_names", "resolve_method"]
