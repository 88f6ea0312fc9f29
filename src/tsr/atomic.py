"""Crash-safe file writes: write to a temporary sibling, fsync, then rename.

A reader never sees a half-written file, so an interrupted run leaves either the old or the
new version of every file it was writing. What a kill can leave besides is recognisable by
name and removed by :func:`remove_leftovers` when the owner of the folder next writes to it:
temporary files and folders (``.<name>.<random>.tmp``) and a replaced folder's previous
version (``.<name>.old``) once ``<name>`` is in place.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import RunError, reason


@contextlib.contextmanager
def writing(path: Path):
    """What the operating system refuses while the block writes ``path`` (a full or read-only
    disk, no permission, a file where a folder should be) as one :class:`RunError` line naming
    ``path``; the atomic writers below leave the previous version in place."""
    try:
        yield
    except OSError as err:
        raise RunError(f"{err.filename or path}: cannot write ({reason(err)})") from None


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a saved file gets the usual mode
        os.close(fd)
        tmp_path = Path(tmp)
        try:
            write(tmp_path)
            os.chmod(tmp_path, 0o666 & ~_umask())  # again: some writers (safetensors) replace the file
            with open(tmp_path, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp_path, path)
        finally:
            if tmp_path.exists():
                tmp_path.unlink()


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once, at import: os.umask can only be read by setting it


def _umask() -> int:
    return _UMASK


def strict(obj: Any) -> Any:
    """``obj`` with every float that JSON cannot hold (NaN, infinities) as None (null)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    return obj


def temp_dir(final: Path) -> Path:
    """A fresh temporary folder beside ``final`` to build it in (then :func:`replace_dir`)."""
    final = Path(final)
    with writing(final.parent):
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; the folder keeps the usual mode
    return tmp


def remove_leftovers(folder: Path, name: str | None = None) -> list[Path]:
    """Remove what an interrupted write left in ``folder`` (not below it): temporary files and
    folders, and ``.<x>.old`` where ``<x>`` exists; with ``name``, only those of ``<name>``.
    Returns what was removed. Only the process that owns ``folder`` may call this."""
    folder, removed = Path(folder), []
    if not folder.is_dir():
        return removed
    for entry in folder.iterdir():
        n = entry.name
        if not n.startswith(".") or (name is not None and not n.startswith(f".{name}.")):
            continue
        stale = n.endswith(".tmp") or (n.endswith(".old") and (folder / n[1:-4]).exists())
        if stale:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
            removed.append(entry)
    return removed


def settle(folder: Path) -> None:
    """Sync every file under ``folder`` and give it the usual mode: for a folder that other
    libraries' writers filled (they neither sync nor keep the umask's mode), before it is
    renamed into place."""
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file() and not path.is_symlink():
            os.chmod(path, 0o666 & ~_umask())
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())


def write_text(path: Path, text: str) -> None:
    _atomic(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_bytes(path: Path, data: bytes) -> None:
    _atomic(path, lambda p: p.write_bytes(data))


def write_json(path: Path, obj: Any) -> None:
    """Strict JSON: a NaN or infinite number is written as null."""
    write_text(path, json.dumps(strict(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def write_jsonl(path: Path, rows: list[dict]) -> None:
    write_text(path, "".join(json.dumps(strict(r), ensure_ascii=False, allow_nan=False) + "\n" for r in rows))


def write_torch(path: Path, obj: Any) -> None:
    """``torch.save(obj)`` atomically (a checkpoint of plain containers, tensors and numbers)."""
    import torch  # here, not at the top: what reads run folders without training loads no torch

    _atomic(path, lambda p: torch.save(obj, p))


def write_figure(path: Path, fig: Any, dpi: int = 120) -> Path:
    """Save a matplotlib figure as PNG and close it."""
    import matplotlib.pyplot as plt

    try:
        _atomic(path, lambda p: fig.savefig(p, dpi=dpi, format="png"))
    finally:
        plt.close(fig)
    return Path(path)


def write_tensors(path: Path, tensors: dict[str, "torch.Tensor"], metadata: dict | None = None) -> str:
    """Save tensors as safetensors (contiguous CPU copies; never pickle); returns the file's
    SHA-256 (hex), for the record or manifest that lists it (:func:`read_tensors` checks it)."""
    flat = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    from safetensors.torch import save

    data = save(flat, metadata=metadata)
    _atomic(path, lambda p: p.write_bytes(data))
    return hashlib.sha256(data).hexdigest()


def listed_checksums(manifest: dict) -> dict[str, str]:
    """The SHA-256 of each tensor file a state or record file lists (its ``sha256``: file name ->
    hex digest; empty for one written before checksums were recorded)."""
    found = manifest.get("sha256", {})
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise ValueError("'sha256' must map file names to hex digests")
    return found


def required_checksums(manifest: dict, names: Iterable[str]) -> dict[str, str]:
    """:func:`listed_checksums`, where each of ``names`` must be listed: a format that records
    a file's SHA-256 never reads it unchecked because the entry was removed."""
    found = listed_checksums(manifest)
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"no SHA-256 recorded for {missing[0]} (its 'sha256' entry is missing)")
    return found


SELF = "self_sha256"  # the key of a JSON manifest's digest of its own content


def _content_digest(obj: dict) -> str:
    body = {k: v for k, v in json.loads(json.dumps(strict(obj), allow_nan=False)).items() if k != SELF}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sealed(obj: dict) -> dict:
    """``obj`` with :data:`SELF`, the SHA-256 of the rest of it as canonical JSON: what
    :func:`check_seal` checks, so an edited value (a step, a count) is seen, not only edited bytes
    of the tensor files the manifest lists."""
    return {**obj, SELF: _content_digest(obj)}


def check_seal(obj: dict, required: bool) -> None:
    """Raise ``ValueError`` when ``obj`` (a JSON manifest as read) is not as :func:`sealed` wrote
    it; without a seal, only when ``required`` (a format that records it)."""
    if SELF not in obj:
        if required:
            raise ValueError(f"no {SELF} recorded (the checksum of its content is missing)")
        return
    if obj[SELF] != _content_digest(obj):
        raise ValueError("edited: its content differs from the checksum recorded when it was written")


def read_tensors(path: Path, sha256: str | None = None, dir_fd: int | None = None) -> dict[str, "torch.Tensor"]:
    """The tensors of a safetensors file, each a copy of its own (never a view of the file), after
    checking the file against the SHA-256 recorded for it (None: a file saved before checksums
    were recorded). ``dir_fd``: ``path`` is relative to this open folder. Raises ``OSError``,
    ``SafetensorError``, or ``ValueError`` for a file whose bytes are not those recorded."""
    fd = os.open(path, os.O_RDONLY, dir_fd=dir_fd)
    with open(fd, "rb") as fh:
        data = fh.read()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError("damaged: its SHA-256 differs from the one recorded when it was written")
    # clones: tensors viewing a buffer may be unaligned, and CPU kernels can then round differently,
    # which would break the bitwise equality of resumed runs
    from safetensors.torch import load

    return {k: v.clone() for k, v in load(data).items()}


def replace_dir(src: Path, dst: Path) -> None:
    """Move a fully written directory into place, replacing ``dst`` if present."""
    dst = Path(dst)
    old = dst.with_name(f".{dst.name}.old")
    with writing(dst):
        if old.exists():
            shutil.rmtree(old)
        if dst.exists():
            os.replace(dst, old)
        os.replace(src, dst)
        if old.exists():
            shutil.rmtree(old)


def append_jsonl(path: Path, row: dict) -> None:
    """Append one line to a log, never through a symbolic or hard link. Each line is written with a
    single write call."""
    path = Path(path)
    line = (json.dumps(strict(row), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        try:
            if os.fstat(fd).st_nlink > 1:  # a hard link: the line would land in another path's file too
                raise RunError(f"{path}: is a hard link (another path names the same file); tsr appends only to "
                               "a file of its own (replace it with a copy)")
            while line:  # a write cut short by a full disk is followed by one that fails
                line = line[os.write(fd, line):]
            os.fsync(fd)
        finally:
            os.close(fd)
