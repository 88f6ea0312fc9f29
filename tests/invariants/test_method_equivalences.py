"""Degenerate settings of the baselines equal SeqFT exactly; a live setting does not."""

from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file

from tsr.config import load_config
from tsr.engine.run import execute

BASE = ["train.steps=8", "train.lr=3e-3", "stream.budget=12", "stream.replay_per_task=8",
        "stream.test_cap=10", "stream.max_length=48", "model.threads=1"]


@pytest.fixture(scope="module")
def run(tiny_model, toy_stream, tmp_path_factory):
    """``run(*overrides)`` -> outcome, on the same small setup as ``make_config``; cached."""
    out = tmp_path_factory.mktemp("baseline-runs")
    cache: dict[tuple[str, ...], object] = {}

    def go(*overrides: str):
        if overrides not in cache:
            name = f"name=r{len(cache)}"
            cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}",
                                        f"out_dir={out}", *BASE, *overrides, name])
            cache[overrides] = execute(cfg)
        return cache[overrides]

    return go


def adapter(outcome):
    return load_file(str(outcome.run.path / "checkpoint" / "adapter.safetensors"))


def same(a, b) -> bool:
    x, y = adapter(a), adapter(b)
    return x.keys() == y.keys() and all(bool((x[k] == y[k]).all()) for k in x)


def method_meta(outcome) -> dict:
    return json.loads((outcome.run.path / "checkpoint" / "state.json").read_text())["method_meta"]


def assert_equal_runs(a, b):
    assert same(a, b)
    assert (a.results.acc, a.results.loss) == (b.results.acc, b.results.loss)


@pytest.mark.parametrize("method,off,on", [
    ("ewc", ["method.lam=0"], ["method.lam=100"]),
    ("ewc_online", ["method.lam=0"], ["method.lam=100"]),
    ("lwf", ["method.weight=0"], ["method.weight=1"]),
    ("derpp", ["method.alpha=0", "method.beta=0"], ["method.alpha=0.2", "method.beta=0"]),
    ("derpp", ["method.alpha=0", "method.beta=0"], ["method.alpha=0", "method.beta=0.5"]),
    ("l2_anchor", ["method.mu=0"], ["method.mu=0.1"]),
    ("l2_anchor", ["method.mu=0", "method.source=top"], ["method.mu=1", "method.source=top"]),
])
def test_zero_weight_equals_seqft(run, method, off, on):
    seq = run("method.name=seqft")
    assert_equal_runs(seq, run(f"method.name={method}", *off))
    assert not same(seq, run(f"method.name={method}", *on))  # the check has teeth


def test_agem_with_an_empty_memory_equals_seqft(run):
    one = ["stream.order=[parity]"]
    assert_equal_runs(run("method.name=seqft", *one), run("method.name=agem", *one))
    seq, agem = run("method.name=seqft"), run("method.name=agem")
    # the first task of a longer stream has no memory either: same scores after it
    assert seq.results.acc[0] == agem.results.acc[0] and seq.results.loss[0] == agem.results.loss[0]
    # with a memory, conflicting steps were projected and the trajectory differs
    assert method_meta(agem)["projected_steps"][0] == 0 and sum(method_meta(agem)["projected_steps"]) > 0
    assert not same(seq, agem)


def test_param_init_from_the_previous_task_equals_seqft(run):
    two = ["stream.order=[parity, vowel]"]
    assert_equal_runs(run("method.name=seqft", *two), run("method.name=param_init", *two))
    # from a source that is not the previous task it differs: copy starts from parity's adapter
    named = run("method.name=param_init", "method.source=parity")
    assert named.results.task_info[2]["source"] == "parity"
    assert not same(run("method.name=seqft"), named)


def test_l2_anchor_top_takes_and_stores_signatures(run):
    top = run("method.name=l2_anchor", "method.source=top")
    info = top.results.task_info
    assert "source" not in info[0] and info[1]["source"] == "parity"
    assert set(info[2]["scores"]) == {"parity", "vowel"}
    assert info[2]["source"] == max(info[2]["scores"], key=info[2]["scores"].get)
    assert all((d / "signature.safetensors").is_file() for d in (top.run.path / "memory").iterdir())
    # the same probe as TSR's: TSR's routing scores are the same numbers
    tsr = run("method.name=tsr")
    assert tsr.results.task_info[2]["scores"] == info[2]["scores"]


def test_er10_is_er_with_ten_percent_replay():
    from tsr.methods.er import ER
    from tsr.methods.registry import resolve_method

    spec = resolve_method({"name": "er10"})
    assert spec.cls is ER and spec.params.alpha == 0.1
