"""Generation metrics of one prediction against its gold answer, each in [0, 1], higher better.

- ``rouge_l``: ROUGE-L F-measure (Lin 2004, "ROUGE: A Package for Automatic Evaluation of
  Summaries"), the longest common subsequence of words, computed by Google's ``rouge-score``
  package. Words are lowercased runs of Unicode letters and digits (the package's own
  tokenizer keeps ASCII only, which would cut German words such as 20Minuten's "für" in two);
  no stemming (Porter's stemmer is for English).
- ``edit_sim``: edit similarity as CodeXGLUE's line-level code completion reports it (Lu et al.
  2021), ``fuzz.ratio`` of the stripped strings: ``1 - InDel distance / (len(a) + len(b))``,
  computed by ``rapidfuzz``.
- ``sari``: SARI (Xu et al. 2016, "Optimizing Statistical Machine Translation for Text
  Simplification", TACL 4), re-implemented here since no maintained package computes it
  offline: for n-grams of orders 1 to 4 of the source I, the output O and the references R,
  the F1 of the n-grams added (in O, not in I), the F1 of those kept (in both I and O) and the
  precision of those deleted (in I, not in O), each judged against what the references add,
  keep and delete; SARI is the mean of the three, each averaged over the four orders
  (:func:`sari_order` says how counts are compared). Words are lowercased, punctuation split
  off (as sacrebleu's 13a tokenizer does for plain sentences). The variant is tensor2tensor's
  ``sari_hook``, which Hugging Face ``evaluate``'s ``sari`` also computes: a ratio of zero over
  zero counts as 1 (so a prediction equal to its reference scores 1) and keep recall is over
  counts; the tests reproduce that metric's documented values. The authors' script counts
  zero over zero as 0, and EASSE pools counts over a corpus, so values here are not
  comparable with theirs.

All three compare the prediction and the answer stripped of surrounding whitespace.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Callable, Sequence

from ..data.example import GEN_METRICS

NAMES = {"rouge_l": "ROUGE-L", "edit_sim": "edit similarity", "sari": "SARI"}
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
# the field holding the text to rewrite, and the cue after it (synthetic and TRACE prompts)
_FIELD = re.compile(r"^(?:Input|Paragraph|Sentence|Text|Source):[ \t]*", re.MULTILINE)
_CUE = re.compile(r"\n\s*(?:Answer|Output|Simplification|Simplified|Summary):\s*\Z")


class _Words:
    """The word tokenizer handed to ``rouge-score`` (its ``tokenize`` interface)."""

    def tokenize(self, text: str) -> list[str]:
        return _WORD.findall(text.lower())


@lru_cache(maxsize=1)
def _rouge_scorer():
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer(["rougeL"], use_stemmer=False, tokenizer=_Words())


def rouge_l(prediction: str, answer: str) -> float:
    """ROUGE-L F-measure of ``prediction`` against ``answer`` (0 when either has no word)."""
    return float(_rouge_scorer().score(answer.strip(), prediction.strip())["rougeL"].fmeasure)


def edit_similarity(prediction: str, answer: str) -> float:
    """``rapidfuzz.fuzz.ratio`` / 100 of the stripped strings (1 for two empty strings)."""
    from rapidfuzz import fuzz

    return float(fuzz.ratio(prediction.strip(), answer.strip())) / 100.0


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i: i + n]) for i in range(len(tokens) - n + 1))


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 1.0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 1.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def sari_order(source: Counter, output: Counter, refs: Sequence[Counter]) -> tuple[float, float, float]:
    """(F1 keep, precision delete, F1 add) for the n-grams of one order.

    Counts of the source and the output are multiplied by the number of references r and
    compared with the counts summed over the references, which weighs each reference by 1/r
    (the paper's fractional counts ``#g(R')``). Keep and delete precision average, over the
    distinct n-grams the output keeps (deletes), the share of that n-gram's count the
    references keep (delete) too; keep recall is the kept count the references agree with
    over the count they keep. Additions count n-grams, not occurrences.
    """
    r = len(refs)
    ref_all: Counter = Counter()
    for ref in refs:
        ref_all.update(ref)
    src = Counter({g: c * r for g, c in source.items()})
    out = Counter({g: c * r for g, c in output.items()})
    kept = src & out                 # in the source and in the output
    kept_good = kept & ref_all       # ... as often as the references keep it
    keep_should = src & ref_all      # what the references keep of the source
    p_keep = _mean([kept_good[g] / kept[g] for g in kept])
    r_keep = _ratio(sum(kept_good.values()), sum(keep_should.values()))
    deleted = src - out              # in the source, not (as often) in the output
    p_del = _mean([max(deleted[g] - ref_all[g], 0) / deleted[g] for g in deleted])
    added = set(output) - set(source)
    add_should = set(ref_all) - set(source)
    p_add = _ratio(len(added & add_should), len(added))
    r_add = _ratio(len(added & add_should), len(add_should))
    return _f1(p_keep, r_keep), p_del, _f1(p_add, r_add)


def sari_tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def sari(source: str, prediction: str, references: Sequence[str], max_order: int = 4) -> float:
    """Sentence SARI in [0, 1]: the mean of keep F1, delete precision and add F1, each averaged
    over n-gram orders 1 to ``max_order``."""
    if not references:
        raise ValueError("SARI needs at least one reference")
    src, out = sari_tokens(source), sari_tokens(prediction)
    refs = [sari_tokens(r) for r in references]
    keep = delete = add = 0.0
    for n in range(1, max_order + 1):
        k, d, a = sari_order(_ngrams(src, n), _ngrams(out, n), [_ngrams(r, n) for r in refs])
        keep, delete, add = keep + k, delete + d, add + a
    return (keep + delete + add) / (3 * max_order)


def sari_source(prompt: str) -> str:
    """The text a simplification prompt asks to rewrite: what follows its last ``Input:``,
    ``Paragraph:``, ``Sentence:``, ``Text:`` or ``Source:`` line start (the synthetic
    benchmark's ``Input:``, TRACE 20Minuten's ``Paragraph:``), without a closing cue such as
    ``Answer:`` or ``Simplification:``; the whole prompt when it has no such field. The
    instruction is no part of the source: its words, absent from every answer, would count
    as correct deletions."""
    found = list(_FIELD.finditer(prompt))
    if not found:
        return prompt
    return _CUE.sub("", prompt[found[-1].end():]).strip()


def _sari_metric(prompt: str, answer: str, prediction: str) -> float:
    return sari(sari_source(prompt), prediction.strip(), [answer.strip()])


SCORERS: dict[str, Callable[[str, str, str], float]] = {
    "rouge_l": lambda prompt, answer, prediction: rouge_l(prediction, answer),
    "edit_sim": lambda prompt, answer, prediction: edit_similarity(prediction, answer),
    "sari": _sari_metric,
}
assert set(SCORERS) == set(GEN_METRICS) == set(NAMES)


def score(metric: str, prompt: str, answer: str, prediction: str) -> float:
    """The value of generation metric ``metric`` for one example."""
    return SCORERS[metric](prompt, answer, prediction)
