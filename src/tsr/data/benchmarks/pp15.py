"""PP15: the 15-task "long sequence" classification suite in O-LoRA's ``CL_Benchmark`` layout.

The suite was assembled by Razdaibiedina et al. 2023 ("Progressive Prompts", ICLR 2023) and
repackaged as instruction data by O-LoRA (Wang et al. 2023, "Orthogonal Subspace Learning for
Language Model Continual Learning", https://github.com/cmnfriend/O-LoRA), whose layout this
module reads: ``CL_Benchmark/<group>/<task>/{train,dev,test,labels}.json``, each split a JSON
array of ``{"label", "sentence"}``, ``labels.json`` the label strings, and
``configs/instruction_config.json`` one zero-shot instruction per group. ``stream.root`` is the
folder holding ``CL_Benchmark`` and ``configs`` (or the ``CL_Benchmark`` folder itself, with
the instructions found next to it or named by the ``instructions`` option).

Prompt, following O-LoRA's data loader (instruction, options line, sentence, answer cue):

    {instruction}Option: {label_1}, {label_2}, ... \\n{sentence}\\nAnswer:

COPA has no instruction in O-LoRA's config (its sentence states the question and the two
choices), so its prompt is ``{sentence}\\nAnswer:``. The answer is the label; every task is a
classification task. The pool is ``train.json`` and the test set ``test.json`` (``dev.json``
is byte-identical to it in O-LoRA's release and is not read).

Task orders. ``sequence`` picks the canonical order among the three 15-task orders of the
literature, named as in O-LoRA's paper (orders 4-6, taken from Progressive Prompts):

- ``order4``: MNLI CB WiC COPA QQP BoolQA RTE IMDB yelp amazon SST-2 dbpedia agnews MultiRC yahoo
  (SAPT's ``gen_script_long_*.py`` order 3, https://github.com/circle-hit/SAPT)
- ``order5``: MultiRC BoolQA WiC MNLI CB COPA QQP RTE IMDB SST-2 dbpedia agnews yelp amazon yahoo
  (O-LoRA paper's table; found only as re-transcribed in third-party code, not in a
  first-party script)
- ``order6``: yelp amazon MNLI CB COPA QQP RTE IMDB SST-2 dbpedia agnews yahoo MultiRC BoolQA WiC
  (O-LoRA's ``scripts/long.sh``; SAPT's order 4)

Options: ``tasks`` (a subset, e.g. the tasks whose files are present), ``sequence``,
``instructions`` (path to ``instruction_config.json``), ``outside_labels`` (``error``, the
default, or ``drop``: GLUE marks examples without a gold label with ``-``, and O-LoRA's MNLI
test split keeps 131 of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Mapping

from ...errors import DataError
from ..example import Example, Stream, Task, TaskKind
from ..records import read_json, read_json_array, require_mapping, string_field
from .options import parse_options, require_root, select_tasks

BENCHMARK = "pp15"
GROUPS: Mapping[str, str] = MappingProxyType({"yelp": "SC", "amazon": "SC", "IMDB": "SC", "SST-2": "SC", "agnews": "TC", "dbpedia": "TC",
          "yahoo": "TC", "MNLI": "NLI", "CB": "NLI", "RTE": "NLI", "QQP": "QQP", "BoolQA": "BoolQA",
          "MultiRC": "MultiRC", "WiC": "WiC", "COPA": "COPA"})
NO_INSTRUCTION = ("COPA",)
ORDERS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "order4": ("MNLI", "CB", "WiC", "COPA", "QQP", "BoolQA", "RTE", "IMDB", "yelp", "amazon", "SST-2",
               "dbpedia", "agnews", "MultiRC", "yahoo"),
    "order5": ("MultiRC", "BoolQA", "WiC", "MNLI", "CB", "COPA", "QQP", "RTE", "IMDB", "SST-2", "dbpedia",
               "agnews", "yelp", "amazon", "yahoo"),
    "order6": ("yelp", "amazon", "MNLI", "CB", "COPA", "QQP", "RTE", "IMDB", "SST-2", "dbpedia", "agnews",
               "yahoo", "MultiRC", "BoolQA", "WiC"),
})
FILES = ("train.json", "test.json", "labels.json")


@dataclass
class PP15Options:
    tasks: list[str] | None = None
    sequence: Literal["order4", "order5", "order6"] = "order4"
    instructions: str | None = None
    outside_labels: Literal["error", "drop"] = "error"


def benchmark_dir(root: Path) -> Path:
    return root / "CL_Benchmark" if (root / "CL_Benchmark").is_dir() else root


def complete_tasks(bench: Path) -> list[str]:
    """Tasks (in ``order4`` order) whose train, test and labels files all exist under ``bench``."""
    return [t for t in ORDERS["order4"] if all((bench / GROUPS[t] / t / f).is_file() for f in FILES)]


def _instruction_file(root: Path, bench: Path, option: str | None) -> Path:
    if option is not None:
        path = Path(option).expanduser()
        path = path if path.is_absolute() else root / path
        if not path.is_file():
            raise DataError(f"{path}: instruction config (stream.options.instructions) not found")
        return path
    tried = [root / "configs" / "instruction_config.json", bench.parent / "configs" / "instruction_config.json"]
    for path in tried:
        if path.is_file():
            return path
    raise DataError(f"{tried[0]}: O-LoRA instruction config not found; set stream.options.instructions "
                    "to configs/instruction_config.json")


def read_instructions(path: Path) -> dict[str, str]:
    """Group -> its first zero-shot instruction (O-LoRA's ``single`` instruction strategy)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a mapping from group to a list of instructions")
    out: dict[str, str] = {}
    for group, entries in data.items():
        if not isinstance(entries, list):
            raise DataError(f"{path}: group {group!r}: expected a list of instructions")
        for i, entry in enumerate(entries):
            where = f"{path}: group {group!r} entry {i}"
            entry = require_mapping(entry, where, "instruction_type, instruction")
            if string_field(entry, "instruction_type", where) == "zero-shot":
                out.setdefault(group, string_field(entry, "instruction", where))
    return out


def read_labels(path: Path) -> tuple[str, ...]:
    labels = read_json_array(path)
    if not labels or not all(isinstance(x, str) and x for x in labels):
        raise DataError(f"{path}: expected a non-empty JSON array of label strings")
    if len(set(labels)) != len(labels):
        raise DataError(f"{path}: a label is listed twice")
    return tuple(labels)


def prompt(instruction: str | None, labels: tuple[str, ...], sentence: str) -> str:
    """The O-LoRA prompt of one example (see module doc)."""
    if instruction is None:
        return f"{sentence}\nAnswer:"
    return f"{instruction}Option: {', '.join(labels)} \n{sentence}\nAnswer:"


def read_split(path: Path, labels: tuple[str, ...], instruction: str | None,
               outside: str) -> tuple[list[Example], int]:
    """(examples, records dropped for a label outside ``labels``) of one split file."""
    examples, dropped = [], 0
    for i, record in enumerate(read_json_array(path)):
        where = f"{path}: record {i}"
        record = require_mapping(record, where, "label, sentence")
        label = string_field(record, "label", where)
        sentence = string_field(record, "sentence", where)
        if label not in labels:
            if outside == "drop":
                dropped += 1
                continue
            raise DataError(f"{where}: label {label!r} is not in labels.json ({', '.join(labels)}); "
                            "set stream.options.outside_labels=drop to drop such records")
        examples.append(Example(prompt(instruction, labels, sentence), label))
    if not examples:
        raise DataError(f"{path}: holds no usable records")
    return examples, dropped


def load_pp15_task(bench: Path, name: str, instructions: dict[str, str], source: Path,
                   opts: PP15Options) -> Task:
    """One task: labels.json, the O-LoRA prompt, train.json as pool and test.json as test set."""
    group = GROUPS[name]
    folder = bench / group / name
    for file in FILES:
        path = folder / file
        if not path.is_file():
            ready = ", ".join(complete_tasks(bench)) or "none"
            raise DataError(f"{path}: {file} of PP15 task {name!r} not found (tasks with train, test and "
                            f"labels files here: {ready}; choose them with stream.options.tasks)")
    instruction = None
    if name not in NO_INSTRUCTION:
        if group not in instructions:
            raise DataError(f"{source}: no zero-shot instruction for group {group!r} (task {name!r})")
        instruction = instructions[group]
    labels = read_labels(folder / "labels.json")
    pool, dropped_pool = read_split(folder / "train.json", labels, instruction, opts.outside_labels)
    test, dropped_test = read_split(folder / "test.json", labels, instruction, opts.outside_labels)
    meta = {"format": "olora", "benchmark": BENCHMARK, "source": str(folder), "group": group,
            "dropped_outside_labels": {"train": dropped_pool, "test": dropped_test}}
    return Task(name, TaskKind.CLASSIFICATION, tuple(pool), tuple(test), labels, meta)


def build_pp15(root: Path | None, options: dict[str, Any]) -> Stream:
    """PP15 in the chosen literature order from O-LoRA's layout (see module doc)."""
    opts = parse_options(PP15Options, options)
    names = select_tasks(ORDERS[opts.sequence], opts.tasks, BENCHMARK)
    root = require_root(root, BENCHMARK, "O-LoRA's CL_Benchmark and configs folders")
    bench = benchmark_dir(root)
    source = _instruction_file(root, bench, opts.instructions)
    instructions = read_instructions(source)
    tasks = tuple(load_pp15_task(bench, name, instructions, source, opts) for name in names)
    return Stream("pp15", tasks)
