"""The commands' parsers: no flag carries a hyperparameter default of its own; a flag left out
stands for a value defined once elsewhere, which its help prints and its command uses."""

from __future__ import annotations

import argparse

import pytest

from tsr.errors import TsrError
from tsr.interface.args import Default, csv_list, shown, split_items
from tsr.interface.cli import build_parser

# command-line mechanics, not hyperparameters: these flags may keep argparse defaults
MECHANICS = {"workers", "format", "executor", "help", "version"}
OWN_DEFAULTS = {("pretrain-base", "out")}  # a folder name, not a setting of what is computed


def parsers(parser: argparse.ArgumentParser, name: str = "tsr"):
    """(command path, parser) of ``parser`` and every subcommand under it."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from parsers(p, f"{name} {sub}")


def flags():
    for name, parser in parsers(build_parser()):
        for action in parser._actions:
            if action.option_strings and not isinstance(action, argparse._SubParsersAction):
                yield name, action


def test_no_flag_has_a_default_of_its_own():
    own = [f"{name} {a.option_strings[0]} = {a.default!r}" for name, a in flags()
           if a.default not in (None, False, argparse.SUPPRESS) and a.dest not in MECHANICS
           and (name.split()[-1], a.dest) not in OWN_DEFAULTS]
    assert not own, "flags with defaults of their own: " + "; ".join(own)


def test_every_fallback_is_defined_where_it_says_and_its_help_prints_it():
    found = [(name, a) for name, a in flags() if getattr(a, "fallback", None) is not None]
    assert len(found) >= 20
    formatter = argparse.HelpFormatter("tsr")
    for name, action in found:
        assert action.default is None, f"{name} {action.option_strings[0]}"
        value = action.fallback.value()  # the module and name exist
        assert shown(value) in formatter._expand_help(action), f"{name} {action.option_strings[0]}"


def test_a_left_out_flag_stands_for_its_source():
    import dataclasses
    from types import SimpleNamespace

    from tsr.experiments import SEEDS
    from tsr.experiments.intervention import plan as intervention
    from tsr.experiments.carriers.arms import DEFAULT_MU
    from tsr.experiments.carriers import audit as carriers_audit
    from tsr.experiments.intervention import audit as intervention_audit
    from tsr.interface.driver import fallback_of
    from tsr.methods.l2_anchor import L2AnchorParams

    def flags_of(params):  # each param's fallback by its old flag constant's name (REPS for --reps)
        return SimpleNamespace(**{f.name.upper(): fallback_of(params, f) for f in dataclasses.fields(params)})

    carriers, command = flags_of(carriers_audit.Params), flags_of(intervention_audit.Params)

    args = build_parser().parse_args(["audit", "intervention"])
    assert args.reps is None and args.scales is None and args.seeds is None
    assert command.REPS.fill(args.reps) == intervention.REPS == 30
    assert command.REPS.fill(5) == 5
    assert command.SCALES.value() == intervention.SCALES
    assert command.SIGNATURE.fill(None) == "gradb" and command.SIGNATURE.fill("") == ""
    assert carriers.MU.value() == DEFAULT_MU == L2AnchorParams().mu
    assert Default("tsr.experiments:SEEDS").listed(None, int) == list(SEEDS) == [0]
    assert Default("tsr.experiments:SEEDS").listed("3,4", int) == [3, 4]
    assert Default("tsr.experiments:SEEDS").listed("", int) is None  # as an empty --seeds always was


def test_items_and_lists():
    assert split_items(["paper", "a=1", "b.c=2"]) == ("paper", ["a=1", "b.c=2"])
    assert split_items(["a=1"]) == (None, ["a=1"])
    with pytest.raises(TsrError, match="more than one config"):
        split_items(["paper", "other"])
    assert csv_list(" 1, 2,,3 ", int) == [1, 2, 3]
    assert csv_list("") is None and csv_list(None) is None
    with pytest.raises(TsrError, match="--seeds: 'a' is not a comma-separated list of ints"):
        csv_list("a", int, "--seeds")
    assert shown((0.25, 0.5, 1.0)) == "0.25,0.5,1" and shown(("era", "none")) == "era,none" and shown(30) == "30"


def test_building_the_parser_imports_nothing_heavy():
    import subprocess
    import sys

    code = "import sys; from tsr.interface.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
