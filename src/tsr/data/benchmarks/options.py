"""What every named benchmark builder shares: its options, its root folder, its task choice.

A builder registered in :data:`tsr.data.streams.BENCHMARKS` is called as
``build(root, options)``. It checks ``options`` against its own small dataclass (an unknown
key is an error naming ``stream.options.<key>``), checks that ``stream.root`` was given when it
reads from disk, and lets the user pick a subset of its tasks. The helpers here make those
three checks read the same in every builder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence, TypeVar

from ...errors import ConfigError
from ...schema import build

OPTIONS = "stream.options"
T = TypeVar("T")


def parse_options(cls: type[T], options: dict[str, Any] | None) -> T:
    """``options`` as an instance of dataclass ``cls``; errors name ``stream.options.<key>``."""
    return build(cls, dict(options or {}), OPTIONS)


def require_root(root: Path | None, benchmark: str, holds: str) -> Path:
    """The benchmark's data folder; a missing or wrong ``stream.root`` says what to set.

    ``holds`` describes what the folder must contain, e.g. "the TRACE task folders".
    """
    if root is None:
        raise ConfigError(f"config key 'stream.root': benchmark {benchmark!r} reads {holds} from disk; "
                          "set stream.root to that folder")
    root = Path(root).expanduser()
    if not root.is_dir():
        raise ConfigError(f"config key 'stream.root': {root} is not a folder (benchmark {benchmark!r} "
                          f"needs the folder holding {holds})")
    return root


def select_tasks(canonical: Sequence[str], wanted: Sequence[str] | None, benchmark: str,
                 key: str = "tasks") -> list[str]:
    """The tasks to load, in ``canonical`` order; ``wanted`` (if given) restricts them.

    Unknown or repeated names are errors listing the valid names. The order of ``wanted``
    does not matter: task order is the stream's business (``stream.order``).
    """
    if wanted is None:
        return list(canonical)
    if not wanted:
        raise ConfigError(f"config key '{OPTIONS}.{key}': must name at least one task of {benchmark!r}")
    for name in wanted:
        if name not in canonical:
            raise ConfigError(f"config key '{OPTIONS}.{key}': {benchmark!r} has no task {name!r} "
                              f"(valid: {', '.join(canonical)})")
    dupes = sorted({n for n in wanted if list(wanted).count(n) > 1})
    if dupes:
        raise ConfigError(f"config key '{OPTIONS}.{key}': task {dupes[0]!r} is listed twice")
    chosen = set(wanted)
    return [name for name in canonical if name in chosen]
