"""The run configuration: one strict, typed schema.

A config is built from (1) the dataclass defaults (the sections here and in
:mod:`tsr.model.settings`), which are the reference paper's hyperparameters (Appendix
"Full-stream setup"), (2) an optional bundled config preset named by the file's ``preset:``
key or given on the command line, (3) a YAML file and (4) ``key.sub=value`` overrides, in that
order. The config presets are the only place a default differs from the dataclasses. Unknown
keys and bad values are errors naming the key's path. The ``method`` section is typed when the
config is built: the chosen method's (or method preset's) parameter dataclass checks it
(:mod:`tsr.methods.registry`).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from .errors import ConfigError
from .methods.registry import MethodSpec, resolve_method
from .model.settings import LoraConfig, ModelConfig
from .schema import build, require, to_plain

PRESET_DIR = "presets"


@dataclass
class StreamConfig:
    """Which tasks, in which order, and how much of each a run sees."""

    source: str = "synth-trace"
    root: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    order: str | list[str] = "canonical"
    budget: int = 50
    test_cap: int = 500
    max_length: int = 384
    replay_per_task: int = 100
    replay_source: Literal["pool", "budget"] = "pool"

    def check(self, path: str) -> None:
        require(bool(self.source), f"{path}.source", "must not be empty")
        require(self.budget >= 1, f"{path}.budget", "must be >= 1")
        require(self.test_cap >= 1, f"{path}.test_cap", "must be >= 1")
        require(self.max_length >= 2, f"{path}.max_length", "must be >= 2")
        require(self.replay_per_task >= 0, f"{path}.replay_per_task", "must be >= 0")


@dataclass
class TrainConfig:
    """Optimisation per task: a fresh AdamW for ``steps`` steps of ``batch_size`` examples.

    ``teacher`` chooses how distillation targets are computed (see :mod:`tsr.cl.teachers`):
    ``cached`` reuses exact per-example teacher logits, ``batch`` recomputes them on every
    batch as the reference code does; ``auto`` is ``cached`` on CPU and ``batch`` on GPUs,
    where large vocabularies make per-example logits too big to keep.
    """

    steps: int = 500
    lr: float = 1e-4
    batch_size: int = 4
    weight_decay: float = 0.01
    grad_clip: float | None = None
    teacher: Literal["auto", "cached", "batch"] = "auto"
    teacher_cache_mb: float = 2048.0

    def check(self, path: str) -> None:
        require(self.steps >= 1, f"{path}.steps", "must be >= 1")
        require(self.teacher_cache_mb >= 0, f"{path}.teacher_cache_mb", "must be >= 0")
        require(self.grad_clip is None or self.grad_clip > 0, f"{path}.grad_clip", "must be > 0 (or null: no clipping)")
        require(self.lr > 0, f"{path}.lr", "must be > 0")
        require(self.batch_size >= 1, f"{path}.batch_size", "must be >= 1")
        require(self.weight_decay >= 0, f"{path}.weight_decay", "must be >= 0")


@dataclass
class EvalConfig:
    """Evaluation after each task; ``all_tasks`` also scores unseen tasks and the zero-shot row."""

    batch_size: int = 16
    all_tasks: bool = False

    def check(self, path: str) -> None:
        require(self.batch_size >= 1, f"{path}.batch_size", "must be >= 1")


@dataclass
class RunConfig:
    seed: int = 0
    out_dir: str = "runs"
    name: str | None = None
    model: ModelConfig = field(default_factory=ModelConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    method: MethodSpec = field(default_factory=lambda: resolve_method({"name": "tsr"}))

    def check(self, path: str) -> None:
        require(self.seed >= 0, "seed", "must be >= 0")

    def to_dict(self) -> dict[str, Any]:
        """Plain data; the method section as ``{name, **parameters}``."""
        data = to_plain(dataclasses.replace(self, method=None))
        data["method"] = self.method.to_config()
        return data

    def fingerprint(self) -> str:
        """Hash of everything that can change results (not where or under what name it is saved)."""
        data = self.to_dict()
        data.pop("out_dir")
        data.pop("name")
        data["model"].pop("threads")
        if not data["model"]["compile"]:
            data["model"].pop("compile")  # eager runs keep the fingerprints they had before the key existed
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


def preset_names() -> list[str]:
    folder = resources.files("tsr").joinpath(PRESET_DIR)
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _read_yaml(text: str, where: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{where}{line}: malformed YAML ({problem})") from None
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


def merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Recursive merge; mappings merge key by key, everything else is replaced."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "options":
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_override(text: str) -> dict[str, Any]:
    """``a.b.c=value`` as a nested mapping; the value is parsed as YAML (``[a, b]``, ``true``)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} is not of the form key.sub=value")
    key, raw = text.split("=", 1)
    parts = key.strip().split(".")
    if not all(parts):
        raise ConfigError(f"override {text!r} has an empty key part")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    if parts[0] == "method" and len(parts) == 2 and parts[1] == "name":
        return {"method": {"name": value, "__reset__": True}}
    nested: dict[str, Any] = value
    for part in reversed(parts):
        nested = {part: nested}
    return nested


def resolve_layers(config: str | Path | None, overrides: list[str]) -> dict[str, Any]:
    """The merged plain config from a preset or file plus overrides (not yet type-checked).

    ``config`` is a path to a YAML file or the name of a bundled preset; ``None`` means the
    ``default`` preset. A file may start from a preset with a top-level ``preset:`` key.
    """
    if config is None:
        data = load_preset("default")
    elif Path(str(config)).suffix in (".yaml", ".yml") or Path(str(config)).exists():
        path = Path(str(config))
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found")
        data = _read_yaml(path.read_text(encoding="utf-8"), str(path))
        preset = data.pop("preset", None)
        if preset is not None:
            data = merge(load_preset(str(preset)), data)
    else:
        data = load_preset(str(config))
    for text in overrides:
        update = parse_override(text)
        method = update.get("method", {})
        if method.pop("__reset__", False):
            # Choosing another method drops the previous method's parameters.
            data["method"] = {"name": method["name"]}
            continue
        data = merge(data, update)
    return data


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
        raise ConfigError(f"config key 'method': expected a mapping with a name, found {type(section).__name__}")
    return dataclasses.replace(cfg, method=resolve_method(section))


def dump_yaml(cfg: RunConfig) -> str:
    return yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True)
