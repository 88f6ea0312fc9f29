"""Option-list instruction families: the richer pretraining corpus of ``tsr pretrain-base``.

A real instruction-tuned model that meets a classification prompt listing its answers
(``Options: favor, against, none.``, as TRACE's prompts and `synth-trace`'s do) answers with
one of the listed words, whatever it learnt last. The bundled base never met such a prompt in
pretraining, so the answer format of each task lives in the adapter alone, and every new task
rewrites it (docs/synthetic.md, the regime map). These families teach that prior: each
prompt lists two or three options in a random order and the answer is one of them, picked
by a rule the base can read (a pretraining-only attribute, a word in the input, the larger
number); one scene is asked many questions, each with its own options, so that the instruction
and its options, not the input alone, decide the answer. As in the rest of the corpus, no benchmark label word is ever an answer or an
option: the prior is "answer from the list", not any benchmark task's rule.

Used only when ``PretrainConfig.options_share`` is above zero; the bundled base's corpus
draws nothing from here.
"""

from __future__ import annotations

import numpy as np

from .families import pick, prompt
from .lexicon import (
    CARRY, JERSEYS, LEVELS, MONTHS, NAMES, NOUNS, PLACES, REGIONS, SEASONS, SIZES, TEAMS, Lexicon
)

Rng = np.random.Generator


def _listed(rng: Rng, question: str, text: str, options: list[str], answer: str) -> str:
    """The prompt with its options in a random order, then the answer."""
    order = [options[int(i)] for i in rng.permutation(len(options))]
    return prompt(f"{question} Options: {', '.join(order)}.", text) + " " + answer


SCENES = ("At the {place}, {name} found a {adj} {noun}.", "{name} carried the {adj} {noun} to the {place}.",
          "The {noun} at the {place} looked {adj}, said {name}.", "{name} saw a {adj} {noun} near the {place}.")


def _asked(rng: Rng, lex: Lexicon) -> str:
    """One scene (a name, a place, an adjective, a noun), asked one of many questions, each with
    its own listed answers: the same input answers differently under another instruction, so the
    instruction and its options decide the answer (what lets a real model keep tasks apart that
    share their inputs)."""
    name, place, noun = pick(rng, NAMES), pick(rng, PLACES), pick(rng, NOUNS)
    adj = pick(rng, tuple(lex.season))
    scene = pick(rng, SCENES).format(name=name, place=place, adj=adj, noun=noun)
    questions = (
        ("Which team does the person belong to?", list(TEAMS), lex.team[name]),
        ("What jersey color does the person wear?", list(JERSEYS.values()), JERSEYS[lex.team[name]]),
        ("Which region is the place in?", list(REGIONS), lex.region[place]),
        ("Where is the place on the map?", list(LEVELS.values()), LEVELS[lex.region[place]]),
        ("Which season does the description suggest?", list(SEASONS), lex.season[adj]),
        ("Which month does the description suggest?", list(MONTHS.values()), MONTHS[lex.season[adj]]),
        ("How large is the item?", list(SIZES), lex.size[noun]),
        ("Where does the item fit?", list(CARRY.values()), CARRY[lex.size[noun]]),
        ("Which option is a name?", [name, place, noun], name),
        ("Which option is a place?", [name, place, noun], place),
        ("Which option is the item?", [name, place, noun], noun),
    )
    question, options, answer = questions[int(rng.integers(len(questions)))]
    return _listed(rng, question, scene, options, answer)


def _numbers(rng: Rng) -> str:
    a, b = (int(x) for x in rng.choice(60, size=2, replace=False))
    return _listed(rng, "Which number is larger?", f"{a} or {b}", [str(a), str(b)], str(max(a, b)))


def options_instruction(rng: Rng, lex: Lexicon) -> str:
    """One option-list instruction example with its answer."""
    return _asked(rng, lex) if rng.random() < 0.85 else _numbers(rng)
