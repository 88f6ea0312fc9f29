"""Where tsr keeps what it fetches or converts: ``$TSR_CACHE``, else ``$XDG_CACHE_HOME/tsr``,
else ``~/.cache/tsr``. Nothing there is a result: deleting it only means fetching again."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_root() -> Path:
    if os.environ.get("TSR_CACHE"):
        return Path(os.environ["TSR_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "tsr"


def sha256_file(path: Path, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(block), b""):
            digest.update(chunk)
    return digest.hexdigest()
