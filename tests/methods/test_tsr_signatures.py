"""TSR routing on any signature, and on a saved signature file (also a proxy model's).

Pinned: a stored signature of every kind loads back exactly; a run routed by a signature file
taken on its own model is the same run as one that takes its signatures itself; a file of
another model is refused unless the run asks for a proxy, and then the routing weights are
softmax(cos / tau) over the file's signatures; TSR routes on a distributional signature
(jointot) with the weights of that signature's own similarity.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tsr.cl.memory import TaskRecord, load_record, save_record
from tsr.cl.sig_gradient import Projectable
from tsr.cl.sig_hidden import Cloud
from tsr.cl.sig_pack import pack, shape, unpack
from tsr.cl.signature_file import read_signature_file
from tsr.cl.signatures import similarity
from tsr.interface.cli import main
from tsr.engine.run import execute
from tsr.model.tiny import build_tiny

from badinputs import refuse
from toy import toy_corpus


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    return all(_same(getattr(a, f), getattr(b, f)) if isinstance(getattr(a, f), torch.Tensor)
               else getattr(a, f) == getattr(b, f) for f in a.__dataclass_fields__)


@pytest.mark.parametrize("sig", [
    torch.randn(7),
    Cloud(torch.randn(5, 3, dtype=torch.float64)),
    Cloud(torch.randn(5, 3, dtype=torch.float64), torch.randn(5, 2, dtype=torch.float64)),
    Projectable(torch.randn(12), ((0, 2, 3), (6, 3, 2)), torch.randn(4, 3)),
])
def test_every_signature_kind_is_stored_and_loaded_exactly(sig, tmp_path):
    assert _same(unpack(pack(sig)), sig) and shape(unpack(pack(sig))) == shape(sig)
    record = TaskRecord(0, "a", "classification", sig, (), {"w": torch.zeros(2)})
    assert _same(load_record(save_record(tmp_path, record)).signature, sig)


def test_a_tensor_signature_keeps_the_record_layout_of_older_runs():
    assert list(pack(torch.ones(3))) == ["signature"]


def _signatures(make_config, tmp_path, name: str, *extra: str, model=None) -> str:
    """`tsr signatures` under make_config's config (on ``model`` if given)."""
    path = tmp_path / name
    cfg = make_config()
    items = ["paper", f"model.path={model or cfg.model.path}", f"stream.source={cfg.stream.source}",
             f"stream.budget={cfg.stream.budget}", f"stream.max_length={cfg.stream.max_length}",
             f"train.batch_size={cfg.train.batch_size}", "method.name=tsr", *extra]
    assert main(["signatures", "--out", str(path), *items]) == 0
    return str(path)


def test_a_signature_file_of_the_runs_own_model_is_the_same_run(make_config, tmp_path):
    """Taken by `tsr signatures` with the run's config, the file holds the signatures TSR takes
    itself: routing, scores and every score of the run are identical."""
    path = _signatures(make_config, tmp_path, "own.safetensors")
    own = execute(make_config("method.name=tsr", "name=own"))
    filed = execute(make_config("method.name=tsr", f"method.signatures={path}", "name=filed"))
    assert own.results.task_info == filed.results.task_info
    assert own.results.to_dict()["acc"] == filed.results.to_dict()["acc"]
    assert own.results.task_info[2]["scores"]  # the third task did route over two past tasks


def test_a_proxy_models_signatures_route_another_model(make_config, tmp_path, tmp_path_factory, capsys):
    """Two tiny bases: the small one's gradb signatures route the other; without the opt-in the
    file is refused in one line; with it the weights are softmax(cos/tau) over the file."""
    proxy = build_tiny(tmp_path_factory.mktemp("proxy"), "qwen2", toy_corpus(), vocab_size=320,
                       hidden=32, layers=1, heads=4, kv_heads=2)
    path = _signatures(make_config, tmp_path, "proxy.safetensors", model=proxy)
    sig = read_signature_file(path)
    assert sig.kind == "gradb" and sig.model == str(proxy.resolve())
    run = make_config().model.path
    refuse(capsys, tmp_path, ["run", "paper", f"model.path={run}", f"stream.source={make_config().stream.source}",
                              "method.name=tsr", f"method.signatures={path}", f"out_dir={tmp_path / 'x'}"],
           "signatures_proxy=true")
    routed = execute(make_config("method.name=tsr", f"method.signatures={path}", "method.signatures_proxy=true"))
    names = sig.tasks
    vectors = {n: sig.get(0, n) for n in names}
    assert vectors[names[0]].numel() != 0
    cos = np.array([similarity("gradb", vectors[s], vectors[names[2]]) for s in names[:2]])
    expected = np.exp((cos - cos.max()) / 0.1)
    expected /= expected.sum()
    got = routed.results.task_info[2]["weights"]
    assert np.allclose([got[n] for n in names[:2]], expected, atol=1e-6)


@pytest.mark.parametrize("extra,fragment", [
    (["method.probe=jointot"], "holds gradb signatures"),
    (["seed=3"], "no signatures at seed 3"),
    (["stream.budget=8"], "stream.budget=12"),
])
def test_a_signature_file_that_does_not_fit_the_run_is_one_line(make_config, tmp_path, capsys, extra, fragment):
    path = _signatures(make_config, tmp_path, "s.safetensors")
    cfg = make_config()
    refuse(capsys, tmp_path, ["run", "paper", f"model.path={cfg.model.path}", f"stream.source={cfg.stream.source}",
                              "method.name=tsr", "method.probe_batches=10", f"method.signatures={path}",
                              f"out_dir={tmp_path / 'x'}", *extra], fragment)


def test_a_file_that_is_not_a_signature_file_is_one_line(make_config, tmp_path, capsys):
    cfg = make_config()
    bad = tmp_path / "bad.safetensors"
    bad.write_text(json.dumps({"not": "tensors"}))
    for path, fragment in ((bad, "not a readable signature file"), (tmp_path / "none.safetensors", "no such")):
        refuse(capsys, tmp_path, ["run", "paper", f"model.path={cfg.model.path}", f"stream.source={cfg.stream.source}",
                                  "method.name=tsr", f"method.signatures={path}", f"out_dir={tmp_path / 'x'}"], fragment)
    refuse(capsys, tmp_path, ["run", "paper", "method.name=tsr", "method.probe=nope", f"out_dir={tmp_path / 'x'}"],
           "method.probe")


def test_tsr_routes_on_a_distributional_signature(make_config, tmp_path):
    """method.probe=jointot: the scores are jointot's similarity (minus an OT distance) between
    the signatures in the file `tsr signatures --signature jointot` writes for the same config."""
    path = _signatures(make_config, tmp_path, "jot.safetensors", "--signature", "jointot")
    sig = read_signature_file(path)
    run = execute(make_config("method.name=tsr", "method.probe=jointot", "name=jot"))
    names = sig.tasks
    scores = run.results.task_info[2]["scores"]
    for source in names[:2]:
        expected = similarity("jointot", sig.get(0, source), sig.get(0, names[2]))
        assert scores[source] == pytest.approx(expected, abs=1e-6)
        assert scores[source] <= 0  # minus a distance


@pytest.mark.parametrize("choice", ["all", "gradb,jointot"])
def test_tsr_signatures_writes_one_signature_per_file(tmp_path, capsys, choice):
    """A file holds one kind: asking for several is one line and writes nothing (it used to take
    the first silently)."""
    out = tmp_path / "s.safetensors"
    refuse(capsys, tmp_path, ["signatures", "--signature", choice, "--out", str(out)], "one signature per file")
    assert not out.exists()
