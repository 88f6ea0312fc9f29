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
from .data.collate import EVAL_BATCH
from .data.names import MAX_RUN_NAME_BYTES, unsafe_reason
from .data.records import parse_yaml, read_utf8
from .schema import build, neutral_values, require, result_data, setting, to_plain

PRESET_DIR = "presets"


@dataclass
class StreamConfig:
    """Which tasks, in which order, and how much of each a run sees."""

    source: str = "synth-trace"
    """a benchmark name (`synth-trace`, `synth-numglue`, `synth`, `trace8`, `trace8_hub`,
    `numglue8`, `pp15`, `superni`) or a stream YAML file (docs/streams.md)"""
    root: str | None = None
    """data folder of benchmarks read from disk"""
    options: dict[str, Any] = field(default_factory=dict)
    """benchmark-specific options, checked by the benchmark"""
    order: str | list[str] = "canonical"
    """`canonical`, `reversed`, `shuffle` (run seed), `shuffle:K`, or a list of task names"""
    budget: int = 50
    """N: the target examples each task trains on, drawn from its pool by seed"""
    test_cap: int = 500
    """at most this many test examples per task (the first ones)"""
    max_length: int = 384
    """prompt + answer + EOS in tokens; the prompt is cut from the left"""
    replay_per_task: int = 100
    """replay data each finished task leaves in the task memory"""
    replay_source: Literal["pool", "budget"] = "pool"
    """`pool` (drawn from the task's pool, as the paper's code does) or `budget` (the N examples it
    trained on)"""

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
    ``cached`` reuses exact per-example teacher log-probabilities, ``hidden`` reuses exact
    per-example last hidden states and runs the output head per step (memory per position: the
    hidden size instead of the vocabulary), ``batch`` recomputes the teacher on every batch as
    the reference code does; ``auto`` is ``cached`` on CPU and ``hidden`` on GPUs, where large
    vocabularies make per-example logits too big to keep (``batch`` where LoRA adapts the
    output head).
    """

    steps: int = 500
    """optimiser steps per task"""
    lr: float = 1e-4
    """AdamW learning rate (a fresh AdamW per task)"""
    batch_size: int = 4
    """examples per optimiser step"""
    weight_decay: float = 0.01
    """torch's AdamW default, as in the paper's code"""
    grad_clip: float | None = None
    """clip the adapter's gradient norm to this value; null: no clipping (the paper's code does not
    clip)"""
    teacher: Literal["auto", "cached", "hidden", "batch"] = "auto"
    """distillation targets: `cached` (exact per-example cache of log-probabilities), `hidden`
    (exact per-example cache of last hidden states, output head per step), `batch` (recomputed
    per batch); `auto` = cached on CPU, hidden on GPUs"""
    teacher_cache_mb: float = 2048.0
    """memory budget of the teacher cache (changes speed, never results)"""
    schedule: Literal["constant", "linear", "cosine"] = setting("constant", neutral="constant")
    """the learning rate over a task's steps (each task starts its own): `constant`, or after the
    warm-up a `linear` or `cosine` decay to zero at the task's last step"""
    warmup: int = setting(0, neutral=0)
    """steps of linear warm-up from zero at the start of each task"""
    accumulate: int = setting(1, neutral=1)
    """batches whose gradients each optimiser step sums (each `batch_size` examples, drawn as a step
    draws one): an effective batch of `batch_size` x `accumulate`; `train.steps` counts optimiser steps"""
    checkpoint_minutes: float = setting(10.0, result=False)
    """save a task's progress (adapter, optimiser, random streams) every this many minutes, after
    the step that passes the interval, so an interrupted run resumes within the task; 0: only when
    a task ends (changes when state is saved, never results)"""

    def check(self, path: str) -> None:
        require(self.steps >= 1, f"{path}.steps", "must be >= 1")
        require(self.teacher_cache_mb >= 0, f"{path}.teacher_cache_mb", "must be >= 0")
        require(self.checkpoint_minutes >= 0, f"{path}.checkpoint_minutes", "must be >= 0 (0: only at task ends)")
        require(self.grad_clip is None or self.grad_clip > 0, f"{path}.grad_clip", "must be > 0 (or null: no clipping)")
        require(self.lr > 0, f"{path}.lr", "must be > 0")
        require(0 <= self.warmup < self.steps, f"{path}.warmup", "must be >= 0 and below train.steps")
        require(self.accumulate >= 1, f"{path}.accumulate", "must be >= 1")
        require(self.batch_size >= 1, f"{path}.batch_size", "must be >= 1")
        require(self.weight_decay >= 0, f"{path}.weight_decay", "must be >= 0")


@dataclass
class EvalConfig:
    """Evaluation after each task: which seen tasks are scored (``schedule``); ``all_tasks``
    also scores unseen tasks and the zero-shot row; ``predictions`` also decodes every scored
    test set greedily, saves the answers and scores generation tasks by their metric."""

    batch_size: int = EVAL_BATCH
    """examples per evaluation forward pass"""
    schedule: str = setting("metrics", neutral="full")
    """which seen tasks are scored after each task: `metrics` (what Overall, Plas and BWT need:
    the task just learnt, and every task after the last one; O(K) scorings), `full` (every seen
    task after every task: the whole lower triangle of the results matrix, O(K^2)), or
    `every:M` (full rows after every M-th task and the last, the task just learnt otherwise)"""
    all_tasks: bool = False
    """evaluate every task after each task, and the zero-shot row before the first (implies full
    rows)"""
    predictions: bool = setting(False, neutral=False)
    """also decode each scored task's test set greedily after each task: the answers go to
    `<run>/predictions/` (docs/rundir.md) and generation tasks are scored by their metric (ROUGE-L,
    edit similarity or SARI: docs/metrics.md) besides answer loss; without it generation tasks
    report answer loss only"""
    extra_tokens: int = setting(16, only_with="predictions")
    """with `predictions`: a prediction stops at EOS or after the gold answer's tokens (with its
    EOS) plus this many"""

    def check(self, path: str) -> None:
        require(self.batch_size >= 1, f"{path}.batch_size", "must be >= 1")
        require(self.extra_tokens >= 0, f"{path}.extra_tokens", "must be >= 0")
        self.period(f"{path}.schedule")

    def period(self, path: str = "eval.schedule") -> int:
        """Full rows every this many tasks (1: `full`); 0 for `metrics`."""
        word = str(self.schedule).strip()
        if word in ("metrics", "full"):
            return 0 if word == "metrics" else 1
        if word.startswith("every:"):
            try:
                every = int(word.split(":", 1)[1])
            except ValueError:
                every = 0
            require(every >= 1, path, f"{word!r} needs a whole number of tasks >= 1 after 'every:'")
            return every
        raise ConfigError(f"config key '{path}': {word!r} is not valid (valid: metrics, full, every:M)")


@dataclass
class LogConfig:
    """What a run writes about its steps besides results (never changes results, nor the run's
    fingerprint)."""

    every: int = 25
    """write the mean loss terms of every this many steps to progress.jsonl (and TensorBoard)"""
    tensorboard: bool = False
    """also write loss terms, scores and metrics as TensorBoard events into `<run>/tensorboard`
    (needs the `tensorboard` package: `pip install tensorboard`)"""
    wandb: bool = False
    """also log them to Weights & Biases, one W&B run per run folder (needs `pip install 'tsr[wandb]'`;
    `WANDB_MODE=offline` keeps them on disk in `<run>/wandb`)"""
    wandb_project: str = "tsr"
    """the W&B project"""
    mlflow: bool = False
    """also log them to MLflow, the experiment named after the stream (needs `pip install 'tsr[mlflow]'`;
    the tracking URI is `MLFLOW_TRACKING_URI`, else a file store `<out_dir>/mlruns`)"""

    def check(self, path: str) -> None:
        require(self.every >= 1, f"{path}.every", "must be >= 1")


@dataclass
class RunConfig:
    seed: int = 0
    """every random draw derives from it (budgets, replay data, batches, the shared initialisation)"""
    out_dir: str = setting("runs", result=False)
    """where run directories go"""
    name: str | None = setting(None, result=False)
    """the run directory's name; default `<stream>-<method>-s<seed>-<fingerprint>`"""
    model: ModelConfig = field(default_factory=ModelConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    log: LogConfig = setting(default_factory=LogConfig, result=False)
    method: MethodSpec = field(default_factory=lambda: resolve_method({"name": "tsr"}))
    """the method or method preset (`method.name`, `tsr methods`) and that method's parameters
    (`method.*`, below)"""

    def check(self, path: str) -> None:
        require(self.seed >= 0, "seed", "must be >= 0")
        require(self.name != "", "name", "must not be empty (or null for the default name)")
        why = unsafe_reason(self.name, MAX_RUN_NAME_BYTES) if self.name is not None else None
        require(why is None, "name", f"{why}; give a plain folder name")

    def to_dict(self) -> dict[str, Any]:
        """Plain data; the method section as ``{name, **parameters}``."""
        data = to_plain(dataclasses.replace(self, method=None))
        data["method"] = self.method.to_config()
        return data

    def fingerprint(self) -> str:
        """Hash of everything that can change results (not where or under what name it is saved),
        by the one rule of :func:`tsr.schema.result_data` over every field's declaration."""
        data = result_data(dataclasses.replace(self, method=None))
        data["method"] = {"name": self.method.name, **result_data(self.method.params)}
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


def neutral_keys() -> dict[str, Any]:
    """Every key added after runs were saved, at the value that leaves a run's results as they
    were (the values the fingerprint leaves out): a run folder saved before the key existed has
    no value for it and reads as this one when runs are grouped (tsr table). Method keys are
    those of every registered method's parameters (``method.<key>``)."""
    from .methods.registry import METHODS

    out = neutral_values(RunConfig)
    for cls in METHODS.values():
        out.update({f"method.{k}": v for k, v in neutral_values(cls.Params).items()})
    return out


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


def merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Recursive merge; mappings merge key by key (a benchmark's ``options`` too, so
    ``stream.options.a=1 stream.options.b=2`` keeps both), everything else is replaced."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
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
        update = parse_override(text)
        method = update.get("method", {})
        if method.pop("__reset__", False):
            # Choosing another method drops the previous method's parameters.
            data["method"] = {"name": method["name"]}
            for key in [k for k in sources if k.startswith("method.")]:
                del sources[key]
            sources["method.name"] = "command line"
            continue
        data = merge(data, _sourced(update, "command line", sources))
    path = str((data.get("model") or {}).get("path", "bundled")) if isinstance(data.get("model"), dict) \
        else "bundled"
    own = model_layer(path)
    for key in _flat_keys(own):
        sources.setdefault(key, f"model {path}")
    return merge(own, data)


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
        raise ConfigError(f"config key 'method': expected a mapping with a name, found {type(section).__name__}")
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

    from .model.adapter import ATTENTION_TARGETS, peft_default_targets

    model_type = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type", "")
    targets = ATTENTION_TARGETS.get(model_type) or tuple(peft_default_targets().get(model_type) or ())
    return f"auto: {', '.join(targets)} for {model_type}" if targets else None
