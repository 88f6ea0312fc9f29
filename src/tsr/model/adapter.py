"""The LoRA adapter: attaching it through PEFT and the state operations every method needs.

One accumulating adapter (PEFT adapter ``default``) sits on the attention projections. Its
parameters (and any parameters a method adds later) form the *adapter state*: a mapping from
parameter name to tensor. :class:`Adapter` snapshots, restores and temporarily swaps that
state; a swap restores the values in place, so parameter objects, their gradients and the
optimiser's moments are never touched. Base weights are frozen and never written.
"""

from __future__ import annotations

import math
import re
import warnings
from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn

from ..errors import ModelError
from ..rng import torch_rng
from .settings import LoraConfig

# Attention projections per architecture (config.model_type).
ATTENTION_TARGETS: dict[str, tuple[str, ...]] = {
    "qwen2": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "qwen3": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "llama": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "mistral": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "gemma": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "gemma2": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "gemma3": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "gemma3_text": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "phi3": ("qkv_proj", "o_proj"),
    "gpt_neox": ("query_key_value", "dense"),
}
# Sub-models whose projections must not get the language adapter (multimodal checkpoints).
SKIP_MODULES = re.compile(r"(^|\.)(vision_tower|vision_model|audio_tower|multi_modal_projector|visual)(\.|$)")
# Names of the module list that holds a causal LM's transformer blocks, across architectures.
BLOCK_LISTS = ("layers", "h", "blocks", "layer")
_LAYER = re.compile(r"\.(?:" + "|".join(BLOCK_LISTS) + r")\.(\d+)\.")


def layer_index(name: str) -> int | None:
    """Transformer block index in a parameter or module name, if any."""
    match = _LAYER.search(f".{name}.")
    return int(match.group(1)) if match else None


def linear_leaves(model: nn.Module) -> dict[str, nn.Linear]:
    return {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear) and not SKIP_MODULES.search(n)}


def resolve_targets(model: nn.Module, cfg: LoraConfig) -> list[str]:
    """Full module names that get LoRA, checked against the model (names and rank)."""
    leaves = linear_leaves(model)
    leaf_names = sorted({n.rsplit(".", 1)[-1] for n in leaves})
    if cfg.targets == "auto":
        model_type = getattr(model.config, "model_type", "")
        wanted = ATTENTION_TARGETS.get(model_type)
        if wanted is None:
            default = ("q_proj", "k_proj", "v_proj", "o_proj")
            if all(any(n.endswith("." + w) for n in leaves) for w in default):
                wanted = default
            else:
                raise ModelError(f"config key 'lora.targets': no default targets for architecture "
                                 f"{model_type!r}; name them (linear modules: {', '.join(leaf_names)})")
    elif isinstance(cfg.targets, str):
        wanted = tuple(t.strip() for t in cfg.targets.split(",") if t.strip())
    else:
        wanted = tuple(cfg.targets)
    chosen = []
    for target in wanted:
        hits = [n for n in leaves if n == target or n.endswith("." + target)]
        if not hits:
            raise ModelError(f"config key 'lora.targets': no linear module named {target!r} "
                             f"(linear modules: {', '.join(leaf_names)})")
        chosen.extend(hits)
    for name in chosen:
        layer = leaves[name]
        limit = min(layer.in_features, layer.out_features)
        if cfg.r > limit:
            raise ModelError(f"config key 'lora.r': rank {cfg.r} exceeds {name} "
                             f"({layer.in_features}->{layer.out_features}, at most {limit})")
    return sorted(set(chosen), key=list(leaves).index)


def attach_lora(model: nn.Module, cfg: LoraConfig, seed: int, dtype: torch.dtype = torch.float32) -> nn.Module:
    """Wrap ``model`` in a PEFT LoRA model and set the shared initialisation for ``seed``.

    PEFT initialises A from torch's global generator; we re-draw every A from a generator
    derived from (seed, "lora-init", parameter name), with the same Kaiming-uniform law
    (bound 1/sqrt(fan_in)), and zero every B. The shared initialisation is then a pure
    function of the seed. The LoRA factors are held in ``dtype`` (drawn in float32, then
    rounded); PEFT casts a layer's input to its factors' dtype and the update back to the
    base layer's.
    """
    from peft import LoraConfig as PeftLoraConfig, get_peft_model

    targets = resolve_targets(model, cfg)
    peft_cfg = PeftLoraConfig(r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout,
                              target_modules=targets, bias="none", init_lora_weights=True)
    with warnings.catch_warnings():
        # peft probes transformers' deprecated ``is_gradient_checkpointing``; nothing to act on
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        peft_model = get_peft_model(model, peft_cfg, autocast_adapter_dtype=dtype == torch.float32)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if ".lora_" in name:
                param.data = param.data.to(dtype)
    init_lora_weights(peft_model, seed)
    return peft_model


@torch.no_grad()
def init_lora_weights(model: nn.Module, seed: int) -> None:
    for name, param in model.named_parameters():
        if ".lora_A." in name:
            bound = 1.0 / math.sqrt(param.shape[1])
            gen = torch_rng(seed, "lora-init", name)
            values = torch.rand(param.shape, generator=gen, dtype=torch.float32) * 2 * bound - bound
            param.copy_(values.to(param.dtype))
        elif ".lora_B." in name:
            param.zero_()


State = dict[str, torch.Tensor]


class Adapter:
    """Named access to every non-base parameter of a model, with snapshot/restore/swap."""

    def __init__(self, model: nn.Module, base_names: frozenset[str]):
        self.model = model
        self.base_names = base_names

    def named(self) -> list[tuple[str, nn.Parameter]]:
        return [(n, p) for n, p in self.model.named_parameters() if n not in self.base_names]

    def names(self) -> list[str]:
        return [n for n, _ in self.named()]

    def trainable(self) -> list[nn.Parameter]:
        return [p for _, p in self.named() if p.requires_grad]

    def lora_b(self, last_blocks: int | None = None) -> list[tuple[str, nn.Parameter]]:
        """The LoRA B factors (of the active adapter), optionally of the last few blocks only."""
        pairs = [(n, p) for n, p in self.named() if ".lora_B." in n]
        if last_blocks is None:
            return pairs
        blocks = sorted({layer_index(n) for n, _ in pairs if layer_index(n) is not None})
        keep = set(blocks[-last_blocks:])
        return [(n, p) for n, p in pairs if layer_index(n) in keep]

    def state(self) -> State:
        """A detached copy of the whole adapter state."""
        return {n: p.detach().clone() for n, p in self.named()}

    @torch.no_grad()
    def load(self, state: State) -> None:
        """Write ``state`` into the adapter in place; names must match exactly."""
        params = dict(self.named())
        if set(params) != set(state):
            missing = sorted(set(params) - set(state))[:2]
            extra = sorted(set(state) - set(params))[:2]
            raise ValueError(f"adapter state does not match the model (missing {missing}, extra {extra})")
        for name, param in params.items():
            if tuple(state[name].shape) != tuple(param.shape):
                raise ValueError(f"adapter tensor {name!r} has shape {tuple(state[name].shape)}, the model "
                                 f"{tuple(param.shape)}")
            param.copy_(state[name].to(device=param.device, dtype=param.dtype))

    @contextmanager
    def swapped(self, state: State) -> Iterator[None]:
        """Temporarily run with ``state``; the current values come back afterwards.

        Must not be entered while an autograd graph that uses the adapter is pending a
        backward pass (the in-place writes would invalidate it): compute teachers first.
        """
        current = self.state()
        self.load(state)
        try:
            yield
        finally:
            self.load(current)


def frozen_parameter_names(model: nn.Module) -> frozenset[str]:
    """Names of the parameters that do not train: right after :func:`attach_lora`, the base."""
    return frozenset(n for n, p in model.named_parameters() if not p.requires_grad)
