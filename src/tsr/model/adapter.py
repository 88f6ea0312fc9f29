"""The LoRA adapter: attaching it through PEFT and the state operations every method needs.

One accumulating adapter (PEFT adapter ``default``) sits on the attention projections. Its
parameters (and any parameters a method adds later) form the *adapter state*: a mapping from
parameter name to tensor. :class:`Adapter` snapshots, restores and temporarily swaps that
state; a swap restores the values in place, so parameter objects, their gradients and the
optimiser's moments are never touched. Base weights are frozen and never written.

The adapted layers are linear maps: torch's ``Linear`` and transformers' ``Conv1D`` (GPT-2's
fused projections, a linear map whose weight is stored transposed). PEFT wraps both in the same
LoRA layer, with ``lora_A`` (r x in) and ``lora_B`` (out x r) acting on the layer's input, so
everything built on the adapter state (snapshots, branches, gates, filters, GPM, export) holds
for both. PEFT's other layer types (embeddings, convolutions, attention modules) are refused.
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
from .settings import LoraConfig, QKVO

# Attention projections per architecture (config.model_type): tsr's own table, consulted before
# PEFT's default targets, because the reference paper adapts q, k, v and o where PEFT's mapping
# names only q and v (llama, qwen2, gemma, mistral), and only the fused q, k, v of GPT-2.
ATTENTION_TARGETS: dict[str, tuple[str, ...]] = {
    "qwen2": QKVO,
    "qwen3": QKVO,
    "llama": QKVO,
    "mistral": QKVO,
    "gemma": QKVO,
    "gemma2": QKVO,
    "gemma3": QKVO,
    "gemma3_text": QKVO,
    "phi3": ("qkv_proj", "o_proj"),
    "gpt_neox": ("query_key_value", "dense"),
    "gpt2": ("c_attn", "attn.c_proj"),  # Conv1D: q, k, v fused, and the attention's output projection
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


def is_conv1d(module: nn.Module) -> bool:
    """Whether ``module`` is transformers' ``Conv1D`` (a linear map with its weight as in x out)."""
    from transformers.pytorch_utils import Conv1D

    return isinstance(module, Conv1D)


def linear_features(module: nn.Module) -> tuple[int, int] | None:
    """(in, out) features of a layer LoRA can adapt here (``Linear``, ``Conv1D``); else None."""
    if isinstance(module, nn.Linear):
        return module.in_features, module.out_features
    if is_conv1d(module):
        return tuple(module.weight.shape)  # stored as (in, out)
    return None


def linear_leaves(model: nn.Module) -> dict[str, nn.Module]:
    """The layers LoRA can adapt, by module name (``Linear`` and ``Conv1D``; no vision tower's)."""
    return {n: m for n, m in model.named_modules()
            if linear_features(m) is not None and not SKIP_MODULES.search(n)}


def peft_default_targets() -> dict[str, list[str]]:
    """PEFT's default LoRA target modules per model type (what PEFT adapts without
    ``target_modules``)."""
    from peft import utils

    return dict(getattr(utils, "TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING", {}) or {})


def auto_targets(model: nn.Module, leaves: dict[str, nn.Module]) -> tuple[tuple[str, ...], str]:
    """The targets ``lora.targets: auto`` means for ``model``, and where they come from: tsr's
    table (q, k, v, o where the paper adapts them), else PEFT's default mapping, else q, k, v, o
    where the model has them."""
    model_type = getattr(model.config, "model_type", "")
    if model_type in ATTENTION_TARGETS:
        return ATTENTION_TARGETS[model_type], f"tsr's targets for {model_type!r}"
    peft_map = peft_default_targets()
    if peft_map.get(model_type):
        return tuple(peft_map[model_type]), f"PEFT's default targets for {model_type!r}"
    if all(any(n.endswith("." + w) for n in leaves) for w in QKVO):
        return QKVO, "the attention projections q, k, v, o"
    names = ", ".join(sorted({n.rsplit(".", 1)[-1] for n in leaves}))
    raise ModelError(f"config key 'lora.targets': no default targets for architecture {model_type!r} (neither "
                     f"tsr's table nor PEFT's mapping has it); name them (linear modules: {names})")


def resolve_targets(model: nn.Module, cfg: LoraConfig) -> list[str]:
    """Full module names that get LoRA, checked against the model (names, layer types, rank)."""
    leaves = linear_leaves(model)
    leaf_names = sorted({n.rsplit(".", 1)[-1] for n in leaves})
    origin = "lora.targets"
    if cfg.targets == "auto":
        wanted, origin = auto_targets(model, leaves)
    elif isinstance(cfg.targets, str):
        wanted = tuple(t.strip() for t in cfg.targets.split(",") if t.strip())
    else:
        wanted = tuple(cfg.targets)
    chosen = []
    for target in wanted:
        hits = [n for n in leaves if n == target or n.endswith("." + target)]
        if not hits:
            other = next((m for n, m in model.named_modules()
                          if (n == target or n.endswith("." + target)) and not SKIP_MODULES.search(n)), None)
            if other is not None:
                raise ModelError(f"config key 'lora.targets': {target!r} ({origin}) is {type(other).__name__}, not a "
                                 f"linear layer; tsr adapts Linear and Conv1D layers (linear modules: "
                                 f"{', '.join(leaf_names)})")
            where = "" if origin == "lora.targets" else f" ({origin})"
            raise ModelError(f"config key 'lora.targets': no linear module named {target!r}{where} "
                             f"(linear modules: {', '.join(leaf_names)})")
        chosen.extend(hits)
    for name in chosen:
        fan_in, fan_out = linear_features(leaves[name])
        limit = min(fan_in, fan_out)
        if cfg.r > limit:
            raise ModelError(f"config key 'lora.r': rank {cfg.r} exceeds {name} "
                             f"({fan_in}->{fan_out}, at most {limit})")
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
    modules = dict(model.named_modules())
    # Conv1D stores its weight transposed; PEFT reads that from fan_in_fan_out (and sets it per
    # layer, with a warning, where a model mixes Linear and Conv1D targets)
    conv = all(is_conv1d(modules[n]) for n in targets)
    peft_cfg = PeftLoraConfig(r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, fan_in_fan_out=conv,
                              target_modules=targets, bias="none", init_lora_weights=True)
    with warnings.catch_warnings():
        # peft probes transformers' deprecated ``is_gradient_checkpointing``; nothing to act on
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        warnings.filterwarnings("ignore", message="fan_in_fan_out is set to")
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
