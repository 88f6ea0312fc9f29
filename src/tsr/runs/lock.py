"""One process per run folder and per learner folder: an exclusive lock on the folder itself.

A process that works on a run folder (``tsr run``, each point of ``tsr compare`` in a worker
process or a Ray actor, ``tsr learn`` on its learner's run) holds an exclusive ``flock`` on the
folder, a directory opened read-only, from before it writes anything there until it is done.
Taking it writes nothing, and the operating system drops it with the process, even under
``kill -9``, so a lock never outlives its holder. It belongs to the folder, not to a path in
the process's temporary folder, so two processes with different ``TMPDIR`` see the same lock.

A folder that does not exist yet is created (:func:`claim`'s ``make``) while its parent folder
(``out_dir``, or the folder holding a learner) is locked, and is locked itself before the
parent is let go: two processes never both create it, and the second one finds it locked. A
second process is refused with one line naming the folder and, where ``/proc/locks`` tells,
the holder's pid. Locks do not reach across machines (docs/cluster.md). Where the file system
does not support ``flock`` on a directory, nothing is locked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path
from typing import Callable, Iterator

from ..errors import RunError, reason

PARENT_WAIT = 30.0   # seconds to wait for a parent folder: others hold it only while they create a folder
UNSUPPORTED = (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF)


def holder(fd: int) -> int | None:
    """The pid holding a ``flock`` on the file of ``fd``, from ``/proc/locks`` (Linux); None
    where it cannot tell."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key:
            return int(fields[4]) if fields[4].isdigit() else None
    return None


def make_folder(path: Path, what: str = "folder") -> None:
    """Create ``path`` and its parents; what stops it (a file in the way, a read-only or full
    disk, no permission) is one line."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise RunError(f"{path}: exists and is not a folder; choose another {what}") from None
    except NotADirectoryError:
        raise RunError(f"{path}: a part of this path is a file, not a folder; choose another {what}") from None
    except OSError as err:
        raise RunError(f"{path}: cannot create the folder ({reason(err)})") from None


@contextlib.contextmanager
def folder_lock(path: Path, what: str, wait: float = 0.0, links: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on the folder ``path`` while the block runs; a second process gets
    one :class:`RunError` line naming ``what``, after trying for ``wait`` seconds. ``links``:
    whether ``path`` may be a symbolic link (a run folder may not: it is written through)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | (0 if links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP or (err.errno == errno.ENOTDIR and Path(path).is_symlink()):
            raise RunError(f"{path}: is a symbolic link; tsr writes a run folder only through plain folders "
                           "(use the folder it points to)") from None
        raise RunError(f"{path}: cannot open the folder ({reason(err)})") from None
    try:
        _lock(fd, what, wait)
        yield
    finally:
        os.close(fd)


def _lock(fd: int, what: str, wait: float) -> None:
    import fcntl

    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                pid = holder(fd)
                raise RunError(f"{what} is in use by another process{f' (pid {pid})' if pid else ''}; "
                               "wait for it to finish") from None
            time.sleep(0.05)
        except OSError as err:
            if err.errno in UNSUPPORTED:  # a file system without flock on folders: run unlocked
                return
            raise RunError(f"{what}: cannot lock it ({reason(err)})") from None


@contextlib.contextmanager
def claim(path: Path, what: str, make: Callable[[], None], parent_held: bool = False,
          parent_is: str = "folder") -> Iterator[None]:
    """Lock the folder ``path`` for the block, after ``make()`` (which creates it where it does not
    exist yet) has run under the parent folder's lock. ``parent_held``: the caller holds the
    parent's lock already (a learner's run inside its locked learner folder). ``parent_is``: what
    the parent is called in an error (``out_dir``)."""
    path = Path(path)
    make_folder(path.parent, parent_is)
    with contextlib.ExitStack() as stack:
        parent = contextlib.nullcontext() if parent_held else folder_lock(path.parent, f"folder {path.parent}",
                                                                           PARENT_WAIT)
        with parent:
            make()
            stack.enter_context(folder_lock(path, what, links=False))
        yield
