"""Teacher logits: forward passes under frozen adapter states, optionally cached.

The modes give the same distillation target up to floating-point rounding:

``batch``
    The teacher runs on the training batch itself, as in the reference implementation.
``cached``
    Snapshots and replay data never change, so a teacher's logits for an example can be
    reused. To make reuse exact, the logits of an example are always computed the same way:
    in a fixed chunk of its own dataset (``chunk`` consecutive examples, padded to the
    chunk's longest), never in whatever batch happened to draw it. A cache hit and a
    recomputation therefore return identical tensors, and the cache budget changes speed,
    never results. Evicted entries (least recently used) are simply recomputed.
``hidden``
    Cached like ``cached``, but what is kept per example is the teacher's last hidden states
    (after the final norm, in the model's dtype) instead of its logits; the output head and the
    softmax run on the assembled batch at every step. The memory per position is the hidden
    size instead of the vocabulary (6.5x less on the bundled base, 170x less on Qwen2.5-0.5B),
    for one pass of the output head per step. A hit and a recomputation are still identical,
    so here too the budget changes speed, never results. It needs an output head without LoRA
    (the head is shared by every adapter state).
``expected``
    Cached like ``cached``, but what is kept per position is what the tempered KL over a shared
    frozen head needs of the teacher (:func:`tsr.cl.fused_head.teacher_moments`): the expected
    head row under its distribution and its negative entropy, hidden size + 1 float32 numbers.
    A step then runs no teacher head (as with ``cached``) from a cache the size of ``hidden``'s.
    Read by the fused head losses (``train.fused_head``); every other reader of a teacher (whole
    logits or log-probabilities: the unfused path, ``kd_mask: answer``, the oracle teacher's
    cross-entropies) gets them as ``cached`` keeps them, in the same budget. Needs a head
    without LoRA.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Hashable, Literal, Sequence

import torch
import torch.nn.functional as F

from ..data.collate import Batch, Encoded, fit
from ..errors import ConfigError
from ..model.adapter import State
from ..model.learner import Learner
from .fused_head import teacher_moments

TeacherMode = Literal["batch", "cached", "hidden", "expected"]


def _size(value: torch.Tensor) -> int:
    return value.numel() * value.element_size()


def head_adapted(learner: Learner) -> bool:
    """Whether the output head carries LoRA factors (so it differs between adapter states)."""
    head = learner.model.get_base_model().get_output_embeddings()
    return head is not None and any("lora_" in name for name, _ in head.named_parameters())


def auto_mode(learner: Learner) -> TeacherMode:
    """``train.teacher: auto``: the teacher's moments where distillation runs through the fused
    head (no teacher head per step, a cache of hidden size per position), else cached
    log-probabilities on a CPU and, on an accelerator, hidden states (or the batch's own teacher
    forward where the head carries LoRA)."""
    if learner.fused_head:
        return "expected"
    return "cached" if learner.device.type == "cpu" else "batch" if head_adapted(learner) else "hidden"


def _padding_log_prob(vocab: int, temperature: float) -> float:
    """log_softmax(0 / T) at every entry of a row of ``vocab`` zero logits."""
    return float(F.log_softmax(torch.zeros(1, vocab) / temperature, dim=-1)[0, 0])


CHUNK = 8  # examples per forward when computing logits to keep


class Teachers:
    def __init__(self, learner: Learner, mode: TeacherMode = "cached", budget_mb: float = 2048,
                 chunk: int = CHUNK):
        self.learner = learner
        self.mode = mode
        self.budget = int(budget_mb * 2**20)
        self.chunk = int(chunk)
        if mode in ("hidden", "expected") and head_adapted(learner):
            raise ConfigError(f"train.teacher: '{mode}' needs an output head without LoRA, and lora.targets "
                              "adapts it; use 'cached' or 'batch'")
        self._data: dict[Hashable, list[Encoded]] = {}
        self._cache: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._bytes = 0
        self.forwards = 0  # teacher forward passes run (for benchmarks and tests)
        self.seconds = 0.0  # wall time spent in them

    @property
    def cached_mb(self) -> float:
        """Memory held by cached teacher logits."""
        return self._bytes / 2**20

    def register(self, data_id: Hashable, encoded: Sequence[Encoded]) -> None:
        """Make a dataset's examples known, so an example key (data_id, i) can be chunked."""
        known = self._data.get(data_id)
        if known is not None and known != list(encoded):
            # The same id now names other examples (a new task's training set): drop stale entries.
            for key in [k for k in self._cache if k[1] == data_id]:
                self._bytes -= _size(self._cache.pop(key))
        self._data[data_id] = list(encoded)

    def forget(self, ref: Hashable) -> None:
        """Drop every cached entry of teacher ``ref`` (its state is about to change)."""
        for key in [k for k in self._cache if k[0] == ref]:
            self._bytes -= _size(self._cache.pop(key))

    def logits(self, ref: Hashable, state: State, batch: Batch) -> torch.Tensor:
        """Teacher logits shaped like the batch's, float32, on the learner's device."""
        return self._assemble(ref, state, batch, None)

    def log_probs(self, ref: Hashable, state: State, batch: Batch, temperature: float) -> torch.Tensor:
        """The teacher's log-probabilities at ``temperature`` (``log_softmax(logits / T)``),
        shaped like the batch's logits. Cached per example like logits: what a distillation
        step reads of its teacher, so the step does no softmax of its own on that side.
        Padded positions hold the log-probabilities of all-zero logits, as a padded batch of
        logits would give them."""
        return self._assemble(ref, state, batch, float(temperature))

    def head_input(self, ref: Hashable, state: State, batch: Batch, temperature: float) -> tuple[str, torch.Tensor]:
        """What the fused head losses (:mod:`tsr.cl.fused_head`) read of the teacher:
        ``("hidden", last hidden states)`` where the mode keeps them or recomputes per batch (the
        head then runs inside the fused pass, chunk by chunk), ``("moments", ...)`` where it keeps
        the teacher's moments (``expected``), else ``("log_probs", ...)`` as :meth:`log_probs` gives
        them."""
        if self.mode == "batch" or not batch.keys:
            self.forwards += 1
            started = time.perf_counter()
            hidden = self.learner.hidden_under(state, batch)
            self.seconds += time.perf_counter() - started
            return "hidden", hidden
        if self.mode == "hidden":
            return "hidden", self._rows(ref, state, batch, "hidden", None)
        if self.mode == "expected":
            return "moments", self._rows(ref, state, batch, "moments", float(temperature))
        return "log_probs", self._assemble(ref, state, batch, float(temperature))

    def _rows(self, ref: Hashable, state: State, batch: Batch, kind: str, temperature: float | None) -> torch.Tensor:
        """The cached rows of ``kind`` (last hidden states, or moments at ``temperature``) of the
        batch's examples, padded with zeros to its width (zero hidden states give zero logits: the
        padding of ``cached``; padded positions are never distilled)."""
        rows = [self._example(ref, state, key, kind, temperature) for key in batch.keys]
        out = torch.zeros((len(rows), batch.input_ids.shape[1], rows[0].shape[-1]), dtype=rows[0].dtype,
                          device=self.learner.device)
        for i, row in enumerate(rows):
            out[i, : row.shape[0]] = row
        return out

    def _assemble(self, ref: Hashable, state: State, batch: Batch, temperature: float | None) -> torch.Tensor:
        if self.mode == "batch" or not batch.keys:
            self.forwards += 1
            started = time.perf_counter()
            out = self.learner.logits_under(state, batch)
            self.seconds += time.perf_counter() - started
            return out if temperature is None else F.log_softmax(out / temperature, dim=-1)
        if self.mode == "hidden":
            hidden = self._rows(ref, state, batch, "hidden", None)
            started = time.perf_counter()
            out = self.learner.head_logits(hidden)
            out = out if temperature is None else F.log_softmax(out / temperature, dim=-1)
            self.seconds += time.perf_counter() - started
            return out
        # cached, and expected's readers of whole distributions: per-example logits or log-probabilities
        rows = [self._example(ref, state, key, "logits", temperature) for key in batch.keys]
        width, vocab = batch.input_ids.shape[1], rows[0].shape[-1]
        fill = 0.0 if temperature is None else _padding_log_prob(vocab, temperature)
        out = torch.full((len(rows), width, vocab), fill, dtype=torch.float32, device=self.learner.device)
        for i, row in enumerate(rows):
            out[i, : row.shape[0]] = row
        return out

    def _example(self, ref: Hashable, state: State, key: Hashable, kind: str,
                 temperature: float | None) -> torch.Tensor:
        """One example's rows of ``kind``: ``logits`` (log-probabilities given a temperature),
        ``hidden`` or ``moments`` (at ``temperature``), computed in the example's fixed chunk of
        its dataset and cached with the chunk's other members."""
        data_id, index = key
        cache_key = (ref, data_id, index, kind, temperature)
        hit = self._cache.get(cache_key)
        if hit is not None:
            self._cache.move_to_end(cache_key)
            return hit
        start = (index // self.chunk) * self.chunk
        members = list(range(start, min(start + self.chunk, len(self._data[data_id]))))
        encoded = [self._data[data_id][i] for i in members]
        chunk_batch = self.learner.encoder.collate(encoded)
        self.forwards += 1
        started = time.perf_counter()
        if kind == "hidden":
            values = self.learner.hidden_under(state, chunk_batch)
        elif kind == "moments":
            values = teacher_moments(self.learner.hidden_under(state, chunk_batch), self.learner.head_weight.detach(),
                                     temperature)
        else:
            values = self.learner.logits_under(state, chunk_batch)
            if temperature is not None:
                values = F.log_softmax(values / temperature, dim=-1)
        self.seconds += time.perf_counter() - started
        result = None
        for row, i, enc in zip(values, members, encoded):
            length = len(fit(enc, self.learner.encoder.max_length)[0])
            entry = row[:length].clone()
            if i == index:
                result = entry
            self._store((ref, data_id, i, kind, temperature), entry)
        assert result is not None
        return result

    def _store(self, key: tuple, value: torch.Tensor) -> None:
        size = _size(value)
        if size > self.budget:
            return
        old = self._cache.pop(key, None)
        if old is not None:
            self._bytes -= _size(old)
        self._cache[key] = value
        self._bytes += size
        while self._bytes > self.budget:
            _, evicted = self._cache.popitem(last=False)
            self._bytes -= _size(evicted)
