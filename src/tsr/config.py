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
from .data.names import MAX_RUN_NAME_BYTES, unsafe_reason
from .data.records import parse_yaml, read_utf8
from .schema import build, require, to_plain

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
    checkpoint_minutes: float = 10.0
    """save a task's progress (adapter, optimiser, random streams) every this many minutes, after
    the step that passes the interval, so an interrupted run resumes within the task; 0: only when
    a task ends (changes when state is saved, never results)"""

    def check(self, path: str) -> None:
        require(self.steps >= 1, f"{path}.steps", "must be >= 1")
        require(self.teacher_cache_mb >= 0, f"{path}.teacher_cache_mb", "must be >= 0")
        require(self.checkpoint_minutes >= 0, f"{path}.checkpoint_minutes", "must be >= 0 (0: only at task ends)")
        require(self.grad_clip is None or self.grad_clip > 0, f"{path}.grad_clip", "must be > 0 (or null: no clipping)")
        require(self.lr > 0, f"{path}.lr", "must be > 0")
        require(self.batch_size >= 1, f"{path}.batch_size", "must be >= 1")
        require(self.weight_decay >= 0, f"{path}.weight_decay", "must be >= 0")


@dataclass
class EvalConfig:
    """Evaluation after each task: which seen tasks are scored (``schedule``); ``all_tasks``
    also scores unseen tasks and the zero-shot row; ``predictions`` also decodes every scored
    test set greedily, saves the answers and scores generation tasks by their metric."""

    batch_size: int = 16
    """examples per evaluation forward pass"""
    schedule: str = "metrics"
    """which seen tasks are scored after each task: `metrics` (what Overall, Plas and BWT need:
    the task just learnt, and every task after the last one; O(K) scorings), `full` (every seen
    task after every task: the whole lower triangle of the results matrix, O(K^2)), or
    `every:M` (full rows after every M-th task and the last, the task just learnt otherwise)"""
    all_tasks: bool = False
    """evaluate every task after each task, and the zero-shot row before the first (implies full
    rows)"""
    predictions: bool = False
    """also decode each scored task's test set greedily after each task: the answers go to
    `<run>/predictions/` (docs/rundir.md) and generation tasks are scored by their metric (ROUGE-L,
    edit similarity or SARI: docs/metrics.md) besides answer loss; without it generation tasks
    report answer loss only"""
    extra_tokens: int = 16
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

    def check(self, path: str) -> None:
        require(self.every >= 1, f"{path}.every", "must be >= 1")


@dataclass
class RunConfig:
    seed: int = 0
    """every random draw derives from it (budgets, replay data, batches, the shared initialisation)"""
    out_dir: str = "runs"
    """where run directories go"""
    name: str | None = None
    """the run directory's name; default `<stream>-<method>-s<seed>-<fingerprint>`"""
    model: ModelConfig = field(default_factory=ModelConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    log: LogConfig = field(default_factory=LogConfig)
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
        """Hash of everything that can change results (not where or under what name it is saved)."""
        data = self.to_dict()
        data.pop("out_dir")
        data.pop("name")
        data.pop("log")
        data["model"].pop("threads")
        data["train"].pop("checkpoint_minutes")
        if not data["model"]["compile"]:
            data["model"].pop("compile")  # eager runs keep the fingerprints they had before the key existed
        if data["model"]["adapter_dtype"] == "float32":
            data["model"].pop("adapter_dtype")  # likewise
        if data["model"]["revision"] is None:
            data["model"].pop("revision")  # likewise
        if data["eval"]["schedule"] == "full":
            data["eval"].pop("schedule")  # runs scored in full before the key existed keep their names
        for key, default in LATE_METHOD_KEYS.items():  # likewise: method keys added after runs were named
            if key in data["method"] and data["method"][key] == default:
                data["method"].pop(key)
        if not data["eval"]["predictions"]:  # likewise; with predictions on, results.json holds more
            data["eval"].pop("predictions")
            data["eval"].pop("extra_tokens")
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


# Method keys added after runs were named, with the value that leaves a run unchanged: left out of
# the fingerprint at that value, so finished runs keep their names.
LATE_METHOD_KEYS = {"signatures": "", "signatures_proxy": False, "kd_timing": "interleaved", "kd_posthoc": 0.2,
                    "kd_reshape": "none", "kd_gamma": 4.0, "kd_repel": 1e-3, "need": "none", "need_weight": 0.5,
                    "need_floor": 0.5, "need_gate": "", "need_gate_min": 0.05}

# Every key added after runs were saved, at the value that leaves a run's results as they were
# (the values :meth:`RunConfig.fingerprint` leaves out): a run folder saved before the key
# existed has no value for it and reads as this one when runs are grouped (tsr table).
# ``eval.extra_tokens`` only matters with ``eval.predictions`` on.
NEUTRAL_KEYS = {"model.compile": False, "model.adapter_dtype": "float32", "model.revision": None, "eval.schedule": "full",
                "eval.predictions": False, **{f"method.{k}": v for k, v in LATE_METHOD_KEYS.items()}}


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
        data = _read_yaml(read_utf8(path, ConfigError), str(path))
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


# -- the reference page: docs/config.md is generated from the dataclasses and the presets ------
REFERENCE_INTRO = """# Configuration

<!-- Generated from the config dataclasses and the bundled presets by
     `python -m tsr.config > docs/config.md`; a test fails when this page is stale. -->

A run is described by one typed config (`tsr/config.py`, with the `model` and `lora` sections in
`tsr/model/settings.py`). It is built from

1. the defaults below, which are the reference paper's hyperparameters (Appendix "Full-stream
   setup");
2. a bundled config preset (table below) or a YAML file, which may start from a preset with a
   top-level `preset:` key; the presets are the only place a default differs from the table;
3. `key.sub=value` overrides on the command line (values are parsed as YAML: `[a, b]`,
   `true`, `1e-4`); a mapping given in parts merges key by key (`stream.options.a=1
   stream.options.b=2` keeps both).

Unknown keys and bad values are errors that name the key's path
(`unknown config key 'train.lrr' (valid keys in 'train': steps, lr, ...)`). A number that is
not finite (`inf`, `nan`) is refused wherever it appears, except `method.tau` of TSR, where
`inf` means uniform routing. `tsr config
[CONFIG] [key=value ...]` prints the resolved config; every run directory keeps it as
`config.yaml`, and its hash (the *fingerprint*) names the run. Choosing another method on the
command line (`method.name=er`) drops the previous method's parameters, so `tsr run
method.name=er` runs ER with its own defaults.
"""


def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a dataclass."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body, docs = tree.body[0].body, {}
    for stmt, after in zip(body, body[1:]):
        if isinstance(stmt, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[stmt.target.id] = " ".join(str(after.value.value).split())
    return docs


def _cell(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
    return f"`{text}`"


def _key_rows(cls: type, prefix: str) -> list[str]:
    docs, rows = _attribute_docs(cls), []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default) and not isinstance(default, MethodSpec):
            rows += _key_rows(type(default), f"{prefix}{f.name}.")
        elif isinstance(default, MethodSpec):
            rows.append(f"| `method.name` | `{default.name}` | {docs.get(f.name, '')} |")
        else:
            rows.append(f"| `{prefix}{f.name}` | {_cell(default)} | {docs.get(f.name, '')} |")
    return rows


def reference_markdown() -> str:
    """docs/config.md: every key with its default and meaning, the config presets, and every
    method's parameters, from the dataclasses and the bundled presets."""
    from .methods.registry import METHODS, PRESETS

    out = [REFERENCE_INTRO, "## Config presets\n", "| preset | differs from the defaults in | what it is |", "|---|---|---|"]
    for name in preset_names():
        text = resources.files("tsr").joinpath(PRESET_DIR, f"{name}.yaml").read_text(encoding="utf-8")
        first = _first_sentence(text)
        keys = ", ".join(f"`{k}`" for k in _flat_keys(_read_yaml(text, f"preset {name}")))
        out.append(f"| `{name}` | {keys} | {first} |")
    out += ["", "## Keys\n", "| key | default | meaning |", "|---|---|---|", *_key_rows(RunConfig, ""), ""]
    out += ["## Method parameters\n", "`method.name` picks a method or a method preset; the other `method.*` keys are "
            "that method's parameters (docs/methods.md says where each default comes from).\n",
            "| method | parameters and defaults |", "|---|---|"]
    for name in sorted(METHODS):
        params = to_plain(METHODS[name].Params())
        listed = ", ".join(f"`{k}={_cell(v)[1:-1]}`" for k, v in params.items()) or "none"
        out.append(f"| `{name}` | {listed} |")
    out += ["", "| method preset | method and parameters |", "|---|---|"]
    for name in sorted(PRESETS):
        base, params, _ = PRESETS[name]
        listed = ", ".join(f"`{k}={_cell(v)[1:-1]}`" for k, v in params.items())
        out.append(f"| `{name}` | `{base}`{': ' + listed if listed else ''} |")
    return "\n".join(out) + "\n"


def _first_sentence(text: str) -> str:
    """The first sentence of a preset file's leading comment."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    words = " ".join(lines)
    end = words.find(". ")
    return words if end < 0 else words[: end + 1]


def _flat_keys(data: dict[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key, value in data.items():
        if isinstance(value, dict) and key != "options":
            keys += _flat_keys(value, f"{prefix}{key}.")
        else:
            keys.append(f"{prefix}{key}")
    return keys


if __name__ == "__main__":
    import sys

    sys.stdout.write(reference_markdown())
