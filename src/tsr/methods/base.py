"""The method contract.

A method decides what each step trains on (:meth:`Method.draw`: the current task or a past
task's replay data) and what the step's loss is (:meth:`Method.loss`: cross-entropy plus
whatever the method adds). It may act at task boundaries and, where its paper needs it, on
gradients (:class:`GradientHooks`). It never owns the optimiser or the loop.

The engine calls, per run and per task, in this order (enforced in :mod:`tsr.engine.loop` and
:mod:`tsr.engine.run`):

1. ``validate(params, facts)`` (classmethod) before anything is written; ``setup(learner)``
   once after the learner is built; on resume ``load_state_dict`` after ``setup``.
2. ``training_examples(ctx)`` (optional: the examples the task trains on instead of its own,
   SDFT's rewrites; the context is rebuilt over them), ``begin_task(ctx)``, then the optimiser is built (so a method may add or replace trainable
   parameters here, e.g. a new LoRA branch).
3. per step: ``draw`` -> batch -> ``loss`` -> backward -> ``after_backward`` (optional) ->
   clip -> optimiser step -> ``after_step`` (optional). Each hook hears the context at the
   step's batch (``ctx.step``, :meth:`TaskContext.at`), so no method counts steps.
4. ``end_task(ctx)``; the task's record then stores ``signature()``, the replay data and the
   adapter snapshot; the checkpoint stores ``state_dict()``.

A method's state has two scopes. ``state_dict("run")`` is what it keeps across tasks, stored
with each task's checkpoint and restored by ``load_state_dict(learner, state)`` on resume.
``state_dict("step")`` is what the current task's steps so far changed and ``begin_task`` does
not rebuild (a generator it draws from, a counter): a mid-task checkpoint
(:mod:`tsr.engine.progress`) stores it beside the adapter and the optimiser, and a resume
within the task calls ``begin_task`` again, then ``load_state_dict(learner, state, "step")``.
``begin_task`` must depend only on the task's start (the adapter, the memory, seeded
generators), so that calling it again rebuilds the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Hashable, Literal, NamedTuple, Protocol

import numpy as np
import torch

from ..cl.fused_head import head_losses
from ..cl.losses import kd_kl_from_log_probs, kd_mask, masked_ce
from ..data.example import Example
from ..errors import ConfigError
from ..model.adapter import State
from .context import TARGET, Draw, RunFacts, TaskContext


@dataclass
class NoParams:
    """A method without hyperparameters."""


def require_replay(facts: RunFacts, method: str) -> None:
    """Rehearsal methods need replay data in the task memory."""
    if facts.replay_per_task < 1:
        raise ConfigError(f"config key 'stream.replay_per_task': {method} replays stored examples of past "
                          "tasks and needs at least 1 per task")


Scope = Literal["run", "step"]


@dataclass
class MethodState:
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


class Contract(Protocol):
    """The hooks the engine calls on every method (:class:`Method` gives each a default)."""

    name: ClassVar[str]
    Params: ClassVar[type]

    @classmethod
    def validate(cls, params: Any, facts: RunFacts) -> None: ...
    def setup(self, learner) -> None: ...
    def begin_task(self, ctx: TaskContext) -> dict[str, Any]: ...
    def draw(self, ctx: TaskContext, rng: np.random.Generator) -> Draw: ...
    def loss(self, ctx: TaskContext, batch, draw: Draw) -> dict[str, torch.Tensor]: ...
    def end_task(self, ctx: TaskContext) -> dict[str, Any] | None: ...
    def signature(self) -> torch.Tensor | None: ...
    def state_dict(self, scope: Scope = "run") -> MethodState: ...
    def load_state_dict(self, learner, state: MethodState, scope: Scope = "run") -> None: ...


class ExampleHooks(Protocol):
    """An optional hook for a method that trains a task on examples of its own making (SDFT)."""

    def training_examples(self, ctx: TaskContext) -> list[Example]:
        """The examples task ``ctx.index`` trains on in place of ``ctx.train`` (same number),
        before ``begin_task``; the engine opens the task's batch streams over them."""


class GradientHooks(Protocol):
    """Optional hooks for methods whose paper edits gradients or updates (A-GEM, GainLoRA); a
    method defines either or both, and the engine calls only what is defined."""

    def after_backward(self, ctx: TaskContext, batch, draw: Draw) -> None:
        """Edit the gradients before clipping and the optimiser step."""

    def after_step(self, ctx: TaskContext) -> None:
        """Edit parameters right after the optimiser step (e.g. project an update)."""


class Method:
    """Defaults for every hook of :class:`Contract`: train on the current task with cross-entropy."""

    name: ClassVar[str] = ""
    Params: ClassVar[type] = NoParams

    def __init__(self, params: Any):
        self.params = params

    @classmethod
    def validate(cls, params: Any, facts: RunFacts) -> None:
        """Check parameters against the run's facts (its tasks, replay data, model, seed,
        budget), before anything is written; raise a ConfigError naming the key."""

    def setup(self, learner) -> None:
        """Called once after the learner is built (and before a resumed state is loaded)."""

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        """Prepare for task ``ctx.index``; returns facts worth logging (e.g. routing)."""
        return {}

    def draw(self, ctx: TaskContext, rng: np.random.Generator) -> Draw:
        """Where the next batch comes from."""
        return TARGET

    def loss(self, ctx: TaskContext, batch, draw: Draw) -> dict[str, torch.Tensor]:
        """Named loss terms of one step; the engine back-propagates their sum."""
        return {"ce": masked_ce(*ctx.learner.answer_logits(batch))}

    def end_task(self, ctx: TaskContext) -> dict[str, Any] | None:
        """Called after the last step of the task, before its record is written; may return
        facts worth logging (merged into the task's log entry)."""

    def signature(self) -> torch.Tensor | None:
        """The current task's signature, if the method computed one (stored in its record)."""
        return None

    def state_dict(self, scope: Scope = "run") -> MethodState:
        """``run``: what the method keeps across tasks; ``step``: what this task's steps so far
        changed and ``begin_task`` does not rebuild (generators it draws from, counters), saved
        by a mid-task checkpoint. Empty by default."""
        return MethodState()

    def load_state_dict(self, learner, state: MethodState, scope: Scope = "run") -> None:
        """Restore what :meth:`state_dict` of that ``scope`` returned (the learner is set up;
        for ``step``, ``begin_task`` has run again for the same task)."""


class Distillation(NamedTuple):
    """The distillation term's triple: over which positions (``attended`` or ``answer``), its
    weight in the loss and its temperature."""

    mask: Literal["attended", "answer"]
    weight: float
    temperature: float


def distilled(ctx: TaskContext, batch, ref: Hashable, state: State, kd: Distillation) -> dict[str, torch.Tensor]:
    """:func:`ce_and_distillation` of ``batch`` against the teacher ``state`` named ``ref``.

    Distilled over every attended position on a learner with ``fused_head``, the head, both
    losses and their gradient run in chunks (:func:`tsr.cl.fused_head.head_losses`): the same
    terms to float rounding, with no batch x length x vocabulary tensor."""
    learner, (mask, weight, temperature) = ctx.learner, kd
    if not (learner.fused_head and mask == "attended"):
        return ce_and_distillation(ctx, batch, ctx.teacher_log_probs(ref, state, batch, temperature), kd)
    kind, teacher = ctx.teachers.head_input(ref, state, batch, temperature)
    hidden = learner.student_hidden(batch)
    labels = batch.labels.to(learner.device)
    positions = kd_mask(mask, batch.attention_mask.to(learner.device), labels)
    given = {f"teacher_{kind}": teacher}  # teacher_hidden, teacher_log_probs or teacher_moments
    ce, kd = head_losses(hidden, learner.head_weight, labels, positions, temperature, **given)
    return {"ce": ce, "kd": weight * kd}


def ce_and_distillation(ctx: TaskContext, batch, teacher: torch.Tensor | None,
                        kd: Distillation) -> dict[str, torch.Tensor]:
    """``ce`` on the batch and, given the teacher's log-probabilities at the ``kd`` temperature
    on the same batch (:meth:`TaskContext.teacher_log_probs`), ``kd``: its weight times the
    tempered KL to the teacher at its ``mask`` positions (LwF's and TSR's objective).

    When only supervised positions are read (no teacher, or ``mask == "answer"``) the student
    runs on the answer view (:meth:`Learner.answer_logits`), the same loss for less work, and
    the teacher is cut to the same last positions.
    """
    mask, weight, temperature = kd
    if teacher is None or mask == "answer":
        logits, labels = ctx.learner.answer_logits(batch)
    else:
        logits, labels = ctx.learner.logits(batch), batch.labels.to(ctx.learner.device)
    terms = {"ce": masked_ce(logits, labels)}
    if teacher is not None:
        kept = logits.shape[1]
        positions = kd_mask(mask, batch.attention_mask[:, -kept:].to(logits.device), labels)
        terms["kd"] = weight * kd_kl_from_log_probs(logits, teacher[:, -kept:], positions, temperature)
    return terms
