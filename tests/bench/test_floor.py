"""bench/floor.py: the shape estimate of TSR's step over ER's, with and without the teacher's head."""

from __future__ import annotations

import pytest

from repo_scripts import load_script


def test_floor_counts_the_teachers_head_and_the_cache_saves_it():
    out = load_script("bench", "floor").floor(["stream.test_cap=4", "stream.replay_per_task=8"])
    a, s, body, h = out["attended"], out["answer"], out["body"], out["head"]
    assert a > s > 0 and body > 0 and h > 0
    er = a * 4 * body + s * 4 * h
    assert out["replayed_step"] == pytest.approx((a * 4 * body + a * 6 * h) / er)
    alpha = out["alpha"]
    assert out["floor"] == pytest.approx(1 - alpha + alpha * out["replayed_step"])
    # the cache removes exactly the teacher's 2 x head per attended position of the replayed steps
    assert out["floor"] - out["floor_cached"] == pytest.approx(alpha * a * 2 * h / er)
    assert 1 < out["floor_cached"] < out["floor"]
