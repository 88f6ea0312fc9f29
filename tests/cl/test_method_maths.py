"""The baselines' core maths against small cases computed by hand."""

import numpy as np
import pytest
import torch

from tsr.cl.buffer import draw_buffer
from tsr.data.collate import IGNORE
from tsr.cl.fisher import empirical_fisher, online_fisher, quadratic_penalty, squared_gradients
from tsr.cl.projection import agem_project, flatten, split_like
from tsr.methods.derpp_logits import answer_positions, stack, topk_match, topk_rows


# -- A-GEM projection ----------------------------------------------------------------------
def test_agem_projects_a_conflicting_gradient_onto_the_constraint():
    g, ref = torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0])
    # g.ref = -1, ref.ref = 2: g - (-1/2) ref = [0.5, 0.5]
    out, projected = agem_project(g, ref)
    assert projected and torch.allclose(out, torch.tensor([0.5, 0.5]))
    assert abs(float(out @ ref)) < 1e-7  # the projection lies on the constraint boundary


def test_agem_leaves_a_non_conflicting_gradient_alone():
    g = torch.tensor([1.0, 1.0, -2.0])
    for ref in (torch.tensor([1.0, 0.0, 0.0]), torch.tensor([1.0, 1.0, 1.0]), torch.zeros(3)):  # dot 1, 0, 0
        out, projected = agem_project(g, ref)
        assert not projected and out is g


def test_flatten_and_split_round_trip_over_parameters():
    a, b = torch.arange(6.0).view(2, 3), torch.tensor([7.0, 8.0])
    flat = flatten([a, b])
    assert flat.tolist() == [0, 1, 2, 3, 4, 5, 7, 8]
    back = split_like(flat, [a, b])
    assert torch.equal(back[0], a) and torch.equal(back[1], b)
    with pytest.raises(ValueError):
        split_like(flat, [a])


# -- Fisher and quadratic penalties ----------------------------------------------------------
def test_empirical_fisher_is_the_mean_of_per_example_squared_gradients():
    # loss_i = (w . x_i - y_i)^2, so dloss/dw = 2 (w . x_i - y_i) x_i
    w = torch.tensor([0.5, -1.0], requires_grad=True)
    data = [(torch.tensor([1.0, 2.0]), 1.0), (torch.tensor([3.0, 0.0]), 0.0)]
    fisher = empirical_fisher(lambda item: (w @ item[0] - item[1]) ** 2, [w], data)
    # residuals: 0.5 - 2 - 1 = -2.5 and 1.5 - 0 = 1.5; gradients [-5, -10] and [9, 0]
    expected = (torch.tensor([25.0, 100.0]) + torch.tensor([81.0, 0.0])) / 2
    assert torch.allclose(fisher[0], expected)
    assert w.grad is None  # the estimate never writes .grad


def test_squared_gradients_of_an_unused_parameter_are_zero():
    used, unused = torch.tensor(2.0, requires_grad=True), torch.ones(3, requires_grad=True)
    sq = squared_gradients(3 * used, [used, unused])
    assert float(sq[0]) == 9.0 and torch.equal(sq[1], torch.zeros(3))


def test_online_fisher_decays_the_old_estimate():
    first = online_fisher(None, [torch.tensor([1.0, 2.0])], gamma=0.5)
    assert first[0].tolist() == [1.0, 2.0]
    assert online_fisher(first, [torch.tensor([4.0, 0.0])], gamma=0.5)[0].tolist() == [4.5, 1.0]


def test_quadratic_penalty_by_hand_and_its_gradient():
    theta = [torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([[3.0]], requires_grad=True)]
    anchor = [torch.tensor([0.0, 4.0]), torch.tensor([[1.0]])]
    weight = [torch.tensor([2.0, 0.5]), torch.tensor([[10.0]])]
    # unweighted: 1 + 4 + 4 = 9; weighted: 2*1 + 0.5*4 + 10*4 = 44
    assert float(quadratic_penalty(theta, anchor).detach()) == 9.0
    penalty = quadratic_penalty(theta, anchor, weight)
    assert float(penalty.detach()) == 44.0
    penalty.backward()  # d/dtheta = 2 w (theta - a)
    assert theta[0].grad.tolist() == [4.0, -2.0] and theta[1].grad.tolist() == [[40.0]]


# -- top-k logit storage and matching ----------------------------------------------------------
def test_topk_rows_keep_the_k_largest_logits_of_answer_positions():
    logits = torch.tensor([[[0.0, 5.0, 1.0, 3.0],    # position 0: predicts a prompt token
                            [9.0, 1.0, 8.0, 2.0],    # position 1: predicts answer token 2
                            [1.0, 7.0, 6.0, 0.0],    # position 2: predicts EOS
                            [4.0, 4.0, 4.0, 4.0]]])  # last position predicts nothing
    labels = torch.tensor([[IGNORE, IGNORE, 2, 0]])
    assert answer_positions(labels).tolist() == [[False, True, True, False]]
    ((values, indices),) = topk_rows(logits, labels, k=2)
    assert values.tolist() == [[9.0, 8.0], [7.0, 6.0]]
    assert indices.tolist() == [[0, 2], [1, 2]]
    with pytest.raises(ValueError):
        topk_rows(logits, labels, k=5)


def test_stacked_rows_and_the_matching_term_by_hand():
    rows = [(torch.tensor([[9.0, 8.0]]), torch.tensor([[0, 2]])),
            (torch.tensor([[7.0, 6.0], [5.0, 4.0]]), torch.tensor([[1, 2], [3, 0]]))]
    top = stack(rows)
    assert len(top) == 2 and top.offsets.tolist() == [0, 1, 3]
    values, indices = top.rows([1, 0])  # a batch holding example 1, then example 0
    assert values.tolist() == [[7.0, 6.0], [5.0, 4.0], [9.0, 8.0]]
    student = torch.zeros(2, 3, 4)
    labels = torch.tensor([[IGNORE, 1, 1], [IGNORE, 3, IGNORE]])  # answer positions (0,0), (0,1), (1,0)
    student[0, 0] = torch.tensor([0.0, 6.0, 6.0, 0.0])   # stored 7 at 1, 6 at 2: errors 1, 0
    student[0, 1] = torch.tensor([5.0, 0.0, 0.0, 3.0])   # stored 5 at 3, 4 at 0: errors 2, 1
    student[1, 0] = torch.tensor([9.0, 0.0, 8.0, 0.0])   # stored 9 at 0, 8 at 2: errors 0, 0
    assert float(topk_match(student, labels, values, indices)) == pytest.approx((1 + 0 + 4 + 1) / 6)
    with pytest.raises(ValueError):
        topk_match(student, labels, values[:2], indices[:2])


# -- buffer draws --------------------------------------------------------------------------------
def test_buffer_draws_distinct_indices_and_caps_at_the_pool():
    rng = np.random.default_rng(0)
    picked = draw_buffer(rng, 10, 4)
    assert len(set(picked)) == 4 and all(0 <= i < 10 for i in picked)
    assert sorted(draw_buffer(rng, 3, 8)) == [0, 1, 2]
    with pytest.raises(ValueError):
        draw_buffer(rng, 0, 4)
