"""The run configuration's sections: every key with its default (the paper's hyperparameters,
Appendix "Full-stream setup"), its check, and how it enters a run's fingerprint (declared per
field with :func:`tsr.schema.setting`). How a config is assembled from its layers:
:mod:`tsr.config.layers`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from ..data.collate import EVAL_BATCH
from ..data.names import MAX_RUN_NAME_BYTES, unsafe_reason
from ..errors import ConfigError
from ..methods.registry import MethodSpec, resolve_method
from ..model.settings import CHECKPOINT_MINUTES, LoraConfig, ModelConfig
from ..runs.grouping import Grouping, value_text
from ..schema import added, neutral_values, not_results, require, result_data, setting, to_plain

# the largest seed the run index (SQLite) and torch's generators store: a signed 64-bit integer
MAX_SEED = 2**63 - 1
# examples per batch, beyond any backbone's memory at the paper's lengths: a typo, not a setting
MAX_BATCH = 1024


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
    # not in the fingerprint: `left` differs from `refuse` only on data `refuse` stops on, so no
    # two finished runs differ by it alone (and paper-preset runs keep their names)
    truncate: Literal["refuse", "left"] = setting("refuse", result=False)
    """an answer (with EOS) longer than `max_length` on its own: `refuse` (an error naming the
    example) or `left` (the sequence keeps its last `max_length` tokens, as the reference code's
    left truncation does: no prompt, the answer's end); answers that fit are always whole"""
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
    """examples per optimiser step (at most 1024)"""
    weight_decay: float = 0.01
    """torch's AdamW default, as in the paper's code"""
    grad_clip: float | None = None
    """clip the adapter's gradient norm to this value; null: no clipping (the paper's code does not
    clip)"""
    teacher: Literal["auto", "cached", "hidden", "expected", "batch"] = "auto"
    """distillation targets: `cached` (exact per-example cache of log-probabilities), `hidden`
    (exact per-example cache of last hidden states, output head per step), `expected` (exact
    per-example cache of what the KL needs over a frozen head: the expected head row and the
    negative entropy, hidden size + 1 per position, no teacher head per step; read by the fused
    head only, other readers recompute per batch), `batch` (recomputed per batch); `auto` =
    expected where the fused head runs, else cached on CPU, hidden on GPUs"""
    teacher_cache_mb: float = 2048.0
    """memory budget of the teacher cache (changes speed, never results)"""
    fused_head: bool | Literal["auto"] = added("auto")
    """distilled batches (TSR's, LwF's KL over every attended position) compute the output head,
    cross-entropy, KL and their gradient in chunks of positions with no batch x length x vocabulary
    tensor kept (`tsr.cl.fused_head`): the same losses to float rounding, less time and memory on a
    large vocabulary. `auto`: from a vocabulary of 8192 words on (not on the bundled base, whose
    runs stay bit for bit as they were); `true`, `false`. Only for a plain frozen head (no LoRA on
    it, no final soft cap)"""
    packing: bool = added(False)
    """training forwards lay each batch's examples end to end in as few rows as fit, each
    attending to itself only (`tsr.model.packing`): the same examples per step and the same
    losses to float rounding, less padding; teachers and evaluation stay unpacked"""
    schedule: Literal["constant", "linear", "cosine"] = added("constant")
    """the learning rate over a task's steps (each task starts its own): `constant`, or after the
    warm-up a `linear` or `cosine` decay to zero at the task's last step"""
    warmup: int = added(0)
    """steps of linear warm-up from zero at the start of each task"""
    accumulate: int = added(1)
    """batches whose gradients each optimiser step sums (each `batch_size` examples, drawn as a step
    draws one): an effective batch of `batch_size` x `accumulate`; `train.steps` counts optimiser steps"""
    checkpoint_minutes: float = setting(CHECKPOINT_MINUTES, result=False)
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
        require(1 <= self.batch_size <= MAX_BATCH, f"{path}.batch_size", f"must be between 1 and {MAX_BATCH}")
        require(self.weight_decay >= 0, f"{path}.weight_decay", "must be >= 0")


# The most memory a batch's logits may take in evaluation by default (eval.logits_mb).
EVAL_LOGITS_MB = 256.0


@dataclass
class EvalConfig:
    """Evaluation after each task: which seen tasks are scored (``schedule``); ``all_tasks``
    also scores unseen tasks and the zero-shot row; ``predictions`` also decodes every scored
    test set greedily, saves the answers and scores generation tasks by their metric."""

    batch_size: int = EVAL_BATCH
    """examples per evaluation forward pass (at most 1024)"""
    schedule: str = setting("metrics", neutral="full")
    """which seen tasks are scored after each task: `metrics` (what Overall, Plas and BWT need:
    the task just learnt, and every task after the last one; O(K) scorings), `full` (every seen
    task after every task: the whole lower triangle of the results matrix, O(K^2)), or
    `every:M` (full rows after every M-th task and the last, the task just learnt otherwise)"""
    all_tasks: bool = False
    """evaluate every task after each task, and the zero-shot row before the first (implies full
    rows)"""
    predictions: bool = added(False)
    """also decode each scored task's test set greedily after each task: the answers go to
    `<run>/predictions/` (docs/rundir.md) and generation tasks are scored by their metric (ROUGE-L,
    edit similarity or SARI: docs/metrics.md) besides answer loss; without it generation tasks
    report answer loss only"""
    extra_tokens: int = setting(16, only_with="predictions")
    """with `predictions`: a prediction stops at EOS or after the gold answer's tokens (with its
    EOS) plus this many"""
    logits_mb: float = setting(EVAL_LOGITS_MB, result=False)
    """the most memory, in MB, one evaluation batch's logits may take: a batch whose answer
    window would take more (16 x 1024 positions x a 49152-word vocabulary is 3 GB) is scored
    from its hidden states, the output head run on its supervised positions in chunks of this
    size; the same scores to float rounding (not part of the fingerprint)"""

    def check(self, path: str) -> None:
        require(1 <= self.batch_size <= MAX_BATCH, f"{path}.batch_size", f"must be between 1 and {MAX_BATCH}")
        require(0 < self.logits_mb <= 2**20, f"{path}.logits_mb", "must be > 0 and at most 1048576 (MB)")
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
    """write the mean loss terms of every this many steps, with the learning rate (`lr`) and the
    adapter's gradient norm before clipping (`grad_norm`), to progress.jsonl and every logger
    (`train/<term>`)"""
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
    the tracking URI is `MLFLOW_TRACKING_URI`, else a file store `<out_dir>/mlruns`, which a current
    MLflow opens only when asked: `MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri
    <out_dir>/mlruns`)"""

    def check(self, path: str) -> None:
        require(self.every >= 1, f"{path}.every", "must be >= 1")


@dataclass
class RunConfig:
    seed: int = 0
    """every random draw derives from it (budgets, replay data, batches, the shared
    initialisation); from 0 to 2^63 - 1, a signed 64-bit integer as the run index stores it"""
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
        require(0 <= self.seed <= MAX_SEED, "seed", f"must be between 0 and {MAX_SEED} (2^63 - 1)")
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


def grouping_of(cfg: RunConfig) -> Grouping:
    """What the tables group this run's config by (:mod:`tsr.runs.grouping`), from the config's
    declarations: the keys that never change results (and the seed), and the neutral value of
    every key of the config and of its method's parameters that has one. Each run records it
    in its ``run.json``."""
    neutral = {**neutral_values(RunConfig),
               **{f"method.{k}": v for k, v in neutral_values(type(cfg.method.params)).items()}}
    return Grouping(frozenset({"seed", *not_results(RunConfig)}), {k: value_text(v) for k, v in neutral.items()})


def neutral_keys() -> dict[str, Any]:
    """Every key added after runs were saved, at the value that leaves a run's results as they
    were (the values the fingerprint leaves out): a run folder saved before the key existed has
    no value for it and reads as this one when runs are grouped (tsr table). Method keys are
    those of every registered method's parameters (``method.<key>``)."""
    from ..methods.registry import METHODS

    out = neutral_values(RunConfig)
    for cls in METHODS.values():
        out.update({f"method.{k}": v for k, v in neutral_values(cls.Params).items()})
    return out
