"""Grouping runs without the config (tsr.runs.grouping): every run records the facts the tables
group it by, the facts of runs made before that are the config's own, and a key added later
reads as its neutral value in the runs that predate it."""

from __future__ import annotations

import json
from pathlib import Path

from tsr.analysis.table import RunSummary, run_labels
from tsr.config import RunConfig, grouping_of, load_config, neutral_keys
from tsr.engine.run import execute
from tsr.runs.grouping import LEGACY, Grouping, of_records, value_text
from tsr.schema import not_results


def test_the_legacy_facts_are_the_configs_declarations():
    """Each fact runs made before the record are read by still holds: a key that never changes
    results, and each added key's neutral value, for the config and every registered method."""
    declared = {"seed", *not_results(RunConfig)}
    assert LEGACY.not_settings <= declared
    neutral = {k: value_text(v) for k, v in neutral_keys().items()}
    assert {k: neutral.get(k) for k in LEGACY.neutral} == dict(LEGACY.neutral)
    # and today nothing is missing from it: a key added from now on is recorded by each run instead
    assert LEGACY.not_settings == declared and set(LEGACY.neutral) == set(neutral)


def test_a_run_records_its_grouping_and_the_store_reads_it(make_config, tmp_path):
    cfg = make_config("method.name=er", "train.steps=2")
    run = execute(cfg).run
    recorded = json.loads((run.path / "run.json").read_text())["grouping"]
    assert recorded == grouping_of(cfg).record()
    assert "train.packing" in recorded["neutral"] and "out_dir" in recorded["not_settings"]
    assert "method.need" not in recorded["neutral"]  # another method's parameter: not this run's
    from tsr.runs import store

    (row,) = store.refresh(Path(cfg.out_dir))
    assert row["grouping"] == recorded


def summary(name: str, config: dict, grouping: dict | None) -> RunSummary:
    return RunSummary(Path(f"/r/{name}"), "er", 0, "toy · base", {"overall": 0.5}, config, None, grouping)


def test_a_key_added_after_a_run_reads_as_its_neutral_value_there():
    """A key the legacy facts do not know (added later): the newer runs record its neutral value,
    so a run that predates it groups with a newer run at that value and apart from one away from it."""
    newer = Grouping(LEGACY.not_settings, {**LEGACY.neutral, "train.new_knob": "off"}).record()
    old = summary("old", {"train.steps": "8"}, None)
    same = summary("same", {"train.steps": "8", "train.new_knob": "off"}, newer)
    other = summary("other", {"train.steps": "8", "train.new_knob": "on"}, newer)
    assert of_records([None, newer]).varying_keys([old.config, same.config]) == []
    labels = run_labels([old, same, other])
    assert labels[old.path] == labels[same.path] != labels[other.path]
    assert labels[old.path][0].endswith("train.new_knob=off")  # read as the neutral value, not '-'
    # without the newer runs' record the old run's missing key would read as a difference
    assert LEGACY.varying_keys([old.config, same.config]) == ["train.new_knob"]
