"""Signature comparison: do task signatures at the shared initialisation predict the matrix?

For every task the signature of :mod:`tsr.cl.signatures` is taken exactly as TSR takes it
(``probe_batches`` batches of the task's N examples, at the shared initialisation of the
seed); sources are ranked by cosine similarity and the top-ranked source is compared with the
transfer matrix's best source (top-1 hit rate, as in the reference paper's Table 2).
"""

from __future__ import annotations

import torch

from ..cl.routing import cosine
from ..cl.signatures import SIGNATURE_KINDS, probe_signature
from ..config import RunConfig
from ..data.example import Stream
from ..data.sampling import BatchStream
from ..model.learner import Learner
from ..rng import numpy_rng
from .probe import arm_examples


def task_signatures(learner: Learner, cfg: RunConfig, stream: Stream, seed: int, kind: str,
                    probe_batches: int = 10) -> dict[str, torch.Tensor]:
    learner.reset(seed)
    learner.adapter.load(learner.init_state)
    sigs = {}
    for index, task in enumerate(stream):
        examples = arm_examples(task, cfg.stream.budget, "target", seed)
        encoded = learner.encoder.encode_all(examples, f"task {task.name!r}")
        batches = BatchStream(learner.encoder, encoded, cfg.train.batch_size,
                              numpy_rng(seed, "probe", index, "target"))
        sigs[task.name] = probe_signature(learner, [batches.next() for _ in range(probe_batches)], kind)
    return sigs


def cosine_table(sigs: dict[str, torch.Tensor]) -> dict[str, dict[str, float]]:
    """``table[target][source]`` = cos(g_source, g_target)."""
    return {t: {s: cosine(sigs[s], sigs[t]) for s in sigs if s != t} for t in sigs}


def top1(table: dict[str, dict[str, float]], best: dict[str, str]) -> dict[str, dict]:
    out = {}
    for target, row in table.items():
        if target in best and row:
            predicted = max(row, key=row.get)
            out[target] = {"predicted": predicted, "best": best[target], "hit": predicted == best[target]}
    return out


def audit(learner: Learner, cfg: RunConfig, stream: Stream, seeds: list[int], best: dict[str, str],
          kinds: tuple[str, ...] = SIGNATURE_KINDS, probe_batches: int = 10) -> dict:
    """Cosine tables (mean over seeds) and top-1 hits for each signature kind."""
    report = {}
    for kind in kinds:
        tables = [cosine_table(task_signatures(learner, cfg, stream, s, kind, probe_batches)) for s in seeds]
        mean = {t: {s: sum(tb[t][s] for tb in tables) / len(tables) for s in tables[0][t]} for t in tables[0]}
        hits = top1(mean, best)
        report[kind] = {"seeds": list(seeds), "cosine": mean, "top1": hits,
                        "hit_rate": f"{sum(h['hit'] for h in hits.values())}/{len(hits)}"}
    return report


__all__ = ["audit", "cosine_table", "task_signatures", "top1"]
