"""The task memory: one record per finished task, written once and never updated.

A record holds the task's signature (if its method computed one), its replay data and the
adapter snapshot taken when the task ended. On disk a record is a folder of plain files:
``record.json``, ``replay.jsonl``, ``snapshot.safetensors`` and ``signature.safetensors``.
``record.json`` lists the SHA-256 of the other three and is sealed (:func:`tsr.atomic.sealed`),
so an edited answer in the replay data or an edited field is refused on load, not trained on.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import torch
from safetensors import SafetensorError

from ..atomic import (SELF, check_seal, listed_checksums, read_tensors, replace_dir, required_checksums, sealed, strict,
                      temp_dir, write_bytes, write_json, write_tensors)
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
        replay = "".join(json.dumps(strict(e.record()), ensure_ascii=False, allow_nan=False) + "\n"
                         for e in record.replay).encode("utf-8")
        write_bytes(tmp / "replay.jsonl", replay)
        sha256 = {"replay.jsonl": hashlib.sha256(replay).hexdigest(),
                  "snapshot.safetensors": write_tensors(tmp / "snapshot.safetensors", record.snapshot)}
        if record.signature is not None:
            sha256["signature.safetensors"] = write_tensors(tmp / "signature.safetensors", pack(record.signature))
        write_json(tmp / "record.json", sealed({"index": record.index, "name": record.name, "kind": record.kind,
                                                "replay_examples": len(record.replay),
                                                "has_signature": record.signature is not None, "sha256": sha256}))
        replace_dir(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return final


def load_record(folder: Path, device: torch.device | str = "cpu", sealed_format: bool = False,
                expect: tuple[int, str] | None = None) -> TaskRecord:
    """The record in ``folder``, its files checked against the checksums ``record.json`` lists and
    ``record.json`` against its seal; what is missing, damaged, edited or malformed is one
    :class:`RunError` line naming the file. ``sealed_format``: the run records the seal and the
    replay data's checksum (a run made before they were recorded reads them unchecked where absent).
    ``expect``: the (index, name) the record must name."""
    current = folder / "record.json"  # the file being read, for the error
    try:
        meta = json.loads(current.read_text(encoding="utf-8"))
        index, name, kind, sha256 = int(meta["index"]), str(meta["name"]), str(meta["kind"]), listed_checksums(meta)
        sealed_format = sealed_format or SELF in meta  # a sealed record lists every checksum
        if expect is not None and (index, name) != expect:
            raise ValueError(f"it names task {index} {name!r}, not task {expect[0]} {expect[1]!r}")
        listed = [*(["replay.jsonl"] if sealed_format else []), "snapshot.safetensors",
                  *(["signature.safetensors"] if (folder / "signature.safetensors").is_file() else [])]
        required_checksums(meta, listed)  # a checksum this format records is never skipped for being removed
        current = folder / "replay.jsonl"
        data = _checked_bytes(current, sha256.get(current.name))
        replay = tuple(Example(**json.loads(line)) for line in data.decode("utf-8").splitlines() if line.strip())
        current = folder / "snapshot.safetensors"
        snapshot = {k: v.to(device) for k, v in read_tensors(current, sha256.get(current.name)).items()}
        current = folder / "signature.safetensors"
        signature = unpack(read_tensors(current, sha256.get(current.name))) if current.is_file() else None
        if signature is None and current.name in sha256:
            raise FileNotFoundError("its record lists it")
        current = folder / "record.json"
        check_seal(meta, sealed_format)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, SafetensorError) as err:
        raise RunError(f"{current}: corrupt task-memory record ({reason(err)})") from None
    return TaskRecord(index, name, kind, signature, replay, snapshot)


def _checked_bytes(path: Path, sha256: str | None) -> bytes:
    data = path.read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError("damaged or edited: its SHA-256 differs from the one recorded when it was written")
    return data


def load_snapshot(folder: Path, sealed_format: bool = False) -> State:
    """The snapshot of the record in ``folder`` alone, checked against the checksum its
    ``record.json`` lists (and that file against its seal); raises ``OSError``, ``ValueError``
    (damaged, edited, or no checksum recorded) or ``SafetensorError``."""
    meta = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    check_seal(meta, sealed_format)
    sha256 = required_checksums(meta, ["snapshot.safetensors"])
    return read_tensors(folder / "snapshot.safetensors", sha256["snapshot.safetensors"])


def load_memory(root: Path, names: list[str], device: torch.device | str = "cpu",
                sealed_format: bool = False) -> TaskMemory:
    """The records of the first ``len(names)`` tasks, checked against their names (and, with
    ``sealed_format``, each against its seal and every checksum: :func:`load_record`)."""
    memory = TaskMemory()
    for index, name in enumerate(names):
        folder = record_dir(root, index, name)
        if not folder.is_dir():
            raise RunError(f"{folder}: task-memory record missing; the run directory is incomplete")
        memory.add(load_record(folder, device, sealed_format, (index, name)))
    return memory
