"""A corpus of bad inputs: every one is refused by the real CLI with one line and exit 2.

Each case builds one bad input in its own temporary folder (a config file, an override, a
stream file, a JSONL or TRACE / NumGLUE / PP15 / SuperNI data file, a synthetic generator
config, a corrupted copy of a real run folder, a folder that is not a run) and runs ``tsr`` in-process through ``tsr.cli.main``.
Every case asserts all of:

- the exit status is 2;
- stdout + stderr hold exactly one non-empty line, starting with ``tsr: error:``, and no
  traceback;
- that line names the culprit (the file, the key or the line);
- nothing in the case's folder was created, changed or deleted (every path, its bytes and
  its mtime, before and after), so a bad input never creates a run folder nor touches an
  existing one.

The real runs the run-folder cases corrupt are trained once per module (a tiny config on
the bundled base) and copied per case.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest

from tsr.cli import main
from tsr.engine import loop

from toy import write_toy_stream

# -- helpers ----------------------------------------------------------------------------------

TINY = ["model.compile=false", "model.threads=1", "train.steps=2", "stream.test_cap=4", "stream.budget=4",
        "stream.replay_per_task=4", "method.probe_batches=1"]


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under ``root``: its bytes (None for a folder) and its mtime."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def refuse(capsys, root: Path, argv: list[str], fragment: str) -> None:
    """Run ``tsr argv``; assert exit 2, one ``tsr: error:`` line naming ``fragment``, nothing changed."""
    if argv[0] == "run":
        argv = [*argv, "--quiet"]  # after every positional item
    capsys.readouterr()
    before = snapshot(root)
    code = main(argv)
    out, err = capsys.readouterr()
    text = out + err
    lines = [line for line in text.splitlines() if line.strip()]
    assert code == 2, f"exit {code}: {text}"
    assert "Traceback" not in text, text
    assert len(lines) == 1, text
    assert lines[0].startswith("tsr: error:"), text
    assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert snapshot(root) == before, "the bad input changed the folder"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def jsonl(rows: list) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


GOOD = [{"prompt": f"Is {n} even? Answer:", "answer": " yes" if n % 2 == 0 else " no"} for n in range(8)]


def safetensors_bytes(header: bytes | dict, data: bytes = b"", length: int | None = None) -> bytes:
    """A safetensors file: 8-byte little-endian header length, JSON header, data."""
    blob = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(blob) if length is None else length) + blob + data


# -- the module's shared inputs: a toy stream and two real runs ----------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The toy stream and two real runs of a tiny config: ``finished`` and ``interrupted``
    (Ctrl-C as task 2 starts, so one task is saved)."""
    base = tmp_path_factory.mktemp("bad-inputs")
    stream = write_toy_stream(base / "data", pool=16, test=4)
    runs = base / "runs"

    def args(out: Path, name: str) -> list[str]:
        return ["run", f"stream.source={stream}", f"out_dir={out}", f"name={name}", *TINY]

    assert main([*args(runs, "finished"), "--quiet"]) == 0
    original = loop.train_on

    def interrupt(*a, **kw):
        if kw["index"] == 1:
            raise KeyboardInterrupt
        return original(*a, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loop, "train_on", interrupt)
        assert main([*args(runs, "interrupted"), "--quiet"]) == 130
    assert (runs / "interrupted" / "checkpoint" / "state.json").is_file()
    assert not (runs / "interrupted" / "memory" / "01-vowel").exists()
    return SimpleNamespace(stream=stream, runs=runs, args=args)


def run_args(env, tmp: Path, *extra: str) -> list[str]:
    """``tsr run`` of a tiny config on the toy stream into an existing, empty ``tmp/runs``."""
    (tmp / "runs").mkdir(exist_ok=True)
    return ["run", f"stream.source={env.stream}", f"out_dir={tmp / 'runs'}", *TINY, *extra]


def case(id: str, build, fragment: str):
    return pytest.param(build, fragment, id=id)


# -- config files, presets and overrides ----------------------------------------------------------


def config_file(text: str | bytes | None, name: str = "cfg.yaml"):
    """``tsr run <tmp>/<name> <tiny config>``, the file holding ``text`` (None: no file)."""
    def build(env, tmp):
        if text is not None:
            write(tmp / name, text)
        return ["run", str(tmp / name), *run_args(env, tmp)[1:]]
    return build


def overrides(*items: str, config: tuple[str, ...] = ()):
    """``tsr run [config ...] <tiny config> items``."""
    def build(env, tmp):
        argv = run_args(env, tmp, *items)
        return [argv[0], *config, *argv[1:]]
    return build


def config_cmd(*items: str):
    return lambda env, tmp: ["config", *items]


def escaping_name(env, tmp):
    """``name=../../x`` from ``out_dir=<tmp>/a/runs``: the run would land in ``<tmp>/x``."""
    (tmp / "a" / "runs").mkdir(parents=True)
    return run_args(env, tmp, f"out_dir={tmp / 'a' / 'runs'}", "name=../../x", "stream.order=[parity]", "train.steps=1")


CONFIG_CASES = [
    case("config-malformed-yaml-names-line", config_file("seed: 1\nlora:\n  r: 4: 5\neval: {batch_size: 2}\n"),
         "cfg.yaml:3: malformed YAML (mapping values are not allowed here)"),
    case("config-yaml-tag-python-object-apply", config_file("seed: !!python/object/apply:os.system ['echo hi']\n"),
         "cfg.yaml:1: malformed YAML (could not determine a constructor"),
    case("config-yaml-tag-binary", config_file("seed: 0\nname: !!binary aGVsbG8=\n"), "config key 'name'"),
    case("config-yaml-tag-custom", config_file("train:\n  steps: !foo 3\n"),
         "cfg.yaml:2: malformed YAML (could not determine a constructor for the tag '!foo')"),
    case("config-unknown-top-level-key", config_file("sead: 1\n"), "unknown config key 'sead'"),
    case("config-unknown-key-in-section", config_file("train: {lrr: 0.1}\n"), "unknown config key 'train.lrr'"),
    case("config-unknown-key-override", overrides("lora.rank=8"), "unknown config key 'lora.rank'"),
    case("config-unknown-key-in-benchmark-options",
         overrides("stream.source=trace8", "stream.options.zzz=1"), "unknown config key 'stream.options.zzz'"),
    case("config-unknown-method-parameter", overrides("method.nope=1"), "unknown config key 'method.nope'"),
    case("config-wrong-type-string-for-int", overrides("train.steps=abc"), "config key 'train.steps'"),
    case("config-wrong-type-list-for-mapping", config_file("eval: [1, 2]\n"),
         "config key 'eval': expected a mapping, got [1, 2]"),
    case("config-wrong-type-mapping-for-int", config_file("lora: {r: {n: 3}}\n"),
         "config key 'lora.r': expected an integer"),
    case("config-wrong-type-bool", overrides("eval.all_tasks=maybe"), "config key 'eval.all_tasks'"),
    case("config-wrong-type-literal", overrides("train.teacher=sometimes"), "config key 'train.teacher'"),
    case("config-out-of-range-budget-zero", overrides("stream.budget=0"), "config key 'stream.budget': must be >= 1"),
    case("config-out-of-range-dropout", overrides("lora.dropout=1.5"), "config key 'lora.dropout'"),
    case("config-out-of-range-negative-seed", overrides("seed=-1"), "config key 'seed'"),
    case("config-out-of-range-device", overrides("model.device=tpu"), "config key 'model.device'"),
    case("config-budget-exceeds-pool", overrides("stream.budget=1000"), "config key 'stream.budget': 1000 exceeds"),
    case("config-unknown-preset", overrides(config=("nope",)), "unknown preset 'nope'"),
    case("config-unknown-preset-in-file", config_file("preset: nope\n"), "unknown preset 'nope'"),
    case("config-unknown-method", overrides("method.name=magic"), "unknown method 'magic'"),
    case("config-method-parameter-of-another-method", overrides("method.name=er", "method.tau=0.1"),
         "unknown config key 'method.tau'"),
    case("config-method-parameter-of-another-method-in-file", config_file("method: {name: seqft, alpha: 0.5}\n"),
         "unknown config key 'method.alpha' (valid keys in 'method': none)"),
    case("config-stream-order-unknown-task", overrides("stream.order=[parity, nope]"),
         "config key 'stream.order': unknown task 'nope'"),
    case("config-stream-order-bad-word", overrides("stream.order=shuffle:x"), "config key 'stream.order'"),
    case("config-stream-source-unknown", overrides("stream.source=nowhere"), "config key 'stream.source'"),
    case("config-empty-override-key-part", overrides("train..steps=3"), "'train..steps=3' has an empty key part"),
    case("config-empty-override-key", overrides("=3"), "'=3' has an empty key part"),
    case("config-top-level-list", config_file("- seed\n- 1\n"), "cfg.yaml: expected a mapping of config keys"),
    case("config-top-level-scalar", config_file("just text\n"), "cfg.yaml: expected a mapping of config keys"),
    case("config-file-not-found", config_file(None, "missing.yaml"), "missing.yaml: config file not found"),
    case("config-file-not-utf8", config_file(b"seed: 1\nname: \xff\xfe\n"), "cfg.yaml:2: not UTF-8 text"),
    case("config-two-config-files", overrides(config=("paper", "extra")), "more than one config given"),
    case("config-file-name-with-brackets", config_file("seed: [1\n", name="cfg[bold].yaml"), "cfg[bold].yaml:"),
    case("config-name-escapes-out-dir", escaping_name, "config key 'name': '../../x' contains a path separator"),
    case("config-command-option-of-another-benchmark", config_cmd("stream.options.tasks=[a]"),
         "unknown config key 'stream.options.tasks'"),
    case("config-command-unknown-benchmark-task", config_cmd("stream.source=trace8", "stream.options.tasks=[a]"),
         "config key 'stream.options.tasks': 'trace8' has no task 'a'"),
]


@pytest.mark.parametrize("build,fragment", CONFIG_CASES)
def test_bad_config(build, fragment, built, tmp_path, capsys):
    refuse(capsys, tmp_path, build(built, tmp_path), fragment)


# -- data files: stream YAML, JSONL tasks, TRACE / NumGLUE / PP15 / SuperNI folders, synth configs --


def stream_file(text: str | bytes, files: dict[str, str | bytes] | None = None, *extra: str):
    """A stream file (and data files beside it) in the case's folder, run through ``tsr run``."""
    def build(env, tmp):
        for rel, content in (files or {}).items():
            write(tmp / "data" / rel, content)
        path = write(tmp / "data" / "stream.yaml", text)
        return [*run_args(env, tmp), f"stream.source={path}", *extra]
    return build


def jsonl_task(train: str | bytes, test: str | bytes | None = None):
    """A one-task stream whose training (and test) JSONL file is given."""
    entry = "tasks:\n  - {name: a, kind: classification, format: jsonl, train: a/train.jsonl, test: a/test.jsonl}\n"
    return stream_file(entry, {"a/train.jsonl": train, "a/test.jsonl": jsonl(GOOD) if test is None else test})


ENTRY = "  - {name: a, kind: classification, format: jsonl, train: a.jsonl, test: a.jsonl}\n"
OK_FILES = {"a.jsonl": jsonl(GOOD)}


def benchmark(source: str, files: dict[str, str | bytes], *extra: str, root: str = "bench"):
    """``stream.source=<benchmark> stream.root=<tmp>/bench`` with the given files under the root."""
    def build(env, tmp):
        for rel, content in files.items():
            write(tmp / root / rel, content)
        return [*run_args(env, tmp), f"stream.source={source}", f"stream.root={tmp / root}", *extra]
    return build


def trace(files: dict[str, str | bytes], *extra: str):
    return benchmark("trace8", files, "stream.options.tasks=[FOMC]", *extra)


TRACE_OK = json.dumps([{"prompt": f"Q{i}? Answer:", "answer": "A" if i % 2 else "B"} for i in range(8)])


def numglue_release(train: str | bytes):
    test = jsonl([{"type": "Type_1", "question": "1+1?", "answer": 2}])
    return benchmark("numglue8", {"NumGLUE_train.json": train, "NumGLUE_test.json": test},
                     "stream.options.tasks=[type1]")


def synth_spec(text: str | bytes):
    def build(env, tmp):
        path = write(tmp / "gen.yaml", text)
        return [*run_args(env, tmp), "stream.source=synth", f"stream.options.spec={path}"]
    return build


PP15_CONFIG = json.dumps({"NLI": [{"instruction_type": "zero-shot", "instruction": "Entail? "}]})


def pp15(labels: str, train: str, instructions: str | None = PP15_CONFIG):
    test = json.dumps([{"label": "yes", "sentence": "s"}])
    files = {"CL_Benchmark/NLI/CB/labels.json": labels, "CL_Benchmark/NLI/CB/train.json": train,
             "CL_Benchmark/NLI/CB/test.json": test}
    if instructions is not None:
        files["configs/instruction_config.json"] = instructions
    return benchmark("pp15", files, "stream.options.tasks=[CB]")


SUPERNI_TASK = "task363_sst2_polarity_classification"


def superni(train: dict | str):
    test = {"Definition": ["Say it."], "Instances": [{"id": "1", "input": "x", "output": ["POS"]}]}
    files = {f"{SUPERNI_TASK}/train.json": train if isinstance(train, str) else json.dumps(train),
             f"{SUPERNI_TASK}/test.json": json.dumps(test)}
    return benchmark("superni", files, f"stream.options.tasks=[{SUPERNI_TASK}]")


DATA_CASES = [
    # stream YAML files
    case("stream-file-malformed-yaml-names-line", stream_file("name: s\ntasks:\n  - name: a: b\n  - c\n"),
         "stream.yaml:3: malformed YAML (mapping values are not allowed here)"),
    case("stream-file-yaml-tag-python", stream_file("tasks: !!python/object/apply:os.system ['echo hi']\n"),
         "stream.yaml:1: malformed YAML"),
    case("stream-file-not-a-mapping", stream_file("- a\n- b\n"), "stream.yaml: expected a mapping with 'tasks'"),
    case("stream-file-unknown-key", stream_file("name: s\ntaks: []\n"), "stream.yaml: unknown key 'taks'"),
    case("stream-file-empty-task-list", stream_file("tasks: []\n"), "stream.yaml: 'tasks' must be a non-empty list"),
    case("stream-file-task-not-a-mapping", stream_file("tasks: [a]\n"), "stream.yaml: tasks[0]: expected a mapping"),
    case("stream-file-task-missing-kind", stream_file("tasks:\n  - {name: a, format: jsonl, train: a.jsonl, "
                                                      "test: a.jsonl}\n", OK_FILES), "tasks[0]: missing key 'kind'"),
    case("stream-file-task-unknown-format", stream_file("tasks:\n  - {name: a, kind: generation, format: csv}\n"),
         "tasks[0]: unknown format 'csv'"),
    case("stream-file-task-key-of-other-format", stream_file("tasks:\n" + ENTRY.replace("}", ", path: x}"), OK_FILES),
         "tasks[0]: unknown key 'path' for format 'jsonl'"),
    case("stream-file-task-missing-format-key", stream_file("tasks:\n  - {name: a, kind: generation, format: jsonl, "
                                                            "train: a.jsonl}\n", OK_FILES),
         "tasks[0]: format 'jsonl' needs key 'test'"),
    case("stream-file-task-unknown-kind", stream_file("tasks:\n" + ENTRY.replace("classification", "regression"),
                                                      OK_FILES), "unknown task kind 'regression'"),
    case("stream-file-data-file-missing", stream_file("tasks:\n" + ENTRY), "a.jsonl: file not found"),
    case("stream-file-duplicate-task-names", stream_file("tasks:\n" + ENTRY + ENTRY, OK_FILES),
         "stream.yaml: tasks[1]: task name 'a' is used twice"),
    case("stream-file-order-not-a-list", stream_file("tasks:\n" + ENTRY + "order: a\n", OK_FILES),
         "stream.yaml: 'order' must be a list"),
    case("stream-file-order-unknown-task", stream_file("tasks:\n" + ENTRY + "order: [a, b]\n", OK_FILES),
         "stream.yaml: 'order': 'b' is not a task of this file"),
    case("stream-file-order-lists-task-twice", stream_file("tasks:\n" + ENTRY + "order: [a, a]\n", OK_FILES),
         "stream.yaml: 'order': 'a' is listed twice"),
    case("stream-file-not-utf8", stream_file(b"tasks: []\nname: s\xff\n"), "stream.yaml:2: not UTF-8 text"),
    case("stream-file-not-found", lambda env, tmp: [*run_args(env, tmp), f"stream.source={tmp / 'none.yaml'}"],
         "none.yaml: stream file not found"),
    case("stream-file-with-options", stream_file("tasks:\n" + ENTRY, OK_FILES, "stream.options.tasks=[a]"),
         "a stream file takes no options"),
    case("stream-file-task-name-escapes", stream_file("tasks:\n" + ENTRY.replace("name: a", "name: ../../evil"),
                                                      OK_FILES), "tasks[0]: task name '../../evil'"),
    case("stream-file-stream-name-escapes", stream_file("name: ../../evil\ntasks:\n" + ENTRY, OK_FILES),
         "stream.yaml: stream name '../../evil'"),
    # JSONL task files
    case("jsonl-malformed-line-names-line", jsonl_task(jsonl(GOOD[:2]) + '{"prompt": "a" "answer": "b"}\n'),
         "train.jsonl:3: malformed JSON line"),
    case("jsonl-missing-answer", jsonl_task(jsonl([GOOD[0], {"prompt": "p"}])), "train.jsonl:2: missing 'answer'"),
    case("jsonl-prompt-not-a-string", jsonl_task(jsonl([{"prompt": 3, "answer": " a"}])),
         "train.jsonl:1: 'prompt' must be a string, found int"),
    case("jsonl-line-not-an-object", jsonl_task(jsonl([GOOD[0], ["p", "a"]])), "train.jsonl:2: expected an object"),
    case("jsonl-empty-answer", jsonl_task(jsonl([{"prompt": "p", "answer": ""}])), "train.jsonl:1: 'answer' is empty"),
    case("jsonl-empty-file", jsonl_task(""), "train.jsonl: training file holds no examples"),
    case("jsonl-empty-test-file", jsonl_task(jsonl(GOOD), "\n\n"), "test.jsonl: test file holds no examples"),
    case("jsonl-not-utf8", jsonl_task(jsonl(GOOD[:2]).encode() + b'{"prompt": "\xff", "answer": "a"}\n'),
         "train.jsonl:3: not UTF-8"),
    # TRACE folders (stream.source=trace8)
    case("trace-root-not-a-folder", benchmark("trace8", {}, root="bench/none"), "config key 'stream.root'"),
    case("trace-root-without-task-folders", trace({"other/x.json": "[]"}), "no TRACE task folders"),
    case("trace-missing-train-json", trace({"FOMC/test.json": TRACE_OK}), "FOMC/train.json: split 'train'"),
    case("trace-missing-test-json", trace({"FOMC/train.json": TRACE_OK}), "FOMC/test.json: split 'test'"),
    case("trace-malformed-json-names-line",
         trace({"FOMC/train.json": '[\n{"prompt": "p", "answer": "A"},\n{oops}\n]', "FOMC/test.json": TRACE_OK}),
         "FOMC/train.json:3:2: malformed JSON"),
    case("trace-not-an-array", trace({"FOMC/train.json": '{"prompt": "p", "answer": "A"}', "FOMC/test.json": TRACE_OK}),
         "FOMC/train.json: expected a JSON array"),
    case("trace-record-missing-answer", trace({"FOMC/train.json": json.dumps([{"prompt": "p", "answer": "A"},
                                                                              {"prompt": "q"}]),
                                               "FOMC/test.json": TRACE_OK}), "train.json: record 1: missing 'answer'"),
    case("trace-record-not-an-object", trace({"FOMC/train.json": TRACE_OK, "FOMC/test.json": '["A", "B"]'}),
         "test.json: record 0: expected an object"),
    case("trace-empty-array", trace({"FOMC/train.json": "[]", "FOMC/test.json": TRACE_OK}),
         "train.json: training split holds no examples"),
    case("trace-not-utf8", trace({"FOMC/train.json": TRACE_OK, "FOMC/test.json": b'[{"prompt": "\xff"}]'}),
         "FOMC/test.json: not UTF-8"),
    case("trace-scienceqa-answer-without-letter",
         benchmark("trace8", {"ScienceQA/train.json": json.dumps([{"prompt": "p", "answer": "because\nB"}]),
                              "ScienceQA/test.json": TRACE_OK}, "stream.options.tasks=[ScienceQA]"),
         "ScienceQA/train.json: record 0: ScienceQA answer does not start with a choice letter"),
    case("trace-unknown-task", trace({}, "stream.options.tasks=[Nope]"), "'trace8' has no task 'Nope'"),
    case("trace-folder-in-stream-file", stream_file("tasks:\n  - {name: f, kind: classification, format: trace, "
                                                    "path: FOMC}\n", {"FOMC/train.json": TRACE_OK}),
         "FOMC/test.json: split 'test' not found"),
    # generator configs of synthetic streams (stream.source=synth stream.options.spec=...)
    case("synth-spec-malformed-yaml-names-line", synth_spec("name: g\ntasks:\n  - name: a: b\n"),
         "gen.yaml:3: malformed YAML"),
    case("synth-spec-not-a-mapping", synth_spec("- a\n"), "gen.yaml: config key 'config': expected a mapping"),
    case("synth-spec-unknown-task-key", synth_spec("name: g\ntasks:\n  - {name: a, famly: addition}\n"),
         "gen.yaml: unknown config key 'tasks[0].famly'"),
    case("synth-spec-unknown-family", synth_spec("name: g\ntasks:\n  - {name: a, family: poetry, template: x}\n"),
         "gen.yaml: config key 'tasks[0].family': unknown family 'poetry'"),
    case("synth-spec-not-utf8", synth_spec(b"name: g\xff\n"), "gen.yaml:1: not UTF-8 text"),
    case("synth-spec-not-found", lambda env, tmp: [*run_args(env, tmp), "stream.source=synth",
                                                   f"stream.options.spec={tmp / 'gen.yaml'}"],
         "gen.yaml: generator config not found"),
    # NumGLUE (stream.source=numglue8)
    case("numglue-release-bad-type-names-line",
         numglue_release(jsonl([{"type": "Type_1", "question": "q", "answer": 1}, {"type": "Type_9"}])),
         "NumGLUE_train.json:2: 'type' must be one of Type_1 .. Type_8"),
    case("numglue-release-malformed-line", numglue_release('{"type": "Type_1", "question": "q", "answer": 1}\n{\n'),
         "NumGLUE_train.json:2: malformed JSON line"),
    case("numglue-release-missing-question", numglue_release(jsonl([{"type": "Type_1", "answer": 1}])),
         "NumGLUE_train.json:1: missing 'question'"),
    case("numglue-per-type-wrong-type", benchmark("numglue8", {"Type_1/type1.json": json.dumps(
        [{"type": "Type_2", "question": "q", "answer": 1}])}, "stream.options.tasks=[type1]"),
         "type1.json: record 0: 'type' is Type_2 inside the Type_1 file"),
    case("numglue-root-without-layout", benchmark("numglue8", {"readme.txt": "hi"}), "neither the NumGLUE release"),
    # PP15 (stream.source=pp15)
    case("pp15-labels-not-strings", pp15("[1, 2]", json.dumps([{"label": "yes", "sentence": "s"}])),
         "CB/labels.json: expected a non-empty JSON array of label strings"),
    case("pp15-label-outside-labels", pp15('["yes", "no"]', json.dumps([{"label": "maybe", "sentence": "s"}])),
         "CB/train.json: record 0: label 'maybe' is not in labels.json"),
    case("pp15-instruction-config-missing", pp15('["yes", "no"]', "[]", instructions=None),
         "instruction_config.json: O-LoRA instruction config not found"),
    # SuperNI (stream.source=superni)
    case("superni-missing-definition", superni({"Instances": [{"id": "1", "input": "x", "output": ["POS"]}]}),
         "train.json: 'Definition' must be"),
    case("superni-output-not-strings", superni({"Definition": "d", "Instances": [{"id": "1", "input": "x",
                                                                                 "output": [1]}]}),
         "train.json: instance 0: 'output' must be"),
    case("superni-malformed-json", superni('{"Definition": "d",\n "Instances": [}'), "train.json:2:16: malformed JSON"),
]


@pytest.mark.parametrize("build,fragment", DATA_CASES)
def test_bad_data(build, fragment, built, tmp_path, capsys):
    refuse(capsys, tmp_path, build(built, tmp_path), fragment)


# -- run folders corrupted before a resume, `tsr show` and `tsr table` -----------------------------


def corrupt(which: str, edit, command: str = "run"):
    """A copy of the module's ``which`` run with ``edit(run_folder)`` applied, then ``tsr <command>``
    on it: ``run`` re-runs the same config (a resume), ``show`` and ``table`` read the folder."""
    def build(env, tmp):
        folder = tmp / "runs" / which
        shutil.copytree(env.runs / which, folder)
        edit(folder)
        if command == "run":
            return env.args(tmp / "runs", which)
        return [command, str(folder)]
    return build


def put(rel: str, content: str | bytes):
    return lambda folder: write(folder / rel, content)


def truncate(rel: str):
    """Keep the first half of a file."""
    def edit(folder):
        data = (folder / rel).read_bytes()
        (folder / rel).write_bytes(data[: len(data) // 2])
    return edit


def tear_line(rel: str, number: int):
    """Cut line ``number`` of a log in half (an edit; a crash can only tear the last line)."""
    def edit(folder):
        lines = (folder / rel).read_bytes().split(b"\n")
        lines[number - 1] = lines[number - 1][: len(lines[number - 1]) // 2]
        (folder / rel).write_bytes(b"\n".join(lines))
    return edit


def remove(rel: str):
    def edit(folder):
        path = folder / rel
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return edit


def edit_json(rel: str, change):
    def edit(folder):
        data = json.loads((folder / rel).read_text(encoding="utf-8"))
        (folder / rel).write_text(json.dumps(change(data)), encoding="utf-8")
    return edit


def _set(data: dict, **fields) -> dict:
    return {**data, **fields}


def _drop(data: dict, key: str) -> dict:
    return {k: v for k, v in data.items() if k != key}


HUGE_HEADER = safetensors_bytes(b"{}", length=2 ** 60)
GARBAGE_HEADER = safetensors_bytes(b"not json at all!")
OUT_OF_RANGE = safetensors_bytes({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 4)
WRONG_NAMES = safetensors_bytes({"not.a.lora.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
                                b"\0" * 4)

CORRUPT_CHECKPOINT = "corrupt checkpoint"
CORRUPT_RECORD = "corrupt task-memory record"
CORRUPT_RESULTS = "results.json: corrupt results file"

RUN_CASES = [
    # the interrupted run, resumed with the same command
    case("resume-run-json-malformed", corrupt("interrupted", truncate("run.json")),
         "run.json: unreadable run metadata"),
    case("resume-run-json-not-an-object", corrupt("interrupted", put("run.json", "[1, 2]")),
         "run.json: unreadable run metadata (expected an object, found list)"),
    case("resume-run-json-other-fingerprint", corrupt("interrupted", edit_json(
        "run.json", lambda d: _set(d, fingerprint="0123456789"))), "interrupted: holds a run of a different config"),
    case("resume-run-json-other-data-digest", corrupt("interrupted", edit_json(
        "run.json", lambda d: _set(d, data_digest="0123456789abcdef"))), "interrupted: holds a run of this config on "
                                                                         "other data"),
    case("resume-results-json-truncated", corrupt("interrupted", truncate("results.json")), CORRUPT_RESULTS),
    case("resume-results-json-wrong-structure", corrupt("interrupted", put("results.json", '{"tasks": 3}')),
         CORRUPT_RESULTS + " (missing 'kinds')"),
    case("resume-progress-jsonl-torn-inside", corrupt("interrupted", tear_line("progress.jsonl", 2)),
         "progress.jsonl:2: malformed JSON line"),  # a torn last line is a crash's, and is dropped
    case("resume-checkpoint-state-malformed", corrupt("interrupted", truncate("checkpoint/state.json")),
         "checkpoint/state.json: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-state-missing-completed", corrupt("interrupted", edit_json(
        "checkpoint/state.json", lambda d: _drop(d, "completed"))),
         f"checkpoint/state.json: {CORRUPT_CHECKPOINT} (missing 'completed')"),
    case("resume-checkpoint-state-not-an-object", corrupt("interrupted", put("checkpoint/state.json", "[]")),
         "checkpoint/state.json: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-folder-missing", corrupt("interrupted", remove("checkpoint")),
         "checkpoint: checkpoint missing, but results.json records finished tasks"),
    case("resume-checkpoint-adapter-truncated", corrupt("interrupted", truncate("checkpoint/adapter.safetensors")),
         "checkpoint/adapter.safetensors: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-adapter-missing", corrupt("interrupted", remove("checkpoint/adapter.safetensors")),
         f"checkpoint/adapter.safetensors: {CORRUPT_CHECKPOINT} (No such file or directory)"),
    case("resume-checkpoint-adapter-huge-header-length",
         corrupt("interrupted", put("checkpoint/adapter.safetensors", HUGE_HEADER)),
         f"checkpoint/adapter.safetensors: {CORRUPT_CHECKPOINT} (Error while deserializing header: header too large)"),
    case("resume-checkpoint-adapter-garbage-header",
         corrupt("interrupted", put("checkpoint/adapter.safetensors", GARBAGE_HEADER)),
         f"checkpoint/adapter.safetensors: {CORRUPT_CHECKPOINT} (Error while deserializing header: invalid JSON"),
    case("resume-checkpoint-adapter-offsets-out-of-range",
         corrupt("interrupted", put("checkpoint/adapter.safetensors", OUT_OF_RANGE)),
         "checkpoint/adapter.safetensors: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-adapter-wrong-tensor-names",
         corrupt("interrupted", put("checkpoint/adapter.safetensors", WRONG_NAMES)),
         "checkpoint/adapter.safetensors: does not fit this run's model and method"),
    case("resume-checkpoint-method-state-truncated", corrupt("interrupted", truncate("checkpoint/method.safetensors")),
         "checkpoint/method.safetensors: " + CORRUPT_CHECKPOINT),
    case("resume-checkpoint-rng-garbage-header",
         corrupt("interrupted", put("checkpoint/rng.safetensors", GARBAGE_HEADER)),
         "checkpoint/rng.safetensors: " + CORRUPT_CHECKPOINT),
    case("resume-memory-record-missing", corrupt("interrupted", remove("memory/00-parity")),
         "memory/00-parity: task-memory record missing"),
    case("resume-memory-snapshot-truncated", corrupt("interrupted", truncate("memory/00-parity/snapshot.safetensors")),
         "00-parity/snapshot.safetensors: " + CORRUPT_RECORD),
    case("resume-memory-snapshot-huge-header-length",
         corrupt("interrupted", put("memory/00-parity/snapshot.safetensors", HUGE_HEADER)),
         "00-parity/snapshot.safetensors: " + CORRUPT_RECORD),
    case("resume-memory-snapshot-missing", corrupt("interrupted", remove("memory/00-parity/snapshot.safetensors")),
         f"00-parity/snapshot.safetensors: {CORRUPT_RECORD} (No such file or directory)"),
    case("resume-memory-signature-garbage-header",
         corrupt("interrupted", put("memory/00-parity/signature.safetensors", GARBAGE_HEADER)),
         "00-parity/signature.safetensors: " + CORRUPT_RECORD),
    case("resume-memory-record-json-malformed", corrupt("interrupted", truncate("memory/00-parity/record.json")),
         "00-parity/record.json: " + CORRUPT_RECORD),
    case("resume-memory-record-json-other-task", corrupt("interrupted", edit_json(
        "memory/00-parity/record.json", lambda d: _set(d, index=5, name="vowel"))),
         f"00-parity/record.json: {CORRUPT_RECORD} (it names task 5 'vowel', not task 0 'parity')"),
    case("resume-memory-replay-malformed-line", corrupt("interrupted", put("memory/00-parity/replay.jsonl", "{\n")),
         "00-parity/replay.jsonl: " + CORRUPT_RECORD),
    case("resume-memory-replay-wrong-fields", corrupt("interrupted", put("memory/00-parity/replay.jsonl",
                                                                         '{"q": "a"}\n')),
         "00-parity/replay.jsonl: " + CORRUPT_RECORD),
    # the finished run: the same command reports it, `tsr show` and `tsr table` read it
    case("rerun-finished-results-json-truncated", corrupt("finished", truncate("results.json")), CORRUPT_RESULTS),
    case("rerun-finished-run-json-malformed", corrupt("finished", put("run.json", "{")),
         "run.json: unreadable run metadata"),
    case("show-results-json-truncated", corrupt("finished", truncate("results.json"), "show"), CORRUPT_RESULTS),
    case("show-results-json-rows-too-short", corrupt("finished", edit_json(
        "results.json", lambda d: _set(d, acc=[[0.5]] * 3, loss=[[1.0]] * 3)), "show"),
         CORRUPT_RESULTS + " ('acc' must be a list of rows of 3 scores)"),
    case("show-results-json-kinds-missing", corrupt("finished", edit_json(
        "results.json", lambda d: _drop(d, "kinds")), "show"), CORRUPT_RESULTS + " (missing 'kinds')"),
    case("show-results-json-too-many-rows", corrupt("finished", edit_json(
        "results.json", lambda d: _set(d, acc=d["acc"] * 2, loss=d["loss"] * 2)), "show"),
         CORRUPT_RESULTS + " ('acc' and 'loss' must have the same number of rows, at most 3)"),
    case("show-results-json-unknown-kind", corrupt("finished", edit_json(
        "results.json", lambda d: _set(d, kinds=["classification", "poetry", "generation"])), "show"),
         CORRUPT_RESULTS + " ('kinds' must list"),
    case("table-results-json-non-numeric-score", corrupt("finished", edit_json(
        "results.json", lambda d: _set(d, acc=[["x"] * 3] * 3)), "table"),
         CORRUPT_RESULTS + " ('acc' holds 'x', which is not a score)"),
    case("table-config-yaml-malformed", corrupt("finished", put("config.yaml", "seed: 0\nmodel: {path: [\n"), "table"),
         "config.yaml:3: malformed YAML"),
    case("table-config-yaml-not-a-mapping", corrupt("finished", put("config.yaml", "- a\n- b\n"), "table"),
         "config.yaml: not a run config"),
    case("table-config-yaml-section-not-a-mapping", corrupt("finished", put("config.yaml", "model: qwen\n"), "table"),
         "config.yaml: not a run config"),
    case("table-config-yaml-python-tag", corrupt("finished", put(
        "config.yaml", "model: !!python/object/apply:os.system ['echo hi']\n"), "table"),
         "config.yaml:1: malformed YAML (could not determine a constructor"),
    case("table-config-yaml-not-utf8", corrupt("finished", put("config.yaml", b"seed: \xff\n"), "table"),
         "config.yaml:1: not UTF-8 text"),
]  # an interrupted run is not bad input for `tsr table`: it is listed apart (tests/interface/test_cli.py)


@pytest.mark.parametrize("build,fragment", RUN_CASES)
def test_bad_run_folder(build, fragment, built, tmp_path, capsys):
    refuse(capsys, tmp_path, build(built, tmp_path), fragment)


# -- `tsr show` / `tsr table` on folders that are not runs ------------------------------------------


def not_a_run(command: str, make):
    def build(env, tmp):
        return [command, str(make(tmp))]
    return build


def folder(rel: str, files: dict[str, str | bytes] | None = None):
    def make(tmp):
        (tmp / rel).mkdir(parents=True, exist_ok=True)
        for name, content in (files or {}).items():
            write(tmp / rel / name, content)
        return tmp / rel
    return make


NOT_A_RUN_CASES = [
    case("show-empty-folder", not_a_run("show", folder("empty")), "empty/results.json: no results.json"),
    case("show-missing-folder", not_a_run("show", lambda tmp: tmp / "none"), "none: no results.json"),
    case("show-plain-text-file", not_a_run("show", lambda tmp: write(tmp / "notes.txt", "hello\n")),
         "notes.txt: corrupt results file"),
    case("show-results-json-a-list", not_a_run("show", folder("r", {"results.json": "[1, 2]"})),
         "r/results.json: corrupt results file (expected an object, found list)"),
    case("show-results-json-not-utf8", not_a_run("show", folder("r", {"results.json": b"{\xff}"})),
         "r/results.json: corrupt results file ('utf-8' codec can't decode"),
    case("table-empty-folder", not_a_run("table", folder("empty")), "no runs under "),
    case("table-missing-folder", not_a_run("table", lambda tmp: tmp / "none"), "none: not a run directory"),
    case("table-plain-text-file", not_a_run("table", lambda tmp: write(tmp / "notes.txt", "hello\n")),
         "notes.txt: not a run directory"),
    case("table-folder-with-bad-results-json", not_a_run("table", folder("runs", {"x/results.json": "{"})),
         "x/results.json: corrupt results file"),
]


@pytest.mark.parametrize("build,fragment", NOT_A_RUN_CASES)
def test_not_a_run(build, fragment, tmp_path, capsys):
    refuse(capsys, tmp_path, build(None, tmp_path), fragment)
