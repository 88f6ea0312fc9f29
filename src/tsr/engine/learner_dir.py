"""A persistent learner: one folder that learns one task per call, for as long as it is used.

The folder holds

    learner.yaml          the learner's config (model, LoRA, method, training), fixed at creation
    stream.yaml           the tasks learnt so far, in order (a stream file, docs/streams.md)
    tasks/NN-<name>/      each task's data as it was given (train.jsonl, test.jsonl)
    run/                  an ordinary run folder (docs/rundir.md): task memory, snapshots,
                          checkpoint, results of every task so far

Learning a task appends it to the stream file and continues the run (:func:`execute` with
``grow``): TSR probes the new task, routes over the tasks the folder already knows, replays
their stored data and distils against their snapshots, exactly as a stream run would at that
task. A learner that learnt A, B, C one call at a time holds the adapter, task memory and
routing of a stream run of A, B, C with the same config and seed (tested bit for bit); its
results matrix has, in addition, the cells each call scored as the last task of the stream so
far (every task learnt, after every call).

Everything of a call is checked before the folder changes: a bad data file, a task name
already learnt, a config that differs from the learner's, a learner edited or damaged since
(its config against its run, the stored data, the checkpoint, the task memory) leave it as it
was.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

import yaml

from ..atomic import remove_leftovers, replace_dir, temp_dir, write_jsonl, write_text, writing
from ..config import RunConfig, dump_yaml, load_config
from ..cl.memory import load_memory
from ..data.example import Stream, TaskKind
from ..data.jsonl import examples_from_jsonl
from ..data.names import unsafe_reason
from ..data.records import read_yaml
from ..errors import ConfigError, RunError
from ..data.streams import load_stream
from ..runs.lock import claim, make_folder
from .run import Outcome, check_stream, draw_data, execute, portable_fingerprint
from ..runs.folders import refuse_links
from .rundir import RunDir

CONFIG, STREAM, TASKS, RUN = "learner.yaml", "stream.yaml", "tasks", "run"
# a classification task's answers are labels: few distinct values, each used more than once
MAX_LABELS = 20


def _yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _learnt(folder: Path) -> list[dict]:
    """The task entries of the learner's stream file (empty for a new learner)."""
    path = folder / STREAM
    if not path.is_file():
        return []
    data = read_yaml(path, RunError) or {}
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in tasks):
        raise RunError(f"{path}: not a learner's stream file (no list of tasks with names)")
    return tasks


def infer_kind(answers: Sequence[str]) -> TaskKind:
    """Classification when the answers are labels: at most ``MAX_LABELS`` distinct values and
    each used at least twice on average; generation otherwise."""
    distinct = {a.strip() for a in answers}
    labels = len(distinct) <= MAX_LABELS and len(answers) >= 2 * len(distinct)
    return TaskKind.CLASSIFICATION if labels else TaskKind.GENERATION


def learner_config(folder: Path, items: Sequence[str], trust_remote_code: bool = False) -> RunConfig:
    """The learner's config: made on the first call from ``items`` (a preset name or config
    file, then ``key=value`` overrides; a model other than the bundled base gets the paper's
    settings unless a preset says otherwise), read back afterwards; a later call may repeat the
    overrides but not change them. A config that runs the model's own code
    (``model.trust_remote_code``) needs the caller's ``trust_remote_code``."""
    saved = folder / CONFIG
    named = [i for i in items if "=" not in i]
    if len(named) > 1:
        raise ConfigError(f"more than one config given ({named[0]!r} and {named[1]!r})")
    overrides = [i for i in items if "=" in i]
    fixed = ["out_dir=" + str(folder), "name=" + RUN, "stream.source=" + str(folder / STREAM)]
    if named and saved.is_file():
        raise ConfigError(f"{saved}: this learner exists; its config is fixed at creation (drop {named[0]!r})")
    if not saved.is_file():
        cfg = load_config(named[0] if named else None, [*overrides, *fixed])
    else:
        data = read_yaml(saved, ConfigError)
        if not isinstance(data, dict):
            raise ConfigError(f"{saved}: empty or not a mapping of config keys; this learner's config is lost "
                              "(restore the file, or use a new folder)")
        model = data.get("model")
        if isinstance(model, dict) and model.get("trust_remote_code") is True:
            if not trust_remote_code:
                raise _untrusted(saved, model.get("path"))
            fixed.append("model.trust_remote_code=true")  # the caller's flag, not the file, turns it on
        cfg = load_config(str(saved), fixed)
        if overrides and load_config(str(saved), [*overrides, *fixed]) != cfg:
            raise ConfigError(f"{saved}: this learner was made with another config; its model, method and "
                              "settings are fixed at creation (run `tsr learn` without key=value overrides, "
                              "or use a new folder)")
    if cfg.model.trust_remote_code and not trust_remote_code:
        raise _untrusted("model.trust_remote_code=true", cfg.model.path)
    return cfg


def _untrusted(where: object, path: object) -> ConfigError:
    return ConfigError(f"{where}: this learner's model runs its own code (model.trust_remote_code: true); pass "
                       f"--trust-remote-code if you trust the code of {path}")


def learn(folder: Path, train: Path, test: Path | None = None, name: str | None = None,
          kind: str | None = None, overrides: Sequence[str] = (), report=None,
          trust_remote_code: bool = False) -> Outcome:
    """Learn one more task in the learner ``folder`` (created on first use) from ``train``: a
    JSONL file (scored on ``test``; default: ``train`` itself), a folder with ``train.jsonl``
    and ``test.jsonl``, or ``BENCHMARK:TASK`` (a task of a bundled benchmark, e.g.
    ``synth-trace:stance``). Returns the run's outcome. ``trust_remote_code``: the learner's
    config may run the model's own code. The folder is locked (:mod:`tsr.runs.lock`) before it
    is read or written: a second call on it while one runs is refused and changes nothing."""
    with tempfile.TemporaryDirectory(prefix="tsr-task-") as scratch:
        task = _benchmark_task(str(train), Path(scratch)) if not Path(train).exists() else None
        if task is not None:  # BENCHMARK:TASK, e.g. synth-trace:stance
            train, test = task[0], task[1]
            name, kind = name or task[2], kind or task[3]
        call = Call(Path(folder), Path(train), test, name, kind, tuple(overrides), trust_remote_code)
        return _learn(call, report)


def _benchmark_task(spec: str, scratch: Path) -> tuple[Path, Path, str, str] | None:
    """``BENCHMARK:TASK`` (a task of a bundled or registered benchmark) as train and test
    files written to ``scratch``, its name and kind; None when ``spec`` is not of that form."""
    bench, sep, task_name = spec.partition(":")
    if not sep or not bench or not task_name or "/" in bench:
        return None
    stream = load_stream(bench)
    if task_name not in stream.names:
        raise ConfigError(f"{spec}: {bench} has no task {task_name!r} (tasks: {', '.join(stream.names)})")
    task = stream.tasks[stream.names.index(task_name)]
    files = []
    for split, examples in (("train", task.pool), ("test", task.test)):
        files.append(scratch / f"{split}.jsonl")
        write_jsonl(files[-1], [e.record() for e in examples])
    return files[0], files[1], task.name, task.kind.value


@dataclasses.dataclass
class Call:
    """One ``tsr learn`` call: the learner, the task's data, name and kind, the overrides."""

    folder: Path
    train: Path
    test: Path | None
    name: str | None
    kind: str | None
    overrides: tuple[str, ...]
    trust: bool

    def __post_init__(self) -> None:
        if self.train.is_dir():  # a task folder: train.jsonl and test.jsonl
            self.train, self.test = self.train / "train.jsonl", self.test or self.train / "test.jsonl"
        self.test = Path(self.test) if self.test is not None else self.train
        self.name = self.name or (self.train.parent.name if self.train.name == "train.jsonl" else self.train.stem)


def _learn(call: Call, report) -> Outcome:
    folder = call.folder
    if unsafe_reason(call.name):
        raise ConfigError(f"--name: {unsafe_reason(call.name)}")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder")
    if not folder.is_dir():
        _plan(call)  # a new learner: everything is checked before its folder is made
    with claim(folder, f"learner {folder}", lambda: make_folder(folder, "learner folder")):
        refuse_links(folder, "learner folder")
        cfg, entries, entry = _plan(call)  # read again: the folder is this call's now
        if entry is not None:
            _add_task(call, cfg, entries, entry)
        return execute(cfg, report, grow=True, parent_held=True)


def _plan(call: Call) -> tuple[RunConfig, list[dict], dict | None]:
    """The learner's config, the tasks it has learnt, and the new task's stream entry (None: the
    task is being learnt already, a call killed before it finished): every check a run of the
    grown stream makes, before the folder changes."""
    folder, name = call.folder, call.name
    if folder.is_dir() and any(folder.iterdir()) and not (folder / CONFIG).is_file():
        raise ConfigError(f"{folder}: not a tsr learner (no {CONFIG}); use an empty or new folder")
    cfg = learner_config(folder, call.overrides, call.trust)
    entries = _learnt(folder)
    _check_run(cfg, folder)
    done = RunDirState(folder).completed()
    names = [e["name"] for e in entries]
    if name in names[:done]:
        raise ConfigError(f"task {name!r} is already learnt by {folder} (tasks: {', '.join(names[:done])}); "
                          "give another --name")
    if names[done:] and names[done:] != [name]:
        raise RunError(f"{folder}: task {names[done]!r} was being learnt when the last call stopped; "
                       f"learn it again (`tsr learn {folder} ... --name {names[done]}`) to finish it first")
    train_examples, _ = examples_from_jsonl(call.train)
    examples_from_jsonl(call.test)  # every record of both files is checked before anything is written
    if name in names:
        return cfg, entries, None
    task_kind = TaskKind(call.kind) if call.kind else infer_kind([e.answer for e in train_examples])
    entry = {"name": name, "kind": task_kind.value, "format": "jsonl"}
    _check(cfg, folder, entries + [{**entry, "train": str(call.train.resolve()), "test": str(call.test.resolve())}])
    return cfg, entries, entry


def _check_run(cfg: RunConfig, folder: Path) -> None:
    """What the learner's run checks when it goes on (its config, the data of the tasks it
    learnt, its checkpoint and task memory), before the folder changes: an edited or damaged
    learner is refused whole, not after the new task has been added to it."""
    run = RunDir(folder / RUN)
    if not run.exists():
        return
    meta, fingerprint = run.meta(), portable_fingerprint(cfg)
    if meta.get("fingerprint") != fingerprint:
        raise RunError(f"{folder / CONFIG}: is not the config the learner's run was made with (fingerprint "
                       f"{fingerprint}, {RUN}/run.json records {meta.get('fingerprint')}); restore it")
    stream, known = check_stream(cfg), list(meta.get("tasks") or [])
    if stream.names[: len(known)] != known:
        raise RunError(f"{folder / STREAM}: lists the tasks {stream.names}, but the learner's run learnt "
                       f"{known} in that order; restore it")
    digest = Stream(stream.name, stream.tasks[: len(known)]).digest()
    if meta.get("data_digest") not in (None, digest):
        raise RunError(f"{folder / TASKS}: the data of the tasks learnt ({', '.join(known)}) changed since they "
                       f"were learnt (data digest {meta.get('data_digest')}, now {digest}); restore it")
    checkpoint, _ = run.read_checkpoint()
    if checkpoint is not None:
        load_memory(run.memory_root, known[: checkpoint.completed], sealed_format=run.sealed_format())


def _add_task(call: Call, cfg: RunConfig, entries: list[dict], entry: dict) -> None:
    """A new task: the learner's config (first call), the task's data, then the longer stream
    file, each written whole. What a killed call left (a data folder the stream file does not
    list, temporary files) is replaced."""
    folder = call.folder
    for where in (folder, folder / TASKS):
        remove_leftovers(where)
    if not (folder / CONFIG).is_file():
        write_text(folder / CONFIG, dump_yaml(cfg))
    data = folder / TASKS / f"{len(entries) + 1:02d}-{call.name}"
    tmp = temp_dir(data)
    try:
        with writing(tmp):
            shutil.copyfile(call.train, tmp / "train.jsonl")
            shutil.copyfile(call.test, tmp / "test.jsonl")
        replace_dir(tmp, data)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    rel = data.relative_to(folder).as_posix()
    entries = [*entries, {**entry, "train": f"{rel}/train.jsonl", "test": f"{rel}/test.jsonl"}]
    write_text(folder / STREAM, _yaml({"name": "learner", "tasks": entries}))


def _check(cfg: RunConfig, folder: Path, entries: list[dict]) -> None:
    """Every check a run of the grown stream makes before training (the data files, the
    stream, the budget against each pool, the method's needs), on a stream file written
    outside the learner's folder."""
    with tempfile.TemporaryDirectory(prefix="tsr-learn-") as tmp:
        absolute = [{**e, **{k: str((folder / e[k]).resolve()) for k in ("train", "test")}} for e in entries]
        spec = Path(tmp) / STREAM
        write_text(spec, _yaml({"name": "learner", "tasks": absolute}))
        trial = dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, source=str(spec)))
        draw_data(trial, check_stream(trial))


class RunDirState:
    """How many tasks the learner's run has finished (0 for a new learner)."""

    def __init__(self, folder: Path):
        self.results = Path(folder) / RUN / "results.json"

    def completed(self) -> int:
        if not self.results.is_file():
            return 0
        from ..runs.results import load_results

        return load_results(self.results).completed
