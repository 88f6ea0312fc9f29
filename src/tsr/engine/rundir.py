"""The run directory: resolved config, progress log, task memory, checkpoints, results.

Layout::

    <run>/config.yaml          the resolved config (its fingerprint names the run)
    <run>/run.json             fingerprint, stream tasks, method, seed, tsr version
    <run>/progress.jsonl       one JSON event per line (task starts, step losses, scores)
    <run>/memory/NN-<task>/    the task memory records
    <run>/predictions/         with eval.predictions: the greedy answers of each scoring round
    <run>/checkpoint/          adapter, method state and RNG state after the last finished task
    <run>/results.json         the results matrices, written after every task

Every file is written atomically; the checkpoint folder is replaced as a whole, so a crash
at any point leaves either the previous or the next consistent state.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError

from ..version import __version__
from ..atomic import (SELF, append_jsonl, check_seal, read_tensors, remove_leftovers, replace_dir, required_checksums,
                      sealed, temp_dir, write_json, write_tensors, write_text, writing)
from ..data.records import parse_jsonl_lines, read_jsonl
from ..errors import RunError, TsrError, reason
from ..methods.base import MethodState
from ..runs.folders import refuse_links
from ..runs.results import Results, load_results

# run.json's "checksums": 2 says that every manifest of the run is sealed (tsr.atomic.sealed) and its
# replay data checksummed; a run made before (no such key) reads them unchecked where they are absent
CHECKSUMS = 2
CHECKPOINT_FILES = ("adapter.safetensors", "method.safetensors", "rng.safetensors")


@dataclass
class Checkpoint:
    completed: int
    adapter: dict[str, torch.Tensor]
    method: MethodState
    torch_rng: torch.Tensor
    results: Results


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path)

    @property
    def memory_root(self) -> Path:
        return self.path / "memory"

    @property
    def predictions_root(self) -> Path:
        return self.path / "predictions"

    @property
    def results_path(self) -> Path:
        return self.path / "results.json"

    def exists(self) -> bool:
        return (self.path / "run.json").is_file()

    def meta(self) -> dict[str, Any]:
        try:
            meta = json.loads((self.path / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise RunError(f"{self.path / 'run.json'}: unreadable run metadata ({err})") from None
        if not isinstance(meta, dict):
            raise RunError(f"{self.path / 'run.json'}: unreadable run metadata (expected an object, "
                           f"found {type(meta).__name__})")
        return meta

    def sealed_format(self) -> bool:
        """Whether the run records a seal on every manifest and the replay data's checksums (made
        by a version that does): then a missing one is a refusal, not an unchecked read."""
        try:
            return self.meta().get("checksums", 1) >= CHECKSUMS
        except (RunError, TypeError):
            return True  # unreadable or odd run.json: the strict reading (its own error comes where it is read)

    def verify(self, fingerprint: str, data_digest: str | None = None) -> None:
        meta = self.meta()
        found = meta.get("fingerprint")
        if found != fingerprint:
            raise RunError(f"{self.path}: holds a run of a different config (fingerprint {found}, "
                           f"this config {fingerprint}); set `name=` or `out_dir=` to start a new run")
        # runs made before the digest was recorded cannot be checked
        recorded = meta.get("data_digest")
        if data_digest is not None and recorded is not None and recorded != data_digest:
            raise RunError(f"{self.path}: holds a run of this config on other data (the stream's examples "
                           f"changed since: data digest {recorded}, now {data_digest}); set `name=` or "
                           "`out_dir=` to start a new run")

    def create(self, config_yaml: str, meta: dict[str, Any]) -> None:
        """Create the run directory with its config and metadata, as a whole: it is built
        under a temporary name and renamed into place, so a kill leaves either no run
        directory or one that resumes."""
        if self.path.exists() and not self.path.is_dir():
            raise RunError(f"{self.path}: exists and is not a folder; choose another name")
        if self.path.exists() and any(self.path.iterdir()):
            raise RunError(f"{self.path}: exists and is not a tsr run directory; choose another name")
        remove_leftovers(self.path.parent, self.path.name)  # an earlier create of this run, killed
        tmp = temp_dir(self.path)
        try:
            write_text(tmp / "config.yaml", config_yaml)
            write_json(tmp / "run.json", {**meta, "tsr_version": __version__, "checksums": CHECKSUMS,
                                          "created": time.strftime("%Y-%m-%dT%H:%M:%S")})
            with writing(self.path):
                if self.path.exists():
                    self.path.rmdir()  # empty (checked above)
                os.rename(tmp, self.path)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)

    def check_links(self) -> None:
        """Refuse a run folder with a symbolic or hard link inside: a resume writes through it."""
        refuse_links(self.path, "run folder")

    def remove_leftovers(self) -> None:
        """Remove what a killed write left in the run directory (temporary files and folders,
        a replaced checkpoint's previous version): called when a resume takes the run over."""
        for folder in (self.path, self.path / "memory", self.predictions_root):
            remove_leftovers(folder)
        for legacy in self.path.glob(".checkpoint.????????"):  # temp folders of earlier versions
            if legacy.is_dir():
                shutil.rmtree(legacy)

    def log(self, event: str, **fields: Any) -> None:
        append_jsonl(self.path / "progress.jsonl", {"time": round(time.time(), 3), "event": event, **fields})

    def write_results(self, results: Results) -> None:
        write_json(self.results_path, results.to_dict())

    def is_finished(self) -> bool:
        if not self.results_path.is_file():
            return False
        return load_results(self.results_path).finished

    # -- checkpoints -----------------------------------------------------------------------
    def save_checkpoint(self, completed: int, adapter: dict[str, torch.Tensor], method: MethodState,
                        results: Results) -> None:
        final = self.path / "checkpoint"
        tmp = temp_dir(final)
        try:
            sha256 = {"adapter.safetensors": write_tensors(tmp / "adapter.safetensors", adapter),
                      "method.safetensors": write_tensors(tmp / "method.safetensors", method.tensors),
                      "rng.safetensors": write_tensors(tmp / "rng.safetensors", {"torch_cpu": torch.get_rng_state()})}
            write_json(tmp / "state.json", sealed({"completed": completed, "method_meta": method.meta,
                                                   "results": results.to_dict(), "sha256": sha256}))
            replace_dir(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)

    def load_checkpoint(self) -> Checkpoint | None:
        """The checkpoint to resume from (None: no task finished yet). Everything a resume reads
        or appends to is checked here, before the run directory is written to."""
        checkpoint, keep = self.read_checkpoint()
        self._drop_torn_tail(keep)
        return checkpoint

    def read_checkpoint(self) -> tuple[Checkpoint | None, int | None]:
        """:meth:`load_checkpoint`'s checks and checkpoint, writing nothing; with the length a
        resume cuts the log back to (None: the log stays whole)."""
        keep = self._check_log()
        folder = self.path / "checkpoint"
        if not folder.is_dir():
            old = self.path / ".checkpoint.old"
            if not old.is_dir():
                if self.results_path.is_file():  # tasks finished, but what they left is gone
                    raise RunError(f"{folder}: checkpoint missing, but results.json records finished tasks; "
                                   "delete the run directory to start over")
                return None, keep
            folder = old  # a crash interrupted the swap: the previous checkpoint is intact
        current = folder / "state.json"  # the file being read, for the error
        try:
            state = json.loads(current.read_text(encoding="utf-8"))
            results = Results.from_dict(state["results"])
            completed, method_meta = int(state["completed"]), state["method_meta"]
            sha256 = required_checksums(state, CHECKPOINT_FILES)
            current = folder / "adapter.safetensors"
            adapter = read_tensors(current, sha256.get(current.name))
            current = folder / "method.safetensors"
            method = MethodState(read_tensors(current, sha256.get(current.name)), method_meta)
            current = folder / "rng.safetensors"
            rng = read_tensors(current, sha256.get(current.name))["torch_cpu"]
            current = folder / "state.json"
            check_seal(state, self.sealed_format() or SELF in state)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, SafetensorError) as err:
            raise RunError(f"{current}: corrupt checkpoint ({reason(err)}); delete the run directory to start "
                           "over") from None
        return Checkpoint(completed, adapter, method, rng, results), keep

    def final_adapter(self) -> tuple[Path, dict[str, torch.Tensor]]:
        """(file, tensors) of the adapter after the last finished task, checked against the
        checksum its checkpoint lists. Read through the checkpoint folder as one opened folder, so
        a checkpoint another process replaces meanwhile (a learner learning on) is read whole.
        Missing or damaged is one :class:`RunError` line naming the file."""
        for name in ("checkpoint", ".checkpoint.old"):  # .old: a kill during the swap
            folder = self.path / name
            try:
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            except FileNotFoundError:
                continue
            current = folder / "state.json"
            try:
                with open(os.open("state.json", os.O_RDONLY, dir_fd=fd), encoding="utf-8") as fh:
                    state = json.load(fh)
                sha256 = required_checksums(state, ["adapter.safetensors"])
                check_seal(state, self.sealed_format() or SELF in state)
                current = folder / "adapter.safetensors"
                return current, read_tensors(current.name, sha256.get(current.name), dir_fd=fd)
            except (OSError, ValueError, TypeError, AttributeError, SafetensorError) as err:
                raise RunError(f"{current}: corrupt or damaged adapter checkpoint ({reason(err)})") from None
            finally:
                os.close(fd)
        raise RunError(f"{self.path}: no task has finished yet (no checkpoint/adapter.safetensors)")

    def _check_log(self) -> int | None:
        """A resume appends to progress.jsonl. A last line without its newline is what a crash
        during a log write leaves: the length to cut the log back to is returned, and the
        resume drops that tail once every other check has passed (the checkpoint, not the log,
        holds the completed work). Any other broken line is an error, not a log with a broken
        line in the middle."""
        log = self.path / "progress.jsonl"
        if not log.is_file():
            return None
        data = log.read_bytes()
        keep = data.rfind(b"\n") + 1 if data and not data.endswith(b"\n") else None
        try:
            parse_jsonl_lines(data[:keep] if keep is not None else data, log)
        except TsrError as err:
            raise RunError(f"{err}; repair or delete that line to resume") from None
        return keep

    def _drop_torn_tail(self, keep: int | None) -> None:
        if keep is not None:
            with open(self.path / "progress.jsonl", "r+b") as fh:
                fh.truncate(keep)
                os.fsync(fh.fileno())


def phase_seconds(folder: Path) -> dict[str, float]:
    """Seconds per phase summed over the finished tasks of a run's log (the last ``task_end``
    of each task, so a task redone after an interruption counts once); empty for a log
    written before phases were recorded."""
    log = Path(folder) / "progress.jsonl"
    if not log.is_file():
        return {}
    last: dict[int, dict[str, float]] = {}
    try:
        events = read_jsonl(log)
    except TsrError:
        return {}  # a damaged log costs the phase summary, not the results
    for _, event in events:
        if isinstance(event, dict) and event.get("event") == "task_end" and isinstance(event.get("phases"), dict):
            last[int(event["task"])] = event["phases"]
    totals: dict[str, float] = {}
    for phases in last.values():
        for name, seconds in phases.items():
            totals[name] = totals.get(name, 0.0) + float(seconds)
    return totals


def method_meta(folder: Path) -> dict[str, Any]:
    """What the method recorded about itself in the last checkpoint (``MethodState.meta``:
    e.g. A-GEM's projected steps per task, O-LoRA's pairs); empty when the run has no
    checkpoint or it cannot be read (the results do not depend on it)."""
    state = Path(folder) / "checkpoint" / "state.json"
    try:
        meta = json.loads(state.read_text()).get("method_meta")
    except (OSError, ValueError, AttributeError):
        return {}
    return meta if isinstance(meta, dict) else {}


def task_snapshot(path: Path, task: str | None = None) -> tuple[str, dict[str, torch.Tensor]]:
    """(task name, adapter snapshot) a run saved when ``task`` ended (default: its last finished
    task), read from its task memory; a folder that is not a run, an unknown or unfinished task is
    one :class:`ConfigError` line."""
    from ..cl.memory import load_record, record_dir
    from ..errors import ConfigError

    run = RunDir(Path(path))
    if not run.exists():
        raise ConfigError(f"{path}: not a run directory (no run.json)")
    tasks = [str(t) for t in run.meta().get("tasks") or []]
    done = [i for i, name in enumerate(tasks) if record_dir(run.memory_root, i, name).is_dir()]
    if task is not None and task not in tasks:
        raise ConfigError(f"{path}: no task {task!r} in this run (tasks: {', '.join(tasks)})")
    index = tasks.index(task) if task is not None else (done[-1] if done else None)
    if index is None or index not in done:
        raise ConfigError(f"{path}: {'task ' + repr(task) if task else 'no task'} has not finished yet "
                          "(no task-memory record)")
    return tasks[index], load_record(record_dir(run.memory_root, index, tasks[index]),
                                     sealed_format=run.sealed_format()).snapshot
