"""Pretraining the bundled base model (``tsr pretrain-base``).

A small Qwen2-architecture causal LM with a byte-level BPE tokenizer, trained from scratch on
the synthetic corpus of :mod:`tsr.data.synth.corpus`: the analogue of an instruction-tuned base
meeting new tasks. Everything is derived from ``seed``: the tokenizer's training texts, the
initial weights and every batch, so the same command with the same torch version and thread
count reproduces the shipped checkpoint bit for bit (``pretrain.json`` records the weights'
SHA-256 to check against).

Pretraining is resumable: every ``checkpoint_minutes`` (at a step boundary) it saves the
step, weights, optimiser, batch generator and losses to ``pretrain-checkpoint.pt`` in the
output folder; the same command on the same folder resumes from it and ends with the weights
an uninterrupted run would have (the tests check the hash). The checkpoint goes once the base
is saved.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from ..atomic import write_json, write_torch
from ..errors import RunError
from ..data.synth.corpus import INSTRUCTION_SHARE, corpus_text
from ..rng import derive_seed, numpy_rng
from ..schema import require, to_plain
from .settings import CHECKPOINT_MINUTES
from .tiny import lm_batch, reload_tokenizer, save_pretrained, tiny_config, tiny_model, train_tokenizer


@dataclass
class PretrainConfig:
    seed: int = 0
    vocab_size: int = 1536
    tokenizer_texts: int = 40000
    hidden: int = 192
    layers: int = 4
    heads: int = 6
    kv_heads: int = 2
    intermediate: int = 512
    steps: int = 6000
    batch_size: int = 32
    lr: float = 2e-3
    warmup: int = 200
    weight_decay: float = 0.01
    max_length: int = 160
    instruction_share: float = INSTRUCTION_SHARE
    options_share: float = 0.0
    """share of the instruction examples that list their answers (0: the bundled base's corpus)"""
    threads: int = 0

    def check(self, path: str) -> None:
        for key in ("vocab_size", "tokenizer_texts", "hidden", "layers", "heads", "kv_heads", "steps",
                    "batch_size", "max_length"):
            require(getattr(self, key) >= 1, key, "must be >= 1")
        require(self.hidden % self.heads == 0, "heads", "must divide hidden")
        require(self.heads % self.kv_heads == 0, "kv_heads", "must divide heads")
        require(self.lr > 0, "lr", "must be > 0")
        require(0.0 <= self.options_share <= 1.0, "options_share", "must be in [0, 1]")


def weights_sha256(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def lr_at(step: int, cfg: PretrainConfig) -> float:
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


CHECKPOINT = "pretrain-checkpoint.pt"


def read_checkpoint(out: Path, cfg: PretrainConfig) -> dict | None:
    """The output folder's checkpoint of this config, None where there is none; a checkpoint of
    another config is a one-line error (so a resume never mixes two configs)."""
    path = Path(out) / CHECKPOINT
    if not path.exists():
        return None
    try:
        state = torch.load(path, weights_only=True)
    except Exception as err:  # a torn or foreign file: say which, never guess
        raise RunError(f"{path}: not a readable pretraining checkpoint ({type(err).__name__}); "
                       "pass --force to start over") from None
    if state.get("config") != to_plain(cfg):
        changed = sorted(k for k, v in to_plain(cfg).items() if state.get("config", {}).get(k) != v)
        raise RunError(f"{path}: a checkpoint of another config (differs in {', '.join(changed)}); "
                       "give the same settings to resume, or --force to start over")
    return state


def pretrain(cfg: PretrainConfig, out: Path, report: Callable[[int, float], None] | None = None,
             checkpoint_minutes: float = CHECKPOINT_MINUTES) -> dict:
    """Train the base and save it (HF format plus ``pretrain.json``) to ``out``, resuming from the
    folder's checkpoint of the same config if there is one."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    started = time.time()
    resume = read_checkpoint(out, cfg)
    text_rng = numpy_rng(cfg.seed, "pretrain", "tokenizer")
    tokenizer = train_tokenizer([corpus_text(text_rng, cfg.instruction_share, options_share=cfg.options_share) for _ in range(cfg.tokenizer_texts)],
                                cfg.vocab_size)
    config = tiny_config("qwen2", len(tokenizer), hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads,
                         kv_heads=cfg.kv_heads, intermediate=cfg.intermediate, eos_id=tokenizer.eos_token_id,
                         max_positions=512)
    tokenizer = reload_tokenizer(out, config, tokenizer)
    model = tiny_model(config, seed=derive_seed(cfg.seed, "pretrain", "init") % 2**31)
    for p in model.parameters():
        p.requires_grad_(True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.95))
    batches = numpy_rng(cfg.seed, "pretrain", "batches")
    losses: list[float] = []
    first, spent = 0, 0.0
    if resume is not None:
        model.load_state_dict(resume["model"])
        opt.load_state_dict(resume["optimizer"])
        batches.bit_generator.state = resume["batches"]
        torch.set_rng_state(resume["torch_rng"])
        losses, first, spent = list(resume["losses"]), int(resume["step"]), float(resume["seconds"])

    def save(step: int) -> None:
        write_torch(Path(out) / CHECKPOINT, {
            "config": to_plain(cfg), "step": step, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "batches": batches.bit_generator.state, "torch_rng": torch.get_rng_state(), "losses": losses,
            "seconds": spent + time.time() - started})

    eos = tokenizer.eos_token
    model.train()
    saved_at = time.time()
    for step in range(first, cfg.steps):
        _step(cfg, step, model, opt, tokenizer, batches, eos, losses)
        if time.time() - saved_at >= checkpoint_minutes * 60:  # at a step boundary: a resume is exact
            save(step + 1)
            saved_at = time.time()
        if report is not None:
            report(step + 1, losses[-1])
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    save_pretrained(out, model, tokenizer)
    record = {"config": to_plain(cfg), "final_loss": sum(losses[-50:]) / min(50, len(losses)),
              "parameters": sum(p.numel() for p in model.parameters()), "weights_sha256": weights_sha256(model),
              "torch": torch.__version__, "threads": torch.get_num_threads(),
              "seconds": round(spent + time.time() - started, 1)}
    write_json(Path(out) / "pretrain.json", record)
    (Path(out) / CHECKPOINT).unlink(missing_ok=True)
    return record


def _step(cfg: PretrainConfig, step: int, model, opt, tokenizer, batches, eos: str, losses: list[float]) -> None:
    """One optimiser step on a fresh batch of the corpus; its loss is appended to ``losses``."""
    texts = [corpus_text(batches, cfg.instruction_share, options_share=cfg.options_share) + eos
             for _ in range(cfg.batch_size)]
    enc = [tokenizer(t, add_special_tokens=False)["input_ids"][: cfg.max_length] for t in texts]
    ids, labels = lm_batch(enc, tokenizer.pad_token_id)
    for group in opt.param_groups:
        group["lr"] = lr_at(step, cfg)
    loss = model(input_ids=ids, attention_mask=(labels != -100).long(), labels=labels).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    losses.append(float(loss.detach()))
