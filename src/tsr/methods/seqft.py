"""SeqFT: plain sequential fine-tuning of one adapter, task after task.

The no-mechanism baseline of the reference paper's Table 3: every step trains on the
current task's budget with cross-entropy alone. It is the base contract's default.
"""

from __future__ import annotations

from .base import Method


class SeqFT(Method):
    name = "seqft"
