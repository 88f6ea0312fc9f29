"""Generator configs: a small typed vocabulary for synthetic streams with designed relations.

A config names its tasks, each by family, template, the hidden attribute it reads and its
label words; the relations between tasks follow from the config (:func:`relation`)::

    name: my-stream
    lexicon_seed: 0          # which hidden attribute assignment
    data_seed: 0             # which examples
    pool: 500                # training pool per task
    test: 500                # test set per task
    tasks:
      - {name: stance, family: polarity, template: stance, attribute: tone,
         labels: {positive: favor, negative: against, neutral: none}}
      - {name: sum, family: addition, template: sum, max_operand: 9}
      - {name: votes, family: balance, template: votes, margin: 2, max_count: 9,
         labels: {positive: favor, negative: against, neutral: none}}

Relations (for every ordered pair of tasks):

``partner``   same family and same hidden content (the same attribute, the same margin of a
              balance rule, or the arithmetic core), no label word used for two different
              classes, and no class named by words of two different tones: the source carries
              the target's latent rule.
``conflict``  same family and hidden content, and a label word the two tasks assign to different
              classes: on the same kind of input the source teaches another answer in the
              target's own words.
``contrast``  same family and hidden content, no label word assigned to two classes, but a class
              the two tasks name with words of opposite tones (the tones the pretraining
              corpus gives label words, ``LABEL_TONE``: `favor` and `hawk` are positive,
              `against` and `dove` negative).
              No sign is designed: on the bundled base such a source measured harmful to a
              target that names classes by their tones and harmless (or helpful) to a target
              that reverses them (docs/calibration.md), so it is reported, not checked.
``unrelated`` anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...schema import build, require
from ..records import read_yaml
from .families import FAMILIES
from .lexicon import KINDS, LABEL_TONE, LABEL_WORDS, TONES

ATTRIBUTES = {"tone": TONES, "kind": KINDS}
RELATIONS = ("partner", "conflict", "contrast", "unrelated")


@dataclass
class SynthTask:
    name: str
    family: str
    template: str
    attribute: str | None = None
    labels: dict[str, str] | None = None
    max_operand: int = 9
    max_count: int = 9
    margin: int = 2

    def check(self, path: str) -> None:
        require(bool(self.name), f"{path}.name", "must not be empty")
        if self.family not in FAMILIES:
            raise ConfigError(f"config key '{path}.family': unknown family {self.family!r} "
                              f"(valid: {', '.join(FAMILIES)})")
        fam = FAMILIES[self.family]
        if self.template not in fam.templates:
            raise ConfigError(f"config key '{path}.template': unknown template {self.template!r} for family "
                              f"{self.family!r} (valid: {', '.join(fam.templates)})")
        if fam.needs_attribute:
            if self.attribute not in ATTRIBUTES:
                raise ConfigError(f"config key '{path}.attribute': family {self.family!r} needs an attribute "
                                  f"(valid: {', '.join(ATTRIBUTES)})")
        elif self.attribute is not None:
            raise ConfigError(f"config key '{path}.attribute': family {self.family!r} reads no attribute")
        if fam.needs_labels:
            classes = ATTRIBUTES[self.attribute] if fam.needs_attribute else TONES
            if not self.labels or set(self.labels) != set(classes):
                what = repr(self.attribute) if fam.needs_attribute else f"the {self.family} rule"
                raise ConfigError(f"config key '{path}.labels': must map each class of {what} "
                                  f"({', '.join(classes)}) to a label word")
            words = list(self.labels.values())
            clash = sorted({w for w in words if words.count(w) > 1})
            if clash:
                raise ConfigError(f"config key '{path}.labels': label word {clash[0]!r} is used for two classes")
            unknown = [w for w in words if w not in LABEL_WORDS]
            if unknown:
                raise ConfigError(f"config key '{path}.labels': {unknown[0]!r} is not a word of the synthetic "
                                  f"language's answer vocabulary (valid: {', '.join(LABEL_WORDS)})")
        elif self.labels is not None:
            raise ConfigError(f"config key '{path}.labels': family {self.family!r} takes no label words")
        require(1 <= self.max_operand <= 9, f"{path}.max_operand", "must be in [1, 9]")
        require(1 <= self.margin <= 9, f"{path}.margin", "must be in [1, 9]")
        require(2 <= self.max_count <= 99, f"{path}.max_count", "must be in [2, 99]")
        require(self.margin <= self.max_count, f"{path}.margin", f"must not exceed max_count={self.max_count}")

    @property
    def kind(self) -> str:
        return FAMILIES[self.family].kind


@dataclass
class SynthSpec:
    name: str
    tasks: list[SynthTask] = field(default_factory=list)
    lexicon_seed: int = 0
    data_seed: int = 0
    pool: int = 500
    test: int = 500

    def check(self, path: str) -> None:
        require(len(self.tasks) >= 1, f"{path}.tasks" if path else "tasks", "must list at least one task")
        names = [t.name for t in self.tasks]
        dupes = sorted({n for n in names if names.count(n) > 1})
        require(not dupes, f"{path}.tasks" if path else "tasks", f"task name {dupes[0]!r} is used twice" if dupes else "")
        require(self.pool >= 1, "pool", "must be >= 1")
        require(self.test >= 1, "test", "must be >= 1")

    def task(self, name: str) -> SynthTask:
        for t in self.tasks:
            if t.name == name:
                return t
        raise ConfigError(f"synthetic stream {self.name!r} has no task {name!r}")


def load_spec(path: Path) -> SynthSpec:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: generator config not found")
    data = read_yaml(path, ConfigError)
    try:
        return build(SynthSpec, data)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def relation(source: SynthTask, target: SynthTask) -> str:
    """The designed relation of ``source`` to ``target`` (see the module docstring)."""
    if source.family != target.family and {source.family, target.family} != {"polarity", "choice"}:
        return "unrelated"
    if source.family == "addition":
        return "partner"
    if source.family == "balance":
        if source.margin != target.margin:
            return "unrelated"
    elif source.attribute is None or source.attribute != target.attribute:
        return "unrelated"
    if source.labels and target.labels:
        shared = set(source.labels.values()) & set(target.labels.values())
        src_class = {w: c for c, w in source.labels.items()}
        tgt_class = {w: c for c, w in target.labels.items()}
        if any(src_class[w] != tgt_class[w] for w in shared):
            return "conflict"
        tones = [(LABEL_TONE.get(source.labels[c]), LABEL_TONE.get(target.labels[c]))
                 for c in source.labels if c in target.labels]
        if any(a is not None and b is not None and a != b for a, b in tones):
            return "contrast"
    return "partner"


def relation_table(spec: SynthSpec) -> dict[str, dict[str, str]]:
    """``table[source][target]`` for every ordered pair of distinct tasks."""
    return {s.name: {t.name: relation(s, t) for t in spec.tasks if t.name != s.name} for s in spec.tasks}


def spec_to_dict(spec: SynthSpec) -> dict[str, Any]:
    from ...schema import to_plain

    return to_plain(spec)
