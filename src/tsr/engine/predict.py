"""Predictions (``eval.predictions``): each scored task's greedy answers to its test set, scored.

With predictions on, scoring a task after a task also decodes every test prompt greedily
(:func:`tsr.model.generate.greedy_batch`: batched, KV cache, stop at EOS) and scores each
answer by the task's generation metric (:mod:`tsr.runs.text_metrics`; the task's
``metric``), whose mean joins the results as the task's ``gen`` score. Exact match and answer
loss stay the teacher-forced ones of :mod:`tsr.engine.evaluation`: one forward pass scores both,
and the predictions only add. A prompt is the one the teacher-forced pass reads (cut from the
left to leave room for the answer), and a prediction may run to the gold answer's length (with
its EOS) plus ``eval.extra_tokens``.

The answers of one scoring round go to one folder, ``predictions/after-NN-<task>/`` (or
``predictions/zero-shot/``), one JSON Lines file per scored task, ``NN-<task>.jsonl``; the
folder is built under a temporary name and renamed into place, so a kill leaves it whole or
absent, and a resumed run that redoes the round replaces it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

from ..atomic import replace_dir, temp_dir, write_jsonl
from ..cl.memory import record_dir
from ..data.collate import Encoded, fit
from ..data.example import Example, Stream
from ..model.generate import greedy_batch
from ..model.learner import Learner
from .evaluation import EVAL_LOGITS_MB, Score, example_correct
from ..runs.text_metrics import score


def prompt_ids(enc: Encoded, max_length: int, eos_id: int) -> list[int]:
    """The prompt a prediction continues: the teacher-forced pass's (cut from the left). Where
    that cut leaves nothing (an answer of ``max_length`` tokens), the prompt's last token; for an
    empty prompt, EOS, as a start token (greedy decoding needs one position to read)."""
    ids, _ = fit(enc, max_length)
    prompt = ids[: len(ids) - len(enc.answer_ids)]
    return prompt or list(enc.prompt_ids[-1:]) or [eos_id]


def model_input(learner: Learner, example: Example, enc: Encoded, read: Sequence[int]) -> dict[str, Any]:
    """What the model read for a prediction where it is not the record's ``prompt`` as written:
    ``input``, the prompt text after rendering (a chat example's turns through the tokenizer's
    chat template, or ``model.chat_template``'s wrapping), whose tokens (``add_special_tokens=
    False``) the model read; ``input_cut``, where the prompt was cut from the left to fit
    ``max_length``, the number of its first tokens the model did not read. Empty for a prompt
    read whole as written. ``read`` is the token ids the model read (:func:`prompt_ids`)."""
    text = learner.encoder.text(example)
    cut = max(0, len(enc.prompt_ids) - len(read)) if enc.prompt_ids else 0
    return ({"input": text} if text != example.prompt else {}) | ({"input_cut": cut} if cut else {})


def decoded(learner: Learner, ids: Sequence[int]) -> dict[str, str]:
    """Greedy tokens as a record's ``prediction`` (text, without EOS) and ``stop`` (``eos`` or
    ``length``)."""
    stopped = bool(ids) and ids[-1] == learner.encoder.eos_id
    text = learner.tokenizer.decode(ids[:-1] if stopped else ids, skip_special_tokens=True)
    return {"prediction": text, "stop": "eos" if stopped else "length"}


def scored_rows(learner: Learner, examples: Sequence[Example], encoded: Sequence[Encoded], metrics: Sequence[str],
                batch_size: int, budgets: Sequence[int],
                logits_mb: float = EVAL_LOGITS_MB) -> tuple[list[dict[str, Any]], list[float], list[int]]:
    """One record per example: ``index``, ``prompt`` (and, where the model read other text,
    ``input`` and ``input_cut``: :func:`model_input`), ``answer``, ``prediction`` (the greedy answer, at most its budget of
    tokens), ``stop``, ``correct`` (teacher-forced exact match),
    ``loss`` (mean answer-token NLL) and the value of each of ``metrics``; and each example's
    answer-token NLL sum and token count."""
    correct, nll_sum, count = example_correct(learner, encoded, batch_size, logits_mb)
    eos = learner.encoder.eos_id
    read = [prompt_ids(e, learner.encoder.max_length, eos) for e in encoded]
    tokens = greedy_batch(learner, read, budgets, batch_size)
    rows = []
    for i, (example, ids) in enumerate(zip(examples, tokens)):
        row: dict[str, Any] = {"index": i, "prompt": example.prompt,
                               **model_input(learner, example, encoded[i], read[i]), "answer": example.answer,
                               **decoded(learner, ids), "correct": correct[i], "loss": nll_sum[i] / max(count[i], 1)}
        for metric in metrics:
            row[metric] = score(metric, example.prompt, example.answer, row["prediction"])
        rows.append(row)
    return rows, nll_sum, count


def predict(learner: Learner, examples: Sequence[Example], encoded: Sequence[Encoded], metric: str | None,
            batch_size: int, extra_tokens: int, logits_mb: float = EVAL_LOGITS_MB) -> tuple[Score, list[dict[str, Any]]]:
    """The score of a test set (exact match, answer loss and, with ``metric``, that metric's
    mean) and the records of :func:`scored_rows`, each prediction at most its gold answer's
    length (with EOS) plus ``extra_tokens``."""
    rows, nll_sum, count = scored_rows(learner, examples, encoded, [metric] if metric else [], batch_size,
                                       [len(e.answer_ids) + extra_tokens for e in encoded], logits_mb)
    n = max(len(encoded), 1)
    values = [row[metric] for row in rows] if metric is not None else []
    gen = sum(values) / len(values) if values else None
    return Score(sum(row["correct"] for row in rows) / n, sum(nll_sum) / max(sum(count), 1), len(encoded), gen), rows


def predict_tasks(learner: Learner, stream: Stream, tests: Sequence[Sequence[Encoded]], indices: Sequence[int],
                  folder: Path, batch_size: int, extra_tokens: int, logits_mb: float = EVAL_LOGITS_MB) -> dict[int, Score]:
    """Score and predict the test sets of ``indices`` (``tests[i]`` encodes the first examples of
    task i's test set) and write the predictions into ``folder`` as a whole."""
    scores, files = {}, {}
    for i in indices:
        task = stream[i]
        scores[i], rows = predict(learner, task.test[: len(tests[i])], tests[i], task.metric, batch_size, extra_tokens,
                                  logits_mb)
        files[f"{record_dir(folder, i, task.name).name}.jsonl"] = rows
    write_folder(folder, files)
    return scores


def write_folder(folder: Path, files: dict[str, list[dict[str, Any]]]) -> None:
    """Write ``{file name: rows}`` as JSON Lines files of a new ``folder``, replacing any
    earlier one as a whole."""
    tmp = temp_dir(folder)
    try:
        for name, rows in files.items():
            write_jsonl(tmp / name, rows)
        replace_dir(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def round_folder(root: Path, after: int | None, name: str = "") -> Path:
    """``root/after-NN-<task>`` for the scoring after task ``after``; ``root/zero-shot`` for None."""
    return Path(root) / ("zero-shot" if after is None else f"after-{record_dir(root, after, name).name}")
