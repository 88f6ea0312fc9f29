"""Generation metrics by hand on tiny strings, SARI against published values, task metrics."""

from __future__ import annotations


import pytest

from tsr.data.example import GEN_METRICS, Example, Task, TaskKind
from tsr.runs.metrics import generation_metrics
from tsr.runs.text_metrics import edit_similarity, rouge_l, sari, sari_source, score
from tsr.errors import DataError


def test_rouge_l_by_hand():
    # LCS "the cat on the mat": 5 of 6 words each way, so P = R = F = 5/6
    assert rouge_l("the cat is on the mat", "the cat sat on the mat") == pytest.approx(5 / 6)
    # 2 of 3 predicted words, 2 of 4 gold words in order: P = 2/3, R = 1/2, F = 4/7
    assert rouge_l("b d x", "a b c d") == pytest.approx(2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2))
    assert rouge_l(" The Cat. ", "the cat") == 1.0          # case, punctuation, surrounding space
    assert rouge_l("für die Stadt", "Für die Stadt") == 1.0  # letters beyond ASCII stay words
    assert rouge_l("für", "f r") == 0.0
    assert rouge_l("", "a b") == 0.0


def test_edit_similarity_by_hand():
    assert edit_similarity("abc", "abd") == pytest.approx(1 - 2 / 6)          # one substitution = 2 InDel
    assert edit_similarity("kitten", "sitting") == pytest.approx(1 - 5 / 13)  # LCS "ittn": 6 + 7 - 2 * 4
    assert edit_similarity("  x = 1\n", "x = 1") == 1.0
    assert edit_similarity("ab", "cd") == 0.0


def test_sari_by_hand():
    # I = the cat sat, O = the cat, R = the dog sat (see the worked numbers below)
    # n=1: keep P = (1 + 0)/2, R = 1/2 -> F 0.5; del {sat}: the reference keeps it -> 0; add: none
    #      made (P = 0/0 = 1), {dog} missed (R = 0) -> F 0
    # n=2: keep {the cat}, not in R -> P 0 -> F 0; del {cat sat}, R lacks it -> 1; add F 0
    assert sari("the cat sat", "the cat", ["the dog sat"], max_order=2) == pytest.approx((0.5 + 0 + 0 + 1 + 0 + 0) / 6)
    assert sari("the cat sat", "the dog sat", ["the dog sat"]) == 1.0
    with pytest.raises(ValueError, match="at least one reference"):
        sari("a", "a", [])


def test_sari_reproduces_published_values():
    """The values Hugging Face evaluate's SARI card documents (tensor2tensor's variant)."""
    src = "About 95 species are currently accepted."
    refs = ["About 95 species are currently known.", "About 95 species are now accepted.",
            "95 species are now accepted."]
    first = sari(src, "About 95 you now get in.", refs)
    assert first == pytest.approx(0.26953601953601954, abs=1e-12)
    second = sari("The cat perched on the mat.", "Cat on mat.",
                  ["The cat sat on the mat.", "The cat is on the mat.", "The cat sat."])
    assert (first + second) / 2 == pytest.approx(0.2913266517433184, abs=1e-12)  # a corpus: the mean
    same = "About 95 species are currently accepted ."
    assert sari(same, same, [same]) == 1.0


def test_sari_source_is_the_input_field():
    prompt = "Task: Rewrite the sentence in plain words.\nInput: Ann quaffs the red cup.\nAnswer:"
    assert sari_source(prompt) == "Ann quaffs the red cup."
    assert sari_source("Simplify: a b c") == "Simplify: a b c"
    # TRACE's 20Minuten prompt shape
    trace = ("Provide a simplified version of the following paragraph in German.\n\nParagraph:\nDer Hund bellt."
             "\nEr ist laut: sehr.\n\nSimplification:")
    assert sari_source(trace) == "Der Hund bellt.\nEr ist laut: sehr."
    # the instruction's words are not source words: a perfect answer scores 1
    assert score("sari", prompt, " Ann drinks the red cup.", "Ann drinks the red cup.") == 1.0
    assert score("rouge_l", prompt, " a b", "a b") == 1.0 and score("edit_sim", prompt, "ab", "ab") == 1.0


def test_generation_stream_metrics_by_hand():
    gen = [[None, 0.2, None], [None, 0.4, 0.5], [None, 0.3, 0.9]]
    out = generation_metrics(gen, [None, "rouge_l", "sari"])
    assert list(out) == ["overall_rouge_l", "plas_rouge_l", "bwt_rouge_l", "overall_sari", "plas_sari", "bwt_sari"]
    assert out["overall_rouge_l"] == 0.3 and out["plas_rouge_l"] == 0.4 and out["bwt_rouge_l"] == pytest.approx(-0.1)
    assert out["overall_sari"] == 0.9 and out["plas_sari"] == 0.9 and out["bwt_sari"] is None  # the last task
    assert generation_metrics(gen, [None, None, None]) == {}


def test_task_metric_is_checked():
    ex = (Example("p", " a"),)
    assert Task("t", TaskKind.GENERATION, ex, ex, metric="sari").metric == "sari"
    with pytest.raises(DataError, match=r"unknown metric 'bleu' \(valid: rouge_l, edit_sim, sari\)"):
        Task("t", TaskKind.GENERATION, ex, ex, metric="bleu")
    with pytest.raises(DataError, match="'metric' is for generation tasks"):
        Task("t", TaskKind.CLASSIFICATION, ex, ex, metric="rouge_l")
    assert GEN_METRICS == ("rouge_l", "edit_sim", "sari")


def test_benchmark_tasks_name_their_metrics():
    from tsr.data.benchmarks.trace import TRACE8, TRACE8_METRICS
    from tsr.data.streams import load_stream

    stream = load_stream("synth-trace", None, {}, "canonical", 0)
    assert {t.name: t.metric for t in stream if t.metric} == {"summary": "rouge_l", "code": "edit_sim",
                                                              "simplify": "sari"}
    assert all(t.metric is None for t in stream if t.is_classification)
    assert {n for n, k in TRACE8.items() if k is TaskKind.GENERATION} == set(TRACE8_METRICS)
    assert TRACE8_METRICS == {"MeetingBank": "rouge_l", "Py150": "edit_sim", "20Minuten": "sari"}


def test_stream_file_metric_key(tmp_path):
    from tsr.data.stream_spec import load_stream_file

    (tmp_path / "a.jsonl").write_text('{"prompt": "p", "answer": " x y"}\n')

    def stream(entry: str):
        (tmp_path / "s.yaml").write_text("tasks:\n  - {name: t, format: jsonl, train: a.jsonl, test: a.jsonl, "
                                         f"{entry}}}\n")
        return load_stream_file(tmp_path / "s.yaml")[0]

    assert stream("kind: generation, metric: edit_sim")[0].metric == "edit_sim"
    assert stream("kind: generation")[0].metric is None
    with pytest.raises(DataError, match=r"tasks\[0\] \(t\): unknown metric 'bleu'"):
        stream("kind: generation, metric: bleu")
    with pytest.raises(DataError, match=r"tasks\[0\] \(t\): 'metric' is for generation tasks"):
        stream("kind: classification, metric: sari")
