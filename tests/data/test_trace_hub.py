"""trace8_hub: options and row formatting only (the hub route itself needs network)."""

from __future__ import annotations

import sys

import pytest

from tsr.data.benchmarks import trace_hub as hub
from tsr.data.streams import load_stream
from tsr.errors import ConfigError, DataError


def test_rows_become_the_paper_codes_examples():
    ex = hub.cstance({"Target": "t", "Text": "a b\nc", "Stance": "反对"})
    assert ex.answer == "against" and ex.prompt.endswith("Target: t. Text: a b c\nAnswer: ")
    assert hub.fomc({"sentence": "rates", "label": 1}).answer == "hawkish"
    sci = hub.scienceqa({"choices": ["x", "y"], "hint": "", "question": "q?", "answer": 1})
    assert sci.answer == "B" and "Choices: A) x. B) y\nAnswer: " in sci.prompt
    assert hub.numglue({"question": "q", "passage": None, "answer": "12 apples"}).answer == "12"
    long = " ".join(f"w{i}" for i in range(30))
    assert hub.meetingbank({"transcript": "t", "summary": long}).answer == " ".join(f"w{i}" for i in range(12))
    code = "x" * 240 + "  " + " ".join(f"t{i}" for i in range(40))
    assert hub.py150({"code": code}).answer.split()[0] == "t0"


def test_split_sizes_follow_the_paper_code():
    assert hub.split_sizes(1000, 500, 500) == (200, 500)
    assert hub.split_sizes(5000, 500, 500) == (500, 500)
    assert hub.split_sizes(3, 500, 500) == (1, 2)


def test_without_datasets_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DataError, match=r"pip install datasets"):
        load_stream("trace8_hub", None, {"tasks": ["FOMC"]})


def test_options_are_checked():
    with pytest.raises(ConfigError, match="stream.options.numglue_types"):
        load_stream("trace8_hub", None, {"numglue_types": [1, 9]})
    with pytest.raises(ConfigError, match="unknown config key 'stream.options.root'"):
        load_stream("trace8_hub", None, {"root": "x"})
