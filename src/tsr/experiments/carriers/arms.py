"""The probe's parameter-carrier arms (reference paper §"What: the carrier must persist",
Appendix "Replay and anchor ablations"): what ``init:J`` and ``anchor:J`` train with, and the
cache of the source adapter they both start from or pull toward.

- ``init:J`` (one-shot parameter carrier): the adapter starts as source J's trained adapter
  theta_J, then trains on the target's N examples alone with cross-entropy and a fresh
  optimiser: :class:`tsr.methods.param_init.ParamInit`.
- ``anchor:J`` (persistent parameter carrier): the adapter starts at the shared
  initialisation and trains on ``CE + mu * ||theta - theta_J||^2`` over every adapter
  parameter: :class:`tsr.methods.l2_anchor.L2Anchor` (the penalty is
  :func:`tsr.cl.fisher.quadratic_penalty`).

Both methods read theta_J from the task memory, so the arm trains the target as the second
task (index 1) of a stream whose first task is J, with J's record holding theta_J as its
snapshot and no replay data; the methods' ``source: previous`` picks that record.

theta_J is the source's SeqFT training from the same seed's shared initialisation on its
whole training pool for ``train.steps`` steps: exactly the probe's ``full`` arm of J with
M = J's pool (:func:`tsr.experiments.probe.plan.source_job`). It is saved once per (source, seed) as
``<probe folder>/sources/<source>__s<seed>.safetensors`` (atomic write), so every init and
anchor arm of that source and seed reuses it and a rerun does not train it again; the budget
sweep copies it between the probe folders of its budgets (:func:`share_sources`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from ...atomic import write_bytes, write_tensors
from ...methods.l2_anchor import MU
from ...cl.memory import TaskRecord
from ...data.example import Task
from ...errors import RunError, reason
from ...methods.base import Method
from ...methods.l2_anchor import L2Anchor, L2AnchorParams
from ...methods.param_init import ParamInit, ParamInitParams
from ...model.adapter import State

CARRIERS = ("init", "anchor")
DEFAULT_MU = MU  # the L2 anchor's default strength
SOURCES_DIR = "sources"


def safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def source_path(folder: Path, source: str, seed: int) -> Path:
    """Where the trained adapter of ``source`` at ``seed`` is cached inside ``folder``."""
    return Path(folder) / f"{safe_name(source)}__s{seed}.safetensors"


def save_source(path: Path, state: State) -> None:
    write_tensors(path, state)


def share_sources(folders: list[Path], into: Path, wanted: Iterable[tuple[str, int]]) -> list[Path]:
    """Copy into ``into`` (a probe folder) each wanted (source, seed) adapter it lacks and one of
    ``folders`` has cached (atomic writes); return the copies. theta_J depends on the source,
    the seed and the training config, never on the target budget (:func:`source_job` trains it
    on J's whole pool), so the probe folders of one budget sweep can share one training of each."""
    copied = []
    for source, seed in wanted:
        target = source_path(Path(into) / SOURCES_DIR, source, seed)
        found = [p for p in (source_path(Path(f) / SOURCES_DIR, source, seed) for f in folders) if p.is_file()]
        if found and not target.is_file():
            write_bytes(target, found[0].read_bytes())
            copied.append(target)
    return copied


def load_source(path: Path, device: torch.device | str = "cpu") -> State:
    try:
        return {k: v.to(device) for k, v in load_file(str(path)).items()}
    except (OSError, ValueError, SafetensorError) as err:
        raise RunError(f"{path}: unreadable cached source adapter ({reason(err)}); delete it to retrain") from None


def carrier_method(arm: str, mu: float | None) -> Method:
    """The method of a carrier arm; its source is the record before the target (index 0)."""
    if arm == "init":
        return ParamInit(ParamInitParams(source="previous"))
    if arm == "anchor":
        return L2Anchor(L2AnchorParams(mu=DEFAULT_MU if mu is None else mu, source="previous"))
    raise ValueError(f"not a carrier arm: {arm!r}")


def source_record(source: Task, theta: State) -> TaskRecord:
    """Source J as the first task of the arm's stream: its snapshot is theta_J, no replay data."""
    return TaskRecord(0, source.name, source.kind.value, None, (), theta)
