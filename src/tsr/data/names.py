"""Names that become one file or folder name: a run's ``name``, a stream's, a task's.

A run folder is ``out_dir/<name>`` (default ``<stream>-<method>-s<seed>-<fingerprint>``), so a
name with a path separator or a ``..`` would put files outside ``out_dir``. Such names are
refused where they enter: the config check (``name``), the stream and task constructors.
"""

from __future__ import annotations


def unsafe_reason(name: str) -> str | None:
    """Why ``name`` cannot be a single file name inside a folder, or None when it can."""
    if name in (".", ".."):
        return f"{name!r} names a folder itself"
    if "/" in name or "\\" in name:
        return f"{name!r} contains a path separator (it would place files outside the output folder)"
    if any(ord(c) < 32 for c in name):
        return f"{name!r} contains a control character"
    return None
