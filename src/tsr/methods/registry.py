"""Method names, presets, and the checked ``method`` config section.

``METHODS`` maps a name to the class implementing it. ``PRESETS`` are named parameter settings of a method, such
as the paper's routing-policy variants of TSR; a preset's parameters can still be overridden.

Methods from outside the package join through :func:`register_method` (from Python) or the
``tsr.methods`` entry points of installed packages (:mod:`tsr.extensions`); a method name and a
preset name share one namespace, so neither may reuse the other's.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import ConfigError
from ..extensions import Extensions
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
    "tsr_need": ("tsr", {"need": "loss"}, "ours: routing by transfer and by need (half each), every past task "
                 "kept at half the uniform share or more"),
})


@dataclass(frozen=True)
class Preset:
    """Named parameter settings of method ``base``."""

    base: str
    params: dict[str, Any]
    description: str


def _check_entry(name: str, value: Any, where: str) -> Any:
    if isinstance(value, Preset):
        return value
    if not (isinstance(value, type) and issubclass(value, Method)):
        raise ConfigError(f"{where}: {value!r} is not a method class (a subclass of tsr.Method)")
    if not value.name:
        raise ConfigError(f"{where}: the class {value.__qualname__} has no `name` (the class attribute a "
                          "config's method.name selects it by)")
    if value.name != name:
        raise ConfigError(f"{where}: the class {value.__qualname__} is named {value.name!r}, not {name!r} "
                          "(a method is registered under its class's `name`)")
    if not dataclasses.is_dataclass(value.Params):
        raise ConfigError(f"{where}: {value.__qualname__}.Params must be a dataclass of the method's parameters")
    return value


class _Entries(Extensions):
    """Methods and presets; registering a method registers its presets with it, all or nothing."""

    def register(self, name: str, value: Any, origin: str, presets: Mapping[str, Any] | None = None) -> Any:
        if isinstance(value, Preset):
            return super().register(name, value, origin)
        cls = self.check(name, value, origin)
        self.valid_name(name, origin)
        if presets is None:
            presets = getattr(cls, "presets", None) or {}
        entries = {pname: _preset(cls, pname, spec, origin) for pname, spec in dict(presets).items()}
        for pname, preset in {name: cls, **entries}.items():
            self.claim(pname, origin, preset)
        super().register(name, cls, origin)
        for pname, preset in entries.items():
            super().register(pname, preset, origin)
        return cls


def _preset(cls: type[Method], name: str, spec: Any, origin: str) -> Preset:
    """``spec``: the parameters, or (parameters, description); checked against ``cls.Params``."""
    params, text = spec if isinstance(spec, tuple) and len(spec) == 2 else (spec, f"{cls.name} with {spec}")
    if not isinstance(params, Mapping):
        raise ConfigError(f"{origin}: preset {name!r} must map parameter names to values, found "
                          f"{type(params).__name__}")
    try:
        build(cls.Params, dict(params), "method")  # a bad value fails now, not when the preset is chosen
    except ConfigError as err:
        raise ConfigError(f"{origin}: preset {name!r}: {err}") from None
    return Preset(cls.name, dict(params), str(text))


ENTRIES = _Entries("method", "tsr.methods",
                   MappingProxyType({**METHODS, **{n: Preset(b, dict(p), d) for n, (b, p, d) in PRESETS.items()}}),
                   _check_entry)


def register_method(cls: type[Method], presets: Mapping[str, Any] | None = None) -> type[Method]:
    """Make ``cls`` (a :class:`Method` subclass) usable as ``method.name=<cls.name>``.

    ``presets`` maps preset names to parameter overrides, or to ``(overrides, description)``;
    without it, a ``presets`` class attribute of the same form is used. A name already taken
    (built in, or registered by another class) is a ConfigError; registering the same class
    again changes nothing. Returns ``cls``, so it also works as a class decorator.
    """
    ENTRIES.register(getattr(cls, "name", None), cls, f"{getattr(cls, '__module__', '?')}."
                     f"{getattr(cls, '__qualname__', repr(cls))}", presets)
    return cls


def unregister_method(name: str) -> None:
    """Forget a registered method and its presets (built-in ones stay)."""
    gone = ENTRIES.registered().get(name)
    for other, origin in ENTRIES.registered().items():
        if other == name or (origin == gone and isinstance(ENTRIES.get(other), Preset)):
            ENTRIES.unregister(other)


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
    """The built-in methods and presets (what ``tsr compare --methods all`` runs)."""
    return sorted(METHODS) + sorted(PRESETS)


def method_class(name: str) -> type[Method]:
    entry = ENTRIES.get(name)
    if not (isinstance(entry, type) and issubclass(entry, Method)):
        raise KeyError(name)
    return entry


def listing() -> list[tuple[str, str]]:
    """(name, one line) of every method and preset: built in, registered, and those of installed
    packages' ``tsr.methods`` entry points, methods first."""
    names = ENTRIES.names()
    methods = [n for n in names if not isinstance(ENTRIES.get(n), Preset)]
    presets = [n for n in names if isinstance(ENTRIES.get(n), Preset)]
    return [(n, describe(n)) for n in sorted(methods) + sorted(presets)]


def describe(name: str) -> str:
    """One line about a method or preset; an external one says where it comes from."""
    entry = ENTRIES.get(name)
    origin = ENTRIES.registered().get(name)
    if isinstance(entry, Preset):
        text = f"preset of {entry.base}: {entry.description}"
    else:
        doc = (sys.modules[entry.__module__].__doc__ if origin is None else entry.__doc__) or name
        text = doc.strip().splitlines()[0]
    return text if origin is None else f"{text} [{origin}]"


def resolve_method(section: Mapping[str, Any]) -> MethodSpec:
    """The method a config's ``method`` section names, with checked parameters."""
    section = dict(section)
    name = section.pop("name", None)
    entry = ENTRIES.get(name) if isinstance(name, str) else None
    if entry is None:
        external = sorted(ENTRIES.registered())
        raise ConfigError(f"config key 'method.name': unknown method {name!r} "
                          f"(valid: {', '.join(method_names() + external)})")
    base, defaults = (entry.base, dict(entry.params)) if isinstance(entry, Preset) else (name, {})
    cls = method_class(base)
    params = build(cls.Params, {**defaults, **section}, "method")
    return MethodSpec(name, cls, params)
