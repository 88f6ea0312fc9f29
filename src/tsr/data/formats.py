"""Record shapes of task data: which keys a record holds decides how it becomes an Example.

A data file (or one split of a Hugging Face dataset) holds records of one shape, detected
from its first record; a record of another shape is an error naming both places.

============  ==========================================  ========================================
shape         keys                                        example
============  ==========================================  ========================================
prompt/answer ``prompt``, ``answer``                      prompt and answer as written
completion    ``prompt``, ``completion``                  prompt as written, answer = completion
alpaca        ``instruction``, ``output``, ``input``      prompt = :data:`ALPACA` (or
              (optional; empty or null: none)             :data:`ALPACA_NO_INPUT`), answer = output
chat          ``messages``: ``[{role, content}, ...]``    the last turn is the assistant's and is
              (content: a string or text parts)           the answer; the earlier turns are the
                                                          prompt, rendered by :func:`plain_chat`
sharegpt      ``conversations``: ``[{from, value}, ...]`` as chat, ``from`` mapped to the chat
              ``system`` (optional)                       roles (:mod:`tsr.data.chat`)
============  ==========================================  ========================================

Other keys are ignored. A record holding ``prompt`` and ``answer`` is a prompt/answer record
whatever else it holds (so files that loaded before still load); a record that fits two of
the other shapes is an error. Chat examples keep their turns (``Example.messages``):
collation renders them with the tokenizer's chat template when it has one, and otherwise
uses the plain rendering stored in ``Example.prompt`` (data/ never sees the model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..errors import DataError
from .example import Example
from .chat import record_turns, split_answer
from .records import record_to_example, string_field

# Alpaca's section headers (Taori et al. 2023, Stanford Alpaca) without its one-sentence
# preamble: the preamble is the same in every example and only costs prompt tokens.
ALPACA = "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n"
ALPACA_NO_INPUT = "### Instruction:\n{instruction}\n\n### Response:\n"

# The plain chat rendering: every turn is "Role:\n{content}\n\n", then the answer's cue.
CHAT_TURN = "{role}:\n{content}\n\n"
CHAT_CUE = "Assistant:\n"


def alpaca_prompt(instruction: str, input: str = "") -> str:
    """The prompt of an Alpaca record: :data:`ALPACA`, or :data:`ALPACA_NO_INPUT` when the
    input is empty."""
    if input.strip():
        return ALPACA.format(instruction=instruction, input=input)
    return ALPACA_NO_INPUT.format(instruction=instruction)


def plain_chat(turns: Iterable[tuple[str, str]]) -> str:
    """The plain rendering of the turns before an assistant answer: each turn as
    ``"{Role}:\\n{content}\\n\\n"`` (the role capitalised), then ``"Assistant:\\n"``."""
    return "".join(CHAT_TURN.format(role=role[:1].upper() + role[1:], content=content)
                   for role, content in turns) + CHAT_CUE


def _answer(record: dict[str, Any], key: str, where: str) -> str:
    value = string_field(record, key, where, allow_empty=True)
    if not value:
        raise DataError(f"{where}: '{key}' is empty")
    return value


def _completion(record: dict[str, Any], where: str) -> Example:
    return Example(string_field(record, "prompt", where, allow_empty=True), _answer(record, "completion", where))


def _alpaca(record: dict[str, Any], where: str) -> Example:
    instruction = string_field(record, "instruction", where)
    text = record.get("input")
    if text is not None and not isinstance(text, str):
        raise DataError(f"{where}: 'input' must be a string, found {type(text).__name__}")
    return Example(alpaca_prompt(instruction, text or ""), _answer(record, "output", where))


def _chat(record: dict[str, Any], where: str) -> Example:
    turns, key = record_turns(record, where)
    before, answer = split_answer(record, turns, where, key)
    return Example(plain_chat(before), answer, tuple(before))


@dataclass(frozen=True)
class Shape:
    """A record shape: the keys that identify it and how a record becomes an Example."""

    name: str
    keys: tuple[str, ...]
    optional: tuple[str, ...]
    convert: Callable[[dict[str, Any], str], Example]

    def describe(self) -> str:
        extra = "".join(f", {k}?" for k in self.optional)
        return "{" + ", ".join(self.keys) + extra + "}"


PROMPT_ANSWER = Shape("prompt/answer", ("prompt", "answer"), (), record_to_example)
SHAPES = (PROMPT_ANSWER,
          Shape("completion", ("prompt", "completion"), (), _completion),
          Shape("alpaca", ("instruction", "output"), ("input",), _alpaca),
          Shape("chat", ("messages",), (), _chat),
          Shape("sharegpt", ("conversations",), ("system",), _chat))
EXPECTED = ", ".join(s.describe() for s in SHAPES)


def shapes_of(record: dict[str, Any]) -> list[Shape]:
    """The shapes whose identifying keys ``record`` holds (prompt/answer wins outright)."""
    fits = [s for s in SHAPES if all(k in record for k in s.keys)]
    return [PROMPT_ANSWER] if PROMPT_ANSWER in fits else fits


def _keys(record: dict[str, Any]) -> str:
    return ", ".join(sorted(map(str, record))) or "none"


class ShapedRecords:
    """Turns the records of one file (or split) into Examples, holding them to one shape."""

    def __init__(self) -> None:
        self.shape: Shape | None = None
        self.first = ""  # where the record that fixed the shape is, e.g. "line 1"

    def example(self, record: Any, where: str, place: str) -> Example:
        """``record`` (at ``where``, a full location; ``place``, its short form) as an Example."""
        shape = self.shape
        if not isinstance(record, dict):
            expected = shape.describe() if shape else f"one of {EXPECTED}"
            raise DataError(f"{where}: expected an object with {expected}, found {type(record).__name__}")
        fits = shapes_of(record)
        if len(fits) > 1:
            raise DataError(f"{where}: ambiguous record (keys: {_keys(record)}) fits "
                            f"{' and '.join(s.describe() for s in fits)}; keep the keys of one shape")
        if shape is None:
            if not fits:
                raise DataError(f"{where}: unknown record shape (keys: {_keys(record)}); expected one of {EXPECTED}")
            shape = self.shape = fits[0]
            self.first = place
        elif fits and fits[0] is not shape:
            raise DataError(f"{where}: a {fits[0].name} record {fits[0].describe()} in a file of {shape.name} "
                            f"records {shape.describe()} (from {self.first}); all records of a file must "
                            "share one shape")
        return shape.convert(record, where)


def examples_from_rows(rows: Iterable[tuple[str, str, Any]]) -> tuple[list[Example], str | None]:
    """The Examples of ``(where, place, record)`` rows of one file, and the file's shape name
    (None when there are no rows)."""
    reader = ShapedRecords()
    examples = [reader.example(record, where, place) for where, place, record in rows]
    return examples, reader.shape.name if reader.shape else None
