"""The task memory: one record per finished task, written once and never updated.

A record holds the task's signature (if its method computed one), its replay data and the
adapter snapshot taken when the task ended. On disk a record is a folder of plain files:
``record.json``, ``replay.jsonl``, ``snapshot.safetensors`` and ``signature.safetensors``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import torch
from safetensors import SafetensorError

from ..atomic import listed_checksums, read_tensors, replace_dir, temp_dir, write_json, write_jsonl, write_tensors
from ..data.example import Example
from ..errors import RunError, reason
from ..model.adapter import State
from .sig_pack import pack, unpack


@dataclass(frozen=True)
class TaskRecord:
    index: int
    name: str
    kind: str
    signature: Any  # a tensor, or any signature kind (tsr.cl.sig_pack); None when the method took none
    replay: tuple[Example, ...]
    snapshot: State


class TaskMemory:
    """Append-only list of :class:`TaskRecord`, indexed by task position in the stream."""

    def __init__(self) -> None:
        self._records: list[TaskRecord] = []

    def add(self, record: TaskRecord) -> None:
        if record.index != len(self._records):
            raise ValueError(f"record for task {record.index} added after {len(self._records)} records")
        self._records.append(record)

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> TaskRecord:
        return self._records[index]

    def __iter__(self) -> Iterator[TaskRecord]:
        return iter(self._records)

    @property
    def signatures(self) -> list[Any]:
        return [r.signature for r in self._records]


def record_dir(root: Path, index: int, name: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return Path(root) / f"{index:02d}-{safe}"


def save_record(root: Path, record: TaskRecord) -> Path:
    """Write a record folder atomically (a crash leaves no half-written record)."""
    final = record_dir(root, record.index, record.name)
    tmp = temp_dir(final)
    try:
        write_jsonl(tmp / "replay.jsonl", [e.record() for e in record.replay])
        sha256 = {"snapshot.safetensors": write_tensors(tmp / "snapshot.safetensors", record.snapshot)}
        if record.signature is not None:
            sha256["signature.safetensors"] = write_tensors(tmp / "signature.safetensors", pack(record.signature))
        write_json(tmp / "record.json", {"index": record.index, "name": record.name, "kind": record.kind,
                                         "replay_examples": len(record.replay),
                                         "has_signature": record.signature is not None, "sha256": sha256})
        replace_dir(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return final


def load_record(folder: Path, device: torch.device | str = "cpu") -> TaskRecord:
    """The record in ``folder``, its tensor files checked against the checksums ``record.json``
    lists; what is missing, damaged or malformed is one :class:`RunError` line naming the file."""
    current = folder / "record.json"  # the file being read, for the error
    try:
        meta = json.loads(current.read_text(encoding="utf-8"))
        index, name, kind, sha256 = int(meta["index"]), str(meta["name"]), str(meta["kind"]), listed_checksums(meta)
        current = folder / "replay.jsonl"
        replay = tuple(Example(**json.loads(line)) for line in
                       current.read_text(encoding="utf-8").splitlines() if line.strip())
        current = folder / "snapshot.safetensors"
        snapshot = {k: v.to(device) for k, v in read_tensors(current, sha256.get(current.name)).items()}
        current = folder / "signature.safetensors"
        signature = unpack(read_tensors(current, sha256.get(current.name))) if current.is_file() else None
        if signature is None and current.name in sha256:
            raise FileNotFoundError("its record lists it")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, SafetensorError) as err:
        raise RunError(f"{current}: corrupt task-memory record ({reason(err)})") from None
    return TaskRecord(index, name, kind, signature, replay, snapshot)


def load_snapshot(folder: Path) -> State:
    """The snapshot of the record in ``folder`` alone, checked against the checksum its
    ``record.json`` lists; raises ``OSError``, ``ValueError`` (damaged) or ``SafetensorError``."""
    meta = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    return read_tensors(folder / "snapshot.safetensors", listed_checksums(meta).get("snapshot.safetensors"))


def load_memory(root: Path, names: list[str], device: torch.device | str = "cpu") -> TaskMemory:
    """The records of the first ``len(names)`` tasks, checked against their names."""
    memory = TaskMemory()
    for index, name in enumerate(names):
        folder = record_dir(root, index, name)
        if not folder.is_dir():
            raise RunError(f"{folder}: task-memory record missing; the run directory is incomplete")
        record = load_record(folder, device)
        if (record.index, record.name) != (index, name):
            raise RunError(f"{folder / 'record.json'}: corrupt task-memory record (it names task {record.index} "
                           f"{record.name!r}, not task {index} {name!r})")
        memory.add(record)
    return memory
