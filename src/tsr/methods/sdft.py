"""SDFT: self-distillation fine-tuning (Yang et al., 2024).

Paper: "Self-Distillation Bridges Distribution Gap in Language Model Fine-Tuning" (ACL 2024);
official code consulted: github.com/sail-sg/sdft.

Before a task trains, the model itself rewrites each target answer, conditioned on the
prompt and the gold answer; a rewrite that agrees with the gold answer replaces it, otherwise
the gold answer is kept. The task then fine-tunes on the rewritten set with plain
cross-entropy, so the targets stay close to the model's own output distribution.

Rewrite prompt (our wording, in the spirit of the official ``*_distill`` templates): the
token ids of ::

    The request below comes with a reference answer. Write your own answer to the request;
    it must agree with the reference answer.
    Reference answer: {gold answer, stripped}
    <blank line>

followed by the example's prompt ids exactly as training sees them (left-cut to fit, chat
template applied if configured), so the model continues in the answer position. Decoding is
greedy (:meth:`Learner.greedy`) until EOS, with a KV cache (one position per new token).

Agreement rule (the official code extracts the final answer where a dataset has one, math,
function calls, code, and keeps the model's own rewrite when that answer checks; it keeps every
other rewrite that does not mention the "reference answer"): a rewrite must end with EOS within
``max_new_tokens`` tokens.
- classification: the rewrite's *final answer* is extracted and compared with the gold label.
  Extraction rule: among the answer-like spans of the rewrite text, the one that ends last.
  Answer-like spans are the whole-word, case-sensitive occurrences of the task's labels
  (``Task.labels``; the gold label alone when a task lists none) and, when the gold label is a
  number, every number in the text (``-1,250.5`` style; compared as numbers, so ``12.0``
  matches ``12``). The rewrite is kept when its final answer equals the gold label: the
  training target is then the model's own text (stripped, with the gold's leading
  whitespace), e.g. ``positive, since it praises the plan`` for the label ``positive``. So SDFT
  differs from SeqFT on classification tasks whenever the model words its answers in its own
  way, and equals it exactly where every kept rewrite is the bare label.
- generation: no final answer to compare, so, as the official code does for open-ended data,
  every complete rewrite is kept unless it is empty, echoes the template ("reference answer"
  in its text), or no longer fits ``stream.max_length``.

Adaptation to a stream (the paper fine-tunes a seed model on one dataset): each task is
rewritten by the model as it is when that task starts (``rewriter: start``: the adapter
after the previous tasks), the self-distribution the next update should stay close to;
``rewriter: base`` uses the shared initialisation (the seed model, as in the paper) for
every task. The first task is rewritten by the seed model either way.
The rewritten set is what ``training_examples`` hands the engine, which trains on it; the task
itself is never changed. ``begin_task`` returns how many rewrites were kept (``rewrites_kept``
of ``rewrites_total``).

Defaults: ``max_new_tokens = 256`` is our choice (a TRACE answer rarely needs more at
``max_length = 384``), for both kinds of task; the paper's training hyperparameters are the
run's own.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..data.collate import fit
from ..data.example import Example
from ..schema import require
from .base import Method
from .context import TaskContext

REWRITE_PREFIX = ("The request below comes with a reference answer. Write your own answer to the "
                  "request; it must agree with the reference answer.\nReference answer: {answer}\n\n")
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")


@dataclass
class SDFTParams:
    rewriter: Literal["start", "base"] = "start"
    max_new_tokens: int = 256

    def check(self, path: str) -> None:
        require(self.max_new_tokens >= 1, f"{path}.max_new_tokens", "must be >= 1")


def rewrite_prompt_ids(encoder, example: Example) -> list[int]:
    """The token ids the rewriter continues: the prefix with the gold answer, then the prompt."""
    prefix = encoder.tokenizer(REWRITE_PREFIX.format(answer=example.answer.strip()),
                               add_special_tokens=False)["input_ids"]
    enc = encoder.encode(example)
    ids, _ = fit(enc, encoder.max_length)
    return list(prefix) + ids[: len(ids) - len(enc.answer_ids)]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def final_answer(text: str, labels: tuple[str, ...] | None, gold: str) -> str | None:
    """The final answer a classification rewrite states: of its answer-like spans (whole-word
    occurrences of the labels, or of the gold alone when there are no labels; numbers when the
    gold is a number), the one that ends last; None when it states none."""
    gold = gold.strip()
    spans = []  # (end, text)
    for label in sorted({label.strip() for label in labels or ()} | {gold}):
        if label:
            spans += [(m.end(), label) for m in re.finditer(rf"(?<!\w){re.escape(label)}(?!\w)", text)]
    if _number(gold) is not None:
        spans += [(m.end(), m.group()) for m in NUMBER.finditer(text)]
    return max(spans)[1] if spans else None


def agreed_answer(example: Example, rewrite: str, classification: bool,
                  labels: tuple[str, ...] | None = None) -> str | None:
    """The training answer a complete rewrite yields under the agreement rule, or None."""
    if not rewrite.strip():
        return None
    if classification:
        gold = example.answer.strip()
        said = final_answer(rewrite, labels, gold)
        if said is None:
            return None
        agrees = said == gold or (_number(gold) is not None and _number(said) == _number(gold))
        lead = example.answer[: len(example.answer) - len(example.answer.lstrip())]
        return lead + rewrite.strip() if agrees else None
    if "reference answer" in rewrite.lower():
        return None
    return rewrite


class SDFT(Method):
    name = "sdft"
    Params = SDFTParams

    def __init__(self, params: SDFTParams):
        super().__init__(params)
        self._kept = 0  # the rewrites kept for the current task (begin_task reports it)

    def rewrite(self, learner, example: Example, classification: bool,
                labels: tuple[str, ...] | None = None) -> str | None:
        """The kept training answer for ``example``, or None when the gold answer stays."""
        encoder = learner.encoder
        out = learner.greedy(rewrite_prompt_ids(encoder, example), self.params.max_new_tokens, cache=True)
        if not out or out[-1] != encoder.eos_id:
            return None  # cut off by the budget: not a complete answer
        text = encoder.tokenizer.decode(out[:-1], skip_special_tokens=True)
        answer = agreed_answer(example, text, classification, labels)
        if answer is None or len(encoder.encode(replace(example, answer=answer)).answer_ids) > encoder.max_length:
            return None
        return answer

    def training_examples(self, ctx: TaskContext) -> list[Example]:
        """The task's examples with every kept rewrite in place of its gold answer; the engine
        builds the task's batch streams over them (called before :meth:`begin_task`)."""
        learner = ctx.learner
        base = self.params.rewriter == "base"
        rewritten, self._kept = [], 0
        with learner.adapter.swapped(learner.init_state) if base else nullcontext():
            for example in ctx.train:
                answer = self.rewrite(learner, example, ctx.task.is_classification, ctx.task.labels)
                self._kept += answer is not None
                rewritten.append(example if answer is None else replace(example, answer=answer))
        return rewritten

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        return {"rewrites_kept": self._kept, "rewrites_total": len(ctx.train)}
