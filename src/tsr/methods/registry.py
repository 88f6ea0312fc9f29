"""Method names, presets, and the checked ``method`` config section.

``METHODS`` maps a name to the class implementing it (as an import path, so nothing is
imported before it is asked for). ``PRESETS`` are named parameter settings of a method, such
as the paper's routing-policy variants of TSR; a preset's parameters can still be overridden.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import ConfigError
from ..schema import build, to_plain
from .base import Method

METHODS: Mapping[str, str] = MappingProxyType({
    "seqft": "tsr.methods.seqft:SeqFT",
    "er": "tsr.methods.er:ER",
    "tsr": "tsr.methods.tsr:TSR",
    "ewc": "tsr.methods.ewc:EWC",
    "lwf": "tsr.methods.lwf:LwF",
    "sdft": "tsr.methods.sdft:SDFT",
    "agem": "tsr.methods.agem:AGEM",
    "derpp": "tsr.methods.derpp:DERPP",
    "param_init": "tsr.methods.param_init:ParamInit",
    "l2_anchor": "tsr.methods.l2_anchor:L2Anchor",
    "olora": "tsr.methods.olora:OLoRA",
    "gainlora": "tsr.methods.gainlora:GainLoRA",
    "deal": "tsr.methods.deal:DEAL",
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
    module, attr = METHODS[name].split(":")
    return getattr(importlib.import_module(module), attr)


def describe(name: str) -> str:
    if name in PRESETS:
        return PRESETS[name][2]
    doc = importlib.import_module(METHODS[name].split(":")[0]).__doc__ or name
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
