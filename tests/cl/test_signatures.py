import pytest
import torch

from tsr.config import load_config
from tsr.data.example import Example
from tsr.cl.losses import masked_ce
from tsr.model.learner import build_learner
from tsr.cl.signatures import probe_signature


@pytest.fixture(scope="module")
def learner(tiny_model):
    return build_learner(load_config("paper", [f"model.path={tiny_model}", "model.threads=1", "stream.max_length=32"]))


def batches(learner):
    enc = learner.encoder
    exs = [[Example(f"Is {n} even? Answer:", " yes" if n % 2 == 0 else " no") for n in range(k, k + 3)] for k in (0, 5)]
    return [enc.collate([enc.encode(e) for e in group]) for group in exs]


def test_gradb_is_the_mean_b_gradient_at_the_shared_initialisation(learner):
    bs = batches(learner)
    # move the adapter away from the shared initialisation first
    with torch.no_grad():
        for p in learner.adapter.trainable():
            p.add_(0.05)
    state_before = learner.adapter.state()
    g = probe_signature(learner, bs, "gradb")
    assert all(torch.equal(v, learner.adapter.state()[k]) for k, v in state_before.items())
    assert all(p.grad is None for p in learner.adapter.trainable())
    # manual: load the shared initialisation, backprop each batch, average B gradients
    learner.adapter.load(learner.init_state)
    params = [p for n, p in learner.adapter.named() if ".lora_B.default." in n]
    manual = []
    for b in bs:
        loss = masked_ce(learner.logits(b), b.labels)
        manual.append(torch.cat([x.flatten() for x in torch.autograd.grad(loss, params)]))
    assert torch.allclose(g, torch.stack(manual).mean(0), atol=1e-6)
    assert g.numel() == sum(p.numel() for p in params)
    norm = probe_signature(learner, bs, "gradb_norm")
    assert torch.allclose(norm, torch.stack([m / m.norm() for m in manual]).mean(0), atol=1e-6)
    learner.adapter.load(state_before)


def test_gradb_last4_keeps_the_last_blocks(learner):
    bs = batches(learner)
    full = probe_signature(learner, bs, "gradb")
    last = probe_signature(learner, bs, "gradb_last4")
    assert last.numel() == full.numel()  # the tiny model has only two blocks
    only_last = learner.adapter.lora_b(last_blocks=1)
    assert only_last and all(".layers.1." in n for n, _ in only_last)
    assert len(only_last) * 2 == len(learner.adapter.lora_b())
    with pytest.raises(ValueError):
        probe_signature(learner, bs, "fisher")
