"""Crash-safe file writes: write to a temporary sibling, fsync, then rename.

A reader never sees a half-written file, so an interrupted run leaves either the old or the
new version of every file it was writing. What a kill can leave besides is recognisable by
name and removed by :func:`remove_leftovers` when the owner of the folder next writes to it:
temporary files and folders (``.<name>.<random>.tmp``) and a replaced folder's previous
version (``.<name>.old``) once ``<name>`` is in place.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch
from safetensors.torch import save_file


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    path = Path(path)
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


def write_figure(path: Path, fig: Any, dpi: int = 120) -> Path:
    """Save a matplotlib figure as PNG and close it."""
    import matplotlib.pyplot as plt

    try:
        _atomic(path, lambda p: fig.savefig(p, dpi=dpi, format="png"))
    finally:
        plt.close(fig)
    return Path(path)


def write_tensors(path: Path, tensors: dict[str, torch.Tensor], metadata: dict | None = None) -> None:
    """Save tensors as safetensors (contiguous CPU copies; never pickle)."""
    flat = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    _atomic(path, lambda p: save_file(flat, str(p), metadata=metadata))


def replace_dir(src: Path, dst: Path) -> None:
    """Move a fully written directory into place, replacing ``dst`` if present."""
    dst = Path(dst)
    old = dst.with_name(f".{dst.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if dst.exists():
        os.replace(dst, old)
    os.replace(src, dst)
    if old.exists():
        shutil.rmtree(old)


def append_jsonl(path: Path, row: dict) -> None:
    """Append one line to a log. Each line is written with a single write call."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(strict(row), ensure_ascii=False, allow_nan=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


@contextlib.contextmanager
def held(path: Path, what: str):
    """Hold an exclusive lock on ``path`` (created if needed) while the block runs, so two
    processes never work on the same thing at once; a second one gets one ``RunError`` line
    naming ``what`` and the holder's pid. The operating system releases the lock when the
    holder exits, even by ``kill -9``, so a stale lock file never blocks anything. Where
    ``fcntl`` does not exist (Windows), nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on the platforms tsr is tested on
        yield
        return
    from .errors import RunError

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="ignore").strip()
            raise RunError(f"{what} is in use by another process{f' (pid {holder})' if holder else ''}; "
                           "wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)
