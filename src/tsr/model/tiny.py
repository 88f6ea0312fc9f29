"""Small models and tokenizers built from configs, for tests, benchmarks and the bundled base.

Nothing here downloads anything: a byte-level BPE tokenizer is trained in-process on the
text given (so any UTF-8 text, Chinese or German included, still encodes, byte by byte),
and models are randomly initialised from a Hugging Face config of the requested
architecture. Saved with :func:`save_pretrained`, they load through the same code path as
real checkpoints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import torch

ARCHITECTURES = ("qwen2", "llama", "gemma3", "gpt2")
EOS = "<|endoftext|>"
# Qwen2's pre-tokenisation (digits one by one, a space before a number on its own), so a
# tokenizer trained here tokenises the same way when transformers loads it as a Qwen2 tokenizer.
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def train_tokenizer(texts: Iterable[str], vocab_size: int = 512, min_frequency: int = 2):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts`` (EOS = pad = <|endoftext|>)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS, bos_token=None,
                                   model_max_length=4096, clean_up_tokenization_spaces=False)


def tiny_config(arch: str, vocab_size: int, hidden: int = 64, layers: int = 2, heads: int = 4,
                kv_heads: int = 2, intermediate: int | None = None, eos_id: int = 0, max_positions: int = 1024):
    """A Hugging Face config of architecture ``arch`` at toy scale."""
    from transformers import Gemma3TextConfig, GPT2Config, LlamaConfig, Qwen2Config

    if arch == "gpt2":  # Conv1D projections (c_attn, c_proj, c_fc); no grouped key/value heads
        return GPT2Config(vocab_size=vocab_size, n_embd=hidden, n_layer=layers, n_head=heads,
                          n_inner=intermediate or 2 * hidden, n_positions=max_positions, eos_token_id=eos_id,
                          pad_token_id=eos_id, bos_token_id=eos_id, tie_word_embeddings=True)
    common = dict(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=intermediate or 2 * hidden,
                  num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                  max_position_embeddings=max_positions, eos_token_id=eos_id, pad_token_id=eos_id,
                  bos_token_id=eos_id, tie_word_embeddings=True)
    if arch == "qwen2":
        return Qwen2Config(**common)
    if arch == "llama":
        return LlamaConfig(**common)
    if arch == "gemma3":
        return Gemma3TextConfig(**common, head_dim=hidden // heads, sliding_window=max_positions,
                                query_pre_attn_scalar=hidden // heads)
    raise ValueError(f"unknown architecture {arch!r} (valid: {', '.join(ARCHITECTURES)})")


def tiny_model(config, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised causal LM for ``config`` (initialised under a fixed seed)."""
    from transformers import AutoModelForCausalLM

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config)
    return model


def lm_batch(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token rows padded to one width: ``(input_ids, labels)``, labels -100 on the padding."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        labels[i, : len(r)] = torch.tensor(r)
    return ids, labels


def warm_up(model: torch.nn.Module, tokenizer, texts: list[str], steps: int = 150, lr: float = 3e-3,
            batch_size: int = 16, seed: int = 0) -> torch.nn.Module:
    """A few steps of full-parameter language modelling on ``texts``.

    A randomly initialised toy model cannot be steered by a LoRA adapter alone (its
    embeddings carry no meaning, and attention-only updates barely move its predictions);
    a short warm-up makes it behave like a small pretrained base.
    """
    rng = np.random.default_rng(seed)
    encoded = [tokenizer(t + tokenizer.eos_token, add_special_tokens=False)["input_ids"] for t in texts]
    params = [p for p in model.parameters()]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        rows = [encoded[int(i)] for i in rng.integers(0, len(encoded), size=batch_size)]
        ids, labels = lm_batch(rows, tokenizer.pad_token_id)
        loss = model(input_ids=ids, attention_mask=(labels != -100).long(), labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    model.eval()
    for p in params:
        p.requires_grad_(False)
    return model


def save_pretrained(folder: Path, model: torch.nn.Module, tokenizer) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def reload_tokenizer(folder: Path, config, tokenizer):
    """The tokenizer exactly as ``AutoTokenizer`` will load it next to ``config``.

    transformers may load a saved tokenizer as the architecture's own class, whose
    pre-tokenisation can differ from the one it was trained with; training on the reloaded
    tokenizer guarantees that pretraining and later use see the same token ids.
    """
    from transformers import AutoTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def build_tiny(folder: Path, arch: str, texts: Iterable[str], vocab_size: int = 512, seed: int = 0,
               warm_up_steps: int = 0, **sizes) -> Path:
    """Train a tokenizer on ``texts``, build a model of ``arch`` (optionally warmed up on the
    same texts), and save both to ``folder``."""
    texts = list(texts)
    tokenizer = train_tokenizer(texts, vocab_size)
    config = tiny_config(arch, len(tokenizer), eos_id=tokenizer.eos_token_id, **sizes)
    tokenizer = reload_tokenizer(folder, config, tokenizer)
    model = tiny_model(config, seed)
    if warm_up_steps:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            warm_up(model, tokenizer, texts, steps=warm_up_steps, seed=seed)
    return save_pretrained(folder, model, tokenizer)
