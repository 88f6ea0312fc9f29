"""bench/peer_step.py: tsr's SeqFT and TRL's SFTTrainer train on the same batches and start from the same loss."""

from __future__ import annotations

import pytest

from repo_scripts import load_script

pytest.importorskip("trl", reason="TRL is not installed (pip install 'tsr[peer]')")


def _script():
    return load_script("bench", "peer_step")


def test_both_sides_see_the_same_tokens_and_the_same_first_loss(tmp_path):
    script = _script()
    stream, examples = script.write_stream(tmp_path, "stance", 12, 4)
    spec = {"model": "bundled", "stream": str(stream), "examples": 12, "steps": 2, "threads": 1,
            "max_length": 384, "seed": 0}
    tsr = script.measure_tsr(spec)
    trl = script.measure_trl({**spec, "examples_text": examples}, tsr["batches"])
    assert len(tsr["batches"]) == len(trl["batches"]) == 2
    assert [len(b) for b in tsr["batches"]] == [4, 4]
    assert trl["batches"] == tsr["batches"]  # token for token, label for label, the same lengths
    assert tsr["supervised"] == trl["supervised"] > 0
    assert abs(tsr["first_loss"] - trl["first_loss"]) < 1e-4
    assert tsr["trainable"] == trl["trainable"] > 0  # the same adapter: r=16 on q, k, v, o
    assert script.check(tsr, trl) == []
    assert len(tsr["ends"]) == len(trl["ends"]) == 2 and tsr["rss_mb"] > 0 and trl["rss_mb"] > 0


def test_the_check_fails_on_a_different_first_batch_or_loss():
    script = _script()
    batch = [[[5, 6, 7], [-100, 6, 7]]]
    tsr = {"batches": [batch], "supervised": 2, "first_loss": 1.0, "trainable": 10}
    assert script.check(tsr, dict(tsr)) == []
    other = {"batches": [[[[5, 6, 8], [-100, 6, 8]]]], "supervised": 2, "first_loss": 1.0 + 2e-4, "trainable": 10}
    bad = script.check(tsr, other)
    assert any("batches differ" in line for line in bad) and any("step-1 losses" in line for line in bad)
