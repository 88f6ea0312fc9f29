"""One training step of ER and TSR at the real Qwen2.5-0.5B and 7B shapes: parameters, peak
memory and time per step, with and without gradient checkpointing.

The models are the presets' complete architectures (:mod:`tsr.model.presets`) with random bf16
weights (random weights of a real config cost the same FLOPs and bytes as trained ones) and a
tiny tokenizer (it uses a few hundred of the 152k ids, which changes nothing about a step's
cost). Each step goes through tsr's own code: ``train_on`` with the method (ER: the step's
batch; TSR: the same plus a teacher forward under the snapshot of one past task, distilled
over every attended position), LoRA r=16 on q, k, v, o, the adapter and AdamW in float32.

    python bench/real_shapes.py --cpu                   # CPU: batch 1 x 64 tokens, both models
    python bench/real_shapes.py --gpu                   # GPU: the paper's batch 4 x 384 tokens
    python bench/real_shapes.py --models qwen2.5-0.5b --batch 2 --tokens 128

On the CPU the peak is the process's resident memory (each configuration in its own process);
on a GPU, torch's peak allocated memory. ``--estimate`` (with --cpu) also prints an estimate,
stated as one, of memory and step time on one 80 GB GPU at batch 4 x 384 (see ``estimate``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if (ROOT / "src" / "tsr").is_dir():
    sys.path.insert(0, str(ROOT / "src"))

WORDS = "river stone cloud tiger lemon piano candle forest rocket silver garden window planet".split()


def build(preset: str, device: str):
    """A learner at ``preset``'s architecture with random bf16 weights on ``device``."""
    import torch
    from transformers import AutoModelForCausalLM

    from tsr.data.collate import Encoder
    from tsr.model.adapter import Adapter, attach_lora, frozen_parameter_names
    from tsr.model.backbone import Backbone
    from tsr.model.learner import Learner, checkpoint_blocks
    from tsr.model.presets import get_preset, hf_config
    from tsr.model.settings import LoraConfig
    from tsr.model.tiny import train_tokenizer

    tokenizer = train_tokenizer([" ".join(WORDS[i % len(WORDS)] for i in range(k, k + 40)) for k in range(200)], 512)
    arch = get_preset(preset).arch
    ids = dict(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id,
               bos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    with torch.device(device):  # built where it runs, with the library's own initialisation and buffers
        model = AutoModelForCausalLM.from_config(hf_config(arch, **ids), dtype=torch.bfloat16)
    model.requires_grad_(False)
    params = sum(p.numel() for p in model.parameters())
    peft = attach_lora(model, LoraConfig(r=16, alpha=32.0, targets="auto"), seed=0)
    peft.eval()
    adapter = Adapter(peft, frozen_parameter_names(peft))
    backbone = Backbone(model, tokenizer, torch.device(device), torch.bfloat16, preset)
    learner = Learner(backbone, peft, adapter, Encoder(tokenizer, 4096), adapter.state(), True, False,
                      list(peft.modules()))
    return learner, params, checkpoint_blocks


def step_times(learner, method_name: str, batch: int, tokens: int, steps: int, checkpointing: bool,
               teacher: str) -> list[float]:
    """Seconds of each optimiser step of ``train_on`` (the first one includes warm-up)."""
    import torch

    from tsr.cl.memory import TaskRecord
    from tsr.cl.teachers import Teachers
    from tsr.config import TrainConfig
    from tsr.data.example import Example, Task, TaskKind
    from tsr.engine.loop import train_on
    from tsr.methods.registry import resolve_method

    words = max(4, tokens - 4)
    make = lambda k: Example(" ".join(WORDS[(k + i) % len(WORDS)] for i in range(words)), " ok")  # noqa: E731
    examples = tuple(make(k) for k in range(64))
    task = Task("t", TaskKind.CLASSIFICATION, examples, examples[:4])
    signature = None
    if method_name == "tsr":  # the past task's stored signature, taken as TSR takes its own (untimed)
        from tsr.cl.signatures import take

        encoded = learner.encoder.encode_all(list(examples[:batch]), "t")
        signature = take("gradb", learner, [learner.encoder.collate(encoded)])
    past = TaskRecord(0, "p", "classification", signature, examples, learner.adapter.state())
    method = resolve_method({"name": method_name, **({"probe_batches": 1} if method_name == "tsr" else {})}).build()
    method.setup(learner)
    learner.checkpointed = learner.checkpointed if checkpointing else []
    stamps = [time.perf_counter()]

    def tick(*_):
        if learner.device.type == "cuda":
            torch.cuda.synchronize()
        stamps.append(time.perf_counter())

    memory = [past] if method_name != "seqft" else []
    train_on(learner, method, task, list(examples), TrainConfig(steps=steps, batch_size=batch, lr=1e-4),
             seed=0, index=1, memory=memory, teachers=Teachers(learner, teacher), on_step=[tick])
    return [b - a for a, b in zip(stamps, stamps[1:])]


def measure(preset: str, method: str, device: str, batch: int, tokens: int, steps: int, checkpointing: bool,
            teacher: str = "auto") -> dict:
    """One configuration; ``teacher`` as ``train.teacher`` (auto: cached on the CPU, hidden on GPUs,
    as a run picks it)."""
    import torch

    learner, params, checkpoint_blocks = build(preset, device)
    if checkpointing:
        learner.checkpointed = checkpoint_blocks(learner.model)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    teacher = teacher if teacher != "auto" else ("hidden" if device == "cuda" else "cached")
    times = step_times(learner, method, batch, tokens, steps, checkpointing, teacher)
    peak = (torch.cuda.max_memory_allocated() / 2**30 if device == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    lora = sum(p.numel() for p in learner.adapter.trainable())
    return {"model": preset, "method": method, "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
            "batch": batch, "tokens": tokens, "checkpointing": checkpointing, "teacher": teacher, "parameters": params,
            "lora_parameters": lora, "peak_gib": round(peak, 2), "first_step_s": round(times[0], 3),
            "step_s": round(sum(times[1:]) / max(1, len(times) - 1), 3)}


def estimate(row: dict, batch: int = 4, tokens: int = 384, tflops: float = 989.0, mfu: float = 0.35) -> dict:
    """An estimate, not a measurement, of one 80 GB GPU at ``batch`` x ``tokens``: memory = the
    bf16 weights + the float32 LoRA factors with AdamW's two moments and their gradient +
    activations scaled from the CPU row by tokens (without checkpointing, everything the CPU row
    held beyond the weights, scaled; with it, the per-token block inputs only); time = the FLOPs
    of a LoRA step (forward 2PT, backward through the activations 2PT, TSR's teacher forward 2PT
    more) at ``mfu`` of an H100's dense bf16 ``tflops``."""
    p, lora = row["parameters"], row["lora_parameters"]
    weights = 2 * p / 2**30
    adapter = 16 * lora / 2**30
    scale = batch * tokens / (row["batch"] * row["tokens"])
    measured_rest = max(row["peak_gib"] - weights - adapter, 0.0)
    activations = measured_rest * scale
    flops = (6 if row["method"] == "tsr" else 4) * p * batch * tokens
    return {"model": row["model"], "method": row["method"], "checkpointing": row["checkpointing"],
            "estimated_gib": round(weights + adapter + activations, 1),
            "estimated_step_s": round(flops / (tflops * 1e12 * mfu), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="qwen2.5-0.5b,qwen2.5-7b")
    ap.add_argument("--methods", default="er,tsr")
    ap.add_argument("--cpu", action="store_true", help="the CPU shapes: batch 1 x 64 tokens")
    ap.add_argument("--gpu", action="store_true", help="the paper's shapes on CUDA: batch 4 x 384 tokens")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--tokens", type=int)
    ap.add_argument("--steps", type=int, default=3, help="optimiser steps per configuration (the first warms up)")
    ap.add_argument("--teacher", default="auto", help="train.teacher for TSR's teacher (default auto: cached on "
                    "the CPU, hidden on GPUs, as a run picks it)")
    ap.add_argument("--estimate", action="store_true", help="with --cpu: also the 80 GB GPU estimate")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one configuration, in this process
    args = ap.parse_args(argv)
    device = "cuda" if args.gpu else "cpu"
    batch = args.batch or (4 if args.gpu else 1)
    tokens = args.tokens or (384 if args.gpu else 64)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.one:
        model, method, ckpt = args.one.split(":")
        print(json.dumps(measure(model, method, device, batch, tokens, args.steps, ckpt == "1", args.teacher)))
        return 0
    rows = []
    for model in args.models.split(","):
        for method in args.methods.split(","):
            for ckpt in (False, True):
                one = f"{model}:{method}:{int(ckpt)}"
                cmd = [sys.executable, __file__, "--one", one, "--batch", str(batch), "--tokens", str(tokens),
                       "--steps", str(args.steps), "--teacher", args.teacher] + (["--gpu"] if args.gpu else [])
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    rows.append({"model": model, "method": method, "checkpointing": ckpt,
                                 "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"})
                else:
                    rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(json.dumps(rows[-1]), flush=True)
    if args.estimate:
        for row in rows:
            if "error" not in row:
                print(json.dumps({"estimate": estimate(row)}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
