"""Packing (train.packing, tsr.model.packing): a packed batch gives every example the hidden
states, logits and gradients it has unpacked, to float rounding, on every tiny architecture;
a run with packing equals the run without; off, it is the run as before."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tsr.config import load_config
from tsr.data.collate import IGNORE, Batch
from tsr.engine.run import execute
from tsr.model.learner import build_learner
from tsr.model.packing import pack, unpack


def right_padded(lengths: list[int], width: int, pad: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.full((len(lengths), width), pad)
    att = torch.zeros((len(lengths), width), dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.arange(1, n + 1) + 10 * i
        att[i, :n] = 1
    return ids, att


def test_rows_pack_first_fit_decreasing_and_come_back_in_place():
    ids, att = right_padded([3, 7, 2, 5, 4], width=8)
    packing = pack(ids, att, pad_id=0)
    assert packing.rows == 3  # 7 | 5+3 | 4+2
    for i, (p, at, n) in enumerate(packing.places):
        assert n == int(att[i].sum()) and torch.equal(packing.input_ids[p, at:at + n], ids[i, :n])
        assert packing.position_ids[p, at:at + n].tolist() == list(range(n))
    # every pack's positions restart at each example and at its padding: no two examples share a run
    back = unpack(packing.input_ids.unsqueeze(-1).float(), packing).squeeze(-1).long()
    assert torch.equal(back * att, ids * att) and torch.equal(back[att == 0], torch.zeros(int((att == 0).sum()),
                                                                                          dtype=torch.long))


def batch_of(learner, texts: list[tuple[str, str]]) -> Batch:
    from tsr.data.example import Example

    encoded = learner.encoder.encode_all([Example(p, a) for p, a in texts], "test")
    return learner.encoder.collate(encoded)


@pytest.mark.parametrize("arch", ["qwen2", "llama", "gemma3", "gpt2"])
def test_a_packed_batch_gives_each_example_its_own_logits_and_gradients(model_factory, arch):
    cfg = load_config(None, [f"model.path={model_factory(arch)}", "model.threads=1", "model.compile=false",
                             "stream.max_length=48"])
    learner = build_learner(cfg)
    batch = batch_of(learner, [("a b", "c"), ("a b c d e f g h", "i j"), ("x", "y z"), ("p q r s", "t")])
    assert pack(batch.input_ids, batch.attention_mask, learner.encoder.pad_id).rows < batch.size

    def run(packing: bool):
        learner.packing = packing
        learner.model.zero_grad(set_to_none=True)
        logits, labels = learner.answer_logits(batch)
        full = learner.logits(batch)
        mask = labels != IGNORE
        loss = (torch.log_softmax(logits, -1)[mask].max(-1).values).sum() + full[batch.attention_mask.bool()].sum() * 1e-3
        loss.backward()
        grads = [p.grad.clone() for p in learner.adapter.trainable() if p.grad is not None]
        return logits.detach(), full.detach(), grads

    plain, packed = run(False), run(True)
    learner.packing = False
    attended = batch.attention_mask.bool()
    assert torch.allclose(plain[1][attended], packed[1][attended], atol=1e-4)
    keep = batch.labels[:, -plain[0].shape[1]:] != IGNORE
    assert torch.allclose(plain[0][keep], packed[0][keep], atol=1e-4)
    assert len(plain[2]) == len(packed[2]) > 0
    for a, b in zip(plain[2], packed[2]):
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-3)
    with torch.no_grad():  # a forward without gradients (a teacher's, evaluation's) is never packed
        learner.packing = True
        assert learner._packing(batch) is None


def test_a_run_with_packing_equals_the_run_without(make_config):
    base = ["method.name=tsr", "train.steps=6"]
    off = execute(make_config(*base, "train.packing=false"))
    on = execute(make_config(*base, "train.packing=true"))
    assert off.run.path != on.run.path  # a key of the run's result: its own run folder
    a, b = (json.loads(o.run.results_path.read_text()) for o in (off, on))

    def loss(r):
        return np.array([[np.nan if v is None else v for v in row] for row in r["loss"]], dtype=float)

    assert np.nanmax(np.abs(loss(a) - loss(b))) < 1e-3
    # off is neutral: the run is named and computed as before the key existed
    assert make_config(*base).fingerprint() == make_config(*base, "train.packing=false").fingerprint()
