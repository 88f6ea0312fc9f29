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

Agreement rule (the official code checks the final answer where a dataset has one: math, function
calls, code; it keeps every other rewrite that does not mention the "reference answer"): a
rewrite must end with EOS within its token budget.
- classification: its text, stripped of surrounding whitespace, must equal the gold label
  stripped (exact label). The kept target is then the gold string itself (they differ at most
  in surrounding whitespace, which the strict answer format fixes), so on classification
  tasks SDFT trains on the gold labels and only the kept count is informative. Budget: the
  gold answer's length + 8 tokens (a longer continuation cannot be the label).
- generation: no final answer to compare, so, as the official code does for open-ended data,
  every complete rewrite is kept unless it is empty, echoes the template ("reference answer"
  in its text), or no longer fits ``stream.max_length``. Budget: ``max_new_tokens``.

Adaptation to a stream (the paper fine-tunes a seed model on one dataset): each task is
rewritten by the model as it is when that task starts (``rewriter: start``: the adapter
after the previous tasks), the self-distribution the next update should stay close to;
``rewriter: base`` uses the shared initialisation (the seed model, as in the paper) for
every task. The first task is rewritten by the seed model either way.
``begin_task`` returns how many rewrites were kept (``rewrites_kept`` of ``rewrites_total``).

Defaults: ``max_new_tokens = 256`` is our choice (a TRACE answer rarely needs more at
``max_length = 384``); the paper's training hyperparameters are the run's own.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Literal

from ..data.collate import fit
from ..data.example import Example
from ..schema import require
from .base import Method
from .context import TaskContext

REWRITE_PREFIX = ("The request below comes with a reference answer. Write your own answer to the "
                  "request; it must agree with the reference answer.\nReference answer: {answer}\n\n")
CLASSIFICATION_SLACK = 8


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


def agreed_answer(example: Example, rewrite: str, classification: bool) -> str | None:
    """The training answer a complete rewrite yields under the agreement rule, or None."""
    if classification:
        return example.answer if rewrite.strip() == example.answer.strip() else None
    if not rewrite.strip() or "reference answer" in rewrite.lower():
        return None
    return rewrite


class SDFT(Method):
    name = "sdft"
    Params = SDFTParams

    def rewrite(self, learner, example: Example, classification: bool) -> str | None:
        """The kept training answer for ``example``, or None when the gold answer stays."""
        encoder = learner.encoder
        gold_len = len(encoder.encode(example).answer_ids)
        budget = gold_len + CLASSIFICATION_SLACK if classification else self.params.max_new_tokens
        out = learner.greedy(rewrite_prompt_ids(encoder, example), budget, cache=True)
        if not out or out[-1] != encoder.eos_id:
            return None  # cut off by the budget: not a complete answer
        text = encoder.tokenizer.decode(out[:-1], skip_special_tokens=True)
        answer = agreed_answer(example, text, classification)
        if answer is None or len(encoder.encode(Example(example.prompt, answer)).answer_ids) > encoder.max_length:
            return None
        return answer

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        learner = ctx.learner
        base = self.params.rewriter == "base"
        rewritten, kept = [], 0
        with learner.adapter.swapped(learner.init_state) if base else nullcontext():
            for example in ctx.train:
                answer = self.rewrite(learner, example, ctx.task.is_classification)
                kept += answer is not None
                rewritten.append(example if answer is None else Example(example.prompt, answer))
        # Replace the training set before any batch stream over it exists.
        ctx.train[:] = rewritten  # in place: the batch streams are built from it on the first step
        return {"rewrites_kept": kept, "rewrites_total": len(rewritten)}
