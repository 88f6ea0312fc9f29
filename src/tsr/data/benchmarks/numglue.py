"""NumGLUE-8: the eight NumGLUE task types as a stream, in type order.

NumGLUE (Mishra et al. 2022, "NumGLUE: A Suite of Fundamental yet Challenging Mathematical
Reasoning Tasks", https://github.com/allenai/numglue) has eight task types that share one
numerical-reasoning core. The reference paper streams them in type order as NumGLUE-8 and
scores every type by exact match (all eight are classification tasks here). Task names are
``type1`` .. ``type8`` (the paper's T1..T8). TRACE's NumGLUE-cm and NumGLUE-ds hold type 1
and type 2 questions respectively (checked against the TRACE files).

Two layouts are read (``stream.root`` is the folder holding them):

- ``release``: the official release, JSON Lines files ``NumGLUE_train.json``,
  ``NumGLUE_dev.json``, ``NumGLUE_test.json`` (``.jsonl`` also accepted), one record per line
  with a ``type`` field such as ``"Type_1"``. Pool = train (+ dev with ``pool_dev: true``),
  test set = test.
- ``per_type``: one JSON array per type, ``Type_k/typek.json`` (the layout of the shared
  subsample). It has no split, so a fixed split is drawn: records are grouped by prompt (so a
  duplicated question never lands on both sides), the groups are shuffled by a generator
  seeded with ``split_seed`` (default 0; never the run seed, so every run sees the same test
  set) and the first ``ceil(test_fraction * groups)`` groups (default 0.2) form the test set.

Prompt templates (``{field}`` is the record's field; every prompt ends with ``Answer:`` and
answers follow without a separator, as in TRACE's own NumGLUE tasks):

- types 1, 2, 8: ``Solve the following math problem.\\nQuestion:\\n{question}\\nAnswer:``
  (TRACE's NumGLUE-cm/ds prompt, so type 1/2 examples read exactly as in TRACE)
- type 4: ``Fill in the blank (_____) in the following sentence.\\nSentence:\\n{question}\\nAnswer:``
- type 3: ``Answer the question by choosing one of the two options.\\nQuestion:\\n{question}\\n``
  ``Option 1: {Option1}\\nOption 2: {Option2}\\nAnswer:``
- types 5, 6: ``Read the passage and answer the question.\\nPassage:\\n{passage}\\n``
  ``Question:\\n{question}\\nAnswer:``
- type 7: ``Read the two statements and answer the question.\\nStatement 1:\\n{statement1}\\n``
  ``Statement 2:\\n{statement2}\\nQuestion:\\n{options}\\nAnswer:``

Answer normalisation:

- numbers (JSON numbers, or strings that read as a decimal number, with optional thousands
  commas) are rounded to at most 9 decimal places, which removes binary floating-point
  artefacts such as ``1.4300000000000002`` -> ``1.43``, then written without exponent,
  trailing zeros or a trailing point (``14.0`` -> ``14``, ``-0`` -> ``0``);
- other strings (type 1 has answers such as ``June``) are kept, stripped;
- type 3 answers ``Option 1`` / ``Option 2`` become that option's text;
- types 5 and 6 carry DROP-style answers ``{number, date, spans}``: the number if present,
  else the non-empty date parts as ``day month year``, else the spans joined by ``", "``;
- type 7 labels are lower-cased (the files mix ``Entailment`` and ``neutral``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Mapping

from ...errors import DataError
from ...rng import numpy_rng
from ...schema import require
from ..example import Example, Stream, Task, TaskKind
from ..records import read_json_array, read_jsonl, require_mapping, string_field
from .options import parse_options, require_root, select_tasks

BENCHMARK = "numglue8"
TYPES = tuple(f"type{k}" for k in range(1, 9))
RELEASE_SPLITS = ("train", "dev", "test")
NLI_LABELS = ("contradiction", "entailment", "neutral")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")
_GROUPED = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")
_PLACES = Decimal(1).scaleb(-9)

TEMPLATES: Mapping[str, str] = MappingProxyType({
    "math": "Solve the following math problem.\nQuestion:\n{question}\nAnswer:",
    "blank": "Fill in the blank (_____) in the following sentence.\nSentence:\n{question}\nAnswer:",
    "options": ("Answer the question by choosing one of the two options.\nQuestion:\n{question}\n"
                "Option 1: {Option1}\nOption 2: {Option2}\nAnswer:"),
    "passage": "Read the passage and answer the question.\nPassage:\n{passage}\nQuestion:\n{question}\nAnswer:",
    "nli": ("Read the two statements and answer the question.\nStatement 1:\n{statement1}\n"
            "Statement 2:\n{statement2}\nQuestion:\n{options}\nAnswer:"),
})
TYPE_TEMPLATE: Mapping[int, str] = MappingProxyType({1: "math", 2: "math", 3: "options", 4: "blank", 5: "passage",
                                                   6: "passage", 7: "nli", 8: "math"})
FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "math": ("question",), "blank": ("question",), "options": ("question", "Option1", "Option2"),
    "passage": ("passage", "question"), "nli": ("statement1", "statement2", "options")})


@dataclass
class NumglueOptions:
    tasks: list[str] | None = None
    layout: Literal["auto", "release", "per_type"] = "auto"
    test_fraction: float = 0.2
    split_seed: int = 0
    pool_dev: bool = False

    def check(self, path: str) -> None:
        require(0.0 < self.test_fraction < 1.0, f"{path}.test_fraction", "must be in (0, 1)")


def normalise_number(value: Any, where: str) -> str:
    """A numeric answer as a canonical decimal string; non-numeric text comes back stripped."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DataError(f"{where}: answer must be a number or a string, found {type(value).__name__}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DataError(f"{where}: answer is {value}")
        text = repr(value)
    else:
        text = value.strip()
        if _GROUPED.fullmatch(text):
            text = text.replace(",", "")
        if not _NUMBER.fullmatch(text):
            if not text:
                raise DataError(f"{where}: 'answer' is empty")
            return text
    try:
        number = Decimal(text).quantize(_PLACES, rounding=ROUND_HALF_UP).normalize()
    except InvalidOperation:  # pragma: no cover - the regex admits only plain decimals
        raise DataError(f"{where}: answer {text!r} is not a number") from None
    out = format(number, "f")
    return "0" if out in ("-0", "+0") else out


def _drop_answer(answer: Any, where: str) -> str:
    """Types 5/6: the DROP answer's number, else its date, else its spans."""
    answer = require_mapping(answer, f"{where}: 'answer'", "number, date, spans")
    number = answer.get("number", "")
    is_number = isinstance(number, (int, float)) and not isinstance(number, bool)
    if is_number or (isinstance(number, str) and number.strip()):
        return normalise_number(number, where)
    date = answer.get("date") or {}
    if not isinstance(date, dict):
        raise DataError(f"{where}: answer 'date' must be an object with day, month, year")
    parts = [str(date.get(k, "")).strip() for k in ("day", "month", "year")]
    if any(parts):
        return " ".join(p for p in parts if p)
    spans = answer.get("spans") or []
    if not isinstance(spans, list) or not all(isinstance(s, str) for s in spans):
        raise DataError(f"{where}: answer 'spans' must be a list of strings")
    spans = [s.strip() for s in spans if s.strip()]
    if not spans:
        raise DataError(f"{where}: answer has no number, date or span")
    return ", ".join(spans)


def answer_text(record: dict[str, Any], k: int, where: str) -> str:
    """The normalised answer of a type-``k`` record (rules in the module docstring)."""
    if "answer" not in record:
        raise DataError(f"{where}: missing 'answer'")
    answer = record["answer"]
    if k in (5, 6):
        return _drop_answer(answer, where)
    if k == 3:
        choice = str(answer).strip()
        if choice not in ("Option 1", "Option 2"):
            raise DataError(f"{where}: type 3 answer must be 'Option 1' or 'Option 2', found {answer!r}")
        return string_field(record, choice.replace(" ", ""), where).strip()
    if k == 7:
        label = str(answer).strip().lower()
        if label not in NLI_LABELS:
            raise DataError(f"{where}: type 7 answer must be one of {', '.join(NLI_LABELS)}, found {answer!r}")
        return label
    return normalise_number(answer, where)


def record_example(record: Any, k: int, where: str) -> Example:
    """A type-``k`` NumGLUE record as an :class:`Example` (template and answer rules above)."""
    template = TYPE_TEMPLATE[k]
    record = require_mapping(record, where, ", ".join(FIELDS[template] + ("answer", "type")))
    values = {key: string_field(record, key, where).strip() for key in FIELDS[template]}
    return Example(TEMPLATES[template].format(**values), answer_text(record, k, where))


def record_type(record: Any, where: str) -> int:
    """The task type number of a record's ``type`` field (``"Type_3"`` -> 3)."""
    record = require_mapping(record, where, "a 'type' field")
    value = record.get("type")
    match = re.fullmatch(r"Type_([1-8])", str(value)) if value is not None else None
    if match is None:
        raise DataError(f"{where}: 'type' must be one of Type_1 .. Type_8, found {value!r}")
    return int(match.group(1))


def _release_file(root: Path, split: str) -> Path | None:
    for suffix in (".json", ".jsonl"):
        path = root / f"NumGLUE_{split}{suffix}"
        if path.is_file():
            return path
    return None


def _layout(root: Path, wanted: str) -> str:
    if wanted != "auto":
        return wanted
    if _release_file(root, "train") or _release_file(root, "test"):
        return "release"
    if (root / "Type_1").is_dir():
        return "per_type"
    raise DataError(f"{root}: neither the NumGLUE release (NumGLUE_train.json, NumGLUE_test.json) nor "
                    "per-type folders (Type_1/type1.json ..) found")


def _read_release(root: Path, split: str) -> dict[int, list[Example]]:
    path = _release_file(root, split)
    if path is None:
        raise DataError(f"{root / f'NumGLUE_{split}.json'}: NumGLUE {split} split not found")
    by_type: dict[int, list[Example]] = {k: [] for k in range(1, 9)}
    for line, record in read_jsonl(path):
        where = f"{path}:{line}"
        k = record_type(record, where)
        by_type[k].append(record_example(record, k, where))
    return by_type


def fixed_split(examples: list[Example], fraction: float, seed: int, name: str) -> tuple[list[Example], list[Example]]:
    """(pool, test): prompt groups shuffled by ``(seed, name)``, the first groups are the test set."""
    groups: dict[str, list[Example]] = {}
    for ex in examples:
        groups.setdefault(ex.prompt, []).append(ex)
    keys = list(groups)
    order = numpy_rng(seed, "numglue-split", name).permutation(len(keys))
    n_test = math.ceil(fraction * len(keys))
    test = [ex for i in order[:n_test] for ex in groups[keys[int(i)]]]
    pool = [ex for i in order[n_test:] for ex in groups[keys[int(i)]]]
    return pool, test


def _per_type_task(root: Path, k: int, opts: NumglueOptions) -> Task:
    path = root / f"Type_{k}" / f"type{k}.json"
    if not path.is_file():
        raise DataError(f"{path}: NumGLUE type {k} file not found")
    examples = []
    for i, record in enumerate(read_json_array(path)):
        where = f"{path}: record {i}"
        found = record_type(record, where)
        if found != k:
            raise DataError(f"{where}: 'type' is Type_{found} inside the Type_{k} file")
        examples.append(record_example(record, k, where))
    if not examples:
        raise DataError(f"{path}: holds no records")
    name = TYPES[k - 1]
    pool, test = fixed_split(examples, opts.test_fraction, opts.split_seed, name)
    meta = {"format": "numglue-per-type", "benchmark": BENCHMARK, "source": str(path),
            "template": TYPE_TEMPLATE[k], "split": f"fixed: seed {opts.split_seed}, test {opts.test_fraction}"}
    return Task(name, TaskKind.CLASSIFICATION, tuple(pool), tuple(test), NLI_LABELS if k == 7 else None, meta)


def build_numglue8(root: Path | None, options: dict[str, Any]) -> Stream:
    """NumGLUE-8 in type order from the official release or per-type files (see module doc)."""
    opts = parse_options(NumglueOptions, options)
    names = select_tasks(TYPES, opts.tasks, BENCHMARK)
    root = require_root(root, BENCHMARK, "the NumGLUE files (NumGLUE_train.json .. or Type_k/typek.json)")
    layout = _layout(root, opts.layout)
    ks = [TYPES.index(n) + 1 for n in names]
    if layout == "per_type":
        return Stream("numglue8", tuple(_per_type_task(root, k, opts) for k in ks))
    train, test = _read_release(root, "train"), _read_release(root, "test")
    dev = _read_release(root, "dev") if opts.pool_dev else {k: [] for k in range(1, 9)}
    tasks = []
    for k in ks:
        meta = {"format": "numglue-release", "benchmark": BENCHMARK, "source": str(root),
                "template": TYPE_TEMPLATE[k], "split": "train+dev" if opts.pool_dev else "train"}
        tasks.append(Task(TYPES[k - 1], TaskKind.CLASSIFICATION, tuple(train[k] + dev[k]), tuple(test[k]),
                          NLI_LABELS if k == 7 else None, meta))
    return Stream("numglue8", tuple(tasks))
