"""The audits' one driver (tsr.interface.driver): every audit command's params come from its
Params dataclass, as ``key=value`` items or their old ``--flag`` spellings, parsed and checked by
the run config's own parser."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tsr.errors import ConfigError
from tsr.experiments.probe.audit import AUDIT as PROBE
from tsr.experiments.signatures.audit import AUDIT as SIGNATURES
from tsr.interface.audits import AUDITS
from tsr.interface.cli import build_parser, main
from tsr.interface.driver import flag_of, params_of

EVERY = [(("audit", m.AUDIT.name), m.AUDIT) for m in AUDITS] + [(("probe",), PROBE), (("signatures",), SIGNATURES)]


def parsed(command: tuple[str, ...], items: list[str]):
    audit = dict((c, a) for c, a in EVERY)[command]
    return params_of(audit, build_parser().parse_args([*command, *items]))


@pytest.mark.parametrize("command,audit", EVERY, ids=lambda c: " ".join(c) if isinstance(c, tuple) else "")
def test_the_help_lists_every_param_of_the_dataclass_and_nothing_else(command, audit, capsys):
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    params = text.split("params (key=value", 1)[1].split("\n\n", 1)[0]
    fields = [f.name for f in dataclasses.fields(audit.Params)]
    for f in dataclasses.fields(audit.Params):
        assert f"{f.name}=" in params and flag_of(f) in params, f"{' '.join(command)} --help: {f.name} missing"
    listed = re.findall(r"(?:^|\s)(\w+)=[^\s:]*: ", params)  # each option's help opens with key=SHAPE:
    assert listed == fields


def test_key_value_items_and_old_flags_give_the_same_params():
    new, _, over_new = parsed(("audit", "kd"), ["teachers=era,none", "seeds=0,1", "train.steps=3"])
    old, _, over_old = parsed(("audit", "kd"), ["--teachers", "era,none", "--seeds", "0,1", "train.steps=3"])
    assert new == old and new.teachers == ("era", "none") and new.seeds == (0, 1)
    assert over_new == over_old == ["train.steps=3"]  # a run config key stays the config's
    yaml_list, _, _ = parsed(("audit", "kd"), ["seeds=[0, 1]", "teachers=[era, none]"])
    assert yaml_list == new


def test_a_positional_item_is_the_audits_folder_param(tmp_path):
    params, config, overrides = parsed(("audit", "arms"), [str(tmp_path), "full=500"])
    assert params.dir == str(tmp_path) and params.full == 500 and config is None and overrides == []


@pytest.mark.parametrize("command,items,error", [
    (("audit", "kd"), ["tachers=era"], "unknown key 'tachers'"),
    (("audit", "kd"), ["--seeds", "0", "seeds=1"], "seeds: given twice"),
    (("audit", "kd"), ["seeds=zero"], "seeds"),
    (("audit", "kd"), ["--seeds", "zero"], "--seeds"),
    (("audit", "arms"), ["train.steps=3", "x"], "unknown key 'train.steps'"),
    (("audit", "arms"), ["a", "b"], "more than one PROBE_DIR"),
    (("signatures",), [], "out"),
])
def test_a_bad_param_is_one_error_naming_it(command, items, error):
    with pytest.raises(ConfigError, match=error):
        parsed(command, items)


def test_a_bad_param_exits_with_one_line_and_writes_nothing(tmp_path, capsys):
    assert main(["audit", "kd", "tachers=era", f"out_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tachers" in err[0] and "Traceback" not in err[0]
    assert list(tmp_path.iterdir()) == []
