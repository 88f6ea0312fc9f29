"""The turns of a chat record, in either layout tsr reads, as ``(role, content)`` string pairs.

- ``messages``: ``[{"role", "content"}, ...]`` (OpenAI's and Hugging Face's chat layout). A
  content is a string, or a list of content parts ``[{"type": "text", "text": ...}, ...]``
  whose texts are joined by a newline; a part of another type (an image, audio) is refused:
  tsr trains text models.
- ``conversations``: ShareGPT's ``[{"from", "value"}, ...]``, ``from`` being ``human``, ``gpt``
  or ``system`` (``user`` and ``assistant`` are read too) and mapped to the chat roles
  ``user``, ``assistant`` and ``system``, so a tokenizer's chat template reads them as it reads
  ``messages``; an optional string ``system`` beside the turns (LLaMA-Factory's ShareGPT
  layout) is a system turn before them.

Every error names the record's place and the turn, in one line.
"""

from __future__ import annotations

from typing import Any

from ..errors import DataError
from .records import string_field

Turns = list[tuple[str, str]]

SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system", "user": "user", "assistant": "assistant"}
PART_SEPARATOR = "\n"  # between the text parts of one content


def part_texts(content: Any, at: str) -> str:
    """A turn's ``content`` (at ``at``) as one string: itself, or its text parts joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise DataError(f"{at}: 'content' must be a string or a list of text parts, found {type(content).__name__}")
    if not content:
        raise DataError(f"{at}: 'content' is an empty list of parts")
    texts = []
    for i, part in enumerate(content):
        where = f"{at}: content[{i}]"
        if not isinstance(part, dict):
            raise DataError(f"{where}: expected a {{type, text}} part, found {type(part).__name__}")
        kind = part.get("type")
        if kind != "text":
            shown = "a part without 'type'" if kind is None else f"a {kind!r} part"
            raise DataError(f"{where}: {shown}; only text parts are read (tsr trains text models)")
        texts.append(string_field(part, "text", where, allow_empty=True))
    return PART_SEPARATOR.join(texts)


def message_turns(record: dict[str, Any], where: str) -> Turns:
    """The ``messages`` of ``record`` (at ``where``) as ``(role, content)`` pairs."""
    messages = record["messages"]
    if not isinstance(messages, list) or not messages:
        raise DataError(f"{where}: 'messages' must be a non-empty list of {{role, content}} turns")
    turns = []
    for i, turn in enumerate(messages):
        at = f"{where}: messages[{i}]"
        if not isinstance(turn, dict):
            raise DataError(f"{at}: expected an object with 'role' and 'content', found {type(turn).__name__}")
        if "content" not in turn:
            raise DataError(f"{at}: missing 'content'")
        turns.append((string_field(turn, "role", at), part_texts(turn["content"], at)))
    return turns


def sharegpt_turns(record: dict[str, Any], where: str) -> Turns:
    """The ``conversations`` of ``record`` (at ``where``), with its ``system`` string first, as
    ``(role, content)`` pairs in the chat roles."""
    conversation = record["conversations"]
    if not isinstance(conversation, list) or not conversation:
        raise DataError(f"{where}: 'conversations' must be a non-empty list of {{from, value}} turns")
    system = record.get("system")
    if system is not None and not isinstance(system, str):
        raise DataError(f"{where}: 'system' must be a string, found {type(system).__name__}")
    turns = [("system", system)] if system and system.strip() else []
    for i, turn in enumerate(conversation):
        at = f"{where}: conversations[{i}]"
        if not isinstance(turn, dict):
            raise DataError(f"{at}: expected an object with 'from' and 'value', found {type(turn).__name__}")
        speaker = string_field(turn, "from", at)
        if speaker not in SHAREGPT_ROLES:
            raise DataError(f"{at}: unknown speaker 'from': {speaker!r} (expected human, gpt or system)")
        turns.append((SHAREGPT_ROLES[speaker], string_field(turn, "value", at, allow_empty=True)))
    return turns


def record_turns(record: dict[str, Any], where: str) -> tuple[Turns, str]:
    """The turns of a chat record of either layout, and the key that held them."""
    if "messages" in record:
        return message_turns(record, where), "messages"
    return sharegpt_turns(record, where), "conversations"


def split_answer(record: dict[str, Any], turns: Turns, where: str, key: str) -> tuple[Turns, str]:
    """The turns before the answer and the answer: the last turn of ``record[key]``, which
    must be the assistant's and not empty, with at least one turn before it."""
    role, answer = turns[-1]
    if role != "assistant":
        if key == "conversations":  # in the record's own words
            raise DataError(f"{where}: the last turn must be gpt's (the answer), found {record[key][-1]['from']!r}")
        raise DataError(f"{where}: the last turn must be the assistant's (the answer), found role {role!r}")
    if not answer:
        raise DataError(f"{where}: {key}[{len(record[key]) - 1}]: the assistant's answer is empty")
    if len(turns) < 2:
        raise DataError(f"{where}: '{key}' holds only the answer; at least one turn must come before it")
    return turns[:-1], answer
