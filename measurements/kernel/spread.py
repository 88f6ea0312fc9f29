"""The reproducibility floor of a single cell: the same ER and TSR runs (synth-numglue, greedy
order, seeds 0-4, bundled base, 1 thread, one AMD EPYC machine) on two kernel paths, compiled
blocks (measurements/c12/machine-check.jsonl) against eager ones (measurements/kernel/eager.jsonl,
made by measurements/kernel/grid.sh), paired by seed.

    python measurements/kernel/spread.py      # from the repository root; prints Markdown
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
COMPILED, EAGER = HERE.parent / "c12" / "machine-check.jsonl", HERE / "eager.jsonl"
GREEDY = ["ng1-word", "ng2-equation", "ng5-passage", "ng8-sum", "ng7-words", "ng6-nli", "ng4-missing", "ng3-compare"]
METRICS = ("overall", "plas", "bwt")


def runs(ledger: Path) -> dict[tuple[str, int], dict]:
    """(method, seed) -> (metrics, machine) of the finished greedy-order runs in a ledger."""
    out = {}
    for line in ledger.open(encoding="utf-8"):
        rec = json.loads(line)
        cfg, run = yaml.safe_load(rec["config.yaml"]), json.loads(rec["run.json"])
        if cfg["stream"]["order"] == GREEDY and cfg["stream"]["source"] == "synth-numglue":
            out[(run["method"], cfg["seed"])] = (json.loads(rec["results.json"])["metrics"], run["machine"])
    return out


def main() -> None:
    compiled, eager = runs(COMPILED), runs(EAGER)
    print("| method | metric | compiled, mean ± sd | eager, mean ± sd | eager − compiled, mean ± se | "
          "largest \\|diff\\| of one seed | seeds |")
    print("|---|---|---|---|---|---|---|")
    for method in ("er", "tsr"):
        seeds = sorted(s for m, s in compiled if m == method and (m, s) in eager)
        for metric in METRICS:
            a = [compiled[(method, s)][0][metric] for s in seeds]
            b = [eager[(method, s)][0][metric] for s in seeds]
            d = [y - x for x, y in zip(a, b)]
            se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
            sd = lambda v: statistics.stdev(v) if len(v) > 1 else float("nan")  # noqa: E731
            print(f"| {method} | {metric} | {statistics.fmean(a):.3f} ± {sd(a):.3f} | {statistics.fmean(b):.3f} ± "
                  f"{sd(b):.3f} | {statistics.fmean(d):+.3f} ± {se:.3f} | {max(abs(x) for x in d):.3f} | "
                  f"{','.join(map(str, seeds))} |")
    kinds = {json.dumps(m, sort_keys=True) for _, m in list(compiled.values()) + list(eager.values())}
    print("\nmachines:", "; ".join(sorted(kinds)))


if __name__ == "__main__":
    main()
