"""One LoRA fine-tuning run in tsr (SeqFT, through its engine) and in TRL's SFTTrainer, side by side.

The same model, adapter (LoRA r=16, alpha=32, dropout 0 on q, k, v, o; float32 on the CPU), data
(the first N examples of one synth-trace task, as a one-task stream file), batches of 4, sequence
lengths, completion-only loss (prompt masked, answer + EOS supervised), AdamW (lr 1e-4, weight
decay 0.01, the fused kernel on both sides), constant schedule with no warm-up, no gradient clipping
(TRL: ``max_grad_norm=0``, which skips clipping; TRL still computes the norm for its logs) and
number of steps. Gradient checkpointing and bf16, which TRL's SFTConfig turns on by default, are
off, as in tsr.

The batches are identical, step by step: tsr's engine draws its batches by seed, the tsr side
records the batches it trained on (their tokens, from tsr's own tokenisation: prompt and answer
tokenised apart without special tokens, EOS appended, the prompt cut from the left past the
length limit), and TRL gets those rows pre-tokenised (``input_ids`` and ``labels``, -100 on the
prompt) in that order with ``train_sampling_strategy="sequential"`` (no shuffling), its collator
padding them. The script checks that TRL's batches hold the same tokens and labels, that both
sides supervise the same number of tokens, and that the loss of step 1 (before any update; LoRA's
B starts at zero on both sides, so it is the base model's completion-only loss on the first
batch) agrees. It also says whether TRL's own prompt/completion tokenisation (prompt and
completion tokenised together) would have given the same tokens.

Step time: the median interval between the ends of consecutive optimiser steps (the first step,
which pays one-off costs, left out), from tsr's step callback and a TrainerCallback's
``on_step_end`` (TRL's ``on_step_begin`` to ``on_step_end``, which leaves out fetching the batch,
is printed beside it). Model loading, tokenisation, tsr's evaluation after the task and TRL's
setup are outside every interval. Peak memory: ``ru_maxrss`` of each side's own process at the
end of its last step (tsr's evaluation afterwards excluded). The sides run in turn, A B A B, each
in a fresh subprocess, with the same torch threads.

    python bench/peer_step.py --steps 20 --rounds 2 --threads 1          # the real base (smollm2-135m)
    python bench/peer_step.py --model bundled --steps 10 --rounds 2      # a quick check
    python bench/peer_step.py --model /path/to/hf-folder --task policy --examples 50

Needs TRL: ``pip install 'tsr[peer]'`` (with ``-c`` a constraints file pinning torch, so that pip
does not replace the installed torch build).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QKVO = ["q_proj", "k_proj", "v_proj", "o_proj"]
IGNORE = -100
SIDES = ("tsr", "trl")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def supervised(labels: list[int]) -> int:
    """Tokens a causal LM's loss reads: labels past the first position that are not masked."""
    return sum(1 for x in labels[1:] if x != IGNORE)


def write_stream(folder: Path, task: str, examples: int, tests: int) -> tuple[Path, list[dict]]:
    """A one-task stream file holding the first ``examples`` training examples of synth-trace's
    ``task`` (and its first ``tests`` test examples); returns its path and those examples."""
    from tsr.data.streams import load_stream

    stream = load_stream("synth-trace", None, {}, "canonical", 0)
    found = [t for t in stream.tasks if t.name == task]
    if not found:
        raise SystemExit(f"--task: {task!r} is not a synth-trace task ({', '.join(stream.names)})")
    (t,) = found
    train = [ex.record() for ex in t.pool[:examples]]
    for name, rows in (("train.jsonl", train), ("test.jsonl", [ex.record() for ex in t.test[:tests]])):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = folder / "peer.yaml"
    path.write_text(f"name: peer\ntasks:\n  - {{name: {task}, kind: {t.kind.value}, format: jsonl, "
                    "train: train.jsonl, test: test.jsonl}\n")
    return path, train


def tsr_overrides(spec: dict, out_dir: str) -> list[str]:
    return [f"out_dir={out_dir}", f"model.path={spec['model']}", "model.device=cpu", "model.dtype=float32",
            "model.compile=false", f"model.threads={spec['threads']}", "method.name=seqft",
            "lora.r=16", "lora.alpha=32", "lora.dropout=0", f"lora.targets=[{', '.join(QKVO)}]",
            f"stream.source={spec['stream']}", f"stream.budget={spec['examples']}", "stream.test_cap=4",
            "stream.replay_per_task=0", f"stream.max_length={spec['max_length']}",
            f"train.steps={spec['steps']}", "train.batch_size=4", "train.lr=1e-4", "train.weight_decay=0.01",
            "train.schedule=constant", "train.warmup=0", "train.grad_clip=null", "train.accumulate=1",
            "train.checkpoint_minutes=0", f"seed={spec['seed']}"]


def rows_of(input_ids, attention_mask, labels) -> list[list[list[int]]]:
    """The attended (input ids, labels) of each row of a right-padded batch."""
    out = []
    for ids, att, lab in zip(input_ids.tolist(), attention_mask.tolist(), labels.tolist()):
        n = sum(att)
        assert att == [1] * n + [0] * (len(att) - n), "expected right padding"
        out.append([ids[:n], lab[:n]])
    return out


class StepClock:
    """tsr's reporter: a stamp at the end of every step, the loss of step 1, the peak at the last."""

    def __init__(self):
        self.stamps: list[float] = []
        self.first_loss: float | None = None
        self.rss_mb: float | None = None
        self.trainable = 0

    def task_start(self, t, plan, info):
        self.stamps = []
        self.trainable = sum(p.numel() for p in plan.learner.adapter.trainable())

    def step(self, t, step, steps, terms):
        self.stamps.append(time.perf_counter())
        if step == 1:
            self.first_loss = float(terms["loss"])
        if step == steps:
            self.rss_mb = peak_rss_mb()

    def task_end(self, t, plan, results, seconds):
        pass


def measure_tsr(spec: dict) -> dict:
    """Train with tsr's engine; returns step stamps, step-1 loss, peak RSS and the batches it trained on."""
    from tsr.config import load_config
    from tsr.data import sampling
    from tsr.engine.run import execute

    clock, drawn = StepClock(), []
    draw = sampling.BatchStream.next

    def recorded(self):  # only observes: the batch the engine draws is the one it trains on
        batch = draw(self)
        drawn.append(batch)
        return batch

    sampling.BatchStream.next = recorded
    try:
        with tempfile.TemporaryDirectory() as out:
            execute(load_config(None, tsr_overrides(spec, out)), clock)
    finally:
        sampling.BatchStream.next = draw
    steps = spec["steps"]
    assert len(drawn) >= steps and len(clock.stamps) == steps, (len(drawn), len(clock.stamps))
    batches = [rows_of(b.input_ids, b.attention_mask, b.labels) for b in drawn[:steps]]
    return {"ends": clock.stamps, "first_loss": clock.first_loss, "rss_mb": clock.rss_mb,
            "final_rss_mb": peak_rss_mb(), "batches": batches, "trainable": clock.trainable,
            "supervised": sum(supervised(lab) for batch in batches for _, lab in batch)}


def measure_trl(spec: dict, batches: list) -> dict:
    """Train with TRL's SFTTrainer on ``batches`` (tsr's, in order); returns the same facts as
    :func:`measure_tsr`, the batches TRL's collator built, and how TRL's own tokenisation compares."""
    import torch

    torch.set_num_threads(spec["threads"])
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from transformers.utils import logging as hf_logging
    from trl import SFTConfig, SFTTrainer
    from tsr.model.backbone import resolve_source
    from tsr.model.settings import ModelConfig

    hf_logging.set_verbosity_error()
    folder, _ = resolve_source(ModelConfig(path=spec["model"]))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    rows = [{"input_ids": ids, "labels": lab} for batch in batches for ids, lab in batch]

    class Clock(TrainerCallback):
        def __init__(self):
            self.begins, self.ends, self.rss_mb = [], [], None

        def on_step_begin(self, args, state, control, **kwargs):
            self.begins.append(time.perf_counter())

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append(time.perf_counter())
            if state.global_step == args.max_steps:
                self.rss_mb = peak_rss_mb()

    class Recording(SFTTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            if model.training:
                self.seen.append((inputs["input_ids"], inputs["attention_mask"], inputs["labels"]))
                if self.first_loss is None:
                    self.first_loss = float((loss[0] if return_outputs else loss).detach())
            return loss

    clock = Clock()
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(
            output_dir=out, max_steps=spec["steps"], per_device_train_batch_size=4, gradient_accumulation_steps=1,
            learning_rate=1e-4, weight_decay=0.01, lr_scheduler_type="constant", warmup_steps=0,
            max_grad_norm=0.0, optim="adamw_torch_fused", seed=spec["seed"], use_cpu=True, bf16=False, fp16=False,
            activation_checkpointing=False, train_sampling_strategy="sequential", max_length=None, packing=False,
            padding_free=False, logging_strategy="no", save_strategy="no", eval_strategy="no", report_to="none",
            disable_tqdm=True, dataloader_num_workers=0)
        trainer = Recording(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                            peft_config=LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=QKVO,
                                                   task_type="CAUSAL_LM"),
                            callbacks=[clock])
        trainer.seen, trainer.first_loss = [], None
        trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
        trainer.train()
    seen = [rows_of(*b) for b in trainer.seen]
    return {"ends": clock.ends, "begins": clock.begins, "first_loss": trainer.first_loss, "rss_mb": clock.rss_mb,
            "final_rss_mb": peak_rss_mb(), "batches": seen, "trainable": trainable,
            "supervised": sum(supervised(lab) for batch in seen for _, lab in batch),
            "own_tokenisation": own_tokenisation(tokenizer, spec.get("examples_text", []), spec["max_length"])}


def own_tokenisation(tokenizer, examples: list[dict], max_length: int) -> list[int]:
    """[same, of]: examples whose prompt + completion + EOS text, tokenised as one string (how
    TRL's prompt/completion format reads them), gives the ids tsr's separate tokenisation does."""
    same = 0
    for ex in examples:
        ours = (tokenizer(ex["prompt"], add_special_tokens=False)["input_ids"]
                + tokenizer(ex["answer"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])
        joint = tokenizer(ex["prompt"] + ex["answer"] + tokenizer.eos_token)["input_ids"]
        same += ours[-max_length:] == joint[-max_length:]
    return [same, len(examples)]


def step_times(ends: list[float]) -> list[float]:
    return [b - a for a, b in zip(ends[1:], ends[2:])]  # the first step pays one-off costs


def run_child(side: str, spec: dict, work: Path, tag: str) -> dict:
    """One side in its own process, so that its peak memory is its own."""
    spec_file, out_file = work / f"{tag}.spec.json", work / f"{tag}.out.json"
    spec_file.write_text(json.dumps(spec))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", side, "--spec", str(spec_file),
           "--result", str(out_file)]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the {side} side failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(out_file.read_text())


def check(tsr: dict, trl: dict) -> list[str]:
    """What must hold for the two sides to have computed the same thing; the failures, as lines."""
    bad = []
    if trl["batches"] != tsr["batches"]:
        diff = next(i for i, (a, b) in enumerate(zip(tsr["batches"], trl["batches"])) if a != b) \
            if len(trl["batches"]) == len(tsr["batches"]) else "count"
        bad.append(f"TRL's batches differ from tsr's (first at step {diff if diff == 'count' else diff + 1})")
    if trl["trainable"] != tsr["trainable"]:
        bad.append(f"adapter sizes differ: tsr {tsr['trainable']} parameters, TRL {trl['trainable']}")
    if trl["supervised"] != tsr["supervised"]:
        bad.append(f"supervised tokens differ: tsr {tsr['supervised']}, TRL {trl['supervised']}")
    if abs(trl["first_loss"] - tsr["first_loss"]) > 1e-4:
        bad.append(f"step-1 losses differ: tsr {tsr['first_loss']:.6f}, TRL {trl['first_loss']:.6f}")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="model.path: a fetchable base, a HF folder, a hub id or "
                    "`bundled` (default smollm2-135m)")
    ap.add_argument("--task", default="stance", help="the synth-trace task (default stance)")
    ap.add_argument("--examples", type=int, default=50, help="N: its first N training examples (default 50)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2, help="A B rounds (tsr, then TRL), at least 2 for a median")
    ap.add_argument("--threads", type=int, default=1, help="torch threads on both sides")
    ap.add_argument("--max-length", type=int, default=384, help="prompt + answer + EOS tokens (default 384)")
    ap.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        spec = json.loads(Path(args.spec).read_text())
        out = measure_tsr(spec) if args.child == "tsr" else measure_trl(spec, spec.pop("batches"))
        Path(args.result).write_text(json.dumps(out))
        return 0
    if args.steps < 3:
        raise SystemExit("--steps: at least 3 (the first step is left out of the median)")
    try:
        import trl
    except ImportError:
        raise SystemExit("TRL is not installed: pip install 'tsr[peer]' (pin torch with a constraints file)") from None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        stream, examples = write_stream(work, args.task, args.examples, 4)
        spec = {"model": args.model, "stream": str(stream), "examples": args.examples, "steps": args.steps,
                "threads": args.threads, "max_length": args.max_length, "seed": 0}
        runs: dict[str, list[dict]] = {s: [] for s in SIDES}
        for r in range(args.rounds):
            runs["tsr"].append(run_child("tsr", spec, work, f"tsr{r}"))
            batches = runs["tsr"][0]["batches"]
            runs["trl"].append(run_child("trl", {**spec, "batches": batches, "examples_text": examples}, work, f"trl{r}"))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    first = runs["tsr"][0]
    bad = [f"tsr's round {i + 1} trained on other batches than round 1"
           for i, run in enumerate(runs["tsr"]) if run["batches"] != first["batches"]]
    bad += [line for run in runs["trl"] for line in check(first, run)]
    med = {s: statistics.median(t for run in runs[s] for t in step_times(run["ends"])) for s in SIDES}
    rss = {s: statistics.median(run["rss_mb"] for run in runs[s]) for s in SIDES}
    begin_end = statistics.median(e - b for run in runs["trl"] for b, e in list(zip(run["begins"], run["ends"]))[1:])
    same, of = runs["trl"][0]["own_tokenisation"]
    print(f"peer: TRL {trl.__version__} SFTTrainer | model {args.model} | synth-trace {args.task}, first "
          f"{args.examples} examples | {args.steps} steps x batch 4 | {args.rounds} rounds A B | {args.threads} thread(s)")
    print(f"tsr/TRL step time: {med['tsr'] / med['trl']:.3f}   tsr/TRL peak RSS: {rss['tsr'] / rss['trl']:.3f}")
    print("| side | median ms / step | peak RSS MB (end of last step) |")
    print("|---|---|---|")
    for s, name in (("tsr", "tsr (SeqFT, engine)"), ("trl", "TRL SFTTrainer")):
        print(f"| {name} | {med[s] * 1000:.0f} | {rss[s]:.0f} |")
    print(f"TRL on_step_begin -> on_step_end (no batch fetch): {begin_end * 1000:.0f} ms; "
          f"per round tsr {[round(statistics.median(step_times(r['ends'])) * 1000) for r in runs['tsr']]} ms, "
          f"TRL {[round(statistics.median(step_times(r['ends'])) * 1000) for r in runs['trl']]} ms")
    print(f"same computation: {'yes' if not bad else 'NO'} | identical batches (tokens, labels, lengths) | "
          f"adapter parameters tsr {first['trainable']}, TRL {runs['trl'][0]['trainable']} | "
          f"supervised tokens tsr {first['supervised']}, TRL {runs['trl'][0]['supervised']} | step-1 loss "
          f"tsr {first['first_loss']:.6f}, TRL {runs['trl'][0]['first_loss']:.6f}")
    print(f"TRL's own prompt/completion tokenisation (prompt + completion + EOS as one string) gives tsr's ids on "
          f"{same}/{of} examples; TRL is fed tsr's rows pre-tokenised either way")
    for line in bad:
        print(f"  MISMATCH: {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
