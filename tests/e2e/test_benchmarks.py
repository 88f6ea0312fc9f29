"""A two-task stream from each real benchmark runs end to end on the bundled base.

A pipeline check (files -> tasks -> budgets -> tokenisation -> training -> scores), not an
accuracy claim: the base knows only its synthetic language and trains for two steps.
"""

from __future__ import annotations

import math

import pytest

from conftest import shared_data
from tsr.config import load_config
from tsr.engine.run import execute

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

CASES = {
    "trace8": ("trace/LLM-CL-Benchmark_500", {"tasks": ["FOMC", "NumGLUE-cm"]}, "tsr",
               ["FOMC", "NumGLUE-cm"]),
    "numglue8": ("numglue", {"tasks": ["type1", "type7"]}, "er", ["type1", "type7"]),
    "pp15": ("pp15", {"tasks": ["COPA", "SST-2"]}, "seqft", ["COPA", "SST-2"]),
    "superni": ("superni", {"pair": ["task1510_evalution_relation_extraction", "task363_sst2_polarity_classification"]},
                "tsr", ["task1510_evalution_relation_extraction", "task363_sst2_polarity_classification"]),
}


@pytest.mark.parametrize("benchmark", list(CASES))
def test_two_task_stream_runs_end_to_end(benchmark, tmp_path):
    folder, options, method, names = CASES[benchmark]
    root = shared_data(*folder.split("/"))
    cfg = load_config("paper", [
        "model.path=bundled", f"stream.source={benchmark}", f"stream.root={root}",
        f"stream.options={options}", f"method.name={method}", f"out_dir={tmp_path}",
        "train.steps=2", "stream.budget=4", "stream.test_cap=4", "stream.replay_per_task=4",
        "stream.max_length=256", "model.threads=1", "method.probe_batches=2" if method == "tsr" else "seed=0"])
    outcome = execute(cfg)
    results = outcome.results
    assert results.finished and results.tasks == names
    final = results.acc[-1]
    assert all(0.0 <= a <= 1.0 for a in final) and all(math.isfinite(x) for x in results.loss[-1])
