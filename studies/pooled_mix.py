"""Which part of the pool pulls uniform replay below the target data alone.

The budget sweep's ``pooled`` arm (uniform ER over every other task, half of the steps on
replay) scores far below the ``target`` arm from N = 50 on (docs/claims.md, C1 and C2). This
script trains, for one target at one budget, the pooled arm with parts of the pool left out
(each ``--drop``) and the target arm at half of ``train.steps`` (the target's share of the
steps in any 50/50 arm), beside the full pooled arm and the target arm, on each seed, and
prints each variant's accuracy and its difference from the target arm, paired by seed.
Every arm is saved under ``--out`` (one JSON each) and reused when the script runs again; the
target and full pooled arms are taken from the budget sweep's probe folder under ``out_dir``
when it holds them (the same training).

    python studies/pooled_mix.py --target stance --budget 100 --drop irony --drop summary,code,simplify \
        --seeds 0,1,2,3,4 --out /tmp/pooled-stance model.threads=1 out_dir=runs
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from tsr.atomic import write_json
from tsr.config import load_config
from tsr.experiments.probe.plan import Job, load_probe_stream, probe_dir
from tsr.experiments.probe.run import run_job
from tsr.model.learner import build_learner


def variants(names: list[str], target: str, drops: list[str]) -> dict[str, dict]:
    """name -> what to train: the target arm, the target arm at half the steps, the pooled arm
    over every other task, and one pooled arm per ``--drop`` (those tasks left out)."""
    others = tuple(n for n in names if n != target)
    out = {"target": {"arm": "target", "half": False}, "target, half the steps": {"arm": "target", "half": True},
           "pooled": {"arm": "pooled", "pool": others, "half": False}}
    for drop in drops:
        left = set(drop.split(","))
        unknown = left - set(others)
        if unknown:
            raise SystemExit(f"--drop: {sorted(unknown)[0]!r} is not another task of the stream ({', '.join(others)})")
        out[f"pooled without {drop}"] = {"arm": "pooled", "pool": tuple(n for n in others if n not in left), "half": False}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True)
    ap.add_argument("--budget", type=int, required=True, help="the target's examples N")
    ap.add_argument("--drop", action="append", default=[], help="comma-separated tasks left out of the pool (repeatable)")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--out", required=True)
    ap.add_argument("extra", nargs="*", help="key=value config overrides")
    args = ap.parse_args(argv)
    base = list(args.extra) + [f"stream.budget={args.budget}"]
    cfg = load_config(None, base)
    stream = load_probe_stream(cfg)
    if args.target not in stream.names:
        raise SystemExit(f"--target: {args.target!r} is not a task of {stream.name} ({', '.join(stream.names)})")
    plan = variants(stream.names, args.target, args.drop)
    seeds = [int(s) for s in args.seeds.split(",")]
    out = Path(args.out)
    learner = build_learner(cfg)  # the train steps are the run's, not the learner's
    acc: dict[str, dict[int, float]] = {v: {} for v in plan}
    for name, v in plan.items():
        for seed in seeds:
            path = out / f"{name.replace(' ', '_').replace(',', '')}__s{seed}.json"
            job = Job(args.target, v["arm"], seed, candidates=v.get("pool", ()))
            swept = probe_dir(cfg, stream) / "arms" / f"{job.key}.json"
            if not path.is_file() and not v["half"] and name in ("target", "pooled") and swept.is_file():
                write_json(path, {**json.loads(swept.read_text()), "variant": name, "steps": cfg.train.steps})
            if not path.is_file():
                steps = cfg.train.steps // 2 if v["half"] else cfg.train.steps
                run_cfg = load_config(None, base + [f"train.steps={steps}"])
                result = run_job(learner, run_cfg, stream, job, {})
                write_json(path, {**result, "variant": name, "steps": steps})
            acc[name][seed] = json.loads(path.read_text())["acc"]
            print(f"  {name} seed {seed}: {acc[name][seed]:.3f}", flush=True)
    print(f"\n{args.target}, N = {args.budget}, seeds {args.seeds}: accuracy (mean ± std) and the variant − target arm, "
          "paired by seed (mean ± se)\n")
    print("| variant | pool | accuracy | − target |\n|---|---|---|---|")
    for name, v in plan.items():
        xs = [acc[name][s] for s in seeds]
        d = [acc[name][s] - acc["target"][s] for s in seeds]
        sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
        se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else 0.0
        pool = ", ".join(v["pool"]) if "pool" in v else "-"
        diff = "" if name == "target" else f"{statistics.fmean(d):+.3f} ± {se:.3f}"
        print(f"| {name} | {pool} | {statistics.fmean(xs):.3f} ± {sd:.3f} | {diff} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
