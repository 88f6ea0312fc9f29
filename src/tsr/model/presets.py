"""Backbone presets: the four base models of the reference paper and their facts.

A backbone preset names a released checkpoint and records what the paper and the checkpoint's
own ``config.json`` say about it: hub id, training dtype, the LoRA targets, and the
architecture. ``model.preset`` in a run config selects one; the bundled config presets of the
same names (``tsr run qwen2.5-0.5b ...``) set ``model.path`` to the hub id and
``model.preset``, and the paper's ``train.batch_size`` where it differs from the default.
With a preset selected, the backbone loader checks that the folder it loads is that
architecture (``model_type``, hidden size, layers and heads must match the facts below) and,
when the weights cannot be fetched, says what to download and where to point ``model.path``.

Sources of the architecture facts (each value is the checkpoint's ``config.json``):

- Qwen2.5-0.5B-Instruct, Qwen2.5-7B-Instruct: Qwen Team, "Qwen2.5 Technical Report" (2024);
  config.json of Qwen/Qwen2.5-{0.5B,7B}-Instruct as mirrored in public derivatives whose
  ``_name_or_path`` is the official id (e.g. huggingface.co/hakutaku/qwen2.5-ja-zh, a
  snapshot of Qwen/Qwen2.5-7B-Instruct; huggingface.co/HachiML/QwQ-CoT-0.5B-JA).
- Llama-3.2-1B-Instruct: config.json of meta-llama/Llama-3.2-1B-Instruct as mirrored in
  public derivatives (e.g. huggingface.co/task-aware/Llama_3.2_1B_Instruct).
- Gemma-3-1B-it: Gemma Team, "Gemma 3 Technical Report" (2025); config.json of
  google/gemma-3-1b-it as mirrored in public derivatives (e.g.
  huggingface.co/vishnurchityala/sql-gemma3, fine-tuned from unsloth/gemma-3-1b-it). The
  vocabulary (262144) matches the report's 302M embedding parameters (262144 x 1152); the
  embeddings are tied (Gemma 3's config default, not overridden by the checkpoint).

Batch sizes: 4 at 0.5B/1B and 2 at 7B (reference paper, Appendix "Full-stream setup"; the
paper gives no separate value for the 1B backbones of its robustness check, so they take the
0.5B/1B value). Training dtype: bfloat16 for all four (the paper's code loads bf16); with
``model.dtype: auto`` that is what CUDA runs get, while CPU runs use float32.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import ModelError
from .settings import QKVO

# Keys of config.json that decide whether a folder is the preset's architecture.
CHECKED = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads")


@dataclass(frozen=True)
class Architecture:
    """The architecture facts of a checkpoint, as its ``config.json`` states them."""

    model_type: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    vocab_size: int
    head_dim: int
    rope_theta: float
    tie_word_embeddings: bool
    max_position_embeddings: int
    rms_norm_eps: float
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # other keys to rebuild it

    @property
    def gqa_ratio(self) -> int:
        return self.num_attention_heads // self.num_key_value_heads


@dataclass(frozen=True)
class BackbonePreset:
    name: str
    hub_id: str
    dtype: str
    lora_targets: tuple[str, ...]
    arch: Architecture
    notes: str = ""


_LLAMA3_ROPE = MappingProxyType({"rope_type": "llama3", "factor": 32.0, "high_freq_factor": 4.0,
                                 "low_freq_factor": 1.0, "original_max_position_embeddings": 8192})

BACKBONES: Mapping[str, BackbonePreset] = MappingProxyType({
    "qwen2.5-0.5b": BackbonePreset(
        "qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B-Instruct", "bfloat16", QKVO,
        Architecture("qwen2", 896, 24, 14, 2, 4864, 151936, 64, 1_000_000.0, True, 32768, 1e-6),
        "the paper's main backbone"),
    "qwen2.5-7b": BackbonePreset(
        "qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", "bfloat16", QKVO,
        Architecture("qwen2", 3584, 28, 28, 4, 18944, 152064, 128, 1_000_000.0, False, 32768, 1e-6),
        "the paper's scale check"),
    "llama3.2-1b": BackbonePreset(
        "llama3.2-1b", "meta-llama/Llama-3.2-1B-Instruct", "bfloat16", QKVO,
        Architecture("llama", 2048, 16, 32, 8, 8192, 128256, 64, 500_000.0, True, 131072, 1e-5,
                     MappingProxyType({"rope_scaling": _LLAMA3_ROPE})),
        "robustness check; gated on the hub (accept Meta's licence first)"),
    "gemma3-1b": BackbonePreset(
        "gemma3-1b", "google/gemma-3-1b-it", "bfloat16", QKVO,
        Architecture("gemma3_text", 1152, 26, 4, 1, 6912, 262144, 256, 1_000_000.0, True, 32768, 1e-6,
                     MappingProxyType({"rope_local_base_freq": 10_000.0, "sliding_window": 512,
                                       "sliding_window_pattern": 6, "query_pre_attn_scalar": 256})),
        "robustness check; gated on the hub (accept Google's licence first)"),
})


def preset_names() -> list[str]:
    return list(BACKBONES)


def get_preset(name: str) -> BackbonePreset:
    """The preset called ``name``; an unknown name lists the valid ones."""
    if name not in BACKBONES:
        raise ModelError(f"config key 'model.preset': unknown backbone preset {name!r} "
                         f"(valid: {', '.join(BACKBONES)})")
    return BACKBONES[name]


def _rope(arch: Architecture) -> dict[str, Any]:
    if arch.model_type == "gemma3_text":
        local = arch.extra.get("rope_local_base_freq", 10_000.0)
        return {"sliding_attention": {"rope_type": "default", "rope_theta": float(local)},
                "full_attention": {"rope_type": "default", "rope_theta": arch.rope_theta}}
    scaling = dict(arch.extra.get("rope_scaling") or {"rope_type": "default"})
    return {**scaling, "rope_theta": arch.rope_theta}


def hf_config(arch: Architecture, **ids: int):
    """A Hugging Face config of ``arch`` (``ids``: eos/bos/pad token ids to set)."""
    from transformers import Gemma3TextConfig, LlamaConfig, Qwen2Config

    common = dict(vocab_size=arch.vocab_size, hidden_size=arch.hidden_size, intermediate_size=arch.intermediate_size,
                  num_hidden_layers=arch.num_hidden_layers, num_attention_heads=arch.num_attention_heads,
                  num_key_value_heads=arch.num_key_value_heads, max_position_embeddings=arch.max_position_embeddings,
                  rms_norm_eps=arch.rms_norm_eps, tie_word_embeddings=arch.tie_word_embeddings,
                  rope_parameters=_rope(arch), **ids)
    if arch.model_type == "qwen2":
        return Qwen2Config(**common)
    if arch.model_type == "llama":
        return LlamaConfig(**common, head_dim=arch.head_dim)
    if arch.model_type == "gemma3_text":
        window, every = arch.extra.get("sliding_window", 512), arch.extra.get("sliding_window_pattern", 6)
        layer_types = ["full_attention" if (i + 1) % every == 0 else "sliding_attention"
                       for i in range(arch.num_hidden_layers)]
        return Gemma3TextConfig(**common, head_dim=arch.head_dim, sliding_window=window, layer_types=layer_types,
                                query_pre_attn_scalar=arch.extra.get("query_pre_attn_scalar", arch.head_dim))
    raise ModelError(f"no config builder for architecture {arch.model_type!r}")  # pragma: no cover


def scaled(arch: Architecture, vocab_size: int, head_dim: int = 16, layers: int = 2) -> Architecture:
    """A tiny ``arch``: same model type, GQA ratio, tying, width ratios; small sizes.

    One key/value head with ``gqa_ratio`` query heads of ``head_dim``; hidden and
    intermediate sizes keep their ratios to the attention width; a Gemma sliding window
    shrinks to 32 tokens with a full-attention layer every second layer, so both attention
    kinds run on short test sequences.
    """
    heads = arch.gqa_ratio
    width = heads * head_dim
    hidden = int(round(arch.hidden_size / (arch.num_attention_heads * arch.head_dim) * width))
    hidden += hidden % 2
    intermediate = int(round(arch.intermediate_size / arch.hidden_size * hidden))
    extra = dict(arch.extra)
    if arch.model_type == "gemma3_text":
        extra.update(sliding_window=32, sliding_window_pattern=2, query_pre_attn_scalar=head_dim)
    if "rope_scaling" in extra:
        extra["rope_scaling"] = {**extra["rope_scaling"], "original_max_position_embeddings": 256}
    return replace(arch, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                   num_key_value_heads=1, intermediate_size=intermediate, vocab_size=vocab_size,
                   head_dim=head_dim, max_position_embeddings=1024, extra=MappingProxyType(extra))


def check_config(preset: BackbonePreset, config: Mapping[str, Any], where: str) -> None:
    """``config`` (a config.json mapping) must be ``preset``'s architecture; else a ModelError."""
    facts = preset.arch
    for key in CHECKED:
        expected = getattr(facts, key)
        found = config.get(key)
        if found != expected:
            raise ModelError(f"{where}: {key} is {found!r}, but model.preset {preset.name!r} "
                             f"({preset.hub_id}) has {expected!r}; point model.path at {preset.hub_id} "
                             "or choose the matching model.preset")


def check_folder(preset: BackbonePreset, folder: Path) -> None:
    """A local model folder's ``config.json`` must match ``preset`` (see :func:`check_config`)."""
    path = Path(folder) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelError(f"{path}: unreadable model config ({err})") from None
    check_config(preset, config, str(path))


def download_hint(preset: BackbonePreset) -> str:
    return (f"model preset {preset.name!r} needs the weights of {preset.hub_id}: download them where there "
            f"is network (`hf download {preset.hub_id} --local-dir DIR`) and set model.path=DIR")


def parameter_count(arch: Architecture) -> int:
    """Approximate parameter count (embeddings, attention, MLP), for labels and docs."""
    q = arch.num_attention_heads * arch.head_dim
    kv = 2 * arch.num_key_value_heads * arch.head_dim
    attn = arch.hidden_size * (q + kv) + q * arch.hidden_size
    mlp = 3 * arch.hidden_size * arch.intermediate_size
    embed = arch.vocab_size * arch.hidden_size * (1 if arch.tie_word_embeddings else 2)
    return int(embed + arch.num_hidden_layers * (attn + mlp))

