"""`tsr predict`: a learner's greedy answers to a file of prompts, scored where they carry answers.

Records with a reference answer are answered and scored exactly as a run's predictions files
score a test set (:func:`tsr.engine.predict.scored_rows`: the teacher-forced exact match and
answer loss, the greedy answer up to the gold answer's length plus ``eval.extra_tokens``, the
generation metrics), so their lines hold the same fields with the same values; records without
one are answered up to ``MAX_NEW_TOKENS``. The summary covers the scored records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..atomic import write_jsonl
from ..config.sections import MAX_BATCH
from ..data.example import GEN_METRICS, TaskKind
from ..data.jsonl import prompts_from_jsonl
from ..errors import ConfigError, RunError
from ..model.generate import greedy_batch
from ..model.learner import build_learner
from ..runs.folders import refuse_own_file
from .learner_dir import CONFIG, RUN, infer_kind, learner_config
from .predict import decoded, model_input, scored_rows
from .run import portable_fingerprint
from .rundir import RunDir

MAX_NEW_TOKENS = 128  # tsr predict: the longest answer decoded for a record without an answer


@dataclass
class Answered:
    """What :func:`predict` wrote: ``count`` answers, ``scored`` of them against a reference
    answer, as ``kind`` (None: nothing scored), with their accuracy (teacher-forced exact
    match), answer loss (mean NLL over all answer tokens, as a run's results) and the mean of
    each generation metric."""

    count: int
    scored: int = 0
    kind: str | None = None
    accuracy: float | None = None
    loss: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)


def _metric_names(kind: str | None, metrics: Sequence[str] | None) -> list[str]:
    if metrics is None:
        return list(GEN_METRICS) if kind == TaskKind.GENERATION.value else []
    unknown = [m for m in metrics if m not in GEN_METRICS]
    if unknown:
        raise ConfigError(f"--metric: unknown metric {unknown[0]!r} (valid: {', '.join(GEN_METRICS)})")
    return list(dict.fromkeys(metrics))


def _checked_learner(folder: Path, trust_remote_code: bool):
    """The learner's config and final adapter, refused where the config is not the one its run
    was made with (its fingerprint)."""
    if not (folder / CONFIG).is_file():
        raise ConfigError(f"{folder}: not a tsr learner (no {CONFIG})")
    cfg = learner_config(folder, (), trust_remote_code)
    run = RunDir(folder / RUN)
    if not run.exists():
        raise RunError(f"{folder}: has not finished learning a task yet (no {RUN}/run.json)")
    recorded = run.meta().get("fingerprint")
    if recorded != portable_fingerprint(cfg):
        raise RunError(f"{folder / CONFIG}: is not the config the learner's run was made with (fingerprint "
                       f"{portable_fingerprint(cfg)}, {RUN}/run.json records {recorded}); restore it")
    return cfg, run.final_adapter()[1]


def predict(folder: Path, inputs: Path, out: Path, batch_size: int | None = None, max_new_tokens: int | None = None,
            kind: str | None = None, metrics: Sequence[str] | None = None,
            trust_remote_code: bool = False) -> Answered:
    """Greedy answers of the learner's current adapter to the records of ``inputs`` (JSONL,
    :func:`tsr.data.jsonl.prompts_from_jsonl`), written to ``out`` as JSONL, one line per
    record in input order: ``index``, ``prompt`` (with ``input`` and ``input_cut`` where
    the model read other text: :func:`tsr.engine.predict.model_input`), ``prediction``, ``stop``, and for a record
    with a reference answer ``answer``, ``correct``, ``loss`` and each generation metric, as
    in a run's predictions files.

    ``kind`` (classification or generation; default: inferred from the answers as ``tsr learn``
    does) decides the metrics: every generation metric for generation (``metrics`` chooses
    others), none for classification. ``batch_size`` defaults to the learner's
    ``eval.batch_size``; ``max_new_tokens``, given, is every answer's budget. The learner's
    config must be the one its run was made with, its adapter the bytes its checkpoint
    recorded; ``trust_remote_code``: the config may run the model's own code."""
    folder, out = Path(folder), Path(out)
    for flag, value in (("--batch-size", batch_size), ("--max-new-tokens", max_new_tokens)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag}: must be >= 1 (got {value})")
    if batch_size is not None and batch_size > MAX_BATCH:
        raise ConfigError(f"--batch-size: must be at most {MAX_BATCH} (got {batch_size})")
    if kind is not None and kind not in {k.value for k in TaskKind}:
        raise ConfigError(f"--kind: must be classification or generation (got {kind!r})")
    check_output_file(out, "--out")
    refuse_own_file(out)  # --out LEARNER/learner.yaml would replace the learner's config
    cfg, adapter = _checked_learner(folder, trust_remote_code)
    examples = prompts_from_jsonl(Path(inputs))
    answered = [i for i, e in enumerate(examples) if e.answer]
    kind = (kind or infer_kind([examples[i].answer for i in answered]).value) if answered else None
    names = _metric_names(kind, metrics)
    learner = build_learner(cfg)
    learner.adapter.load(adapter)
    batch = batch_size or cfg.eval.batch_size
    rows: list[dict[str, Any]] = [{} for _ in examples]
    result = Answered(len(examples), len(answered), kind)
    if answered:
        given = [examples[i] for i in answered]
        encoded = [learner.encoder.encode(e) for e in given]
        budgets = [max_new_tokens or len(e.answer_ids) + cfg.eval.extra_tokens for e in encoded]
        scored, nll_sum, count = scored_rows(learner, given, encoded, names, batch, budgets, cfg.eval.logits_mb)
        for i, row in zip(answered, scored):
            rows[i] = {**row, "index": i}
        result.accuracy = sum(row["correct"] for row in scored) / len(scored)
        result.loss = sum(nll_sum) / max(sum(count), 1)
        result.metrics = {m: sum(row[m] for row in scored) / len(scored) for m in names}
    bare = [i for i, e in enumerate(examples) if not e.answer]
    if bare:
        keep = learner.encoder.max_length - 1
        encoded = [learner.encoder.encode(examples[i]) for i in bare]
        prompts = [list(e.prompt_ids)[-keep:] for e in encoded]
        for i, enc, read, ids in zip(bare, encoded, prompts,
                                     greedy_batch(learner, prompts, max_new_tokens or MAX_NEW_TOKENS, batch)):
            rows[i] = {"index": i, "prompt": examples[i].prompt, **model_input(learner, examples[i], enc, read),
                       **decoded(learner, ids)}
    write_jsonl(out, rows)
    return result


def check_output_file(out: Path, flag: str) -> None:
    """Refuse an output file that cannot be written before any work is done: a folder, a path
    under a file, a folder that is not writable."""
    if out.is_dir():
        raise ConfigError(f"{flag} {out}: is a folder; give a file name")
    parent = out.parent
    if not parent.is_dir():
        raise ConfigError(f"{flag} {out}: {parent} is not a folder")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"{flag} {out}: cannot write into {parent} (read-only or no permission)")
