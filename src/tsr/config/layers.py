"""How a run config is assembled: the model's own settings, a preset or file, then
``key.sub=value`` overrides (:func:`resolve_layers`), where each value came from, and the config
as YAML."""

from __future__ import annotations

import copy
import dataclasses
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..data.records import check_parsed, parse_yaml, read_utf8, too_deep
from ..errors import ConfigError
from ..methods.registry import resolve_method
from ..schema import build
from .sections import RunConfig

PRESET_DIR = "presets"


def preset_names() -> list[str]:
    folder = resources.files("tsr").joinpath(PRESET_DIR)
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _read_yaml(text: str, where: str) -> dict[str, Any]:
    data = parse_yaml(text, where, ConfigError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of config keys, found {type(data).__name__}")
    return data


def load_preset(name: str) -> dict[str, Any]:
    names = preset_names()
    if name not in names:
        raise ConfigError(f"unknown preset {name!r} (valid: {', '.join(names)})")
    text = resources.files("tsr").joinpath(PRESET_DIR, f"{name}.yaml").read_text(encoding="utf-8")
    return _read_yaml(text, f"preset {name}")


def merge(base: dict[str, Any], update: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Recursive merge; mappings merge key by key (a benchmark's ``options`` too, so
    ``stream.options.a=1 stream.options.b=2`` keeps both), everything else is replaced.

    A mapping never replaces a value that is set and is not one (``method: tsr_need`` in a file,
    then ``method.probe_batches=1``): one of the two layers is wrong, and merging would hide it."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge(current, value, f"{prefix}{key}.")
        elif isinstance(value, dict) and value and current is not None:
            raise ConfigError(f"config key '{prefix}{key}': expected a mapping, found "
                              f"{type(current).__name__} {current!r}, under which "
                              f"'{prefix}{key}.{next(iter(value))}' is set{_method_hint(prefix + key, current)}")
        else:
            out[key] = copy.deepcopy(value)
    return out


def _method_hint(key: str, value: Any) -> str:
    """How to choose a method, where ``value`` (a string at ``method``) looks like an attempt."""
    if key != "method" or not isinstance(value, str):
        return ""
    return f" (to choose a method: method.name={value} on the command line, method: {{name: {value}}} in a file)"


def parse_override(text: str) -> dict[str, Any]:
    """``a.b.c=value`` as a nested mapping; the value is parsed as YAML (``[a, b]``, ``true``)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} is not of the form key.sub=value")
    key, raw = text.split("=", 1)
    parts = key.strip().split(".")
    if not all(parts):
        raise ConfigError(f"override {text!r} has an empty key part")
    try:
        value = check_parsed(yaml.safe_load(raw), f"override {key.strip()}", ConfigError) if raw.strip() else ""
    except RecursionError:
        raise too_deep(f"override {key.strip()}", ConfigError) from None
    except yaml.YAMLError:
        value = raw
    if parts[0] == "method" and len(parts) == 2 and parts[1] == "name":
        return {"method": {"name": value, "__reset__": True}}
    nested: dict[str, Any] = value
    for part in reversed(parts):
        nested = {part: nested}
    return nested


def model_layer(path: str) -> dict[str, Any]:
    """The settings a model brings of its own, beneath every preset, file and override: the
    bundled base's tuned ones (``presets/models/bundled.yaml``); any other model takes the
    dataclass defaults, the paper's setup (its family preset, ``qwen2.5-0.5b`` and the others,
    names its batch size and dtype)."""
    if path != "bundled":
        return {}
    text = resources.files("tsr").joinpath(PRESET_DIR, "models", "bundled.yaml").read_text(encoding="utf-8")
    return _read_yaml(text, "the bundled base's settings")


def resolve_layers(config: str | Path | None, overrides: list[str],
                   sources: dict[str, str] | None = None) -> dict[str, Any]:
    """The merged plain config (not yet type-checked): the model's own settings
    (:func:`model_layer`), then a preset or file, then overrides.

    ``config`` is a path to a YAML file or the name of a bundled preset; ``None`` means the
    ``default`` preset. A file may start from a preset with a top-level ``preset:`` key.
    ``sources``, when given, is filled with where each key's value came from (``model
    bundled``, ``preset NAME``, ``file PATH``, ``command line``); a key absent from it is the
    dataclass default.
    """
    sources = {} if sources is None else sources
    if config is None:
        data = _sourced(load_preset("default"), "preset default", sources)
    elif Path(str(config)).suffix in (".yaml", ".yml") or Path(str(config)).exists():
        path = Path(str(config))
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found")
        data = _read_yaml(read_utf8(path, ConfigError), str(path))
        preset = data.pop("preset", None)
        if preset is not None:
            data = merge(_sourced(load_preset(str(preset)), f"preset {preset}", sources),
                         _sourced(data, f"file {path}", sources))
        else:
            _sourced(data, f"file {path}", sources)
    else:
        data = _sourced(load_preset(str(config)), f"preset {config}", sources)
    for text in overrides:
        data = apply_override(data, text, sources)
    path = str((data.get("model") or {}).get("path", "bundled")) if isinstance(data.get("model"), dict) \
        else "bundled"
    own = model_layer(path)
    for key in _flat_keys(own):
        sources.setdefault(key, f"model {path}")
    merged = merge(own, data)
    refuse_remote_code(merged, sources)
    return merged


REMOTE_CODE = "model.trust_remote_code"


def refuse_remote_code(data: dict[str, Any], sources: dict[str, str]) -> None:
    """A :class:`ConfigError` where ``model.trust_remote_code`` is true by a layer other than
    the command line: a config file (a received run's ``config.yaml``, a preset, any YAML) never
    lets a model run its own code; only the caller's own ``model.trust_remote_code=true`` does."""
    model = data.get("model")
    if not isinstance(model, dict) or model.get("trust_remote_code") is not True:
        return
    where = sources.get(REMOTE_CODE, "")
    if where == "command line":
        return
    name = where.split(" ", 1)[1] if where.startswith("file ") else where
    raise ConfigError(f"{name}: {REMOTE_CODE}: true is refused in a config file (only the command line lets a "
                      f"model run its own code); if you trust the code of {model.get('path', 'bundled')}, pass "
                      f"{REMOTE_CODE}=true on the command line instead (tsr learn also needs --trust-remote-code)")


def apply_override(data: dict[str, Any], text: str, sources: dict[str, str] | None = None) -> dict[str, Any]:
    """``data`` with the override ``key.sub=value`` applied (``sources``, when given, records
    its keys as coming from the command line). ``method.name=X`` chooses another method and drops
    the previous one's parameters; ``method=<scalar>`` is not a method choice: the merge keeps
    it, and the type check names the key."""
    sources = {} if sources is None else sources
    update = parse_override(text)
    method = update.get("method", {})
    if isinstance(method, dict) and method.pop("__reset__", False):
        data = dict(data, method={"name": method["name"]})
        for key in [k for k in sources if k.startswith("method.")]:
            del sources[key]
        sources["method.name"] = "command line"
        return data
    return merge(data, _sourced(update, "command line", sources))


def _sourced(data: dict[str, Any], where: str, sources: dict[str, str]) -> dict[str, Any]:
    """``data``, every flat key of it recorded as coming from ``where``."""
    for key in _flat_keys(data):
        sources[key] = where
    return data


def _flat_keys(data: dict[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key, value in data.items():
        if isinstance(value, dict) and key != "options" and value:
            keys += _flat_keys(value, f"{prefix}{key}.")
        else:
            keys.append(f"{prefix}{key}")
    return keys


def config_sources(config: str | Path | None = None, overrides: list[str] | None = None) -> dict[str, str]:
    """Where each key of ``load_config(config, overrides)`` that is not a dataclass default came from."""
    sources: dict[str, str] = {}
    resolve_layers(config, list(overrides or []), sources)
    return sources


def load_config(config: str | Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    """A checked :class:`RunConfig`, its ``method`` section typed by the method's parameters."""
    return from_plain(resolve_layers(config, list(overrides or [])))


def from_plain(data: dict[str, Any]) -> RunConfig:
    """A checked :class:`RunConfig` from plain data such as :meth:`RunConfig.to_dict` gives."""
    data = dict(data)
    section = data.pop("method", None)
    cfg = build(RunConfig, data)
    if section is None:
        return cfg
    if isinstance(section, dict) and "name" not in section:
        section = {"name": cfg.method.name, **section}  # parameters of the default method
    return with_method(cfg, section)


def with_method(cfg: RunConfig, section: dict[str, Any]) -> RunConfig:
    """``cfg`` with the method ``section`` (``{name, **parameters}``) checked and typed."""
    if not isinstance(section, dict):
        raise ConfigError(f"config key 'method': expected a mapping with a name, found "
                          f"{type(section).__name__}{_method_hint('method', section)}")
    return dataclasses.replace(cfg, method=resolve_method(section))


def dump_yaml(cfg: RunConfig) -> str:
    return yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True)


def annotated_yaml(cfg: RunConfig, sources: dict[str, str]) -> str:
    """:func:`dump_yaml` with each value that is not a dataclass default marked with where it
    came from (``# command line``, ``# preset NAME``, ``# model bundled``), and ``lora.targets:
    auto`` with the modules it means for a local model folder."""
    lines, stack = [], []
    for line in dump_yaml(cfg).splitlines():
        indent = len(line) - len(line.lstrip(" "))
        key = line.strip().split(":", 1)[0] if ":" in line and not line.lstrip().startswith("- ") else None
        if key is None:
            lines.append(line)
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dotted = ".".join([k for _, k in stack] + [key])
        stack.append((indent, key))
        note = sources.get(dotted)
        if dotted == "lora.targets" and cfg.lora.targets == "auto":
            note = "; ".join(filter(None, [note, auto_targets_of(cfg.model.path)]))
        lines.append(f"{line}  # {note}" if note else line)
    return "\n".join(lines) + "\n"


def auto_targets_of(path: str) -> str | None:
    """What ``lora.targets: auto`` means for a local model folder (read from its config.json),
    or None where that cannot be told without loading the model."""
    folder = Path(path)
    if not (folder / "config.json").is_file():
        return None
    import json

    from ..model.adapter import ATTENTION_TARGETS, peft_default_targets

    model_type = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type", "")
    targets = ATTENTION_TARGETS.get(model_type) or tuple(peft_default_targets().get(model_type) or ())
    return f"auto: {', '.join(targets)} for {model_type}" if targets else None
