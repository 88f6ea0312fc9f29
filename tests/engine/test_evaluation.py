"""Teacher-forced exact match must agree with greedy decoding, example by example."""

import pytest

from tsr.engine.evaluation import evaluate, example_correct, greedy_decode
from tsr.engine.run import execute, prepare


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_model, toy_stream):
    from tsr.config import load_config

    out = tmp_path_factory.mktemp("runs")
    cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={out}",
                                "method.name=seqft", "train.steps=120", "train.lr=5e-3", "stream.budget=40",
                                "stream.test_cap=16", "stream.max_length=48", "model.threads=1",
                                "stream.order=[vowel, parity]"])
    outcome = execute(cfg)
    plan, _ = prepare(cfg)
    plan.learner.adapter.load(__import__("safetensors.torch", fromlist=["load_file"]).load_file(
        str(outcome.run.path / "checkpoint" / "adapter.safetensors")))
    return plan


def test_teacher_forced_exact_match_equals_greedy_decoding(trained):
    learner = trained.learner
    agree, correct_total = 0, 0
    for encoded in trained.tests:
        correct, _, _ = example_correct(learner, encoded, batch_size=5)
        for enc, ok in zip(encoded, correct):
            generated = greedy_decode(learner, enc)
            assert (generated == list(enc.answer_ids)) == ok
            agree += 1
            correct_total += ok
    # both outcomes occur, so the agreement is not vacuous
    assert 0 < correct_total < agree


def test_scores_do_not_depend_on_batch_size(trained):
    a = evaluate(trained.learner, trained.tests[0], batch_size=1)
    b = evaluate(trained.learner, trained.tests[0], batch_size=7)
    assert a.acc == b.acc and a.loss == pytest.approx(b.loss, rel=1e-5)


def test_scoring_in_bounded_chunks_gives_the_whole_batch_scores(trained):
    """A batch over the evaluation's logits bound is scored from hidden states in chunks of
    positions (here a bound of one position's logits, so every chunk is one position): the
    same exact match per example, the same answer NLL to float rounding."""
    learner = trained.learner
    one_position_mb = learner.vocab_size * 4 / 2**20
    for encoded in trained.tests:
        whole = example_correct(learner, encoded, batch_size=8)
        split = example_correct(learner, encoded, batch_size=8, logits_mb=one_position_mb)
        assert split[0] == whole[0] and split[2] == whole[2]
        assert split[1] == pytest.approx(whole[1], rel=1e-5, abs=1e-6)
    assert 0 < sum(whole[0]) < len(whole[0])  # both outcomes occur


def test_the_bound_splits_only_batches_past_it(trained, monkeypatch):
    from tsr.engine import evaluation

    calls = []
    original = evaluation._split_scores
    monkeypatch.setattr(evaluation, "_split_scores", lambda *a: calls.append(1) or original(*a))
    example_correct(trained.learner, trained.tests[0], batch_size=8)
    assert calls == []  # the toy batches' logits are far below the default bound
    example_correct(trained.learner, trained.tests[0], batch_size=8, logits_mb=1e-3)
    assert len(calls) == 2  # 16 test examples, two batches


def test_eval_logits_mb_bounds_a_runs_evaluation_with_the_same_scores(tiny_model, toy_stream, tmp_path, monkeypatch):
    """eval.logits_mb reaches the run's scoring: at a bound below one batch's logits every
    batch is scored in chunks, and the results equal the unbounded run's (to float rounding:
    the chunked head sums the same products); it is not part of the run's identity."""
    from tsr.config import load_config
    from tsr.engine import evaluation
    from tsr.errors import ConfigError

    calls = []
    original = evaluation._split_scores
    monkeypatch.setattr(evaluation, "_split_scores", lambda *a: calls.append(a[2]) or original(*a))
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", "method.name=seqft", "train.steps=6",
              "stream.budget=8", "stream.test_cap=8", "stream.max_length=48", "model.threads=1",
              "stream.order=[vowel, parity]"]
    plain = execute(load_config("paper", [*common, f"out_dir={tmp_path / 'a'}"]))
    assert calls == []
    bounded_cfg = load_config("paper", [*common, f"out_dir={tmp_path / 'b'}", "eval.logits_mb=0.001"])
    assert bounded_cfg.fingerprint() == plain.run.meta()["fingerprint"]
    bounded = execute(bounded_cfg)
    assert calls and set(calls) == {0.001}
    assert bounded.results.acc == plain.results.acc
    for a, b in zip(bounded.results.loss, plain.results.loss):
        assert [x is None for x in a] == [y is None for y in b]
        assert [x for x in a if x is not None] == pytest.approx([y for y in b if y is not None], rel=1e-5)
    with pytest.raises(ConfigError, match="eval.logits_mb"):
        load_config(None, ["eval.logits_mb=0"])
