"""Writing an adapter state as a standard PEFT LoRA adapter, or merged into its base model.

An adapter state (:mod:`tsr.model.adapter`) names its tensors as the live PEFT model does:
``base_model.model.<module>.lora_A.default.weight``. A PEFT adapter folder holds the same
tensors under the names PEFT saves, without the adapter name
(``base_model.model.<module>.lora_A.weight``), beside an ``adapter_config.json``; PEFT,
and serving stacks that read PEFT adapters, load it onto the base model.

O-LoRA's per-task pairs (:mod:`tsr.model.branches`, ``<module>.tsr_branches.{A,B}.t<k>``) are
added to the layer's output with the shared scale alpha / r, so a module's update is
``alpha / r * sum_k B_k A_k``: one LoRA of rank ``r * pairs`` whose A stacks the A's and whose
B puts the B's side by side, with ``lora_alpha = alpha * pairs`` to keep the scale. The same
function, though not the same rounding: the learner adds the pairs one at a time.

Other adapter state cannot be written as a LoRA: GainLoRA's gates weight each task's pair by
a value computed from the input, and DEAL's filter passes the low-rank input through a
nonlinear map; neither is a fixed low-rank update of the weights, so neither can be merged
into them either.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..atomic import write_json, write_tensors
from ..errors import ModelError
from .adapter import State, is_conv1d, linear_features

PREFIX = "base_model.model."
_DEFAULT = re.compile(r"^(?P<module>.+)\.lora_(?P<part>[AB])\.default\.weight$")
_BRANCH = re.compile(r"^(?P<module>.+)\.tsr_branches\.(?P<part>[AB])\.t(?P<task>\d+)$")
# what each kind of non-LoRA adapter state is, and why no LoRA can express it
NOT_LORA = {
    "tsr_gate": "GainLoRA's gates weight each task's LoRA pair by a value computed from the input",
    "tsr_deal": "DEAL's retention filter passes the LoRA input through a nonlinear map",
}
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


@dataclass
class LoraExport:
    """A plain LoRA equivalent to an adapter state: PEFT's tensor names and config values."""

    tensors: dict[str, torch.Tensor]  # PEFT's saved names -> tensors
    modules: list[str]                # adapted module names in the base model
    r: int
    alpha: float
    pairs: int                        # LoRA pairs summed per module (1 unless O-LoRA's branches)

    @property
    def dtype(self) -> torch.dtype:
        return next(iter(self.tensors.values())).dtype


def as_lora(state: State, r: int, alpha: float, what: str) -> LoraExport:
    """The plain LoRA that computes what ``state`` computes (``r``, ``alpha``: the run's); a
    :class:`ModelError` naming ``what`` and the reason when no LoRA can."""
    pairs: dict[str, dict[int, dict[str, torch.Tensor]]] = {}
    for name, tensor in state.items():
        match = _DEFAULT.match(name) or _BRANCH.match(name)
        if match is None or not name.startswith(PREFIX):
            kind = next((k for k in NOT_LORA if f".{k}." in f".{name}."), None)
            why = NOT_LORA[kind] if kind else "the adapter has parameters that are no LoRA factor"
            raise ModelError(f"{what}: {why} (its state holds {name!r}); no fixed low-rank update of the weights "
                             "computes that, so it can be neither written as a PEFT LoRA adapter nor merged into "
                             "the base model")
        task = int(match.groupdict().get("task") or 0)
        pairs.setdefault(match["module"][len(PREFIX):], {}).setdefault(task, {})[match["part"]] = tensor
    if not pairs:
        raise ModelError(f"{what}: holds no LoRA factors")
    counts = {tuple(sorted(tasks)) for tasks in pairs.values()}
    if len(counts) != 1 or any(set(p) != {"A", "B"} for tasks in pairs.values() for p in tasks.values()):
        raise ModelError(f"{what}: the LoRA pairs are incomplete or differ between modules")
    n = len(next(iter(counts)))
    tensors = {}
    for module, tasks in pairs.items():
        ordered = [tasks[t] for t in sorted(tasks)]
        a = torch.cat([p["A"] for p in ordered], dim=0) if n > 1 else ordered[0]["A"]
        b = torch.cat([p["B"] for p in ordered], dim=1) if n > 1 else ordered[0]["B"]
        if a.shape[0] != r * n or b.shape[1] != r * n:
            raise ModelError(f"{what}: {module}'s LoRA factors have rank {a.shape[0]}, the run's lora.r is {r}")
        tensors[f"{PREFIX}{module}.lora_A.weight"] = a
        tensors[f"{PREFIX}{module}.lora_B.weight"] = b
    return LoraExport(tensors, list(pairs), r * n, alpha * n, n)


def meta_model(source: str, args: dict) -> nn.Module:
    """The base model's structure without its weights (on the meta device): cheap at any size.
    ``args``: what ``from_pretrained`` takes (:func:`tsr.model.backbone.pretrained_args`)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(source, **args)
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(config, trust_remote_code=args["trust_remote_code"])
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"{source}: cannot read the base model's config ({first})") from None


def target_modules(lora: LoraExport, model: nn.Module, what: str) -> list[str]:
    """``target_modules`` for the adapter config, checked against the base ``model``: the short
    names (``q_proj``, ...) where they pick out exactly the adapted modules, else the full names
    (a multimodal model's vision tower has projections of the same names)."""
    modules = dict(model.named_modules())
    for name in lora.modules:
        layer = modules.get(name)
        a, b = lora.tensors[f"{PREFIX}{name}.lora_A.weight"], lora.tensors[f"{PREFIX}{name}.lora_B.weight"]
        if layer is None or linear_features(layer) != (a.shape[1], b.shape[0]):
            raise ModelError(f"{what}: does not fit the base model (no linear module {name!r} of "
                             f"{a.shape[1]}->{b.shape[0]} features in it)")
    short = {n.rsplit(".", 1)[-1] for n in lora.modules}
    picked = {n for n in modules if n.rsplit(".", 1)[-1] in short}
    return sorted(short) if picked == set(lora.modules) else sorted(lora.modules)


def transposed(lora: LoraExport, model: nn.Module) -> bool:
    """Whether every adapted module is a ``Conv1D`` (GPT-2's projections), whose weight is stored
    transposed: PEFT's ``fan_in_fan_out`` (PEFT sets it per layer where a model mixes kinds)."""
    modules = dict(model.named_modules())
    return all(is_conv1d(modules[name]) for name in lora.modules)


def peft_config(lora: LoraExport, targets: list[str], base: str, dropout: float, fan_in_fan_out: bool = False,
                revision: str | None = None):
    """The ``LoraConfig`` PEFT saves for this adapter (causal LM, inference mode); ``revision``:
    the base's pinned hub revision."""
    from peft import LoraConfig

    return LoraConfig(task_type="CAUSAL_LM", r=lora.r, lora_alpha=lora.alpha, lora_dropout=dropout,
                      target_modules=targets, bias="none", base_model_name_or_path=base, inference_mode=True,
                      fan_in_fan_out=fan_in_fan_out, revision=revision)


def write_adapter(folder: Path, lora: LoraExport, config) -> None:
    """``adapter_config.json`` and ``adapter_model.safetensors`` into ``folder``, as PEFT writes
    them (the same bytes for the same state: safetensors writes a header's metadata in no fixed
    order, so it holds only PEFT's one entry)."""
    fields = {k: sorted(v) if isinstance(v, set) else v for k, v in config.to_dict().items()}
    write_json(Path(folder) / "adapter_config.json", dict(sorted(fields.items())))  # PEFT's save, in a stable order
    write_tensors(Path(folder) / "adapter_model.safetensors", lora.tensors,
                  metadata={"format": "pt"})


def load_base(source: str, args: dict) -> tuple[nn.Module, object]:
    """(model, tokenizer) of the base, on the CPU in the dtype its checkpoint stores (``args``:
    as for :func:`meta_model`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **args)
        model = AutoModelForCausalLM.from_pretrained(source, dtype="auto", **args)
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"{source}: cannot load the base model to merge into ({first})") from None
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()
    return model.eval(), tokenizer


def merge(base: nn.Module, lora: LoraExport, config, what: str) -> nn.Module:
    """``base`` with the LoRA merged into its weights by PEFT (``merge_and_unload`` with
    ``safe_merge``: the merged weights are checked for non-finite values). Consumes ``base``."""
    from peft import get_peft_model, set_peft_model_state_dict

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", message="fan_in_fan_out is set to")  # mixed Linear and Conv1D
        model = get_peft_model(base, config)
    loaded = set_peft_model_state_dict(model, lora.tensors)
    missing = [k for k in loaded.missing_keys if ".lora_" in k]
    if loaded.unexpected_keys or missing:  # target_modules() has checked this; a guard, not a user error
        raise AssertionError(f"adapter keys do not fit: unexpected {loaded.unexpected_keys[:2]}, missing {missing[:2]}")
    try:
        merged = model.merge_and_unload(safe_merge=True)
    except ValueError as err:  # safe_merge found NaN or infinities
        raise ModelError(f"{what}: merging gives non-finite weights ({err})") from None
    return merged.eval()


def write_merged(folder: Path, model: nn.Module, tokenizer) -> None:
    """The merged model (config, safetensors, generation config) and the base's tokenizer files."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(str(folder))
        tokenizer.save_pretrained(str(folder))
    finally:
        hf_logging.enable_progress_bar()
