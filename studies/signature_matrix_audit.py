"""Audit every signature against a transfer matrix written as markdown (docs/calibration.md's).

The 8-seed synth-trace matrix of docs/calibration.md took 2.5 h of probe arms; its arms are
not shipped, but its table is. This script reads that table (rows: sources, columns:
targets, ``mean ± se``), takes every signature at the shared initialisation of each seed on
the default config, and writes the audit (signatures.md/.csv/.json/.png) into ``--out``.

    python studies/signature_matrix_audit.py --seeds 0,1,2,3,4,5,6,7 --out /tmp/sig-audit
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from tsr.experiments.probe.report import designed_relations
from tsr.experiments.signatures.run import audit
from tsr.experiments.signatures.report import write_audit
from tsr.cl.signatures import signature_names
from tsr.config import load_config
from tsr.data.streams import load_stream
from tsr.model.learner import build_learner


def read_matrix(text: str) -> dict[str, dict[str, dict]]:
    """The first ``| source \\ target |`` table of ``text`` as ``matrix[target][source]``."""
    lines = text[text.index("| source \\ target |"):].splitlines()
    targets = [c.strip().replace(" (L)", "") for c in lines[0].strip("|").split("|")[1:]]
    matrix: dict[str, dict[str, dict]] = {t: {} for t in targets}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for t, cell in zip(targets, cells[1:]):
            m = re.match(r"\**([+\-−][\d.]+) ± ([\d.]+)", cell)
            if m:
                matrix[t][cells[0]] = {"mean": float(m.group(1).replace("−", "-")), "se": float(m.group(2)), "n": 8}
    return matrix


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matrix", default=str(Path(__file__).parents[1] / "docs" / "calibration.md"))
    ap.add_argument("--seeds", default="0,1,2,3,4,5,6,7")
    ap.add_argument("--signatures", default="all")
    ap.add_argument("--out", required=True)
    ap.add_argument("extra", nargs="*", help="key=value config overrides (default: the default preset)")
    args = ap.parse_args(argv)
    cfg = load_config(None, list(args.extra))
    stream = load_stream(cfg.stream.source, cfg.stream.root, cfg.stream.options, cfg.stream.order, cfg.seed)
    matrix = read_matrix(Path(args.matrix).read_text())
    seeds = [int(s) for s in args.seeds.split(",")]
    report = audit(build_learner(cfg), cfg, stream, seeds, matrix, signature_names(args.signatures), 10,
                   designed_relations(cfg.stream.source, cfg.stream.options))
    write_audit(Path(args.out), report, stream.names, title=f"signature audit · {stream.name} · {len(seeds)} seeds")
    print((Path(args.out) / "signatures.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
