"""Tasks stored as JSON Lines files, one record per line in any shape of :mod:`tsr.data.formats`."""

from __future__ import annotations

from pathlib import Path

from ..errors import DataError
from .example import Example, Task, TaskKind
from .chat import record_turns
from .formats import alpaca_prompt, examples_from_rows, plain_chat
from .records import nonempty, read_jsonl, string_field


def examples_from_jsonl(path: Path) -> tuple[list[Example], str | None]:
    """The examples of a JSON Lines file whose records share one shape, and the shape's name;
    an error names the file and line."""
    path = Path(path)
    return examples_from_rows((f"{path}:{line}", f"line {line}", record) for line, record in read_jsonl(path))


def load_jsonl_task(name: str, kind: TaskKind, train: Path, test: Path) -> Task:
    """A task whose training pool and test set are two JSONL files (each of any one shape)."""
    pool, pool_shape = examples_from_jsonl(train)
    tests, test_shape = examples_from_jsonl(test)
    meta = {"format": "jsonl", "source": str(train), "shape": pool_shape, "test_shape": test_shape}
    return Task(name, kind, tuple(nonempty(pool, train, "training file")),
                tuple(nonempty(tests, test, "test file")), meta=meta)


def prompts_from_jsonl(path: Path) -> list[Example]:
    """Prompts to answer (``tsr predict``): records of any shape of :mod:`tsr.data.formats`, the
    answer optional: ``{"prompt"}``, ``{"instruction", "input"}`` (the Alpaca template), or
    ``{"messages"}`` or ShareGPT's ``{"conversations"}`` whose turns are all prompt (a last
    assistant turn is taken as the reference answer; :mod:`tsr.data.chat`). Each becomes an
    Example whose answer is the reference, or empty."""
    path = Path(path)
    out = []
    for line, record in read_jsonl(path):
        where = f"{path}:{line}"
        if not isinstance(record, dict):
            raise DataError(f"{where}: expected an object, found {type(record).__name__}")
        if "messages" in record or "conversations" in record:
            turns, key = record_turns(record, where)
            answer = turns.pop()[1] if turns[-1][0] == "assistant" else ""
            if not turns:
                raise DataError(f"{where}: '{key}' holds no turn before the answer")
            out.append(Example(plain_chat(turns), answer, tuple(turns)))
        elif "instruction" in record:
            out.append(Example(alpaca_prompt(string_field(record, "instruction", where),
                                             str(record.get("input") or "")), str(record.get("output") or "")))
        elif "prompt" in record:
            answer = record.get("answer", record.get("completion", ""))
            out.append(Example(string_field(record, "prompt", where, allow_empty=True), str(answer or "")))
        else:
            raise DataError(f"{where}: no prompt: expected 'prompt', 'instruction', 'messages' or 'conversations', "
                            f"found keys {', '.join(sorted(record)) or 'none'}")
    return nonempty(out, path, "input file")
