"""SuperNI: Super-NaturalInstructions tasks in their native JSON, as SAPT's 15-task sequence.

Super-NaturalInstructions (Wang et al. 2022, https://github.com/allenai/natural-instructions)
stores a task as one JSON object: ``Definition`` (a list of strings, or a string),
``Positive Examples``, ``Negative Examples`` and ``Instances`` of ``{id, input, output}``,
where ``output`` is a list of acceptable outputs (SAPT's copies of three classification
tasks store it as a single string; both are read). SAPT (Zhao et al. 2024, "SAPT: A Shared
Attention Framework for Parameter-Efficient Continual Learning of Large Language Models",
https://github.com/circle-hit/SAPT) uses 15 tasks as a continual-learning sequence, one
folder per task with ``{train,dev,test}.json`` (``dev`` equals ``test``). ``stream.root`` is
the folder holding the task folders (SAPT's ``CL_Benchmark/SuperNI``).

Prompt: the zero-shot encoding of Super-NaturalInstructions (definition, then the instance),
as SAPT's loader builds it; the definition is the first string of ``Definition``:

    Definition: {definition}\\n\\nNow complete the following example -\\nInput: {input}\\nOutput:

The answer is the instance's first non-empty output, stripped (SAPT draws one output at
random for every epoch; a fixed choice keeps the data a pure function of the files). An
instance whose outputs are all empty is dropped and counted in the task's
``meta['dropped_empty_output']`` (SAPT's task511 train split has 6 such instances). Exact match
against that one output under-counts tasks with several acceptable outputs, which are all
generation tasks here, scored by answer loss.

Kinds: classification where every output is a label from a small fixed set -- task363
(POS/NEG), task1687 (positive/negative), task875 (six emotions) and task073 (a choice letter
A-E); generation for the other eleven (extraction, QA with free answers, summarisation,
dialogue and relation generation: their outputs are open text). With ``eval.predictions`` the
generation tasks are also scored by ROUGE-L, Super-NaturalInstructions' own metric (Wang et al.
2022).

Orders (``sequence``): SAPT's ``order1`` (default) and ``order2``, from its
``gen_script_superni_*.py``. ``tasks`` loads a subset; ``pair: [source, target]`` builds the
two-task stream of the probe protocol (source first); :func:`pair_stream` does the same from
Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Mapping

from ...errors import ConfigError, DataError
from ..example import Example, Stream, Task, TaskKind
from ..records import read_json, require_mapping, string_field
from .options import parse_options, require_root, select_tasks

BENCHMARK = "superni"
ORDERS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "order1": ("task1572_samsum_summary", "task363_sst2_polarity_classification",
               "task1290_xsum_summarization", "task181_outcome_extraction",
               "task002_quoref_answer_generation", "task1510_evalution_relation_extraction",
               "task639_multi_woz_user_utterance_generation", "task1729_personachat_generate_next",
               "task073_commonsenseqa_answer_generation", "task1590_diplomacy_text_generation",
               "task748_glucose_reverse_cause_event_detection", "task511_reddit_tifu_long_text_summarization",
               "task591_sciq_answer_generation", "task1687_sentiment140_classification",
               "task875_emotion_classification"),
    "order2": ("task748_glucose_reverse_cause_event_detection", "task073_commonsenseqa_answer_generation",
               "task1590_diplomacy_text_generation", "task639_multi_woz_user_utterance_generation",
               "task1572_samsum_summary", "task1687_sentiment140_classification",
               "task591_sciq_answer_generation", "task363_sst2_polarity_classification",
               "task1510_evalution_relation_extraction", "task1729_personachat_generate_next",
               "task181_outcome_extraction", "task511_reddit_tifu_long_text_summarization",
               "task002_quoref_answer_generation", "task1290_xsum_summarization",
               "task875_emotion_classification"),
})
CLASSIFICATION = ("task363_sst2_polarity_classification", "task1687_sentiment140_classification",
                  "task875_emotion_classification", "task073_commonsenseqa_answer_generation")
TEMPLATE = "Definition: {definition}\n\nNow complete the following example -\nInput: {input}\nOutput:"


@dataclass
class SuperNIOptions:
    tasks: list[str] | None = None
    pair: list[str] | None = None
    sequence: Literal["order1", "order2"] = "order1"

    def check(self, path: str) -> None:
        if self.pair is None:
            return
        if self.tasks is not None:
            raise ConfigError(f"config key '{path}.pair': give either tasks or pair, not both")
        if len(self.pair) != 2 or self.pair[0] == self.pair[1]:
            raise ConfigError(f"config key '{path}.pair': must name two different tasks [source, target]")


def kind_of(name: str) -> TaskKind:
    return TaskKind.CLASSIFICATION if name in CLASSIFICATION else TaskKind.GENERATION


def definition_text(data: dict[str, Any], where: str) -> str:
    """The first string of the task's ``Definition``, stripped."""
    value = data.get("Definition")
    if isinstance(value, list) and value and isinstance(value[0], str):
        value = value[0]
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: 'Definition' must be a non-empty string or list of strings")
    return value.strip()


def instance_example(definition: str, instance: Any, where: str) -> Example | None:
    """One instance as an :class:`Example` (prompt, first non-empty output); None if all are empty."""
    instance = require_mapping(instance, where, "id, input, output")
    text = string_field(instance, "input", where)
    outputs = instance.get("output")
    if isinstance(outputs, str):
        outputs = [outputs]
    if not isinstance(outputs, list) or not outputs or not all(isinstance(o, str) for o in outputs):
        raise DataError(f"{where}: 'output' must be a string or a non-empty list of strings")
    answers = [o.strip() for o in outputs if o.strip()]
    if not answers:
        return None
    return Example(TEMPLATE.format(definition=definition, input=text.strip()), answers[0])


def read_task_file(path: Path) -> tuple[list[Example], int]:
    """(examples, instances dropped for having only empty outputs) of one task file."""
    data = require_mapping(read_json(path), str(path), "Definition, Instances")
    definition = definition_text(data, str(path))
    instances = data.get("Instances")
    if not isinstance(instances, list) or not instances:
        raise DataError(f"{path}: 'Instances' must be a non-empty list")
    examples = [instance_example(definition, inst, f"{path}: instance {i}") for i, inst in enumerate(instances)]
    kept = [ex for ex in examples if ex is not None]
    return kept, len(examples) - len(kept)


def load_superni_task(root: Path, name: str) -> Task:
    """One task of the sequence: ``train.json`` is the pool, ``test.json`` the test set."""
    folder = root / name
    if not folder.is_dir():
        raise DataError(f"{folder}: task folder of SuperNI task {name!r} not found")
    splits, dropped = {}, {}
    for split in ("train", "test"):
        path = folder / f"{split}.json"
        if not path.is_file():
            raise DataError(f"{path}: split '{split}' of SuperNI task {name!r} not found")
        splits[split], dropped[split] = read_task_file(path)
    kind = kind_of(name)
    labels = tuple(sorted({ex.answer for ex in splits["train"]})) if kind is TaskKind.CLASSIFICATION else None
    meta = {"format": "superni", "benchmark": BENCHMARK, "source": str(folder), "dropped_empty_output": dropped}
    metric = "rouge_l" if kind is TaskKind.GENERATION else None
    return Task(name, kind, tuple(splits["train"]), tuple(splits["test"]), labels, meta, metric)


def pair_stream(root: Path, source: str, target: str) -> Stream:
    """The two-task stream (source, then target) of the probe protocol."""
    return build_superni(root, {"pair": [source, target]})


def build_superni(root: Path | None, options: dict[str, Any]) -> Stream:
    """SAPT's SuperNI sequence, a subset of it, or a (source, target) pair (see module doc)."""
    opts = parse_options(SuperNIOptions, options)
    canonical = ORDERS[opts.sequence]
    if opts.pair is not None:
        select_tasks(canonical, opts.pair, BENCHMARK, key="pair")
        names = list(opts.pair)
    else:
        names = select_tasks(canonical, opts.tasks, BENCHMARK)
    root = require_root(root, BENCHMARK, "the SuperNI task folders (SAPT's CL_Benchmark/SuperNI)")
    tasks = tuple(load_superni_task(root, name) for name in names)
    name = "superni-pair" if opts.pair is not None else "superni"
    return Stream(name, tasks)

