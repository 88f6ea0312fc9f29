"""Strict construction of typed dataclasses from plain data (YAML, JSON, overrides).

``build(cls, data, path)`` checks every key against the dataclass fields and every value
against the field's type, coercing only where the meaning is unambiguous (``"1e-4"`` to a
float field, an int to a float). Errors name the key's full path. A number that is not finite
(``nan``, ``inf``) is refused wherever it appears, except in a float field declared with
:func:`infinite` (TSR's ``tau``, where ``inf`` means uniform routing). A dataclass may define
``check(self, path)`` to validate ranges after construction.
"""

from __future__ import annotations

import dataclasses
import math
import types
from importlib import import_module
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from .errors import ConfigError

_FLOAT_WORDS = {"inf": math.inf, "+inf": math.inf, ".inf": math.inf, "infinity": math.inf,
                "-inf": -math.inf, "-.inf": -math.inf}


def infinite(default: float) -> Any:
    """A float field that also takes ``inf`` and ``-inf`` (never NaN)."""
    return dataclasses.field(default=default, metadata={"infinite": True})


_UNSET = object()


def setting(default: Any = dataclasses.MISSING, *, neutral: Any = _UNSET, result: bool = True,
            only_with: str | None = None, default_factory: Any = dataclasses.MISSING) -> Any:
    """A config field with what :func:`result_data` needs to know of it.

    ``result=False``: the key never changes results (where a run is saved, how often it logs),
    so it is not part of a run's fingerprint. ``neutral``: a key added after runs were named,
    and the value at which it leaves them as they were; at that value it is left out, so those
    runs keep their names. ``only_with``: the key matters only when that sibling field is not at
    its own neutral value."""
    metadata: dict = {"result": result}
    if neutral is not _UNSET:
        metadata["neutral"] = neutral
    if only_with is not None:
        metadata["only_with"] = only_with
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def added(default: Any, **kwargs: Any) -> Any:
    """A config field added after runs were named, whose default leaves those runs as they were:
    :func:`setting` with ``neutral`` the default."""
    return setting(default, neutral=default, **kwargs)


def neutral_values(cls: type, prefix: str = "") -> dict[str, Any]:
    """``{dotted key: neutral value}`` of every field of ``cls`` (and its nested dataclasses)
    declared with a neutral value."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if "neutral" in f.metadata:
            out[prefix + f.name] = f.metadata["neutral"]
        default = f.default_factory() if f.default is dataclasses.MISSING and \
            f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            out.update(neutral_values(type(default), f"{prefix}{f.name}."))
    return out


def not_results(cls: type, prefix: str = "") -> list[str]:
    """Dotted keys of the fields of ``cls`` declared ``result=False`` (a whole section ends
    with a dot: ``log.``)."""
    out: list[str] = []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default is dataclasses.MISSING and \
            f.default_factory is not dataclasses.MISSING else f.default
        section = dataclasses.is_dataclass(default) and not isinstance(default, type)
        if not f.metadata.get("result", True):
            out.append(prefix + f.name + ("." if section else ""))
        elif section:
            out += not_results(type(default), f"{prefix}{f.name}.")
    return out


def result_data(obj: Any) -> Any:
    """Plain data of ``obj`` with only what can change results, by one rule over its fields'
    declarations (:func:`setting`): a field is left out when it is not a result setting, when it
    is at its neutral value, or when the sibling it only matters with is at that sibling's
    neutral value. What a run's fingerprint hashes."""
    if not (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
        return to_plain(obj)
    fields = {f.name: f for f in dataclasses.fields(obj)}

    def at_neutral(name: str) -> bool:
        meta = fields[name].metadata
        return "neutral" in meta and getattr(obj, name) == meta["neutral"]

    out = {}
    for name, f in fields.items():
        if not f.metadata.get("result", True) or at_neutral(name):
            continue
        if f.metadata.get("only_with") and at_neutral(f.metadata["only_with"]):
            continue
        out[name] = result_data(getattr(obj, name))
    return out


def _finite(value: Any, path: str, allow_inf: bool = False) -> Any:
    """``value``, or a ConfigError when it is (or holds) a number that is not finite."""
    if isinstance(value, float) and not math.isfinite(value) and not (allow_inf and not math.isnan(value)):
        raise ConfigError(f"config key '{path}': {value} is not a finite number")
    if isinstance(value, dict):
        for k, v in value.items():
            _finite(v, _join(path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _finite(v, f"{path}[{i}]")
    return value


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if tp is type(None):
        return "null"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if origin in (list, tuple):
        return "a list"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {bool: "true/false", int: "an integer", float: "a number", str: "a string"}.get(tp, str(tp))


def coerce(tp: Any, value: Any, path: str, allow_inf: bool = False) -> Any:
    """``value`` as an instance of type ``tp``, or a ConfigError naming ``path``; ``allow_inf``:
    a float may be infinite (a field declared with :func:`infinite`)."""
    origin = get_origin(tp)
    if tp is Any:
        return _finite(value, path)
    if origin is Literal:
        allowed = get_args(tp)
        if value in allowed and type(value) is type(allowed[allowed.index(value)]):
            return value
        raise ConfigError(f"config key '{path}': {_describe(value)} is not valid (valid: "
                          + ", ".join(str(a) for a in allowed) + ")")
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce(option, value, path, allow_inf)
            except ConfigError as err:
                errors.append(err)
        if len(errors) == 1:
            raise errors[0]
        raise ConfigError(f"config key '{path}': expected {_type_name(tp)}, got {_describe(value)}")
    if dataclasses.is_dataclass(tp):
        return build(tp, value, path)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key '{path}': expected a list, got {_describe(value)}")
        (item,) = get_args(tp)[:1] or (Any,)
        items = [coerce(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"config key '{path}': expected a mapping, got {_describe(value)}")
        _, vt = get_args(tp) or (str, Any)
        return {str(k): coerce(vt, v, _join(path, k)) for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value.replace("_", ""))
            except ValueError:
                pass
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _finite(float(value), path, allow_inf)
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _FLOAT_WORDS:
                return _finite(_FLOAT_WORDS[word], path, allow_inf)
            try:
                return _finite(float(value), path, allow_inf)
            except ValueError:
                pass
    elif tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    else:  # pragma: no cover - schema bug
        raise TypeError(f"unsupported schema type {tp!r} at {path}")
    raise ConfigError(f"config key '{path}': expected {_type_name(tp)}, got {_describe(value)}")


def build(cls: type, data: Any, path: str = "") -> Any:
    """An instance of dataclass ``cls`` from a mapping, strictly checked."""
    where = path or "config"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config key '{where}': expected a mapping, got {_describe(data)}")
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in data if k not in fields]
    if unknown:
        valid = ", ".join(fields) or "none"
        raise ConfigError(f"unknown config key '{_join(path, unknown[0])}' (valid keys"
                          f"{' in ' + repr(path) if path else ''}: {valid})")
    kwargs = {name: coerce(hints[name], data[name], _join(path, name), bool(fields[name].metadata.get("infinite")))
              for name in fields if name in data}
    obj = cls(**kwargs)
    check = getattr(obj, "check", None)
    if callable(check):
        check(path)
    return obj


def to_plain(obj: Any) -> Any:
    """Plain JSON/YAML-ready data from dataclasses, tuples and floats (inf kept as 'inf')."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, float) and math.isinf(obj):
        return "inf" if obj > 0 else "-inf"
    return obj


def defined(where: str) -> Any:
    """The value named ``"module:NAME"`` (or ``"module:Class.field"``, a dataclass field's
    default), imported on this call: a default defined once where it belongs, which a flag or
    an audit's params stand for without importing that module before it is needed."""
    module, _, name = where.partition(":")
    found: Any = import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


def require(condition: bool, path: str, message: str) -> None:
    """Range check helper for ``check`` hooks."""
    if not condition:
        raise ConfigError(f"config key '{path}': {message}")


__all__ = ["build", "coerce", "defined", "infinite", "neutral_values", "not_results", "require", "result_data", "setting", "to_plain"]
