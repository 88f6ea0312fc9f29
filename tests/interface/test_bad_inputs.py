"""A corpus of bad inputs: every one is refused by the real CLI with one line and exit 2.

Each case builds one bad input in its own temporary folder (a config file, an override, a
stream file, a JSONL or TRACE / NumGLUE / PP15 / SuperNI data file, a synthetic generator
config, a corrupted copy of a real run folder, a folder that is not a run) and runs ``tsr``
in-process through ``tsr.interface.cli.main``. This module holds the config and data cases,
``test_bad_run_folders.py`` the run-folder cases (symbolic links and damaged tensor files among
them), ``test_bad_learners.py`` bad ``tsr learn`` and ``tsr predict`` calls and learner folders
someone sent, ``test_disk_faults.py`` full and read-only disks (which also resume afterwards),
``test_export.py`` bad ``tsr export`` calls, ``tests/badinputs.py`` what they share.
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

import pytest

import badinputs
from badinputs import GOOD, case, jsonl, refuse, run_args, write

built = badinputs.built  # the module-scoped fixture: the toy stream and two real runs

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


def model_without_tokenizer(env, tmp):
    """The bundled base copied without its tokenizer files: every text would encode to nothing."""
    import shutil

    from tsr.model.backbone import bundled_path

    shutil.copytree(bundled_path(), tmp / "model", ignore=shutil.ignore_patterns("tokenizer*"))
    return run_args(env, tmp, f"model.path={tmp / 'model'}")


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
    case("config-wrong-type-scalar-for-method-section", overrides("method=tsr_need"),
         "config key 'method': expected a mapping with a name, found str (to choose a method: method.name=tsr_need on "
         "the command line, method: {name: tsr_need} in a file)"),
    case("config-wrong-type-scalar-for-method-section-in-file", config_file("method: tsr_need\n"),
         "config key 'method': expected a mapping, found str 'tsr_need', under which 'method.probe_batches' is set "
         "(to choose a method: method.name=tsr_need on the command line, method: {name: tsr_need} in a file)"),
    case("config-wrong-type-scalar-section-then-sub-key", config_file("stream: 3\n"),
         "config key 'stream': expected a mapping, found int 3, under which 'stream.source' is set"),
    case("config-sub-key-of-a-scalar-override", overrides("seed.x=1"), "config key 'seed'"),
    case("config-wrong-type-list-for-method-section", overrides("method=[1]"),
         "config key 'method': expected a mapping with a name, found list"),
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
    case("usage-compare-workers-zero", lambda env, tmp: ["compare", "--workers", "0"],
         "tsr compare: argument --workers: must be at least 1, got 0"),
    case("usage-option-without-its-value", lambda env, tmp: ["compare", "--seeds"],
         "tsr compare: argument --seeds: expected one argument"),
    case("usage-unknown-flag", lambda env, tmp: ["table", str(tmp), "--bogus"], "unrecognized arguments: --bogus"),
    case("usage-unknown-command", lambda env, tmp: ["nope"], "invalid choice: 'nope'"),
    case("usage-no-command", lambda env, tmp: [], "name a command, one of: run, table, learn,"),
    case("config-name-escapes-out-dir", escaping_name, "config key 'name': '../../x' contains a path separator"),
    case("model-folder-without-tokenizer", model_without_tokenizer,
         "model: the tokenizer encodes text to nothing (no vocabulary: a model folder needs its tokenizer files"),
    case("out-dir-is-a-file", lambda env, tmp: run_args(env, tmp, f"out_dir={write(tmp / 'out', 'a file')}"),
         "out: exists and is not a folder; choose another out_dir"),
    case("out-dir-under-a-file", lambda env, tmp: run_args(env, tmp, f"out_dir={write(tmp / 'out', 'x')}/runs"),
         "out/runs: a part of this path is a file, not a folder; choose another out_dir"),
    case("config-run-name-too-long", overrides("name=" + "r" * 240), "config key 'name': '" + "r" * 37 + "...' is 240 bytes long (at most 200"),
    case("config-command-run-name-too-long", config_cmd("name=" + "r" * 240), "config key 'name': "),
    case("config-command-task-name-too-long", lambda env, tmp: [
        "config", f"stream.source={write(tmp / 's.yaml', 'tasks:' + chr(10) + ENTRY.replace('name: a', 'name: ' + 't' * 240))}"],
         "tasks[0]: task name '" + "t" * 37 + "...' is 240 bytes long (at most 100"),
    # a default run name can no longer pass 200 bytes (a 100-byte stream name, a built-in method's, a 19-digit
    # seed and the fingerprint make 148 at most): the seed it took to make one is refused itself
    case("config-command-seed-of-190-digits", config_cmd("stream.source=synth-trace", "seed=" + "9" * 190),
         "config key 'seed': must be between 0 and 9223372036854775807"),
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
    case("stream-file-task-name-too-long", stream_file("tasks:\n" + ENTRY.replace("name: a", "name: " + "t" * 250),
                                                       OK_FILES), "task name '" + "t" * 37 + "...' is 250 bytes"),
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
    # record shapes of JSONL task files (docs/streams.md)
    case("jsonl-unknown-record-shape", jsonl_task(jsonl([{"question": "q", "label": "a"}])),
         "train.jsonl:1: unknown record shape (keys: label, question)"),
    case("jsonl-mixed-record-shapes", jsonl_task(jsonl([GOOD[0], {"prompt": "p", "completion": " a"}])),
         "train.jsonl:2: a completion record {prompt, completion} in a file of prompt/answer records"),
    case("jsonl-ambiguous-record", jsonl_task(jsonl([{"instruction": "i", "output": "o", "messages": []}])),
         "train.jsonl:1: ambiguous record"),
    case("jsonl-chat-last-turn-not-assistant",
         jsonl_task(jsonl([{"messages": [{"role": "user", "content": "hi"}]}])),
         "train.jsonl:1: the last turn must be the assistant's"),
    case("jsonl-alpaca-missing-output", jsonl_task(jsonl([{"instruction": "i", "output": "o"}, {"instruction": "i"}])),
         "train.jsonl:2: missing 'output'"),
    case("stream-file-label-outside-labels", stream_file("tasks:\n" + ENTRY.replace("}", ", labels: ['yes']}"),
                                                         OK_FILES), "tasks[0] (a): training example 1 has the answer ' no'"),
    case("stream-file-hf-folder-missing", stream_file("tasks:\n  - {name: a, kind: generation, format: hf, path: none}\n"),
         "none: dataset folder not found"),
    case("stream-file-hf-without-path-or-hub", stream_file("tasks:\n  - {name: a, kind: generation, format: hf}\n"),
         "tasks[0]: format 'hf' needs exactly one of 'path'"),
    # TRACE folders (stream.source=trace8)
    case("trace-root-not-a-folder", benchmark("trace8", {}, root="bench/none"), "config key 'stream.root'"),
    case("trace-root-without-task-folders", trace({"other/x.json": "[]"}), "no TRACE task folders"),
    case("trace-missing-train-json", trace({"FOMC/test.json": TRACE_OK}), "FOMC/train.json: split 'train'"),
    case("trace-missing-test-json", trace({"FOMC/train.json": TRACE_OK}), "FOMC/test.json: split 'test'"),
    case("trace-several-missing-listed-at-once",
         benchmark("trace8", {"FOMC/train.json": TRACE_OK, "MeetingBank/eval.json": TRACE_OK,
                              "MeetingBank/test.json": TRACE_OK, "C-STANCE/train.json": TRACE_OK},
                   "stream.options.tasks=[C-STANCE, FOMC, MeetingBank, Py150]", root="LLM-CL-Benchmark_500"),
         "LLM-CL-Benchmark_500: 4 TRACE files and folders not found (C-STANCE/test.json, FOMC/test.json, "
         "MeetingBank/train.json, Py150/); TRACE's 500-example release has no MeetingBank/train.json; set "
         "stream.options.missing_train=eval to train MeetingBank on eval.json instead; leave the tasks out"),
    case("trace-5000-missing-train-gets-no-500-hint",
         benchmark("trace8", {"MeetingBank/eval.json": TRACE_OK, "MeetingBank/test.json": TRACE_OK},
                   "stream.options.tasks=[MeetingBank]", root="LLM-CL-Benchmark_5000"),
         "MeetingBank/train.json: split 'train' of TRACE task 'MeetingBank' not found; set "
         "stream.options.missing_train=eval to train MeetingBank on eval.json instead; leave the tasks out"),
    case("trace-5000-missing-train-without-substitute",
         benchmark("trace8", {"FOMC/test.json": TRACE_OK}, "stream.options.tasks=[FOMC]", root="LLM-CL-Benchmark_5000"),
         "FOMC/train.json: split 'train' of TRACE task 'FOMC' not found; leave the tasks out with "
         "stream.options.tasks, or point stream.root at a complete TRACE folder"),
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
