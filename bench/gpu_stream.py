"""Throughput of the normal engine on a full-size Qwen2.5-0.5B architecture.

Builds a random-weight model with the complete Qwen2.5-0.5B-Instruct configuration from
:mod:`tsr.model.presets` (24 layers, hidden 896, the full 151936-token vocabulary and LM
head), pairs it with a tiny tokenizer trained here (it uses only the first few hundred ids,
which changes nothing about the cost of a step), writes a synthetic two-task stream whose
prompts are about ``--prompt-words`` words long, and runs it through ``tsr.engine.run.execute``
with the paper's settings (bf16 on CUDA, batch 4, LoRA r=16 on q/k/v/o). Prints training
steps per second per task and, on CUDA, peak GPU memory. Random weights: the point is speed
and memory, not accuracy.

    python bench/gpu_stream.py                      # on a GPU: 50 steps per task, TSR
    python bench/gpu_stream.py --smoke              # CPU check of the full-size path (< 1 minute)
    python bench/gpu_stream.py --scale tiny --steps 2   # plumbing check with a tiny model
    python bench/gpu_stream.py --tasks 8 --pool 200 --method tsr_need   # each task start's cost, K past tasks

Nothing is downloaded. Run from the repository root (or with tsr installed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if (ROOT / "src" / "tsr").is_dir():
    sys.path.insert(0, str(ROOT / "src"))

PRESET = "qwen2.5-0.5b"
WORDS = ("river stone cloud tiger lemon piano candle forest rocket silver garden window planet butter "
         "dragon marble pencil summer violet market harbour signal basket engine travel winter").split()


def synthetic_stream(folder: Path, prompt_words: int, pool: int, test: int, seed: int = 0,
                     n_tasks: int = 2) -> Path:
    """``n_tasks`` JSONL tasks, alternately counting the vowel-starting words and echoing the
    last three (``count``, ``echo``, then ``count2``, ``echo2``, ...), and a stream file."""
    rng = np.random.default_rng(seed)
    kinds = {"count": "classification", "echo": "generation"}
    names = [("count", "echo")[i % 2] + (str(i // 2 + 1) if i >= 2 else "") for i in range(n_tasks)]
    tasks = {name: kinds[name.rstrip("0123456789")] for name in names}
    lines = ["name: bench", "tasks:"]
    for name, kind in tasks.items():
        for split, n in (("train", pool), ("test", test)):
            rows = []
            for _ in range(n):
                words = [WORDS[int(i)] for i in rng.integers(0, len(WORDS), size=prompt_words)]
                counted = str(sum(w[0] in "aeiou" for w in words) % 10)
                answer = counted if name.startswith("count") else " ".join(words[-3:])
                rows.append({"prompt": f"Task {name}.\nText: {' '.join(words)}\nAnswer:", "answer": answer})
            path = folder / name / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        lines.append(f"  - {{name: {name}, kind: {kind}, format: jsonl, train: {name}/train.jsonl, "
                     f"test: {name}/test.jsonl}}")
    spec = folder / "stream.yaml"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def build_model(folder: Path, scale: str, layers: int | None, texts: list[str]) -> tuple[Path, int]:
    """Save a random model of the preset architecture with a tiny tokenizer; returns (folder, params)."""
    import torch
    from transformers import AutoModelForCausalLM

    from tsr.model.presets import get_preset, hf_config, scaled
    from tsr.model.tiny import save_pretrained, train_tokenizer

    tokenizer = train_tokenizer(texts, vocab_size=512)
    arch = get_preset(PRESET).arch
    if scale == "tiny":
        arch = scaled(arch, len(tokenizer))
    if layers is not None:
        arch = replace(arch, num_hidden_layers=layers)
    ids = dict(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id,
               bos_token_id=tokenizer.eos_token_id)
    # Built on the meta device and filled directly in bf16: three times faster than the
    # default initialisation on CPU, and the file is half the size (the loader casts it to
    # the run's dtype). Matrices ~ N(0, 0.02), norm weights 1, biases 0.
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config(arch, **ids), dtype=torch.bfloat16)
    model = model.to_empty(device="cpu")
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() > 1:
                param.normal_(0.0, 0.02, generator=gen)
            else:
                param.fill_(1.0 if "norm" in name else 0.0)
    if arch.tie_word_embeddings:
        model.tie_weights()
    params = sum(p.numel() for p in model.parameters())
    save_pretrained(folder, model, tokenizer)
    return folder, params


class Timer:
    """Engine reporter that timestamps every optimiser step of every task."""

    def __init__(self) -> None:
        self.steps: dict[int, list[float]] = {}
        self.started: dict[int, float] = {}

    def task_start(self, t, plan, info) -> None:
        self.started[t] = time.perf_counter()
        self.steps[t] = []

    def step(self, t, step, steps, terms) -> None:
        self.steps[t].append(time.perf_counter())

    def task_end(self, t, plan, results, seconds) -> None:
        pass

    def rates(self) -> dict[int, dict[str, float]]:
        out = {}
        for t, stamps in self.steps.items():
            total = stamps[-1] - self.started[t]
            warm = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else float("nan")
            out[t] = {"steps": len(stamps), "seconds": total, "steps_per_s": len(stamps) / total,
                      "steps_per_s_after_first": warm}
        return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=50, help="optimiser steps per task (2 for a CPU check)")
    parser.add_argument("--method", default="tsr", help="method name (tsr, er, seqft)")
    parser.add_argument("--batch", type=int, default=4, help="train.batch_size (paper: 4 at 0.5B)")
    parser.add_argument("--prompt-words", type=int, default=150, help="words per synthetic prompt")
    parser.add_argument("--max-length", type=int, default=384, help="stream.max_length (paper: 384)")
    parser.add_argument("--test", type=int, default=32, help="test examples per task")
    parser.add_argument("--tasks", type=int, default=2,
                        help="tasks in the stream (a task's begin phase works over the tasks before it)")
    parser.add_argument("--pool", type=int, default=50,
                        help="training examples per task (replay data are drawn from it: the paper keeps 100)")
    parser.add_argument("--scale", choices=("full", "tiny"), default="full", help="full-size or scaled-down model")
    parser.add_argument("--layers", type=int, default=None, help="override the number of layers")
    parser.add_argument("--device", default="auto", help="model.device (auto, cpu, cuda)")
    parser.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    parser.add_argument("--smoke", action="store_true",
                        help="CPU smoke check: 2 steps, batch 1, short prompts, 1 test example, seqft")
    args = parser.parse_args(argv)
    if args.smoke:
        # A full-size 0.5B step on CPU costs about a minute at batch 4 x 300 tokens; the smoke
        # check keeps the full architecture but shrinks the work to a few seconds per step.
        args.steps, args.batch, args.prompt_words, args.max_length, args.test = 2, 1, 8, 48, 1
        args.method = "seqft"

    import torch
    from transformers.utils import logging as hf_logging

    from tsr.config import load_config
    from tsr.engine.run import execute

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore", category=FutureWarning)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    with tempfile.TemporaryDirectory(prefix="tsr-bench-") as tmp:
        tmp = Path(tmp)
        stream = synthetic_stream(tmp / "data", args.prompt_words, pool=max(args.pool, args.batch), test=args.test,
                                  n_tasks=args.tasks)
        texts = [json.loads(line)["prompt"] for line in (tmp / "data" / "count" / "train.jsonl").read_text().splitlines()]
        t0 = time.perf_counter()
        folder, params = build_model(tmp / "model", args.scale, args.layers, texts)
        build_s = time.perf_counter() - t0
        overrides = [f"model.path={folder}", f"stream.source={stream}", f"out_dir={tmp / 'runs'}",
                     f"train.steps={args.steps}", f"train.batch_size={args.batch}", f"method.name={args.method}",
                     f"stream.max_length={args.max_length}", f"stream.test_cap={args.test}",
                     f"model.device={args.device}", "stream.budget=50"]
        if args.scale == "full" and args.layers is None:
            overrides.append(f"model.preset={PRESET}")  # the architecture check runs too
        cfg = load_config("paper", overrides)
        cuda = torch.cuda.is_available() and args.device in ("auto", "cuda")
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        timer = Timer()
        t0 = time.perf_counter()
        outcome = execute(cfg, timer)
        run_s = time.perf_counter() - t0
        # the begin phase (the method's begin_task: TSR's probe, the need's replay forwards), per task
        ends = [json.loads(line) for line in (Path(outcome.run.path) / "progress.jsonl").read_text().splitlines()]
        begin = {e["name"]: e["phases"]["begin"] for e in ends if e.get("event") == "task_end"}
        report = {
            "device": torch.cuda.get_device_name(0) if cuda else "cpu",
            "dtype": "bfloat16 (auto on CUDA)" if cuda else "float32",
            "architecture": f"{PRESET} ({args.scale}{f', {args.layers} layers' if args.layers else ''})",
            "parameters": params, "method": args.method, "batch_size": args.batch, "steps_per_task": args.steps,
            "build_seconds": round(build_s, 1), "run_seconds": round(run_s, 1),
            "tasks": {outcome.results.tasks[t]: {**{k: round(v, 3) for k, v in r.items()},
                                                 "begin_seconds": begin.get(outcome.results.tasks[t])}
                      for t, r in timer.rates().items()},
            "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
        }
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
