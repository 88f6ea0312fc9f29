"""Task families of the synthetic benchmark: how a task's examples are made.

Every example has TRACE's shape: an instruction, an input, an answer cue::

    Task: <instruction>
    Input: <input>
    Answer: <answer>

A family fixes the kind of input and the rule from input to answer; a *template* fixes the
wording (instruction and input pattern). Tasks of one family that read the same hidden
attribute share their latent rule whatever their templates and label words.

Families (``FAMILIES``):

``polarity`` (classification)
    The input holds one word carrying a hidden ``attribute`` (``tone`` of adjectives or
    ``kind`` of nouns); the answer is the label word of its class (``labels`` maps each class
    to a word).
``choice`` (classification)
    Three nouns as options A-C; the answer is the letter of the one whose hidden ``kind``
    is the class named in the question (ScienceQA-like).
``addition`` (classification)
    Two operands in [0, ``max_operand``]; the answer depends on their sum (the arithmetic
    core), in one of eight NumGLUE-like formats.
``extraction`` (generation, scored by ROUGE-L with ``eval.predictions``)
    A three-sentence report; the answer is a one-sentence summary of its last event.
``code`` (generation, edit similarity)
    A few lines of Python-like code; the answer is the next line.
``synonyms`` (generation, SARI)
    A sentence with a rare verb; the answer is the sentence with the verb's hidden plain
    synonym.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from .lexicon import ADJECTIVES, NAMES, NOUNS, PLACES, RARE_VERBS, VERBS, Lexicon, number_word

Rng = np.random.Generator


def pick(rng: Rng, items) -> str:
    return items[int(rng.integers(len(items)))]


def prompt(instruction: str, text: str) -> str:
    return f"Task: {instruction}\nInput: {text}\nAnswer:"


@dataclass(frozen=True)
class Made:
    """An example before its answer word is chosen: the input text and the class or answer."""

    text: str
    target: str


# -- polarity --------------------------------------------------------------------------------
POLARITY_TEMPLATES: dict[str, tuple[str, str]] = {
    # name: (instruction, input pattern); {w} is the attribute word, always the input's last word
    "stance": ("What stance does the speaker take on the plan?", "At the {place}, {name} called the plan {w}."),
    "stance_really": ("What stance does the speaker really take on the plan?",
                      "At the {place}, {name} called the plan {w}."),
    "council": ("Classify the tone of the council statement.", "This season the council found the {noun} {w}."),
    "council_plan": ("Classify the tone of the council statement.", "At the {place}, the council called the plan {w}."),
    "review": ("How does the visitor judge the place?", "A visitor from the {place} said it felt {w}."),
    "inventory": ("Which shelf does the item belong on?", "At the {place}, {name} {verb} a {w}."),
    "request": ("What kind of thing was requested?", "At the {place}, {name} asked for the {w}."),
}


def make_polarity(rng: Rng, lex: Lexicon, template: str, attribute: str) -> tuple[str, str, str]:
    """(instruction, input, class)."""
    instruction, pattern = POLARITY_TEMPLATES[template]
    word = pick(rng, lex.attribute_words(attribute))
    cls = getattr(lex, attribute)[word]
    noun_pool = [n for n in NOUNS if n != word]
    text = pattern.format(w=word, name=pick(rng, NAMES), place=pick(rng, PLACES), noun=pick(rng, noun_pool),
                          verb=pick(rng, VERBS))
    return instruction, text, cls


# -- balance ---------------------------------------------------------------------------------
BALANCE_TEMPLATES: dict[str, tuple[str, str]] = {
    # name: (instruction, input pattern); {a} counts for, {b} against
    "votes": ("What stance did the meeting take on the plan?",
              "At the {place} meeting, {a} people spoke for the plan and {b} spoke against it."),
    "votes_really": ("What stance did the meeting really take on the plan?",
                     "At the {place} meeting, {a} people spoke for the plan and {b} spoke against it."),
    "backing": ("What stance did the meeting take on the plan?",
                "At the {place} meeting, {a} people backed the plan and {b} opposed it."),
    "backing_really": ("What stance did the meeting really take on the plan?",
                       "At the {place} meeting, {a} people backed the plan and {b} opposed it."),
    "rates": ("Classify the council's outlook.", "This season prices rose in {a} markets and fell in {b} markets."),
    "backing_council": ("Classify the council's outlook.",
                        "At the {place} meeting, {a} people backed the plan and {b} opposed it."),
    # compact forms in the pretraining corpus's own words (about 43 tokens instead of 60-72)
    "tally": ("What did the town say on the plan?", "At the {place}, {a} came and {b} left."),
    "tally_really": ("What did the town really say on the plan?", "At the {place}, {a} came and {b} left."),
    "season_tally": ("What did the council find this season?", "This season {a} came and {b} left."),
    "season_market": ("What did the council find this season?", "This season the market had {a} more and {b} less."),
    "reviews": ("How was the item received?", "The {noun} got {a} good reviews and {b} bad ones from {name}'s readers."),
}


def make_balance(rng: Rng, template: str, margin: int, max_count: int) -> tuple[str, str, str]:
    """(instruction, input, class) for counts a, b in [0, max_count]: positive if
    a - b >= margin, negative if b - a >= margin, neutral otherwise."""
    instruction, pattern = BALANCE_TEMPLATES[template]
    a, b = (int(x) for x in rng.integers(0, max_count + 1, size=2))
    cls = "positive" if a - b >= margin else "negative" if b - a >= margin else "neutral"
    text = pattern.format(a=a, b=b, place=pick(rng, PLACES), noun=pick(rng, NOUNS), name=pick(rng, NAMES))
    return instruction, text, cls


# -- choice ----------------------------------------------------------------------------------
CHOICE_TEMPLATES = {"science": "Which of these is {article} {cls}?", "sort": "Pick the {cls} from the list."}


def make_choice(rng: Rng, lex: Lexicon, template: str, attribute: str) -> tuple[str, str, str]:
    classes = lex.classes(attribute)
    cls = pick(rng, classes)
    others = [c for c in classes if c != cls]
    options = [pick(rng, lex.words_with(attribute, cls))] + [pick(rng, lex.words_with(attribute, c)) for c in others]
    order = rng.permutation(len(options))
    letters = "ABC"
    shown = [options[int(i)] for i in order]
    answer = letters[int(np.where(order == 0)[0][0])]
    article = "an" if cls[0] in "aeiou" else "a"
    question = CHOICE_TEMPLATES[template].format(cls=cls, article=article)
    text = " ".join(f"({letters[i]}) {w}" for i, w in enumerate(shown))
    return question, text, answer


# -- addition --------------------------------------------------------------------------------
def _near(rng: Rng, value: int, limit: int) -> int:
    """A number close to ``value`` (possibly equal), in [0, 2 * limit]."""
    return int(np.clip(value + int(rng.integers(-2, 3)), 0, 2 * limit))


def make_addition(rng: Rng, template: str, max_operand: int) -> tuple[str, str, str]:
    a, b = (int(x) for x in rng.integers(0, max_operand + 1, size=2))
    s = a + b
    name, noun, place = pick(rng, NAMES), pick(rng, NOUNS), pick(rng, PLACES)
    if template == "equation":
        return "Compute the result.", f"{a} + {b} =", str(s)
    if template == "sum":
        return "Compute the total.", f"{a} plus {b}", str(s)
    if template == "word_problem":
        return ("Solve the problem.", f"{name} has {a} {noun}s and finds {b} more. How many {noun}s does "
                f"{name} have now?", str(s))
    if template == "passage":
        return ("Answer the question about the passage.", f"The {place} had {a} visitors in the morning and "
                f"{b} in the afternoon. How many visitors came that day?", str(s))
    if template == "compare":
        c = _near(rng, s, max_operand)
        word = "more" if s > c else "less" if s < c else "same"
        return "Compare the two amounts.", f"Is {a} plus {b} more, less or the same as {c}?", word
    if template == "missing":
        return "Fill in the missing number.", f"{a} + _ = {s}", str(b)
    if template == "nli":
        c = s if rng.random() < 0.5 else _near(rng, s, max_operand)
        label = "entail" if c == s else "contradict"
        return ("Does statement one entail statement two?", f"Statement one: {name} owns {a} {noun}s and "
                f"then {b} more. Statement two: {name} owns {c} {noun}s.", label)
    if template == "words":
        return "Write the answer in digits.", f"What is {number_word(a)} plus {number_word(b)}?", str(s)
    raise KeyError(template)


ADDITION_TEMPLATES = ("equation", "sum", "word_problem", "passage", "compare", "missing", "nli", "words")


# -- generation families -----------------------------------------------------------------------
def make_extraction(rng: Rng, template: str) -> tuple[str, str, str]:
    place = pick(rng, PLACES)
    events = [(pick(rng, NAMES), pick(rng, VERBS), pick(rng, NOUNS)) for _ in range(3)]
    (n1, v1, o1), (n2, v2, o2), (n3, v3, o3) = events
    report = (f"At the {place}, {n1} {v1} the {o1}. Later {n2} {v2} a {o2}. Finally {n3} {v3} the {o3}.")
    return "Summarize the report in one sentence.", report, f"{n3} {v3} the {o3} at the {place}."


def make_code(rng: Rng, template: str) -> tuple[str, str, str]:
    names = ("items", "values", "scores", "rows", "parts", "cells")
    items, it = pick(rng, names), pick(rng, ("x", "item", "v", "entry"))
    fname = pick(rng, ("total", "collect", "tally", "gather"))
    shape = int(rng.integers(3))
    n = int(rng.integers(1, 10))
    if shape == 0:
        code = f"def {fname}({items}):\n    acc = 0\n    for {it} in {items}:"
        nxt = f"        acc = acc + {it}"
    elif shape == 1:
        code = f"def {fname}({items}):\n    out = []\n    for {it} in {items}:\n        if {it} > {n}:"
        nxt = f"            out.append({it})"
    else:
        code = f"def {fname}({items}, {it}):\n    if {it} in {items}:"
        nxt = f"        return {items}.index({it})"
    return "Complete the next line of code.", code, nxt


def make_synonyms(rng: Rng, lex: Lexicon, template: str) -> tuple[str, str, str]:
    name, rare, adj, noun, place = (pick(rng, NAMES), pick(rng, RARE_VERBS), pick(rng, ADJECTIVES),
                                    pick(rng, NOUNS), pick(rng, PLACES))
    sentence = "{name} {verb} the {adj} {noun} near the {place}."
    return ("Rewrite the sentence in plain words.", sentence.format(name=name, verb=rare, adj=adj, noun=noun, place=place),
            sentence.format(name=name, verb=lex.synonym[rare], adj=adj, noun=noun, place=place))


@dataclass(frozen=True)
class Family:
    kind: str                      # classification | generation
    templates: tuple[str, ...]
    needs_attribute: bool
    needs_labels: bool
    make: Callable
    metric: str | None = None      # the generation metric of its tasks (docs/metrics.md)


FAMILIES: Mapping[str, Family] = MappingProxyType({
    "polarity": Family("classification", tuple(POLARITY_TEMPLATES), True, True,
                       lambda rng, lex, spec: make_polarity(rng, lex, spec.template, spec.attribute)),
    "balance": Family("classification", tuple(BALANCE_TEMPLATES), False, True,
                      lambda rng, lex, spec: make_balance(rng, spec.template, spec.margin, spec.max_count)),
    "choice": Family("classification", tuple(CHOICE_TEMPLATES), True, False,
                     lambda rng, lex, spec: make_choice(rng, lex, spec.template, spec.attribute)),
    "addition": Family("classification", ADDITION_TEMPLATES, False, False,
                       lambda rng, lex, spec: make_addition(rng, spec.template, spec.max_operand)),
    "extraction": Family("generation", ("report",), False, False,
                         lambda rng, lex, spec: make_extraction(rng, spec.template), "rouge_l"),
    "code": Family("generation", ("loops",), False, False, lambda rng, lex, spec: make_code(rng, spec.template),
                   "edit_sim"),
    "synonyms": Family("generation", ("plain",), False, False,
                       lambda rng, lex, spec: make_synonyms(rng, lex, spec.template), "sari"),
})
