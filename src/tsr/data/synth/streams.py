"""The shipped synthetic streams and the builder that turns a generator config into a stream.

``synth-trace`` mirrors TRACE-8: five classification and three generation tasks, in TRACE's
order of task types (stance, policy, summary, code, a science-QA slot, two arithmetic tasks,
simplification). Its designed relations: ``stance`` and ``policy`` share one latent rule (which
of two counts is larger by at least two, or neither) under different instructions and label
words whose tones agree (a semantic pair); ``irony`` applies the same rule to ``stance``'s
inputs with stance's options and the two sides' words swapped, under an instruction one word
apart (stance's conflicting source both ways, and a trap for signatures that only see answer
vocabulary; with ``policy`` a contrast: opposed tones over distinct words, no designed sign);
``arith-cm`` and ``arith-ds`` share
the arithmetic core (the second pair); the generation tasks are unrelated to every other
task.

``synth-numglue`` mirrors NumGLUE-8: one arithmetic core (single-digit addition) in eight
formats, so every task is every other task's partner.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...rng import numpy_rng
from ...schema import build, require
from ..example import Example, Stream, Task, TaskKind
from .families import FAMILIES, prompt
from .lexicon import Lexicon
from .spec import SynthSpec, SynthTask, load_spec, relation_table

TONE_STANCE = {"positive": "favor", "negative": "against", "neutral": "none"}
TONE_POLICY = {"positive": "hawk", "negative": "dove", "neutral": "still"}
# irony lists stance's options in stance's order ("favor, against, none") and swaps the sides
TONE_IRONY = {"negative": "favor", "positive": "against", "neutral": "none"}

SYNTH_TRACE = SynthSpec("synth-trace", [
    SynthTask("stance", "balance", "backing", labels=TONE_STANCE),
    SynthTask("policy", "balance", "backing_council", labels=TONE_POLICY),
    SynthTask("summary", "extraction", "report"),
    SynthTask("code", "code", "loops"),
    SynthTask("irony", "balance", "backing_really", labels=TONE_IRONY),
    SynthTask("arith-cm", "addition", "word_problem"),
    SynthTask("arith-ds", "addition", "passage"),
    SynthTask("simplify", "synonyms", "plain"),
])

SYNTH_NUMGLUE = SynthSpec("synth-numglue", [
    SynthTask("ng1-word", "addition", "word_problem"),
    SynthTask("ng2-equation", "addition", "equation"),
    SynthTask("ng3-compare", "addition", "compare"),
    SynthTask("ng4-missing", "addition", "missing"),
    SynthTask("ng5-passage", "addition", "passage"),
    SynthTask("ng6-nli", "addition", "nli"),
    SynthTask("ng7-words", "addition", "words"),
    SynthTask("ng8-sum", "addition", "sum"),
])

SHIPPED = {"synth-trace": SYNTH_TRACE, "synth-numglue": SYNTH_NUMGLUE}


def make_example(rng, lex: Lexicon, task: SynthTask) -> Example:
    instruction, text, target = FAMILIES[task.family].make(rng, lex, task)
    answer = task.labels[target] if task.labels else target
    if task.labels:
        # as in TRACE's classification prompts, the instruction names the possible answers
        instruction = f"{instruction} Options: {', '.join(task.labels.values())}."
    return Example(prompt(instruction, text), " " + answer)


def build_task(task: SynthTask, lex: Lexicon, data_seed: int, pool: int, test: int) -> Task:
    def draw(split: str, n: int) -> tuple[Example, ...]:
        rng = numpy_rng(data_seed, "synth", task.name, task.family, task.template, split)
        return tuple(make_example(rng, lex, task) for _ in range(n))

    labels = tuple(" " + w for w in task.labels.values()) if task.labels else None
    meta = {"format": "synthetic", "source": f"synthetic task {task.name}", "family": task.family,
            "template": task.template, "attribute": task.attribute}
    return Task(task.name, TaskKind(task.kind), draw("pool", pool), draw("test", test), labels, meta,
                FAMILIES[task.family].metric)


def build_stream(spec: SynthSpec) -> Stream:
    lex = Lexicon(spec.lexicon_seed)
    return Stream(spec.name, tuple(build_task(t, lex, spec.data_seed, spec.pool, spec.test) for t in spec.tasks))


@dataclass
class SynthOptions:
    """``stream.options`` of the synthetic benchmarks."""

    spec: str | None = None
    lexicon_seed: int | None = None
    data_seed: int | None = None
    pool: int | None = None
    test: int | None = None

    def check(self, path: str) -> None:
        for key in ("pool", "test"):
            value = getattr(self, key)
            require(value is None or value >= 1, f"{path}.{key}", "must be >= 1")


def _with_options(spec: SynthSpec, opts: SynthOptions) -> SynthSpec:
    changes = {k: getattr(opts, k) for k in ("lexicon_seed", "data_seed", "pool", "test") if getattr(opts, k) is not None}
    return SynthSpec(spec.name, list(spec.tasks), **{**{"lexicon_seed": spec.lexicon_seed, "data_seed": spec.data_seed,
                                                          "pool": spec.pool, "test": spec.test}, **changes})


def resolve_spec(name: str, options: dict[str, Any]) -> SynthSpec:
    opts = build(SynthOptions, options, "stream.options")
    if name == "synth":
        if not opts.spec:
            raise ConfigError("config key 'stream.options.spec': the 'synth' benchmark needs a generator config file")
        return _with_options(load_spec(Path(opts.spec).expanduser()), opts)
    if opts.spec:
        raise ConfigError(f"config key 'stream.options.spec': {name!r} is a shipped stream; use stream.source=synth")
    return _with_options(SHIPPED[name], opts)


def synth_trace(root: Path | None, options: dict[str, Any]) -> Stream:
    return build_stream(resolve_spec("synth-trace", options))


def synth_numglue(root: Path | None, options: dict[str, Any]) -> Stream:
    return build_stream(resolve_spec("synth-numglue", options))


def synth_custom(root: Path | None, options: dict[str, Any]) -> Stream:
    return build_stream(resolve_spec("synth", options))


__all__ = ["SHIPPED", "SYNTH_NUMGLUE", "SYNTH_TRACE", "build_stream", "relation_table", "resolve_spec"]
