"""Bad baseline settings: one clear line on stderr and exit status 2, through the CLI."""

import pytest

from tsr.interface.cli import main


def args(tiny_model, toy_stream, out, *extra):
    return ["run", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={out}",
            "train.steps=2", "stream.budget=8", "stream.test_cap=4", "stream.max_length=48",
            "stream.replay_per_task=4", "model.threads=1", *extra, "--quiet"]


@pytest.mark.parametrize("extra,fragment", [
    # out of range: rejected while the config is checked, before anything runs
    (["method.name=ewc", "method.lam=-1"], "'method.lam': penalty weight must be >= 0"),
    (["method.name=ewc", "method.gamma=1.5"], "'method.gamma': online decay must be in [0, 1]"),
    (["method.name=ewc", "method.fisher_examples=0"], "'method.fisher_examples': must be >= 1"),
    (["method.name=ewc", "method.mode=offline"], "'method.mode': 'offline' is not valid"),
    (["method.name=lwf", "method.weight=-0.5"], "'method.weight': distillation weight must be >= 0"),
    (["method.name=lwf", "method.temperature=0"], "'method.temperature': must be > 0"),
    (["method.name=sdft", "method.max_new_tokens=0"], "'method.max_new_tokens': must be >= 1"),
    (["method.name=sdft", "method.rewriter=teacher"], "'method.rewriter': 'teacher' is not valid"),
    (["method.name=agem", "method.memory_batch=0"], "'method.memory_batch': must be >= 1"),
    (["method.name=derpp", "method.top_k=0"], "'method.top_k': must be >= 1"),
    (["method.name=derpp", "method.alpha=-1"], "'method.alpha': logit-matching weight must be >= 0"),
    (["method.name=derpp", "method.beta=-1"], "'method.beta': buffer cross-entropy weight must be >= 0"),
    (["method.name=l2_anchor", "method.mu=-0.1"], "'method.mu': anchor strength must be >= 0"),
    (["method.name=param_init", "method.probe_batches=0"], "'method.probe_batches': must be >= 1"),
    (["method.name=param_init", "method.source="], "'method.source': must be previous, top or the name"),
    (["method.name=ewc", "method.lambda=1"], "unknown config key 'method.lambda'"),
    # settings a method cannot honour, found when the run reaches them
    (["method.name=l2_anchor", "method.source=nope"], "'method.source': no task named 'nope' in the stream"),
    (["method.name=param_init", "method.source=nope"], "tasks: parity, vowel, copy"),
    (["method.name=derpp", "method.top_k=100000"], "'method.top_k': 100000 exceeds the vocabulary size"),
    (["method.name=agem", "stream.replay_per_task=0"], "'stream.replay_per_task': agem replays stored examples"),
    (["method.name=derpp", "stream.replay_per_task=0"], "'stream.replay_per_task': derpp replays stored examples"),
])
def test_bad_baseline_settings_are_one_line_and_exit_2(tiny_model, toy_stream, tmp_path, capsys, extra, fragment):
    assert main(args(tiny_model, toy_stream, tmp_path, *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
