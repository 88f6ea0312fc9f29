"""One run on several processes: data parallelism through Hugging Face accelerate.

Launched by ``accelerate launch --num_processes N -m tsr run ...`` (or ``torchrun
--nproc-per-node N -m tsr run ...``; on a CPU, processes over gloo), every process holds the
whole model, adapter, method and task memory, and they stay identical: each draws the same batch
from the same seeded stream, computes the loss and backward on its share of the rows
(:meth:`tsr.data.collate.Batch.part`), and the adapter's gradients are summed across processes,
each weighted by its share of the batch's scored tokens, before the method's ``after_backward``,
clipping and the optimiser step. For the token-mean cross-entropy that is the single process's
gradient up to float rounding; a term computed on the whole of its own data on every process
(a replay buffer's batch, a penalty on the weights) is left unchanged by the weighted sum. The
first process scores and writes the run folder and tells the others the scores; the others work
in a private copy of the run folder, removed at the end (:func:`tsr.engine.run.execute`).

Deviations, stated: the model is not wrapped in ``DistributedDataParallel``. Its reducer wants
one forward of the wrapper per backward, and tsr's methods call the model several times per step
and outside a forward (teacher forwards, A-GEM's reference gradient, EWC's penalty); the
gradients are therefore all-reduced once per optimiser step after the backward (the arithmetic
DDP does, without its bucketed overlap of communication and backward). A term normalised over
something other than the scored tokens (TSR's KL over attended positions, per-example means)
is weighted by the same token share, so it equals the single process's only where the shares
match its own normaliser; LoRA dropout draws its masks per share. Evaluation runs on the first
process alone.

With ``model.fsdp`` (:func:`shard_blocks`) the frozen base's transformer blocks are sharded over
the processes by FSDP2 (torch's ``fully_shard``, one unit per block): a process keeps its share
of each block's weights and gathers the whole block only while it runs (forward, and again in
the backward). The adapter's parameters are left out of the sharding (``ignored_params``), so
they stay whole, identical tensors on every process and everything above (snapshots, teachers,
signatures, the gradient sum, the optimiser, resume) is unchanged; the embeddings and the output
head are not sharded either (the fused head reads the head's weight outside any block). Since a
sharded forward is a collective, every process then runs the evaluation too (the same forwards,
the same scores; the first process's are kept). Deviation, stated: every process loads the
whole base into host memory (in the device's dtype) before sharding it; the device receives one
block at a time as it is sharded (:func:`placed`), so a base larger than one device fits where
its shares do. Parameters a method adds later (per-task branches) are not sharded.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import torch

from ..errors import RunError


def launched_processes() -> int:
    """The number of processes the launcher started (``WORLD_SIZE``; 1 without a launcher)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        raise RunError(f"the environment variable WORLD_SIZE={os.environ['WORLD_SIZE']!r} is not a "
                       "number of processes") from None


@dataclass(frozen=True)
class Group:
    """The processes of one run: this one's ``rank`` among ``size``. ``size`` 1 is a plain run,
    and every method below is then the identity, so a single process computes exactly what it
    did before data parallelism existed."""

    rank: int = 0
    size: int = 1
    sharded: bool = False  # the base's blocks sharded over the processes (model.fsdp): every forward is collective

    @property
    def main(self) -> bool:
        """The process that scores, prints and writes the run folder."""
        return self.rank == 0

    def share(self, batch) -> float | None:
        """This process's share of the scored tokens of the whole batch its ``batch`` is a part
        of (None in a single process)."""
        if self.size == 1:
            return None
        tokens = self.sum(torch.tensor([float(batch.scored)], dtype=torch.float64))
        total = float(tokens[0])
        return batch.scored / total if total > 0 else 1.0 / self.size

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over the processes (every process gets the sum)."""
        if self.size == 1:
            return tensor
        from accelerate.utils import reduce

        return reduce(tensor.to(self.device()), reduction="sum").to(tensor.device)

    def sum_gradients(self, params: Sequence[torch.nn.Parameter]) -> None:
        """Sum the gradients of ``params`` over the processes, in one flat message. A parameter
        with no gradient on any process keeps none (the optimiser then skips it, as alone)."""
        if self.size == 1:
            return
        had = self.sum(torch.tensor([float(p.grad is not None) for p in params]))
        live = [p for p, n in zip(params, had.tolist()) if n > 0]
        if not live:
            return
        flat = torch.cat([(torch.zeros_like(p) if p.grad is None else p.grad).reshape(-1) for p in live])
        flat = self.sum(flat)
        at = 0
        for p in live:
            n = p.numel()
            p.grad = flat[at:at + n].view_as(p).clone()
            at += n

    def broadcast(self, value: Any) -> Any:
        """The first process's ``value``, on every process."""
        if self.size == 1:
            return value
        from accelerate.utils import broadcast_object_list

        box = [value if self.main else None]
        broadcast_object_list(box, from_process=0)
        return box[0]

    def barrier(self) -> None:
        if self.size > 1:
            from accelerate import PartialState

            PartialState().wait_for_everyone()

    def device(self) -> torch.device:
        """Where the collectives run: this process's GPU under NCCL, else the CPU (gloo)."""
        from accelerate import PartialState

        return torch.device(PartialState().device) if torch.cuda.is_available() else torch.device("cpu")


SINGLE = Group()


def shard_blocks(model: torch.nn.Module, blocks: Sequence[torch.nn.Module], keep: Sequence[torch.nn.Parameter],
                 group: Group) -> Group:
    """Shard each of ``blocks`` (the base's transformer blocks) over the processes of ``group``
    with FSDP2, leaving the parameters ``keep`` (the adapter's) whole; ``group`` marked sharded."""
    if not blocks:
        raise RunError(f"config key 'model.fsdp': found no list of transformer blocks in {type(model).__name__} "
                       "to shard; set model.fsdp=false")
    from torch.distributed.fsdp import fully_shard

    kept = set(keep)
    for block in blocks:
        fully_shard(block, ignored_params={p for p in block.parameters() if p in kept})
    return dataclasses.replace(group, sharded=True)


def placed(learner: Any) -> Any:
    """``learner`` with what the sharding left on the CPU (the adapter, the embeddings, the head,
    buffers) moved to its device, and its shared initialisation taken again there. The sharded
    blocks are already on the device: ``fully_shard`` moves each block's weights to the mesh's
    device as it shards them, so the device holds one whole block at most while loading."""
    device = learner.device
    for module in learner.model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not hasattr(p, "to_local") and p.device != device:
                moved = p.data.to(device)
                if torch._has_compatible_shallow_copy_type(p.data, moved):  # as Module.to moves a parameter
                    p.data = moved
                else:
                    setattr(module, name, torch.nn.Parameter(moved, requires_grad=p.requires_grad))
        for name, buffer in module.named_buffers(recurse=False):
            if buffer is not None and buffer.device != device:
                module._buffers[name] = buffer.to(device)
    return dataclasses.replace(learner, init_state=learner.adapter.state())


def local_share(model: torch.nn.Module) -> float:
    """The share of the model's parameter elements this process holds (1.0 unsharded)."""
    total = local = 0
    for p in model.parameters():
        total += p.numel()
        local += p.to_local().numel() if hasattr(p, "to_local") else p.numel()
    return local / total if total else 1.0


@lru_cache(maxsize=1)
def current() -> Group:
    """This process's group: joined through accelerate (which reads the launcher's ``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``, ...) when the launcher started several, else :data:`SINGLE`."""
    if launched_processes() == 1:
        return SINGLE
    from accelerate import PartialState

    state = PartialState(cpu=not torch.cuda.is_available())
    if state.num_processes != launched_processes():
        raise RunError(f"the launcher started {launched_processes()} processes but accelerate joined "
                       f"{state.num_processes}; launch with `accelerate launch` or `torchrun`")
    atexit.register(state.destroy_process_group)
    return Group(state.process_index, state.num_processes)


def replica_folder(group: Group, main: Path, name: str) -> Path:
    """A private copy of the run folder ``main`` for a process other than the first: what the
    run had saved when the processes started, in a temporary folder of its own. Called between
    two barriers, so the first process has created the folder and touched nothing in it yet."""
    import tempfile

    root = Path(tempfile.mkdtemp(prefix=f"tsr-rank{group.rank}-"))
    atexit.register(shutil.rmtree, root, True)
    copy = root / name
    shutil.copytree(main, copy, symlinks=True)
    return copy
