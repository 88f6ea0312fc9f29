"""Method names, presets, and the checked ``method`` config section.

``METHODS`` maps a name to the class implementing it. ``PRESETS`` are named parameter settings of a method, such
as the paper's routing-policy variants of TSR; a preset's parameters can still be overridden.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import ConfigError
from ..schema import build, to_plain
from .agem import AGEM
from .base import Method
from .deal import DEAL
from .derpp import DERPP
from .er import ER
from .ewc import EWC
from .gainlora import GainLoRA
from .l2_anchor import L2Anchor
from .lwf import LwF
from .olora import OLoRA
from .param_init import ParamInit
from .sdft import SDFT
from .seqft import SeqFT
from .tsr import TSR

METHODS: Mapping[str, type[Method]] = MappingProxyType({
    cls.name: cls for cls in (SeqFT, ER, TSR, EWC, LwF, SDFT, AGEM, DERPP, ParamInit, L2Anchor, OLoRA, GainLoRA, DEAL)
})

# preset -> (method, parameter overrides, description)
PRESETS: Mapping[str, tuple[str, Mapping[str, Any], str]] = MappingProxyType({
    "er10": ("er", {"alpha": 0.1}, "ER with 10% replay, the paper's 'ER (10%)'"),
    "ewc_online": ("ewc", {"mode": "online"}, "online EWC (Schwarz et al., 2018): one running Fisher, gamma 1"),
    "tsr_argmax": ("tsr", {"tau": 0.0, "reference": "recent"},
                   "argmax selection with the recent teacher"),
    "tsr_soft": ("tsr", {"reference": "recent"}, "soft routing with the recent teacher"),
    "tsr_pool_hybrid": ("tsr", {"uniform_mix": 0.5, "reference": "recent"},
                        "routing weights half softmax, half uniform pool, recent teacher"),
    "tsr_v1": ("tsr", {"replay": "uniform", "reference": "top"},
               "official code's tsr_v1: uniform replay, top-routed teacher on every batch"),
    "tsr_v2": ("tsr", {}, "official code's tsr_v2: routed replay with era teachers "
                          "(the routed triple, identical to tsr)"),
})


@dataclass(frozen=True)
class MethodSpec:
    name: str
    cls: type[Method]
    params: Any

    def build(self) -> Method:
        return self.cls(self.params)

    def to_config(self) -> dict[str, Any]:
        return {"name": self.name, **to_plain(self.params)}


def method_names() -> list[str]:
    return sorted(METHODS) + sorted(PRESETS)


def method_class(name: str) -> type[Method]:
    return METHODS[name]


def describe(name: str) -> str:
    if name in PRESETS:
        return PRESETS[name][2]
    doc = sys.modules[METHODS[name].__module__].__doc__ or name
    return doc.strip().splitlines()[0]


def resolve_method(section: Mapping[str, Any]) -> MethodSpec:
    """The method a config's ``method`` section names, with checked parameters."""
    section = dict(section)
    name = section.pop("name", None)
    if not isinstance(name, str) or name not in METHODS and name not in PRESETS:
        raise ConfigError(f"config key 'method.name': unknown method {name!r} "
                          f"(valid: {', '.join(method_names())})")
    base, defaults = (PRESETS[name][0], dict(PRESETS[name][1])) if name in PRESETS else (name, {})
    cls = method_class(base)
    params = build(cls.Params, {**defaults, **section}, "method")
    return MethodSpec(name, cls, params)
