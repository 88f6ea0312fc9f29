"""What a run says before anything slow: the run it is about to make (before the model loads),
then the model as loaded (parameters, device, dtype, the adapter and its size) and the run
folder, so a long model load or a first task's probe is never silence."""

from __future__ import annotations

from pathlib import Path


def run_line(cfg) -> str:
    """The run as configured: method, stream, seed, base model."""
    return (f"tsr: {cfg.method.name} on {cfg.stream.source}, seed {cfg.seed}, {cfg.train.steps} steps a task; "
            f"model {cfg.model.path}: loading")


def _millions(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e5 else f"{n:,}"


def model_line(plan, folder: Path) -> str:
    """The loaded model and adapter, and where the run is saved."""
    learner, lora = plan.learner, plan.cfg.lora
    base = learner.model.get_base_model()
    total = sum(p.numel() for n, p in base.named_parameters() if "lora_" not in n)
    trainable = sum(p.numel() for p in learner.adapter.trainable())
    targets = sorted({n.split(".lora_A.")[0].rsplit(".", 1)[-1] for n in learner.adapter.names() if ".lora_A." in n})
    dtype = str(learner.backbone.dtype).removeprefix("torch.")
    return (f"  model {type(base).__name__}, {_millions(total)} parameters, {learner.device.type} {dtype}"
            f"{', compiled blocks' if learner.compiled else ''}; LoRA r={lora.r} alpha={lora.alpha:g} on "
            f"{', '.join(targets)} ({_millions(trainable)} trainable); {len(plan.stream)} tasks; run folder {folder}")


def task_line(t: int, plan) -> str:
    task = plan.stream[t]
    return f"task {t + 1}/{len(plan.stream)} {task.name} ({task.kind.value})"
