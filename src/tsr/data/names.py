"""Names that become one file or folder name: a run's ``name``, a stream's, a task's.

A run folder is ``out_dir/<name>`` (default ``<stream>-<method>-s<seed>-<fingerprint>``), so a
name with a path separator or a ``..`` would put files outside ``out_dir``. Such names are
refused where they enter: the config check (``name``), the stream and task constructors.

A name is also capped in length, so that every file name made from it fits the 255 bytes a
file system allows: a task's name appears twice in a probe arm's file name
(``<target>__mixed:<source>__s<seed>.json``) and with a prefix and a temporary suffix in the
run folder (``.after-NN-<task>.<random>.tmp``), so stream and task names may have at most
:data:`MAX_NAME_BYTES` bytes; a run folder's own name, at most :data:`MAX_RUN_NAME_BYTES`.
"""

from __future__ import annotations

import unicodedata

MAX_NAME_BYTES = 100        # a stream's or a task's name (UTF-8 bytes)
MAX_RUN_NAME_BYTES = 200    # a run folder's name
# control characters (tab, newline, escape, C1), formatting ones (right-to-left override,
# zero-width joiner) and line and paragraph separators: a name holding one shows as another
INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp"})


def _short(name: str) -> str:
    return repr(name) if len(name) <= 40 else repr(name[:37] + "...")


def unsafe_reason(name: str, limit: int = MAX_NAME_BYTES) -> str | None:
    """Why ``name`` cannot be a single file name inside a folder, or None when it can."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > limit:
        return f"{_short(name)} is {size} bytes long (at most {limit}: it becomes part of file names)"
    if name in (".", ".."):
        return f"{name!r} names a folder itself"
    if "/" in name or "\\" in name:
        return f"{name!r} contains a path separator (it would place files outside the output folder)"
    for char in name:
        kind = unicodedata.category(char)
        if kind == "Cs":  # what a byte that is not UTF-8 becomes in a command-line argument
            return f"{name!r} is not UTF-8 text (U+{ord(char):04X}: a byte that is not UTF-8, or a lone surrogate)"
        if kind in INVISIBLE:
            return (f"{name!r} contains a control or formatting character (U+{ord(char):04X}); a name is "
                    "printed and used as written, so it may hold none that moves, hides or reorders text")
    return None
