"""TRACE: task folders ``<Task>/{train,eval,test}.json`` and the TRACE-8 benchmark.

Each file is a JSON array of ``{"prompt", "answer"}`` records. The training pool is
``train.json``; the test set is ``test.json``. ``eval.json`` is TRACE's validation split and
is not used by the stream protocol (except as the documented substitute below).

TRACE-8 (Wang et al. 2023, "TRACE: A Comprehensive Benchmark for Continual Learning in Large
Language Models", https://github.com/BeyonderXX/TRACE) is the eight-task stream of the
reference paper, read from the official folder layout (``LLM-CL-Benchmark_500``, ``_1000`` or
``_5000``; ``stream.root`` is the folder holding the task folders). Canonical order and kinds
follow the paper (classification tasks are scored by exact match, generation tasks by
answer loss):

    C-STANCE (cls), FOMC (cls), MeetingBank (gen), Py150 (gen), ScienceQA (cls),
    NumGLUE-cm (cls), NumGLUE-ds (cls), 20Minuten (gen)

With ``eval.predictions``, the generation tasks are also scored by TRACE's metrics
(``TRACE8_METRICS``, as TRACE's evaluation scripts compute them): ROUGE-L for MeetingBank
(summaries), edit similarity for Py150 (code) and SARI for 20Minuten (German simplification).

Prompts and answers are used as the files give them, with one exception: ScienceQA's answer
is a choice letter, a newline and a rationale, and TRACE scores only the leading letter. The
test answer is therefore the letter alone, so that exact match scores the letter. Training
targets are the letter alone too by default; ``scienceqa_rationale: true`` keeps TRACE's
letter + rationale as training targets (test answers stay letters, so the model must learn to
stop after the letter for exact match to credit it: expect lower accuracy with that option).

Options (``stream.options``):

- ``tasks``: a subset of the eight task names to load (canonical order is kept).
- ``scienceqa_rationale``: keep rationales in ScienceQA training targets (default false).
- ``missing_train``: ``error`` (default) or ``eval``. TRACE's 500-example release ships no
  ``MeetingBank/train.json``; with ``eval`` a task without ``train.json`` trains on its
  ``eval.json`` instead (recorded in the task's ``meta['pool_split']``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Mapping

from ...errors import DataError
from ..example import Example, Stream, Task, TaskKind
from ..records import examples_from_array, nonempty
from .options import parse_options, require_root, select_tasks

SPLITS = ("train", "eval", "test")
BENCHMARK = "trace8"
CLS, GEN = TaskKind.CLASSIFICATION, TaskKind.GENERATION
# Canonical TRACE order (TRACE paper; reference paper's Setup) and the paper's task kinds.
TRACE8: Mapping[str, TaskKind] = MappingProxyType({
    "C-STANCE": CLS, "FOMC": CLS, "MeetingBank": GEN, "Py150": GEN,
    "ScienceQA": CLS, "NumGLUE-cm": CLS, "NumGLUE-ds": CLS, "20Minuten": GEN,
})
# TRACE's metric of each generation task (docs/metrics.md)
TRACE8_METRICS: Mapping[str, str] = MappingProxyType({"MeetingBank": "rouge_l", "Py150": "edit_sim",
                                                      "20Minuten": "sari"})
# Tasks whose answers are a choice letter; their labels are the letters the files use.
LETTER_TASKS = ("C-STANCE", "FOMC", "ScienceQA")
_LETTER = re.compile(r"[A-Z]")


def split_path(folder: Path, split: str) -> Path:
    path = Path(folder) / f"{split}.json"
    if not path.is_file():
        raise DataError(f"{path}: split '{split}' not found in task folder {folder}")
    return path


def load_trace_task(name: str, kind: TaskKind, folder: Path) -> Task:
    """A task from one TRACE task folder (train.json is the pool, test.json the test set)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: task folder not found")
    train = split_path(folder, "train")
    test = split_path(folder, "test")
    pool = nonempty(examples_from_array(train), train, "training split")
    tests = nonempty(examples_from_array(test), test, "test split")
    return Task(name, kind, tuple(pool), tuple(tests), meta={"format": "trace", "source": str(folder)})


@dataclass
class Trace8Options:
    tasks: list[str] | None = None
    scienceqa_rationale: bool = False
    missing_train: Literal["error", "eval"] = "error"


def scienceqa_letter(answer: str, where: str) -> str:
    """The choice letter that leads a ScienceQA answer ("B\\nrationale..." -> "B")."""
    letter = answer.split("\n", 1)[0].strip()
    if not _LETTER.fullmatch(letter):
        raise DataError(f"{where}: ScienceQA answer does not start with a choice letter on its own "
                        f"line (starts {answer[:24]!r})")
    return letter


def _scienceqa(examples: list[Example], path: Path, keep_rationale: bool) -> list[Example]:
    out = []
    for i, ex in enumerate(examples):
        letter = scienceqa_letter(ex.answer, f"{path}: record {i}")
        out.append(ex if keep_rationale else Example(ex.prompt, letter))
    return out


def _check_layout(root: Path) -> None:
    """A root holding none of the task folders is a wrong stream.root: say where they are."""
    if any((root / name).is_dir() for name in TRACE8):
        return
    variants = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name.startswith("LLM-CL-Benchmark"))
    hint = (f"; it holds {', '.join(variants)}: point stream.root at one of them" if variants
            else "; point stream.root at e.g. TRACE-Benchmark/LLM-CL-Benchmark_500")
    raise DataError(f"{root}: no TRACE task folders ({', '.join(TRACE8)}){hint}")


def _pool_file(folder: Path, missing_train: str) -> tuple[Path, str]:
    train = folder / "train.json"
    if not train.is_file() and missing_train == "eval" and (folder / "eval.json").is_file():
        return folder / "eval.json", "eval"
    return train, "train"


def _missing(root: Path, names: list[str], missing_train: str) -> list[tuple[str, Path]]:
    """(task, what is missing) for every selected task: its folder, or a split file the stream
    needs (``train.json`` unless ``eval.json`` stands in for it, and ``test.json``)."""
    out = []
    for name in names:
        folder = root / name
        if not folder.is_dir():
            out.append((name, folder))
            continue
        if _pool_file(folder, missing_train)[0].name == "train.json" and not (folder / "train.json").is_file():
            out.append((name, folder / "train.json"))
        if not (folder / "test.json").is_file():
            out.append((name, folder / "test.json"))
    return out


def _missing_error(root: Path, missing: list[tuple[str, Path]]) -> DataError:
    """One line listing everything missing, with what to do about it."""
    if len(missing) == 1:
        name, path = missing[0]
        what = "task folder" if path.name == name else f"split '{path.stem}'"
        head = f"{path}: {what} of TRACE task {name!r} not found"
    else:
        listed = ", ".join(f"{p.relative_to(root)}{'/' if p.name == n else ''}" for n, p in missing)
        head = f"{root}: {len(missing)} TRACE files and folders not found ({listed})"
    hints = []
    trains = [n for n, p in missing if p.name == "train.json"]
    substitutes = [n for n in trains if (root / n / "eval.json").is_file()]
    if "MeetingBank" in trains and not root.name.endswith(("_1000", "_5000")):
        hints.append("TRACE's 500-example release has no MeetingBank/train.json")
    if substitutes:
        hints.append(f"set stream.options.missing_train=eval to train {', '.join(substitutes)} on eval.json instead")
    hints.append("leave the tasks out with stream.options.tasks, or point stream.root at a complete TRACE folder")
    return DataError(f"{head}; {'; '.join(hints)}")


def load_trace8_task(root: Path, name: str, opts: Trace8Options) -> Task:
    """One TRACE-8 task with the benchmark's kind, ScienceQA letters and pool substitute."""
    folder = root / name
    missing = _missing(root, [name], opts.missing_train)
    if missing:
        raise _missing_error(root, missing)
    pool_path, pool_split = _pool_file(folder, opts.missing_train)
    test_path = folder / "test.json"
    pool = nonempty(examples_from_array(pool_path), pool_path, "training split")
    tests = nonempty(examples_from_array(test_path), test_path, "test split")
    if name == "ScienceQA":
        pool = _scienceqa(pool, pool_path, opts.scienceqa_rationale)
        tests = _scienceqa(tests, test_path, keep_rationale=False)
    labels = None
    if name in LETTER_TASKS:
        labels = tuple(sorted({ex.answer for ex in tests} | {ex.answer.split("\n", 1)[0] for ex in pool}))
    meta: dict[str, Any] = {"format": "trace", "benchmark": BENCHMARK, "source": str(folder),
                            "pool_split": pool_split}
    if name == "ScienceQA":
        meta["targets"] = "letter+rationale" if opts.scienceqa_rationale else "letter"
    return Task(name, TRACE8[name], tuple(pool), tuple(tests), labels, meta, TRACE8_METRICS.get(name))


def build_trace8(root: Path | None, options: dict[str, Any]) -> Stream:
    """The TRACE-8 stream in canonical order from an official TRACE folder (see module doc)."""
    opts = parse_options(Trace8Options, options)
    names = select_tasks(list(TRACE8), opts.tasks, BENCHMARK)
    root = require_root(root, BENCHMARK, "the TRACE task folders (e.g. LLM-CL-Benchmark_500)")
    _check_layout(root)
    missing = _missing(root, names, opts.missing_train)  # all of them at once, not the first
    if missing:
        raise _missing_error(root, missing)
    return Stream("trace8", tuple(load_trace8_task(root, name, opts) for name in names))
