"""Option-list instruction families: the richer pretraining corpus of ``tsr pretrain-base``.

A real instruction-tuned model that meets a classification prompt listing its answers
(``Options: favor, against, none.``, as TRACE's prompts and `synth-trace`'s do) answers with
one of the listed words, whatever it learnt last. The bundled base never met such a prompt in
pretraining, so the answer format of each task lives in the adapter alone, and every new task
rewrites it (docs/synthetic.md, the regime map). These families teach that prior: each
prompt lists two or three options in a random order and the answer is one of them, picked
by a rule the base can read (a pretraining-only attribute, a word in the input, the larger
number). As in the rest of the corpus, no benchmark label word is ever an answer or an
option: the prior is "answer from the list", not any benchmark task's rule.

Used only when ``PretrainConfig.options_share`` is above zero; the bundled base's corpus
draws nothing from here.
"""

from __future__ import annotations

import numpy as np

from .families import pick, prompt
from .lexicon import (
    CARRY, JERSEYS, LEVELS, MONTHS, NAMES, NOUNS, PLACES, REGIONS, SEASONS, SIZES, TEAMS, VERBS, Lexicon
)

Rng = np.random.Generator


def _listed(rng: Rng, question: str, text: str, options: list[str], answer: str) -> str:
    """The prompt with its options in a random order, then the answer."""
    order = [options[int(i)] for i in rng.permutation(len(options))]
    return prompt(f"{question} Options: {', '.join(order)}.", text) + " " + answer


def _lookup(rng: Rng, lex: Lexicon) -> str:
    """A pretraining-only attribute, named by one of its two label sets, with the set listed."""
    name, place, noun = pick(rng, NAMES), pick(rng, PLACES), pick(rng, NOUNS)
    adj = pick(rng, tuple(lex.season))
    shape = int(rng.integers(8))
    if shape == 0:
        return _listed(rng, "Which team does the player belong to?", f"At the {place}, the ball went to {name}.",
                       list(TEAMS), lex.team[name])
    if shape == 1:
        return _listed(rng, "What jersey color does the player wear?", f"{pick(rng, NAMES)} passed the ball to {name}.",
                       list(JERSEYS.values()), JERSEYS[lex.team[name]])
    if shape == 2:
        return _listed(rng, "Which region is the town in?", f"{name} travelled to the {place}.",
                       list(REGIONS), lex.region[place])
    if shape == 3:
        return _listed(rng, "Where is the town on the map?", f"The letter came from the {place}.",
                       list(LEVELS.values()), LEVELS[lex.region[place]])
    if shape == 4:
        return _listed(rng, "Which season does the word suggest?", f"{name} called the day {adj}.",
                       list(SEASONS), lex.season[adj])
    if shape == 5:
        return _listed(rng, "Which month does the morning suggest?", f"At the {place} the morning felt {adj}.",
                       list(MONTHS.values()), MONTHS[lex.season[adj]])
    if shape == 6:
        return _listed(rng, "How large is the item?", f"At the {place}, {name} found a {noun}.",
                       list(SIZES), lex.size[noun])
    return _listed(rng, "Where does the item fit?", f"{name} carried the {noun}.",
                   list(CARRY.values()), CARRY[lex.size[noun]])


def _reading(rng: Rng) -> str:
    """An option picked by what the input says: which word occurs, which is a name or a place,
    which number is larger."""
    name, place, noun, verb = pick(rng, NAMES), pick(rng, PLACES), pick(rng, NOUNS), pick(rng, VERBS)
    shape = int(rng.integers(4))
    if shape == 0:
        others = [w for w in NOUNS if w != noun]
        decoys = [others[int(i)] for i in rng.choice(len(others), size=2, replace=False)]
        return _listed(rng, "Which of the options is in the input?", f"{name} {verb} the {noun} at the {place}.",
                       [noun, *decoys], noun)
    if shape == 1:
        return _listed(rng, "Which option is a name?", f"{name} {verb} a {noun}.", [name, place, noun], name)
    if shape == 2:
        return _listed(rng, "Which option is a place?", f"The {noun} stood near the {place}.",
                       [name, place, noun], place)
    a, b = (int(x) for x in rng.choice(60, size=2, replace=False))
    return _listed(rng, "Which number is larger?", f"{a} or {b}", [str(a), str(b)], str(max(a, b)))


def options_instruction(rng: Rng, lex: Lexicon) -> str:
    """One option-list instruction example with its answer."""
    return _lookup(rng, lex) if rng.random() < 0.5 else _reading(rng)
