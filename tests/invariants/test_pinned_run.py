"""A default TSR run's results, pinned: refactors of the method and the engine keep them.

The numbers are what the code gave before the TSR strategies were split out of its file
(the default preset on the bundled base, four synth-trace tasks, 12 steps each, the whole
results matrix). Accuracy is a count over 24 test examples, pinned exactly; answer loss to
1e-3, five times the float noise measured between the machine that pinned them and a later one
with the same torch build (an AVX2 CPU: 4e-7 after the first task, growing to 2.0e-4 after the
fourth).
"""

from __future__ import annotations

import pytest

from tsr.config import load_config
from tsr.engine.run import execute

ACC = [[7 / 24, None, None, None], [0.0, 7 / 24, None, None], [8 / 24, 4 / 24, 9 / 24, None],
       [9 / 24, 4 / 24, 9 / 24, 0.0]]
LOSS = [[1.285004, None, None, None], [1.062753, 1.022545, None, None], [0.981599, 1.000914, 0.907564, None],
        [0.886063, 0.983484, 0.894000, 1.935997]]


@pytest.mark.slow
def test_the_default_tsr_run_gives_its_pinned_results(tmp_path):
    cfg = load_config("default", ["stream.order=[stance, policy, irony, summary]", "train.steps=12",
                                  "stream.test_cap=24", "model.compile=false", "model.threads=1",
                                  f"out_dir={tmp_path}", "eval.schedule=full"])
    results = execute(cfg).results
    for got, pinned, tol in ((results.acc, ACC, 1e-12), (results.loss, LOSS, 1e-3)):
        assert len(got) == len(pinned)
        for row, want in zip(got, pinned):
            assert row == pytest.approx(want, abs=tol)
