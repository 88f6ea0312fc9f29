"""How much a run's numbers depend on its thread count, with and without torch's deterministic
algorithms, side by side in one command.

The same TSR run over the first tasks of synth-trace (default preset: the bundled base, eager
blocks) is trained at 1 and at 2 torch threads, once with ``torch.use_deterministic_algorithms``
off (tsr's default) and once on, each run in a fresh process. The report gives, per mode, the
largest relative difference between the two thread counts' logged step losses and the
accuracies after the last task. A mode that made the thread count irrelevant would show 0.

    python studies/thread_rounding.py                # 2 tasks x 150 steps
    python studies/thread_rounding.py --steps 300 --tasks 3
    python studies/thread_rounding.py model.compile=true   # the compiled blocks instead
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tsr.data.synth.streams import SYNTH_TRACE


def one(deterministic: bool, overrides: list[str]) -> dict:
    """Run the stream once in this process (the child's side): step losses and accuracies."""
    import torch

    from tsr.config import load_config
    from tsr.engine.run import execute

    torch.use_deterministic_algorithms(deterministic)
    with tempfile.TemporaryDirectory() as out:
        outcome = execute(load_config(None, [f"out_dir={out}", *overrides]), None)
        losses = [e["loss"] for e in map(json.loads, (Path(outcome.run.path) / "progress.jsonl").open())
                  if e["event"] == "steps"]
        return {"losses": losses, "acc": outcome.results.acc[-1],
                "deterministic": torch.are_deterministic_algorithms_enabled()}


def spawn(deterministic: bool, threads: int, common: list[str]) -> dict:
    args = [sys.executable, __file__, "--one", "on" if deterministic else "off", f"model.threads={threads}", *common]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--tasks", type=int, default=2, help="first tasks of synth-trace to use")
    ap.add_argument("--one", choices=("on", "off"), help=argparse.SUPPRESS)
    ap.add_argument("extra", nargs="*", help="more key=value config overrides")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one == "on", args.extra)))
        return 0
    names = [t.name for t in SYNTH_TRACE.tasks][: args.tasks]
    common = [f"train.steps={args.steps}", f"stream.order=[{', '.join(names)}]", "model.compile=false",
              "method.name=tsr", *args.extra]
    blocks = "compiled" if "model.compile=true" in args.extra else "eager"
    print(f"TSR on {args.tasks} synth-trace tasks x {args.steps} steps (bundled base, {blocks}), 1 against 2 threads")
    for deterministic in (False, True):
        a, b = spawn(deterministic, 1, common), spawn(deterministic, 2, common)
        assert a["deterministic"] is b["deterministic"] is deterministic
        gap = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a["losses"], b["losses"]))
        same = a["losses"] == b["losses"] and a["acc"] == b["acc"]
        acc = "; ".join(", ".join(f"{v:.3f}" if v is not None else "-" for v in r["acc"]) for r in (a, b))
        print(f"  deterministic {'on ' if deterministic else 'off'}: largest step-loss gap {gap:.2e} over "
              f"{len(a['losses'])} logged steps, {'bit for bit equal' if same else 'not equal'}; "
              f"accuracy 1 thread | 2 threads: {acc.replace('; ', ' | ')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
