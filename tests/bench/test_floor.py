"""bench/floor.py: the shape estimate of TSR's step over ER's, with and without the teacher's
head; every batch of a task after the first is distilled, replayed or current."""

from __future__ import annotations

import pytest

from repo_scripts import load_script


def test_floor_counts_the_teachers_head_on_every_distilled_batch_and_the_cache_saves_it():
    out = load_script("bench", "floor").floor(["stream.test_cap=4", "stream.replay_per_task=8"])
    body, h, alpha = out["body"], out["head"], out["alpha"]
    (a, s), (c, u) = (out["attended"], out["answer"]), (out["current_attended"], out["current_answer"])
    assert a > s > 0 and c > u > 0 and body > 0 and h > 0 and 0 < alpha < 1
    er = alpha * (a * 4 * body + s * 4 * h) + (1 - alpha) * (c * 4 * body + u * 4 * h)
    tsr = alpha * (a * 4 * body + a * 6 * h) + (1 - alpha) * (c * 4 * body + c * 6 * h)
    assert out["floor"] == pytest.approx(tsr / er)
    assert out["replayed_step"] == pytest.approx((a * 4 * body + a * 6 * h) / (a * 4 * body + s * 4 * h))
    # the current-task batches are distilled too (the era teacher's top-routed snapshot): the
    # floor is above what replayed batches alone would add
    assert out["floor"] > 1 - alpha + alpha * out["replayed_step"]
    # the cache removes exactly the teacher's 2 x head per attended position of every distilled batch
    assert out["floor"] - out["floor_cached"] == pytest.approx((alpha * a + (1 - alpha) * c) * 2 * h / er)
    assert 1 < out["floor_cached"] < out["floor"]
