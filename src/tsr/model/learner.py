"""The learner: a frozen backbone, its adapter, its tokenizer, and forward passes.

Methods and the engine never touch the model directly; they ask the learner for logits of a
batch (with gradients), teacher logits of a batch under some adapter state (without), and
the adapter's state operations.

With ``model.compile`` each transformer block is compiled in place (``torch.compile`` with
dynamic shapes, one block at a time: "regional" compilation). The blocks of a model share one
class and one graph, so the compiler works on a single block instead of the whole unrolled
model: the same fused kernels (norms, rotary embeddings, LoRA's scale-and-add, activations
between the matrix products) for a fraction of the compile time, which is what a fresh
machine's first run pays. Module hooks are not traced reliably by a graph compiled before they
were registered, so a call made while any forward hook sits on the model (GPM's activation
records, GainLoRA's gates, branch and wavelet adapters) runs eager (:func:`eager_execution`),
and so does greedy decoding.
"""

from __future__ import annotations

import inspect
import os
import shutil
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

import torch

from ..data.collate import IGNORE, Batch, Encoder
from ..errors import ModelError
from .adapter import BLOCK_LISTS, SKIP_MODULES, Adapter, State, attach_lora, frozen_parameter_names, init_lora_weights
from .backbone import Backbone, load_backbone
from .packing import Packing, pack, unpack
from .settings import LoraConfig, ModelConfig


@dataclass
class Learner:
    backbone: Backbone
    model: torch.nn.Module
    adapter: Adapter
    encoder: Encoder
    init_state: State
    keeps_logits: bool = False  # the model's forward takes ``logits_to_keep``
    compiled: bool = False  # the transformer blocks run through torch.compile (model.compile)
    # the modules a method may hook (all of them when the adapter is attached: every hook a
    # method sets sits on the model, a layer or a LoRA factor), listed once for a cheap check
    hookable: list[torch.nn.Module] = field(default_factory=list, repr=False)
    autocast: torch.dtype | None = None  # model.autocast: the forwards' autocast dtype
    checkpointed: list[torch.nn.Module] = field(default_factory=list, repr=False)  # model.gradient_checkpointing
    cache_key: str = "past_key_values"  # the name the model's forward takes a KV cache by (cache_key())
    fused_head: bool = False  # distilled batches go through tsr.cl.fused_head (train.fused_head)
    packing: bool = False  # training forwards pack their batch's rows (train.packing, tsr.model.packing)

    @property
    def device(self) -> torch.device:
        return self.backbone.device

    @property
    def tokenizer(self):
        return self.backbone.tokenizer

    def logits(self, batch: Batch) -> torch.Tensor:
        """Float32 logits of every position of ``batch`` with the adapter as it is (gradients flow)."""
        batch = batch.to(self.device)
        packing = self._packing(batch)
        if packing is not None:
            with self.autocasting():
                return self._head(self._packed_hidden(packing))
        return self._forward(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits.float()

    def answer_logits(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, labels)`` of the last positions of ``batch``, from the first one that
        predicts a supervised token (gradients flow).

        Position i still predicts label i + 1, so every loss that reads supervised positions only
        (cross-entropy, exact match, answer-token logits, distillation over ``answer``
        positions) has the same value on this view as on the whole sequence, for less work: the
        output head runs on these positions only (``logits_to_keep``, where the model takes it)
        and the loss skips the prompt. Teacher logits of the same batch align with
        ``teacher[:, -logits.shape[1]:]``.
        """
        batch = batch.to(self.device)
        start = first_answer_position(batch.labels)
        packing = self._packing(batch)
        if packing is not None:
            with self.autocasting():
                return self._head(self._packed_hidden(packing)[:, start:]), batch.labels[:, start:]
        keep = {"logits_to_keep": batch.input_ids.shape[1] - start} if start > 0 and self.keeps_logits else {}
        out = self._forward(input_ids=batch.input_ids, attention_mask=batch.attention_mask, **keep).logits.float()
        return out[:, out.shape[1] - (batch.input_ids.shape[1] - start):], batch.labels[:, start:]

    def _forward(self, **inputs):
        """One batch forward without a KV cache: compiled where configured and no hook is set,
        under autocast where configured."""
        hooked = self.compiled and has_forward_hooks(self.hookable or self.model.modules())
        with eager_execution() if hooked else nullcontext(), self.autocasting():
            return self.model(use_cache=False, **inputs)

    def _packing(self, batch: Batch) -> Packing | None:
        """How a training batch (gradients on) packs under ``train.packing``; None when packing is
        off, for forwards without gradients (teachers, evaluation), and where it saves no row."""
        if not self.packing or not torch.is_grad_enabled():
            return None
        packing = pack(batch.input_ids, batch.attention_mask, self.encoder.pad_id)
        return packing if packing.rows < batch.size else None

    def _decoder(self, **inputs) -> torch.Tensor:
        """The decoder's last hidden states (gradients flow): compiled where configured and no
        hook is set, under autocast where configured."""
        decoder = self.model.get_base_model().get_decoder()
        hooked = self.compiled and has_forward_hooks(self.hookable or self.model.modules())
        with eager_execution() if hooked else nullcontext(), self.autocasting():
            return decoder(use_cache=False, **inputs).last_hidden_state

    def _packed_hidden(self, packing: Packing) -> torch.Tensor:
        """The decoder's last hidden states of a packed batch, in the batch's own rows."""
        out = self._decoder(input_ids=packing.input_ids, position_ids=packing.position_ids, attention_mask=None)
        return unpack(out, packing)

    def _head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Float32 logits of the output head (with a final soft cap where the model has one), as
        the model's forward computes them from ``hidden``; gradients flow."""
        base = self.model.get_base_model()
        logits = base.get_output_embeddings()(hidden.to(self.device))
        cap = getattr(base.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits.float()

    def autocasting(self):
        """``torch.autocast`` in ``model.autocast``'s dtype, or nothing."""
        if self.autocast is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast)

    @torch.no_grad()
    def logits_under(self, state: State, batch: Batch) -> torch.Tensor:
        """Logits of ``batch`` with the adapter temporarily set to ``state`` (no gradients).

        The trainable values, their ``.grad`` and the optimiser are left as they were.
        """
        with self.adapter.swapped(state):
            return self.logits(batch)

    @torch.no_grad()
    def hidden_under(self, state: State, batch: Batch) -> torch.Tensor:
        """The last hidden states of every position of ``batch`` under ``state`` (no gradients):
        the decoder's output after its final norm, which is what the output head reads, in the
        model's own dtype. ``head_logits`` of them gives the logits of :meth:`logits_under`, up to
        the rounding of one matrix product in another batch shape."""
        with self.adapter.swapped(state):
            return self.hidden(batch)

    @torch.no_grad()
    def hidden(self, batch: Batch) -> torch.Tensor:
        """:meth:`hidden_under` with the adapter as it is."""
        return self.student_hidden(batch)

    def student_hidden(self, batch: Batch) -> torch.Tensor:
        """The last hidden states of ``batch`` with the adapter as it is, gradients flowing: what
        the output head reads in :meth:`logits` (the fused head losses take them from here)."""
        batch = batch.to(self.device)
        packing = self._packing(batch)
        if packing is not None:
            return self._packed_hidden(packing)
        return self._decoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask)

    @property
    def vocab_size(self) -> int:
        return int(self.head_weight.shape[0])

    @property
    def head_weight(self) -> torch.Tensor:
        return self.model.get_base_model().get_output_embeddings().weight

    @torch.no_grad()
    def head_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Float32 logits of the output head for last hidden states, as the model's forward
        computes them (with the final soft cap of models that have one, e.g. Gemma 2)."""
        return self._head(hidden)

    @torch.no_grad()
    def greedy(self, prompt_ids: list[int], max_new_tokens: int, cache: bool = False) -> list[int]:
        """Greedy continuation of ``prompt_ids`` up to and including EOS.

        By default each token recomputes the whole prefix (no KV cache), which keeps the
        arithmetic the same as a teacher-forced pass, so exact match and greedy decoding can be
        compared exactly. ``cache=True`` reuses the keys and values of the prefix, one position
        per new token: the same continuation up to float rounding in near-ties, for a cost that
        no longer grows with the prefix (what long rewrites on real models need).
        """
        with eager_execution():  # one position at a time: shapes the compiled blocks never see
            return self._greedy(prompt_ids, max_new_tokens, cache)

    def _greedy(self, prompt_ids: list[int], max_new_tokens: int, cache: bool) -> list[int]:
        tokens = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)
        out: list[int] = []
        past = None
        for _ in range(max_new_tokens):
            if cache:
                result, past = self.cached_forward(past, input_ids=tokens if past is None else tokens[:, -1:])
            else:
                result = self.model(input_ids=tokens, use_cache=False)
            nxt = int(result.logits[0, -1].argmax())
            out.append(nxt)
            if nxt == self.encoder.eos_id:
                break
            tokens = torch.cat([tokens, torch.tensor([[nxt]], device=self.device)], dim=1)
        return out

    def cached_forward(self, past, **inputs):
        """One forward that reads and extends the KV cache ``past`` (None: a new one): its output
        and the cache to pass next, each under the name this version of transformers uses, so
        no deprecation warning is printed."""
        result = self.model(**inputs, **{self.cache_key: past}, use_cache=True)
        return result, getattr(result, self.cache_key)

    def reset(self, seed: int) -> None:
        """Move to the shared initialisation of ``seed`` (as if freshly built with that seed)."""
        init_lora_weights(self.model, seed)
        self.init_state = self.adapter.state()

    def train_mode(self, training: bool) -> None:
        """Dropout only matters when lora.dropout > 0; everything else is deterministic."""
        self.model.train(training)

    def checkpointing(self, on: bool) -> None:
        """Recompute the blocks' activations in backward passes (``model.gradient_checkpointing``)
        while ``on``: the blocks alone are marked training, which is what Hugging Face's block
        checkpointing asks, so no dropout of the base switches on."""
        for block in self.checkpointed:
            block.training = on


def first_answer_position(labels: torch.Tensor) -> int:
    """The first position whose logits predict a supervised token, over the whole batch."""
    supervised = (labels != IGNORE).any(dim=0)
    if not bool(supervised.any()):
        return 0
    return max(int(supervised.int().argmax()) - 1, 0)


def has_forward_hooks(modules) -> bool:
    """Whether any of ``modules`` (a model's ``.modules()``) has a forward or forward-pre hook."""
    return any(m._forward_hooks or m._forward_pre_hooks for m in modules)


def cpp_compiler() -> str | None:
    """The C++ compiler torch.compile's CPU backend would use, if one is installed."""
    for name in (os.environ.get("CXX"), "c++", "g++"):
        if name and shutil.which(name):
            return name
    return None


@contextmanager
def eager_execution() -> Iterator[None]:
    """Run compiled modules eagerly inside this block (for calls with hooks, or odd shapes)."""
    with torch.compiler.set_stance("force_eager"):
        yield


def transformer_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The repeated blocks of a causal LM: the children of its language model's layer list."""
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and name.rsplit(".", 1)[-1] in BLOCK_LISTS \
                and not SKIP_MODULES.search(name) and len(module) > 0:
            return list(module)
    return []


RECOMPILE_LIMIT = 64
"""Graphs torch keeps per compiled code object before it runs the rest eagerly. All the blocks of
all the models a process builds share one code object (the block class's call), and each model
configuration (adapter rank and targets, base) needs a graph per grad mode and train/eval mode.
Torch's default of 8 is spent by the third configuration, so a long audit or grid worker that
builds many learners (the regime map, the scale audit) would fall back to eager for the rest of
the process; 64 leaves room for about twenty configurations, each compiled once."""


def compile_blocks(model: torch.nn.Module, device: torch.device, setting: bool | str) -> bool:
    """Compile each transformer block in place as ``model.compile`` asks (``auto``: on the CPU
    where a C++ compiler is installed); whether anything was compiled. Raises torch's recompile
    limit to :data:`RECOMPILE_LIMIT` where it is lower."""
    if setting is False or (setting == "auto" and (device.type != "cpu" or cpp_compiler() is None)):
        return False
    if device.type == "cpu" and cpp_compiler() is None:
        raise ModelError("config key 'model.compile': compiling for the CPU needs a C++ compiler and none "
                         "was found (c++, g++ or $CXX); install one or set model.compile=false")
    blocks = transformer_blocks(model)
    if not blocks:
        raise ModelError("config key 'model.compile': found no list of transformer blocks (a module list named "
                         f"{', '.join(BLOCK_LISTS)}) to compile; set model.compile=false")
    import torch._dynamo  # the compiler's configuration; imported only where compiling

    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
    for block in blocks:
        block.compile(dynamic=True)
    return True


def cache_key(model: torch.nn.Module) -> str:
    """The argument (and output field) name of a (PEFT-wrapped) causal LM's KV cache: ``cache``
    from transformers 5.2x on, where ``past_key_values`` still works but prints a deprecation
    warning, ``past_key_values`` before."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(type(inner).forward).parameters else "past_key_values"


def takes_logits_to_keep(model: torch.nn.Module) -> bool:
    """Whether a (PEFT-wrapped) causal LM's forward accepts ``logits_to_keep``."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "logits_to_keep" in inspect.signature(type(inner).forward).parameters


class LearnerConfig(Protocol):
    """What :func:`build_learner` reads of a run config."""

    seed: int
    model: ModelConfig
    lora: LoraConfig
    stream: Any  # its max_length


def build_learner(cfg: LearnerConfig, place: bool = True) -> Learner:
    """Load the backbone, attach the adapter at the shared initialisation of ``cfg.seed``;
    ``place=False``: its weights left on the CPU (:func:`tsr.model.backbone.load_backbone`)."""
    backbone = load_backbone(cfg.model, place)
    adapter_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[cfg.model.adapter_dtype]
    model = attach_lora(backbone.model, cfg.lora, cfg.seed, adapter_dtype)
    model.eval()
    adapter = Adapter(model, frozen_parameter_names(model))
    encoder = Encoder(backbone.tokenizer, cfg.stream.max_length, cfg.model.chat_template, cfg.stream.truncate)
    checkpointed = checkpoint_blocks(model) if cfg.model.gradient_checkpointing else []
    compiled = compile_blocks(model, backbone.device, False if checkpointed else cfg.model.compile)
    setting = getattr(getattr(cfg, "train", None), "fused_head", False)
    packing = bool(getattr(getattr(cfg, "train", None), "packing", False))
    if packing:
        check_packing(model)
    return Learner(backbone, model, adapter, encoder, adapter.state(), takes_logits_to_keep(model), compiled,
                   list(model.modules()), autocast_dtype(cfg.model.autocast, backbone.device), checkpointed,
                   cache_key(model), fuses_head(model, setting), packing)


def check_packing(model: torch.nn.Module) -> None:
    """``train.packing`` needs transformers' packed-sequence mask and a decoder that reads
    ``position_ids``; one line where either is missing."""
    import transformers.masking_utils as masking

    if not hasattr(masking, "find_packed_sequence_indices"):
        raise ModelError("config key 'train.packing': this transformers builds no mask for packed sequences; "
                         "upgrade transformers, or set train.packing=false")
    decoder = model.get_base_model().get_decoder()
    if "position_ids" not in inspect.signature(decoder.forward).parameters:
        raise ModelError(f"config key 'train.packing': the decoder {type(decoder).__name__} takes no position ids; "
                         "set train.packing=false")


FUSED_VOCABULARY = 8192  # train.fused_head auto: from this vocabulary on


def fuses_head(model: torch.nn.Module, setting: bool | str) -> bool:
    """Whether distilled batches take the fused head path (:mod:`tsr.cl.fused_head`): asked for
    (``on``, or ``auto`` on a vocabulary of at least FUSED_VOCABULARY words), and possible (a
    plain frozen head: no LoRA on it, no final soft cap)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    head = base.get_output_embeddings()
    plain = (isinstance(head, torch.nn.Linear) and head.bias is None
             and not any("lora_" in n for n, _ in head.named_parameters())
             and not getattr(base.config, "final_logit_softcapping", None))
    if setting is False or not plain:
        return False
    return setting is True or head.weight.shape[0] >= FUSED_VOCABULARY


def checkpoint_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """Turn on Hugging Face's gradient checkpointing of the transformer blocks (non-reentrant,
    so the frozen embeddings need no gradient); the blocks it applies to."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    if not getattr(inner, "supports_gradient_checkpointing", False):
        raise ModelError(f"config key 'model.gradient_checkpointing': {type(inner).__name__} does not support it")
    if hasattr(inner, "activation_checkpointing_enable"):  # transformers' name from 5.2x on
        inner.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        inner.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    inner.eval()
    return [m for m in inner.modules() if getattr(m, "gradient_checkpointing", False) is True]


def autocast_dtype(setting: str, device: torch.device) -> torch.dtype | None:
    if setting == "none":
        return None
    if setting == "float16" and device.type != "cuda":
        raise ModelError("config key 'model.autocast': float16 autocast needs a CUDA device; use bfloat16 or none")
    return {"bfloat16": torch.bfloat16, "float16": torch.float16}[setting]
