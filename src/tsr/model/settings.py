"""The model's config sections: the backbone (``model``) and the LoRA adapter (``lora``).

They live beside the code they configure; :mod:`tsr.config` assembles them with the other
sections into the run config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..schema import added, require, setting

# the reference paper's LoRA targets: the attention projections q, k, v, o
QKVO = ("q_proj", "k_proj", "v_proj", "o_proj")
# How often long work saves its progress, in minutes: a run's train.checkpoint_minutes and
# tsr pretrain-base's --checkpoint-minutes.
CHECKPOINT_MINUTES = 10.0


@dataclass
class ModelConfig:
    """Backbone: ``path`` is ``bundled`` (the package's tiny base), a local folder or a hub id.

    ``compile`` runs each transformer block (forward and backward) through ``torch.compile``
    with dynamic shapes (see :mod:`tsr.model.learner`): one compilation of one block per
    adapter configuration per process, then fused kernels; results agree with eager execution
    to float rounding, not bit for bit. ``auto`` compiles on the CPU where a C++ compiler is
    installed and runs eager everywhere else.
    """

    path: str = "bundled"
    """`bundled`, a local model folder, or a hub id"""
    preset: str | None = None
    """a backbone preset (`qwen2.5-0.5b`, `qwen2.5-7b`, `llama3.2-1b`, `gemma3-1b`): the loader
    checks the folder is that architecture and says what to download when it is missing"""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """`auto` (bf16 on CUDA where supported, fp32 elsewhere), `float32`, `bfloat16`, `float16`"""
    adapter_dtype: Literal["float32", "bfloat16"] = added("float32")
    """dtype of the trainable adapter parameters and their optimiser state: `float32` (PEFT's
    default, upcast over a bf16 base) or `bfloat16` (as the reference paper's code trains its
    LoRA factors on GPU)"""
    device: str = "auto"
    """`auto`, `cpu`, `cuda`, `cuda:N`, `mps`"""
    revision: str | None = added(None)
    """a hub id's branch, tag or commit to load (passed to `from_pretrained`; a commit hash pins
    the weights the run used); null: the hub's default branch. Only for a hub id"""
    trust_remote_code: bool = False
    """passed to `from_pretrained`: run the model's own code from its folder or hub repository.
    Only the caller's command line turns it on (`model.trust_remote_code=true`, or an API call's
    overrides): a config file, preset or received run's `config.yaml` that sets it is refused;
    `tsr learn`, `tsr predict` and `tsr export` refuse a saved config that asks for it unless
    given `--trust-remote-code`"""
    chat_template: bool = False
    """wrap prompts in the tokenizer's chat template (the paper uses raw prompts)"""
    threads: int = setting(0, result=False)
    """torch CPU threads (0 = torch's default)"""
    compile: bool | Literal["auto"] = added(False)
    """`true`: each transformer block is compiled in place (`torch.compile(dynamic=True)`, regional
    compilation: the model's blocks share one graph, so a process compiles one block for each
    adapter configuration), and the batch forwards (training, evaluation, teachers, signatures)
    run through them; `auto`: only on the CPU where a C++ compiler is installed. Results agree
    with eager ones to float rounding, not bit for bit, so a compiled run has its own
    fingerprint. Calls made while a method has a forward hook on the model (GainLoRA's GPM and
    gates, branch and wavelet adapters) and greedy decoding run eager. `bench/compile.py`
    measures the gain"""

    gradient_checkpointing: bool = setting(False, result=False)
    """recompute each transformer block's activations in the backward pass instead of keeping
    them: less memory, more time per step, the same results (not part of the fingerprint).
    Runs the blocks eager (`model.compile` is not applied to them)"""
    fsdp: bool = setting(False, result=False)
    """in a run launched on several processes (`torchrun`, `accelerate launch`), shard the frozen
    base's transformer blocks across them (FSDP2, torch's `fully_shard`): each process keeps its
    share of the blocks' weights and gathers a block's whole weights only while that block runs.
    The LoRA adapter, the embeddings and the output head stay whole on every process, so methods,
    snapshots, teachers and resume work as in data parallelism, and every process scores the
    test sets with the others (a sharded forward needs them all). Results as data parallelism's
    (not part of the fingerprint); refused on a single process"""
    quantization: Literal["none", "4bit", "8bit"] = added("none")
    """load the frozen base quantised through bitsandbytes, with the LoRA adapter on top in
    `adapter_dtype` (QLoRA): `4bit` (NF4 with double quantisation, computing in `dtype`, as the
    QLoRA paper does) or `8bit` (LLM.int8()); on a CUDA device only (refused elsewhere), with the
    `bitsandbytes` package. The exported adapter is an ordinary PEFT adapter for the
    unquantised base. `none`: the base in `dtype`"""
    autocast: Literal["none", "bfloat16", "float16"] = added("none")
    """run the frozen base's forwards under `torch.autocast` in this dtype (`float16`: on CUDA only);
    the adapter's factors and their optimiser stay in `adapter_dtype`. `none`: the model's dtype"""

    def check(self, path: str) -> None:
        require(bool(self.path), f"{path}.path", "must not be empty")
        require(self.revision is None or bool(self.revision.strip()), f"{path}.revision",
                "must not be empty (or null for the default branch)")
        require(self.threads >= 0, f"{path}.threads", "must be >= 0 (0 keeps torch's default)")
        require(self.device == "auto" or self.device.split(":")[0] in ("cpu", "cuda", "mps"),
                f"{path}.device", f"{self.device!r} is not auto, cpu, cuda, cuda:N or mps")
        require(self.quantization == "none" or self.device.split(":")[0] in ("auto", "cuda"), f"{path}.quantization",
                f"{self.quantization} needs a CUDA device (bitsandbytes), not model.device={self.device}")


@dataclass
class LoraConfig:
    """One LoRA adapter on the attention projections (paper: r=16, alpha=32, q/k/v/o)."""

    r: int = 16
    """LoRA rank"""
    alpha: float = 32.0
    """LoRA scaling numerator (the update is scaled by alpha / r)"""
    dropout: float = 0.0
    """dropout on the LoRA input"""
    targets: str | list[str] = "auto"
    """module names (a name matches every module whose dotted name ends with it: `c_proj`,
    `attn.c_proj`), each a Linear or transformers' Conv1D layer (GPT-2's `c_attn`, `c_proj`);
    `auto`: tsr's table first (q, k, v, o for Qwen2/3, Llama, Mistral, Gemma 1-3, as in the paper;
    PEFT's own default is only q, v there), then PEFT's default targets for the model type
    (`c_attn` for GPT-2), then q, k, v, o where the model has them"""

    def check(self, path: str) -> None:
        require(self.r >= 1, f"{path}.r", "must be >= 1")
        require(self.alpha > 0, f"{path}.alpha", "must be > 0")
        require(0.0 <= self.dropout < 1.0, f"{path}.dropout", "must be in [0, 1)")
        if isinstance(self.targets, list):
            require(len(self.targets) > 0, f"{path}.targets", "must list at least one module name")
