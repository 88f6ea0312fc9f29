"""Signatures given beforehand (``method.signatures``): TSR reads each task's signature from a
signature file (``tsr signatures``, :mod:`tsr.cl.signature_file`) instead of probing the task
when it starts. A file taken on another model (a small proxy routing a large one) must be
asked for with ``method.signatures_proxy=true``; the file is checked against the run before
anything is written. ``signatures: ''`` (the default) probes, as the paper does."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...cl.signature_file import read_signature_file
from ...cl.signatures import take
from ...schema import added
from ..context import RunFacts, TaskContext


@dataclass
class GivenParams:
    """Where the signatures come from (part of ``method.*`` of TSR)."""

    signatures: str = added("")
    signatures_proxy: bool = added(False)

    def check_file(self, facts: RunFacts, kind: str, probe_batches: int) -> None:
        """The file holds signatures of ``kind`` that fit this run (a one-line ConfigError if not)."""
        if self.signatures:
            read_signature_file(self.signatures).check(
                kind=kind, model=facts.model, proxy=self.signatures_proxy, seed=facts.seed,
                budget=facts.budget, probe_batches=probe_batches, tasks=list(facts.tasks))

    def given(self, seed: int, task: str) -> torch.Tensor:
        return read_signature_file(self.signatures).get(seed, task)

    def signature_of(self, ctx: TaskContext, kind: str, batches: int) -> torch.Tensor:
        """The task's signature: read from the file, or taken now at the shared initialisation
        from ``batches`` probe batches of its budget."""
        if self.signatures:
            return self.given(ctx.seed, ctx.task.name)
        probe = ctx.stream(None, purpose="probe")
        return take(kind, ctx.learner, [probe.next() for _ in range(batches)])
