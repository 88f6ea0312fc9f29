"""The pretraining corpus of the bundled base: the synthetic language and the instruction format.

It teaches what an instruction-tuned base brings to a new task: the words, ordinary
sentences, and how to answer ``Task: / Input: / Answer:`` prompts, through instruction
families that are *held out* from the benchmark (copying, counting, finding a name,
comparing two numbers, looking up pretraining-only word attributes ...). It never teaches the
benchmark's rules: no two numbers are ever added, no count is ever weighed against another
to name a stance, and the benchmark's label words occur only inside ordinary sentences,
never as an answer. Adjectives carry a connotation (the reactions they cause: clearly for
half of them, faintly for the rest), the raw material a ``polarity`` task can build on, and
six label words carry a tone (people who smile say `favor` or `hawk`, people who frown
`against` or `dove`, people who shrug `none` or `still`), as ordinary text gives answer
words a meaning: two label sets with the same tones read as one, which is what lets a
partner with other label words pass on a rule, and what makes a source that swaps the tones
a conflict.
"""

from __future__ import annotations

import numpy as np

from .families import pick, prompt
from .options import options_instruction
from .lexicon import (
    ADJECTIVES, CARRY, JERSEYS, LABEL_TONE, LABEL_WORDS, LEVELS, MONTHS, NAMES, NOUNS, NUMBER_WORDS, PLACES, RARE_VERBS,
    REACTIONS, TONES, VERBS, Lexicon
)

# How often a reaction follows an adjective's tone: clearly for the familiar half of the
# adjectives, faintly for the other half (chance would be 1/3).
CLEAR, FAINT = 0.9, 0.5
INSTRUCTION_SHARE = 0.6  # of the bundled base's pretraining texts: instruction examples

Rng = np.random.Generator
ALL_VERBS = VERBS + RARE_VERBS


def reaction(rng: Rng, lex: Lexicon) -> str:
    """A sentence in which someone reacts to something an adjective describes.

    The reaction follows the adjective's tone with probability CLEAR for a familiar adjective
    and FAINT for the others, and is random otherwise: the corpus conveys every adjective's
    connotation, clearly for half of them and faintly for the rest, as text conveys the
    sentiment of common words better than that of rare ones.
    """
    adj = pick(rng, ADJECTIVES)
    if rng.random() < (CLEAR if adj in lex.familiar else FAINT):
        verb = REACTIONS[lex.tone[adj]]
    else:
        verb = pick(rng, tuple(REACTIONS.values()))
    noun, name = pick(rng, NOUNS), pick(rng, NAMES)
    if rng.random() < 0.5:
        return f"The {noun} was {adj}, so {name} {verb}."
    return f"{name} {verb} because the {noun} at the {pick(rng, PLACES)} looked {adj}."


def saying(rng: Rng) -> str:
    """A sentence in which someone reacts and says a label word that usually carries the
    reaction's tone (``LABEL_TONE``): what gives `favor` and `hawk` one meaning."""
    tone = pick(rng, TONES)
    verb = REACTIONS[tone]
    words = [w for w, t in LABEL_TONE.items() if t == tone] if rng.random() < CLEAR else list(LABEL_TONE)
    label, name, name2 = pick(rng, tuple(words)), pick(rng, NAMES), pick(rng, NAMES)
    shape = int(rng.integers(3))
    if shape == 0:
        return f"{name} {verb} and said {label}."
    if shape == 1:
        return f"{name} said {label} and {verb}."
    return f"When {name} {verb}, {name2} said {label} too."


def sentence(rng: Rng, lex: Lexicon | None = None) -> str:
    """One ordinary sentence of the synthetic language."""
    name, name2 = pick(rng, NAMES), pick(rng, NAMES)
    verb, adj, noun, place = pick(rng, ALL_VERBS), pick(rng, ADJECTIVES), pick(rng, NOUNS), pick(rng, PLACES)
    n = int(rng.integers(0, 30))
    shape = int(rng.integers(18))
    if shape >= 12:
        return reaction(rng, lex or Lexicon(0))
    if shape == 0:
        return f"{name} {verb} the {adj} {noun} at the {place}."
    if shape == 1:
        return f"At the {place}, {name} {verb} a {noun} and {name2} watched."
    if shape == 2:
        return f"The {noun} near the {place} was {adj}, said {name}."
    if shape == 3:
        return f"{name} saw {n} {noun}s in the {place}."
    if shape == 4:
        return f"{name} called the {noun} {adj} and {name2} {verb} it."
    if shape == 5:
        return f"The council met at the {place} and {name} {verb} the {noun}."
    if shape == 6:
        return f"A visitor from the {place} said the {noun} felt {adj}."
    if shape == 7:
        return f"{name} {verb} {n} {noun}s before noon."
    if shape == 8:
        return f"Later {name} {verb} the {noun}. Finally {name2} {verb} it again."
    if shape == 9:
        return f"def {pick(rng, ('total', 'collect', 'tally', 'gather', 'keep'))}({pick(rng, ('items', 'values', 'rows'))}):"
    label = pick(rng, LABEL_WORDS)
    return pick(rng, (
        f"{name} spoke in {label} of the {noun} at the {place}.",
        f"The word {label} was written on the {adj} {noun}.",
        f"{name} said {label} twice near the {place}.",
        f"There was a {label} sign by the {noun}.",
    )) if shape == 10 else saying(rng)


def _words(rng: Rng, k: int) -> list[str]:
    pools = (NOUNS, ADJECTIVES, PLACES, VERBS)
    return [pick(rng, pools[int(rng.integers(len(pools)))]) for _ in range(k)]


def lookup(rng: Rng, lex: Lexicon) -> str:
    """A held-out classification family: a word's pretraining-only attribute, named with one of
    two label sets, under several wordings."""
    name, place = pick(rng, NAMES), pick(rng, PLACES)
    adj, noun = pick(rng, ADJECTIVES), pick(rng, NOUNS)
    shape = int(rng.integers(8))
    if shape == 4:
        return prompt("Which season does the word suggest?", f"{name} called the day {adj}.") + " " + lex.season[adj]
    if shape == 5:
        return prompt("Is the day in June or January?", f"At the {place} the morning felt {adj}.") \
            + " " + MONTHS[lex.season[adj]]
    if shape == 6:
        return prompt("Is the item small or big?", f"At the {place}, {name} found a {noun}.") + " " + lex.size[noun]
    if shape == 7:
        return prompt("Does the item fit in a pocket or a cart?", f"{name} carried the {noun}.") \
            + " " + CARRY[lex.size[noun]]
    if shape == 0:
        return prompt("Which team does the player belong to?", f"At the {place}, the ball went to {name}.") \
            + " " + lex.team[name]
    if shape == 1:
        return prompt("What jersey color does the player wear?", f"{pick(rng, NAMES)} passed the ball to {name}.") \
            + " " + JERSEYS[lex.team[name]]
    if shape == 2:
        return prompt("Which region is the town in?", f"{name} travelled to the {place}.") + " " + lex.region[place]
    return prompt("Is the town on the upper or lower map?", f"The letter came from the {place}.") \
        + " " + LEVELS[lex.region[place]]


def instruction(rng: Rng, lex: Lexicon | None = None) -> str:
    """One held-out instruction example with its answer."""
    family = int(rng.integers(20))
    if family >= 16:
        return lookup(rng, lex or Lexicon(0))
    if family == 0:
        s = sentence(rng)
        return prompt("Repeat the input.", s) + " " + s
    if family == 1:
        ws = _words(rng, int(rng.integers(2, 6)))
        return prompt("Reverse the order of the words.", " ".join(ws)) + " " + " ".join(reversed(ws))
    if family == 2:
        ws = _words(rng, int(rng.integers(1, 10)))
        return prompt("How many words are in the input?", " ".join(ws)) + f" {len(ws)}"
    if family == 3:
        ws = _words(rng, int(rng.integers(2, 6)))
        which = pick(rng, ("first", "last"))
        return prompt(f"What is the {which} word of the input?", " ".join(ws)) + " " + (ws[0] if which == "first" else ws[-1])
    if family == 4:
        ws = _words(rng, 3)
        name = pick(rng, NAMES)
        ws.insert(int(rng.integers(4)), name)
        return prompt("Which word in the input is a name?", " ".join(ws)) + " " + name
    if family == 5:
        place = pick(rng, PLACES)
        s = f"{pick(rng, NAMES)} {pick(rng, ALL_VERBS)} the {pick(rng, NOUNS)} at the {place}."
        return prompt("Where did it happen?", s) + " " + place
    if family == 6:
        ws = _words(rng, 4)
        probe = pick(rng, ws) if rng.random() < 0.5 else _words(rng, 1)[0]
        return prompt(f"Is the word {probe} in the input?", " ".join(ws)) + (" true" if probe in ws else " false")
    if family == 7:
        a, b = (int(x) for x in rng.integers(0, 60, size=2))
        return prompt("Which number is larger?", f"{a} or {b}") + f" {max(a, b)}"
    if family == 8:
        ns = [int(x) for x in rng.integers(0, 40, size=int(rng.integers(2, 6)))]
        return prompt("Sort the numbers from small to large.", " ".join(map(str, ns))) + " " + " ".join(map(str, sorted(ns)))
    if family == 9:
        a, b = _words(rng, 2)
        return prompt("Which word comes first in the alphabet?", f"{a} or {b}") + " " + min(a, b)
    if family == 10:
        n = int(rng.integers(0, len(NUMBER_WORDS)))
        if rng.random() < 0.5:
            return prompt("Write the number in digits.", NUMBER_WORDS[n]) + f" {n}"
        return prompt("Write the number in words.", str(n)) + " " + NUMBER_WORDS[n]
    if family == 11:
        old, new = pick(rng, NOUNS), pick(rng, NOUNS)
        s = f"{pick(rng, NAMES)} {pick(rng, ALL_VERBS)} the {pick(rng, ADJECTIVES)} {old} near the {pick(rng, PLACES)}."
        return prompt(f"Replace the word {old} with {new}.", s) + " " + s.replace(old, new)
    if family == 12:
        place, noun = pick(rng, PLACES), pick(rng, NOUNS)
        first = rng.random() < 0.5
        text = f"(A) {place} (B) {noun}" if first else f"(A) {noun} (B) {place}"
        return prompt("Which option is a place?", text) + (" A" if first else " B")
    if family == 13:
        name, verb, noun = pick(rng, NAMES), pick(rng, ALL_VERBS), pick(rng, NOUNS)
        s = f"{name} {verb} the {noun} while {pick(rng, NAMES)} waited at the {pick(rng, PLACES)}."
        return prompt(f"Who {verb} the {noun}?", s) + " " + name
    if family == 14:
        ws = _words(rng, 4)
        i, j = (int(x) for x in rng.choice(4, size=2, replace=False))
        side = "left" if i < j else "right"
        return prompt(f"Is {ws[i]} to the left or right of {ws[j]}?", " ".join(ws)) + " " + side
    code = "\n".join(f"    {pick(rng, ('x', 'acc', 'out', 'v'))} = {pick(rng, ('x', 'acc', 'v'))} + {int(rng.integers(10))}"
                     for _ in range(int(rng.integers(1, 4))))
    return prompt("Copy the code.", code) + " " + code.strip()


def corpus_text(rng: Rng, instruction_share: float = INSTRUCTION_SHARE, lex: Lexicon | None = None,
                options_share: float = 0.0) -> str:
    """One training text: an instruction example, or one to three ordinary sentences.

    ``options_share`` of the instruction examples list their answers (:mod:`.options`); at
    0, the bundled base's corpus, no extra draw is made, so its texts are unchanged.
    """
    if rng.random() < instruction_share:
        if options_share > 0 and rng.random() < options_share:
            return options_instruction(rng, lex or Lexicon(0))
        return instruction(rng, lex)
    return " ".join(sentence(rng, lex) for _ in range(int(rng.integers(1, 4))))
