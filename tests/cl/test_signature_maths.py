"""Every signature pinned on a case with a known answer."""

import math

import pytest
import torch

from tsr.cl import sig_gradient as grad
from tsr.cl import sig_hidden as hid
from tsr.cl.fisher import empirical_fisher
from tsr.cl.losses import masked_ce
from tsr.cl.signatures import SIGNATURES, signature_names, similarity, take
from tsr.config import load_config
from tsr.data.example import Example
from tsr.errors import ConfigError
from tsr.model.learner import build_learner


@pytest.fixture(scope="module")
def learner(tiny_model):
    return build_learner(load_config("paper", [f"model.path={tiny_model}", "model.threads=1", "stream.max_length=32",
                                               "model.compile=false"]))


def parity(learner, flip=False):
    enc = learner.encoder
    word = lambda n: " yes" if (n % 2 == 0) != flip else " no"  # noqa: E731
    groups = [[Example(f"Is {n} even? Answer:", word(n)) for n in range(k, k + 3)] for k in (0, 5)]
    return [enc.collate([enc.encode(e) for e in g]) for g in groups]


def test_identical_tasks_give_the_maximum_similarity(learner):
    bs = parity(learner)
    for name in SIGNATURES:
        a, b = take(name, learner, bs), take(name, learner, bs)
        top = 0.0 if name in ("hiddenot", "jointot", "jointot_emb") else 1.0
        assert similarity(name, a, b) == pytest.approx(top, abs=1e-6), name


def test_signatures_leave_the_adapter_as_it_was(learner):
    with torch.no_grad():
        for p in learner.adapter.trainable():
            p.add_(0.01)
    before = learner.adapter.state()
    for name in SIGNATURES:
        take(name, learner, parity(learner))
    assert all(torch.equal(v, learner.adapter.state()[k]) for k, v in before.items())
    assert all(p.grad is None for p in learner.adapter.trainable())
    learner.adapter.load(learner.init_state)


def test_the_contrast_of_a_flipped_copy_is_exactly_opposite(learner):
    bs, flipped = parity(learner), parity(learner, flip=True)
    # the permuted batches of a two-answer task are the flipped copy itself
    for p, f in zip(grad.permuted_answers(bs, pad_id=learner.encoder.pad_id), flipped):
        assert torch.equal(p.labels, f.labels) and torch.equal(p.input_ids, f.input_ids)
    a, b = take("gradb_contrast", learner, bs), take("gradb_contrast", learner, flipped)
    assert similarity("gradb_contrast", a, b) == pytest.approx(-1.0, abs=1e-6)
    # gradb sees the shared answer words: the flipped copy still looks alike
    assert similarity("gradb", take("gradb", learner, bs), take("gradb", learner, flipped)) > -0.5


def test_fisher_is_the_mean_squared_gradient(learner):
    bs = parity(learner)
    params = [p for n, p in learner.adapter.named() if ".lora_B.default." in n]

    def loss_of(batch):
        return masked_ce(learner.logits(batch), batch.labels)

    manual = torch.cat([f.flatten() for f in empirical_fisher(loss_of, params, bs)])
    assert torch.allclose(take("fisher_batch", learner, bs), manual, rtol=1e-5, atol=1e-10)
    rows = [learner.encoder.collate([r]) for b in bs for r in grad.rows(b)]
    per_example = torch.cat([f.flatten() for f in empirical_fisher(loss_of, params, rows)])
    assert torch.allclose(grad.fisher(learner, bs, learner.init_state, per_example=True), per_example,
                          rtol=1e-5, atol=1e-10)
    # the signature `fisher` is the empirical Fisher: per example, not squared batch means
    assert torch.allclose(take("fisher", learner, bs), per_example, rtol=1e-5, atol=1e-10)
    assert not torch.allclose(take("fisher", learner, bs), manual, rtol=1e-3)


def test_proto_is_the_mean_prompt_hidden_state(learner):
    bs = parity(learner)
    vectors = []
    for b in bs:
        h = learner.hidden_under(learner.init_state, b).double()
        for i in range(b.size):
            keep = (b.attention_mask[i] == 1) & (b.labels[i] == -100)
            vectors.append(h[i][keep].mean(0))
    assert torch.allclose(take("proto", learner, bs), torch.stack(vectors).mean(0), atol=1e-5)


def test_two_point_ot_solved_by_hand():
    x = hid.Cloud(torch.tensor([[0.0], [1.0]], dtype=torch.float64))
    y = hid.Cloud(torch.tensor([[0.5], [3.0]], dtype=torch.float64))
    # pairings: (0->0.5, 1->3) costs (0.25 + 4) / 2; (0->3, 1->0.5) costs (9 + 0.25) / 2
    assert hid.ot_similarity(x, y) == pytest.approx(-2.125)
    # with labels that make the crossed pairing free of label cost and the straight one dear
    xl = hid.Cloud(x.points, torch.tensor([[0.0], [1.0]], dtype=torch.float64))
    yl = hid.Cloud(y.points, torch.tensor([[1.0], [0.0]], dtype=torch.float64))
    # straight: (0.25 + 1) + (4 + 1) -> 3.125 at weight 1; crossed: 9 + 0.25 -> 4.625
    assert hid.ot_similarity(xl, yl) == pytest.approx(-3.125)
    assert hid.ot_similarity(xl, yl, label_weight=4.0) == pytest.approx(-4.625)
    # entropic OT approaches the exact value as the regularisation shrinks
    assert hid.ot_similarity(x, y, reg=0.05) == pytest.approx(-2.125, abs=1e-3)


def test_noanswer_removes_the_answer_directions_by_hand():
    # one residual block (2 x 1) and one other block (1 value); answer direction e1
    a = grad.Projectable(torch.tensor([3.0, 1.0, 2.0]), ((0, 2, 1),), torch.tensor([[1.0, 0.0]]))
    b = grad.Projectable(torch.tensor([-5.0, 1.0, 2.0]), ((0, 2, 1),), torch.tensor([[2.0, 0.0]]))
    # after projection both are (0, 1, 2): cosine 1, although their raw cosine is negative
    assert grad.noanswer_similarity(a, b) == pytest.approx(1.0)
    c = grad.Projectable(torch.tensor([0.0, -1.0, 2.0]), ((0, 2, 1),), torch.zeros(0, 2))
    assert grad.noanswer_similarity(a, c) == pytest.approx(3 / 5)


def test_noanswer_blocks_are_the_residual_writers(learner):
    sig = take("gradb_noanswer", learner, parity(learner))
    assert sig.grad.numel() == sum(p.numel() for _, p in learner.adapter.lora_b())
    writers = [n for n, _ in learner.adapter.lora_b() if n.split('.lora_B.')[0].rsplit('.', 1)[-1] in grad.RESIDUAL_WRITERS]
    assert writers and len(sig.blocks) == len(writers)  # o_proj (and down_proj where LoRA has it)
    assert sig.directions.shape[0] == len(grad.answer_tokens(parity(learner)))


def test_signature_names():
    assert signature_names(None) == ["gradb", "gradb_norm", "gradb_last4"]
    assert signature_names("all") == list(SIGNATURES)
    assert signature_names("proto, gradb") == ["proto", "gradb"]
    with pytest.raises(ConfigError, match="unknown signature 'grad'"):
        signature_names("gradb,grad")
    assert not math.isnan(len(SIGNATURES))


def test_otdd_label_cost_is_the_transport_between_label_conditional_clouds():
    """Two tiny labelled clouds, by hand. Task a: class 0 at (1,0) and (0,1), class 1 at (0,-1);
    task b: class 0 at (1,0), class 1 at (-1,0). Squared distances: |(1,0)-(1,0)|^2 = 0,
    |(0,1)-(1,0)|^2 = 2, |(0,-1)-(1,0)|^2 = 2, |(1,0)-(-1,0)|^2 = 4, |(0,1)-(-1,0)|^2 = 2.
    W(a0, b0) = (0 + 2) / 2 = 1 (both mass halves go to the one point), W(a0, b1) = (4 + 2) / 2 = 3,
    W(a1, b0) = 2, W(a1, b1) = 2."""
    from tsr.cl.sig_hidden import Cloud, label_costs, ot_similarity

    a = Cloud(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0]], dtype=torch.float64), classes=torch.tensor([0, 0, 1]))
    b = Cloud(torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64), classes=torch.tensor([0, 1]))
    assert torch.allclose(label_costs(a, b), torch.tensor([[1.0, 3.0], [2.0, 2.0]], dtype=torch.float64))
    # the joint transport: 3 points of mass 1/3 onto 2 of mass 1/2; joint costs (row i of a, column j of b):
    # a(1,0),c0: [0+1, 4+3] = [1, 7]; a(0,1),c0: [2+1, 2+3] = [3, 5]; a(0,-1),c1: [2+2, 2+2] = [4, 4].
    # b0 takes 1/2: the cheapest plan sends a0 (1/3) and 1/6 of a1 to b0, the rest to b1:
    # 1/3*1 + 1/6*3 + 1/6*5 + 1/3*4 = 3.0 (any split of a2 costs 4; moving a1 to b0 saves 2 per unit)
    assert ot_similarity(a, b) == pytest.approx(-3.0)
    # without labels the same clouds cost less: the label term is paid on top
    assert ot_similarity(Cloud(a.points), Cloud(b.points)) > ot_similarity(a, b)


def test_class_ids_name_answers_and_collapse_a_generation_task(learner):
    from tsr.cl.sig_hidden import class_ids

    bs = parity(learner)
    ids = class_ids(bs)
    answers = [tuple(t for t in row if t != -100) for b in bs for row in b.labels.tolist()]
    assert len(set(answers)) <= len(answers) / 2  # parity is a classification task
    assert [ids[i] == ids[j] for i in range(len(ids)) for j in range(len(ids))] == \
        [answers[i] == answers[j] for i in range(len(ids)) for j in range(len(ids))]
    flipped = grad.permuted_answers(bs, pad_id=learner.encoder.pad_id)
    assert class_ids(flipped).shape == ids.shape
