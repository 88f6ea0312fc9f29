"""The C12 grid's ledger: the finished runs' records, kept in the repository so that a grid
outlives the machine it runs on.

A run folder holds tensors (snapshots, checkpoints) of megabytes; what its tables are read from
is three small files: ``config.yaml``, ``run.json`` (fingerprint, data digest, machine) and
``results.json`` (the matrices every metric is computed from). ``harvest`` appends those three
of each finished run under ``OUT_ROOT`` to ``LEDGER`` (one JSON line a run); ``restore`` writes
them back as run folders, so ``tsr audit orders ... --report-only`` reads every finished run and
the grid does not train them again.

  python docs/measurements/ledger.py harvest OUT_ROOT LEDGER
  python docs/measurements/ledger.py restore OUT_ROOT LEDGER
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

FILES = ("config.yaml", "run.json", "results.json")


def finished(folder: Path) -> bool:
    try:
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return len(results.get("acc", [])) == len(results.get("tasks", [None]))


def known(ledger: Path) -> set[str]:
    if not ledger.is_file():
        return set()
    return {json.loads(line)["path"] for line in ledger.read_text(encoding="utf-8").splitlines() if line.strip()}


def harvest(root: Path, ledger: Path) -> int:
    seen, lines = known(ledger), []
    for results in sorted(root.glob("*/*/results.json")):
        folder = results.parent
        path = str(folder.relative_to(root))
        if path in seen or not finished(folder) or not all((folder / f).is_file() for f in FILES):
            continue
        lines.append(json.dumps({"path": path, **{f: (folder / f).read_text(encoding="utf-8") for f in FILES}}))
    if lines:
        with ledger.open("a", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
            fh.flush()
            os.fsync(fh.fileno())
    return len(lines)


def restore(root: Path, ledger: Path) -> int:
    n = 0
    for line in ledger.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        folder = root / rec["path"]
        if folder.exists():
            continue
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
        for f in FILES:
            (tmp / f).write_text(rec[f], encoding="utf-8")
        tmp.rename(folder)
        n += 1
    return n


if __name__ == "__main__":
    verb, root, ledger = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    print(f"{verb}: {(harvest if verb == 'harvest' else restore)(root, ledger)} run(s)")
