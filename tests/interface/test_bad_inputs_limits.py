"""The bad-input corpus, part four: inputs past a limit (nested too deeply or into themselves,
a seed or batch too large) and names that would not show as written; the rules of every case:
tests/interface/test_bad_inputs.py. Names are printed literally: rich markup in a name
(``[bold red]x``) is shown as typed."""

from __future__ import annotations

import pytest

import badinputs
from badinputs import GOOD, case, jsonl, refuse, run_args, write
from tsr.config import load_config
from tsr.interface.cli import main

built = badinputs.built  # the module-scoped fixture: the toy stream and two real runs

DEEP = "[" * 2000 + "]" * 2000   # past Python's recursion limit: the parser itself fails
DEEPISH = "[" * 150 + "]" * 150  # within it: parsed, then refused


def config_file(text: str):
    def build(env, tmp):
        return ["run", str(write(tmp / "cfg.yaml", text)), *run_args(env, tmp)[1:]]
    return build


def overrides(*items: str):
    return lambda env, tmp: run_args(env, tmp, *items)


def stream_file(text: str, files: dict[str, str] | None = None):
    def build(env, tmp):
        for name, content in (files or {}).items():
            write(tmp / name, content)
        return run_args(env, tmp, f"stream.source={write(tmp / 'stream.yaml', text)}")
    return build


TASK = "name: s\ntasks:\n  - {name: a, kind: classification, format: jsonl, train: a.jsonl, test: a.jsonl}\n"
NESTED_PROMPT = '{"prompt": ' + DEEP + ', "answer": " yes"}\n'

def archived(edit):
    """``tsr archive --restore`` of an archive of the finished run whose record ``edit`` changed."""
    def build(env, tmp):
        import json
        import shutil

        from tsr.runs.archive import archive

        shutil.copytree(env.runs / "finished", tmp / "runs" / "finished")
        archive(tmp / "runs", tmp / "a.jsonl")
        shutil.rmtree(tmp / "runs")
        record = json.loads((tmp / "a.jsonl").read_text())
        (tmp / "a.jsonl").write_text(json.dumps(edit(record)) + "\n")
        (tmp / "rest").mkdir()
        return ["archive", "--restore", str(tmp / "rest"), str(tmp / "a.jsonl")]
    return build


def indexed(edit):
    """``tsr table`` of a copy of the finished run, indexed, then ``edit(folder)``."""
    def build(env, tmp):
        import shutil

        shutil.copytree(env.runs / "finished", tmp / "runs" / "finished")
        assert main(["table", str(tmp / "runs")]) == 0
        edit(tmp / "runs")
        return ["table", str(tmp / "runs")]
    return build


def damaged_index(folder):
    import sqlite3

    conn = sqlite3.connect(folder / "index.sqlite")
    with conn:
        conn.execute("UPDATE runs SET metrics = '{bad'")
    conn.close()


def seed_past_64_bits(folder):
    import json

    path = folder / "finished" / "results.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "seed": 2**63}))


CASES = [
    case("config-yaml-nested-past-the-recursion-limit", config_file("lora: {targets: " + DEEP + "}\n"),
         "cfg.yaml: nested deeper than 100 levels"),
    case("config-yaml-nested-deeper-than-the-limit", config_file("lora: {targets: " + DEEPISH + "}\n"),
         "cfg.yaml: nested deeper than 100 levels"),
    case("config-yaml-refers-to-itself", config_file("lora: {targets: &x [*x]}\n"), "cfg.yaml: refers to itself"),
    case("config-yaml-mapping-refers-to-itself", config_file("stream: &s {options: *s}\n"), "cfg.yaml: refers to itself"),
    case("config-override-nested-past-the-recursion-limit", overrides("lora.targets=" + DEEP),
         "override lora.targets: nested deeper than 100 levels"),
    case("config-override-refers-to-itself", overrides("lora.targets=&x [*x]"), "override lora.targets: refers to itself"),
    case("stream-file-nested-past-the-recursion-limit", stream_file("name: s\ntasks: " + DEEP + "\n"),
         "stream.yaml: nested deeper than 100 levels"),
    case("stream-file-refers-to-itself", stream_file("name: s\ntasks: &t [*t]\n"), "stream.yaml: refers to itself"),
    case("jsonl-record-nested-past-the-recursion-limit", stream_file(TASK, {"a.jsonl": jsonl(GOOD) + NESTED_PROMPT}),
         "a.jsonl:9: nested deeper than 100 levels"),
    case("jsonl-record-nested-deeper-than-the-limit",
         stream_file(TASK, {"a.jsonl": '{"prompt": ' + DEEPISH + ', "answer": " no"}\n'}),
         "a.jsonl:1: nested deeper than 100 levels"),
    case("config-seed-past-64-bits", overrides("seed=9223372036854775808"),
         "config key 'seed': must be between 0 and 9223372036854775807 (2^63 - 1)"),
    case("config-train-batch-size-too-large", overrides("train.batch_size=1000000"),
         "config key 'train.batch_size': must be between 1 and 1024"),
    case("config-eval-batch-size-too-large", overrides("eval.batch_size=1025"),
         "config key 'eval.batch_size': must be between 1 and 1024"),
    case("config-name-right-to-left-override", overrides("name=run\u202etxt.exe"),
         r"config key 'name': 'run\u202etxt.exe' contains a control or formatting character (U+202E)"),
    case("config-name-zero-width-joiner", overrides("name=a\u200db"), "(U+200D)"),
    case("config-name-delete-character", overrides("name=a\x7fb"), "(U+007F)"),
    case("config-name-c1-control", overrides("name=a\x9bb"), "(U+009B)"),
    case("config-name-line-separator", overrides("name=a\u2028b"), "(U+2028)"),
    case("config-name-not-utf8", overrides("name=a\udcffb"),  # the byte 0xff as a command line hands it over
         r"config key 'name': 'a\udcffb' is not UTF-8 text (U+DCFF"),
    case("stream-file-task-name-right-to-left-override",
         stream_file(TASK.replace("name: a,", "name: \"a\\u202eb\","), {"a.jsonl": jsonl(GOOD)}), "(U+202E)"),
    case("jsonl-record-lone-surrogate", stream_file(TASK, {"a.jsonl": jsonl(GOOD) + '{"prompt": "x \\ud800 y", '
                                                                                  '"answer": " no"}\n'}),
         r"a.jsonl:9: holds a lone surrogate ('\ud800' in 'x \ud800 y'), which is not text"),
    case("archive-path-with-a-nul", archived(lambda r: {**r, "path": "fin\x00ished"}),
         r"a.jsonl:1: path 'fin\x00ished' contains a control or formatting character (U+0000)"),
    case("archive-path-with-a-right-to-left-override", archived(lambda r: {**r, "path": "a\u202eb"}), "(U+202E)"),
    case("index-with-a-field-not-json", indexed(damaged_index),
         "index.sqlite: damaged (the metrics of "),
    case("indexed-run-with-a-seed-past-64-bits", indexed(seed_past_64_bits),
         "results.json: seed 9223372036854775808 is past 2^63 - 1, which the index cannot hold"),
    case("export-task-a-superscript-digit", lambda env, tmp: ["export", str(env.runs / "finished"), "--out",
                                                               str(tmp / "out"), "--task", "\u00b2"],
         "no task '\u00b2' (give a position from 1 or a name: 1 parity, 2 vowel, 3 copy)"),
]


@pytest.mark.parametrize("build,fragment", CASES)
def test_an_input_past_a_limit_is_one_line(build, fragment, built, tmp_path, capsys):
    refuse(capsys, tmp_path, build(built, tmp_path), fragment)


def test_the_largest_seed_runs_and_a_name_prints_as_written(built, tmp_path, capsys):
    """2^63 - 1 trains and is indexed (2^63 failed after the first task); a run named like rich
    markup is saved and shown under that name."""
    assert load_config(None, ["seed=9223372036854775807"]).seed == 2**63 - 1
    capsys.readouterr()
    argv = run_args(built, tmp_path, "seed=9223372036854775807", "name=[bold red]x", "stream.order=[parity]",
                    "train.steps=1", "--quiet")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "runs" / "[bold red]x" / "results.json").is_file()
    assert f"saved to {tmp_path / 'runs' / '[bold red]x'}" in out
    assert main(argv) == 0  # finished: shown again, under its literal name
    assert f"{tmp_path / 'runs' / '[bold red]x'} is already finished" in capsys.readouterr().out
