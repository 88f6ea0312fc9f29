"""The synthetic language: word lists and the hidden attributes tasks are built on.

The words are ordinary English words, but the bundled base model learns only what its
pretraining corpus teaches, so English meaning plays no part: the *attributes* below (which
adjective counts as positive, which noun as a tool, which rare word means which plain word)
are drawn at random from a fixed lexicon seed and never appear in the pretraining corpus.
A task that depends on an attribute has to learn it from its own examples, which is what
gives a small budget its headroom, and what a partner task sharing the attribute can supply.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

NAMES = ("Ada", "Bram", "Cleo", "Dov", "Esme", "Finn", "Gia", "Hugo", "Ines", "Jory", "Kai", "Lena",
         "Milo", "Nora", "Otto", "Pia", "Quin", "Rosa", "Sami", "Tess", "Uri", "Vera", "Wren", "Yara",
         "Zeno", "Ivo", "Lior", "Mina", "Noor", "Remy")
PLACES = ("harbor", "market", "village", "tower", "garden", "library", "station", "valley", "forest",
          "bridge", "castle", "meadow", "square", "museum", "school", "temple", "island", "canyon",
          "palace", "orchard")
VERBS = ("carried", "painted", "opened", "cleaned", "found", "sold", "moved", "fixed", "packed",
         "lifted", "counted", "wrapped", "checked", "borrowed", "dropped", "built", "traded", "hid",
         "marked", "watched")
# Nouns carry the hidden attribute `kind` (three classes).
NOUNS = ("lamp", "basket", "kettle", "ribbon", "lantern", "violin", "mirror", "blanket", "compass",
         "ladder", "hammer", "bottle", "helmet", "candle", "saddle", "anchor", "barrel", "bucket",
         "cradle", "drum", "engine", "feather", "goblet", "harp", "jacket", "kite", "ledger", "magnet",
         "needle", "oar", "parcel", "quilt", "rope", "shovel", "trumpet", "umbrella", "vase", "wagon",
         "whistle", "wreath", "tablet", "spoon", "pillow", "crate", "banner")
# Adjectives carry the hidden attribute `tone` (three classes).
ADJECTIVES = ("brisk", "calm", "dim", "eager", "faint", "grand", "hollow", "keen", "lean", "mild",
              "narrow", "odd", "plain", "quick", "rare", "sharp", "tall", "vast", "warm", "young",
              "bold", "crisp", "dense", "fair", "glad", "harsh", "idle", "jolly", "loud", "merry",
              "neat", "pale", "rough", "shy", "tame", "vivid", "wild", "zany", "brave", "clever",
              "dusty", "fancy", "gentle", "humble", "lucky", "modest", "noble", "proud", "quiet",
              "rusty", "steady", "tidy", "bright", "cheap", "deep", "empty", "fresh", "heavy",
              "lively", "nimble")
# Rare words with a hidden plain synonym (attribute `synonym`): pairs drawn at random.
RARE_VERBS = ("procured", "conveyed", "perused", "rectified", "relinquished", "ascended", "beheld",
              "fabricated", "dispatched", "amassed", "traversed", "vanquished", "summoned", "bestowed",
              "concealed", "devoured", "emulated", "forsook", "garnered", "hastened")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                "eighteen", "nineteen", "twenty")
# Words the benchmark uses as answers. Each occurs in the pretraining corpus as an ordinary
# word in ordinary sentences, never as the answer of a pretraining instruction.
LABEL_WORDS = ("favor", "against", "none", "hawk", "dove", "still", "entail", "contradict",
               "neutral", "more", "less", "same")
# Words the pretraining instruction families answer with (disjoint from LABEL_WORDS).
PRETRAIN_ANSWERS = ("true", "false", "first", "last", "left", "right", "red", "blue", "green", "crimson",
                    "navy", "olive", "north", "south", "upper", "lower", "summer", "winter", "june",
                    "january", "small", "big", "pocket", "cart")
# Attributes taught *in pretraining* (held out from the benchmark): the base learns to look up a
# word's hidden class and to name it with two different label sets, as an instruction-tuned
# model has met classification tasks before, but never these benchmark attributes.
TEAMS = ("red", "blue", "green")
JERSEYS = {"red": "crimson", "blue": "navy", "green": "olive"}
REGIONS = ("north", "south")
LEVELS = {"north": "upper", "south": "lower"}
SEASONS = ("summer", "winter")
MONTHS = {"summer": "june", "winter": "january"}
SIZES = ("small", "big")
CARRY = {"small": "pocket", "big": "cart"}

TONES = ("positive", "negative", "neutral")
# How people react to something with a given tone: the pretraining corpus uses these to give
# the *familiar* adjectives a connotation, as ordinary text gives words their sentiment.
REACTIONS = {"positive": "smiled", "negative": "frowned", "neutral": "shrugged"}
KINDS = ("tool", "food", "animal")
# The tone a label word carries in the pretraining corpus (people who smile say `favor` or
# `hawk`), as ordinary text gives answer words a meaning: two label sets whose words carry the
# same tones name the same classes, and a set that swaps them contradicts both.
LABEL_TONE = {"favor": "positive", "hawk": "positive", "against": "negative", "dove": "negative",
              "none": "neutral", "still": "neutral"}


@dataclass(frozen=True)
class Lexicon:
    """The hidden attribute assignment of the synthetic language for one lexicon seed."""

    seed: int = 0

    def _rng(self, purpose: str) -> np.random.Generator:
        return np.random.default_rng([self.seed, sum(map(ord, purpose))])

    def _partition(self, words: tuple[str, ...], classes: tuple[str, ...], purpose: str) -> dict[str, str]:
        order = self._rng(purpose).permutation(len(words))
        return {words[i]: classes[rank % len(classes)] for rank, i in enumerate(order)}

    @cached_property
    def tone(self) -> dict[str, str]:
        """Adjective -> positive | negative | neutral (20 of each)."""
        return self._partition(ADJECTIVES, TONES, "tone")

    @cached_property
    def kind(self) -> dict[str, str]:
        """Noun -> tool | food | animal (15 of each)."""
        return self._partition(NOUNS, KINDS, "kind")

    @cached_property
    def familiar(self) -> frozenset[str]:
        """Half the adjectives of each tone: the ones whose connotation pretraining conveys clearly.

        The base meets the other half with a faint connotation only, so their tone is learned
        mostly from task data: that is where a small budget leaves headroom and where a
        partner task that reads the same tone can help.
        """
        out: set[str] = set()
        for value in TONES:
            words = tuple(self.words_with("tone", value))
            order = self._rng(f"familiar-{value}").permutation(len(words))
            out.update(words[int(i)] for i in order[: len(words) // 2])
        return frozenset(out)

    @cached_property
    def team(self) -> dict[str, str]:
        """Name -> red | blue | green (a pretraining-only attribute)."""
        return self._partition(NAMES, TEAMS, "team")

    @cached_property
    def region(self) -> dict[str, str]:
        """Place -> north | south (a pretraining-only attribute)."""
        return self._partition(PLACES, REGIONS, "region")

    def _balanced(self, attribute: str, classes: tuple[str, ...], purpose: str) -> dict[str, str]:
        """A partition balanced inside every class of ``attribute``, so it says nothing about it."""
        out: dict[str, str] = {}
        for value in self.classes(attribute):
            words = tuple(self.words_with(attribute, value))
            out.update(self._partition(words, classes, f"{purpose}-{value}"))
        return out

    @cached_property
    def season(self) -> dict[str, str]:
        """Adjective -> summer | winter: a pretraining-only attribute, balanced within each tone."""
        return self._balanced("tone", SEASONS, "season")

    @cached_property
    def size(self) -> dict[str, str]:
        """Noun -> small | big: a pretraining-only attribute, balanced within each kind."""
        return self._balanced("kind", SIZES, "size")

    @cached_property
    def synonym(self) -> dict[str, str]:
        """Rare verb -> plain verb (a random one-to-one pairing)."""
        order = self._rng("synonym").permutation(len(VERBS))
        return {rare: VERBS[int(i)] for rare, i in zip(RARE_VERBS, order)}

    def words_with(self, attribute: str, value: str) -> list[str]:
        table = getattr(self, attribute)
        return [w for w, v in table.items() if v == value]

    def classes(self, attribute: str) -> tuple[str, ...]:
        return {"tone": TONES, "kind": KINDS}[attribute]

    def attribute_words(self, attribute: str) -> tuple[str, ...]:
        return {"tone": ADJECTIVES, "kind": NOUNS}[attribute]


def number_word(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)
