"""Reading JSON and JSON Lines record files with errors that name the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import yaml

from ..errors import DataError, TsrError
from .example import Example


# deeper than any record or config needs; deep enough input would exhaust the recursion of
# every reader after the parser (and a YAML alias inside its own anchor is infinitely deep)
MAX_NESTING = 100


def check_parsed(data: Any, where: str, error: type[TsrError] = DataError) -> Any:
    """``data`` as parsed, refused where its lists and mappings nest deeper than
    :data:`MAX_NESTING`, where one holds itself (a YAML alias inside its own anchor), or where a
    string holds a lone surrogate (JSON's ``"\\ud800"``: no text, and no tokenizer takes it)."""
    heights: dict[int, int] = {}  # a shared alias is measured once, not once per use

    def height(node: Any, inside: set[int], depth: int) -> int:
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError as err:
                raise error(f"{where}: holds a lone surrogate ({node[err.start]!r} in {_short(node)}), "
                            "which is not text") from None
            return 0
        if not isinstance(node, (dict, list)):
            return 0
        key = id(node)
        if key in inside:
            raise error(f"{where}: refers to itself (a YAML alias inside the anchor it names)")
        if key not in heights:
            if depth >= MAX_NESTING:
                raise error(f"{where}: nested deeper than {MAX_NESTING} levels")
            inside.add(key)
            children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            heights[key] = 1 + max((height(c, inside, depth + 1) for c in children), default=0)
            inside.discard(key)
        if depth + heights[key] > MAX_NESTING:
            raise error(f"{where}: nested deeper than {MAX_NESTING} levels")
        return heights[key]

    height(data, set(), 0)
    return data


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


def too_deep(where: str, error: type[TsrError] = DataError) -> TsrError:
    """The error for input nested too deeply for the parser itself to read."""
    return error(f"{where}: nested deeper than {MAX_NESTING} levels")


def require_file(path: Path, what: str = "file") -> Path:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: {what} not found")
    return path


def read_json(path: Path) -> Any:
    """Parse a whole JSON file; a syntax error names the file, line and column."""
    path = require_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        return check_parsed(json.loads(text), str(path))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}:{err.colno}: malformed JSON ({err.msg})") from None
    except RecursionError:
        raise too_deep(str(path)) from None


def read_json_array(path: Path) -> list[Any]:
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON array of records, found {type(data).__name__}")
    return data


def read_utf8(path: Path, error: type[TsrError] = DataError) -> str:
    """A whole text file; bytes that are not UTF-8 are an ``error`` naming the file and line."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise error(f"{path}:{line}: not UTF-8 text ({err.reason})") from None


def parse_yaml(text: str, where: str, error: type[TsrError] = DataError) -> Any:
    """YAML ``text`` (safe: no tags that build objects); malformed YAML is an ``error`` naming
    ``where`` and the line."""
    try:
        return check_parsed(yaml.safe_load(text), where, error)
    except RecursionError:
        raise too_deep(where, error) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise error(f"{where}{line}: malformed YAML ({problem})") from None


def read_yaml(path: Path, error: type[TsrError] = DataError) -> Any:
    """A YAML file, with :func:`read_utf8`'s and :func:`parse_yaml`'s one-line errors."""
    return parse_yaml(read_utf8(path, error), str(path), error)


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """Parse a JSON Lines file into ``(line_number, record)`` pairs; blank lines are skipped."""
    path = require_file(path)
    return parse_jsonl_lines(path.read_bytes(), path)


def parse_jsonl_lines(data: bytes, path: Path) -> list[tuple[int, Any]]:
    """``(line_number, record)`` pairs of JSON Lines ``data`` read from ``path`` (for errors)."""
    rows: list[tuple[int, Any]] = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(f"{path}:{lineno}: not UTF-8 text ({err.reason})") from None
        if not line.strip():
            continue
        try:
            rows.append((lineno, check_parsed(json.loads(line), f"{path}:{lineno}")))
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{lineno}: malformed JSON line ({err.msg})") from None
        except RecursionError:
            raise too_deep(f"{path}:{lineno}") from None
    return rows


def require_mapping(record: Any, where: str, expected: str) -> dict[str, Any]:
    """``record`` if it is a JSON object; ``expected`` names the keys it should have."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected an object with {expected}, found {type(record).__name__}")
    return record


def string_field(record: dict[str, Any], key: str, where: str, allow_empty: bool = False) -> str:
    """``record[key]`` as a string; a missing, non-string or (unless allowed) empty value names the key."""
    if key not in record:
        raise DataError(f"{where}: missing '{key}'")
    value = record[key]
    if not isinstance(value, str):
        raise DataError(f"{where}: '{key}' must be a string, found {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise DataError(f"{where}: '{key}' is empty")
    return value


def record_to_example(record: Any, where: str) -> Example:
    """A ``{"prompt": str, "answer": str}`` record as an :class:`Example`."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected an object with 'prompt' and 'answer', found {type(record).__name__}")
    for key in ("prompt", "answer"):
        if key not in record:
            raise DataError(f"{where}: missing '{key}'")
        if not isinstance(record[key], str):
            raise DataError(f"{where}: '{key}' must be a string, found {type(record[key]).__name__}")
    if not record["answer"]:
        raise DataError(f"{where}: 'answer' is empty")
    return Example(record["prompt"], record["answer"])


def examples_from_array(path: Path) -> list[Example]:
    """Examples from a JSON array of prompt/answer records (TRACE layout)."""
    path = Path(path)
    return [record_to_example(r, f"{path}: record {i}") for i, r in enumerate(read_json_array(path))]


def nonempty(examples: Iterable[Example], path: Path, what: str) -> list[Example]:
    out = list(examples)
    if not out:
        raise DataError(f"{path}: {what} holds no examples")
    return out
