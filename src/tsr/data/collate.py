"""Tokenisation and batching, as in the reference implementation.

The answer and the EOS token are supervised; prompt tokens are masked out of the loss
(label -100). When prompt + answer + EOS exceeds ``max_length`` the prompt is cut from the
left, so the answer always stays whole; an answer that cannot fit at all is an error, or, with
``truncate="left"`` (the reference code's left truncation), keeps its last ``max_length`` tokens. Each
example is tokenised once and cached. A chat example's turns (:mod:`tsr.data.formats`) are
rendered here, with the tokenizer's chat template when it has one: data/ never sees a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import torch

from ..errors import DataError, ModelError
from .example import Example

IGNORE = -100

EVAL_BATCH = 16  # examples per evaluation or decoding forward pass, unless a caller says otherwise


@dataclass(frozen=True, slots=True)
class Encoded:
    """Token ids of one example; ``answer_ids`` ends with EOS."""

    prompt_ids: tuple[int, ...]
    answer_ids: tuple[int, ...]


@dataclass
class Batch:
    """A padded batch on its device. ``keys`` identify the examples (for teacher caching)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor
    keys: tuple[Hashable, ...] = ()

    @property
    def size(self) -> int:
        return int(self.input_ids.shape[0])

    def to(self, device: torch.device | str) -> "Batch":
        return Batch(self.input_ids.to(device), self.attention_mask.to(device),
                     self.labels.to(device), self.keys)

    @property
    def scored(self) -> int:
        """The tokens the cross-entropy scores: those predicted from a position before them
        whose label is not ``IGNORE`` (what :func:`tsr.cl.losses.masked_ce` averages over)."""
        return int((self.labels[:, 1:] != IGNORE).sum())

    def part(self, index: int, parts: int) -> "Batch":
        """Rows ``index`` of ``parts`` near-equal consecutive slices (a data-parallel process's
        share, :mod:`tsr.engine.parallel`); the whole batch when ``parts`` is 1."""
        if parts == 1:
            return self
        n = self.size
        start, stop = index * n // parts, (index + 1) * n // parts
        return Batch(self.input_ids[start:stop], self.attention_mask[start:stop], self.labels[start:stop],
                     self.keys[start:stop])


class Encoder:
    """Turns examples into token ids with a fixed tokenizer, prompt format and length limit."""

    def __init__(self, tokenizer, max_length: int, chat_template: bool = False, truncate: str = "refuse"):
        if tokenizer.eos_token_id is None:
            raise DataError("the tokenizer defines no EOS token; answers cannot be terminated")
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.chat_template = bool(chat_template)
        self.truncate = truncate
        self.eos_id = int(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else self.eos_id)
        self._cache: dict[Example, Encoded] = {}

    def _prompt_text(self, prompt: str) -> str:
        if not self.chat_template:
            return prompt
        messages = [{"role": "user", "content": prompt}]
        try:
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        except ValueError as err:
            raise ModelError(f"model.chat_template=true, but the tokenizer cannot apply a chat template "
                             f"({str(err).splitlines()[0]})") from None

    def _chat_text(self, turns: tuple[tuple[str, str], ...]) -> str:
        messages = [{"role": role, "content": content} for role, content in turns]
        try:
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        except Exception as err:  # a template may refuse a turn (jinja's raise_exception)
            raise ModelError(f"the tokenizer's chat template cannot render the turns "
                             f"{[role for role, _ in turns]} of a chat example "
                             f"({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None

    def text(self, example: Example) -> str:
        """The prompt text the model reads: a chat example's turns through the tokenizer's chat
        template when it has one (its plain rendering otherwise); any other prompt as written,
        or as one user turn when ``chat_template`` is set."""
        if example.messages is not None and getattr(self.tokenizer, "chat_template", None):
            return self._chat_text(example.messages)
        return self._prompt_text(example.prompt)

    def encode(self, example: Example) -> Encoded:
        hit = self._cache.get(example)
        if hit is not None:
            return hit
        tok = self.tokenizer
        prompt_ids = tok(self.text(example), add_special_tokens=False)["input_ids"]
        answer_ids = tok(example.answer, add_special_tokens=False)["input_ids"] + [self.eos_id]
        if self.truncate == "left" and len(answer_ids) > self.max_length:
            answer_ids = answer_ids[-self.max_length:]  # the sequence's last max_length tokens
        enc = Encoded(tuple(prompt_ids), tuple(answer_ids))
        self._cache[example] = enc
        return enc

    def encode_all(self, examples: Sequence[Example], where: str) -> list[Encoded]:
        """Encode and check that every answer fits ``max_length`` (error names the example)."""
        out = []
        for i, ex in enumerate(examples):
            enc = self.encode(ex)
            if len(enc.answer_ids) == 1 and ex.answer.strip():
                raise DataError(f"{where}: example {i}'s answer {ex.answer[:40]!r} encodes to no tokens; the "
                                "tokenizer cannot read it (are the model folder's tokenizer files missing?)")
            if len(enc.answer_ids) > self.max_length:
                raise DataError(f"{where}: example {i} has an answer of {len(enc.answer_ids)} tokens "
                                f"(with EOS), more than max_length={self.max_length}; raise "
                                "stream.max_length, or set stream.truncate=left to keep its last tokens")
            out.append(enc)
        return out

    def collate(self, encoded: Sequence[Encoded], keys: Sequence[Hashable] = ()) -> Batch:
        return collate(encoded, self.max_length, self.pad_id, keys)


def fit(enc: Encoded, max_length: int) -> tuple[list[int], list[int]]:
    """(input ids, labels) of one example after cutting the prompt from the left."""
    prompt, answer = list(enc.prompt_ids), list(enc.answer_ids)
    excess = len(prompt) + len(answer) - max_length
    if excess > 0:
        prompt = prompt[excess:]
    return prompt + answer, [IGNORE] * len(prompt) + answer


def collate(encoded: Sequence[Encoded], max_length: int, pad_id: int,
            keys: Sequence[Hashable] = ()) -> Batch:
    """Right-padded tensors; padding is unattended and unsupervised."""
    rows = [fit(e, max_length) for e in encoded]
    width = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    att = torch.zeros((len(rows), width), dtype=torch.long)
    lab = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    for i, (row_ids, row_lab) in enumerate(rows):
        ids[i, : len(row_ids)] = torch.tensor(row_ids)
        att[i, : len(row_ids)] = 1
        lab[i, : len(row_lab)] = torch.tensor(row_lab)
    return Batch(ids, att, lab, tuple(keys))
