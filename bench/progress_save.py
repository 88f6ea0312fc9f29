"""What a mid-task checkpoint costs: the time to save a task's progress, against a training step
and against the interval between saves (``train.checkpoint_minutes``, 10 by default).

Trains the first task of a config for ``--steps`` steps through the engine's own task loop
(:func:`tsr.engine.loop.train_on`) with a checkpoint policy that saves the progress after every
step into a scratch run folder (:mod:`tsr.engine.progress`: adapter, AdamW state, random
streams, method state, written atomically). Each save is timed on its own; a step's time is
the time between two steps minus the save in between. Both are medians, measured side by side
in one process. Reported: the progress folder's size, the median save and step, their ratio,
and the share of training time the saves take at the default interval (save / 600 s).

    python bench/progress_save.py                          # the bundled base, TSR, about 30 s
    python bench/progress_save.py --full-size --steps 4    # random Qwen2.5-0.5B (24 layers, 151936 vocab) on CPU
    python bench/progress_save.py method.name=agem train.batch_size=8

Nothing is downloaded. Run from the repository root (or with tsr installed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if (ROOT / "src" / "tsr").is_dir():
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "bench"))


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=21, help="training steps (a save after each but the last)")
    ap.add_argument("--full-size", action="store_true",
                    help="a random model of the full Qwen2.5-0.5B architecture (short prompts, batch 1)")
    ap.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    ap.add_argument("overrides", nargs="*", help="config overrides (default: the embedded default)")
    args = ap.parse_args(argv)

    import torch

    from tsr.config import load_config
    from tsr.engine.loop import train_on
    from tsr.engine.progress import Checkpoints, save_progress
    from tsr.engine.run import prepare

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="tsr-progress-") as tmp:
        tmp = Path(tmp)
        overrides = ["model.threads=1", f"train.steps={args.steps}", f"out_dir={tmp / 'runs'}"]
        preset = None
        if args.full_size:
            from gpu_stream import build_model, synthetic_stream

            stream = synthetic_stream(tmp / "data", 8, pool=60, test=4)
            texts = [json.loads(line)["prompt"] for line in (tmp / "data" / "count" / "train.jsonl").read_text().splitlines()]
            model, _ = build_model(tmp / "model", "full", None, texts)
            preset = "paper"
            overrides += [f"model.path={model}", f"stream.source={stream}", "train.batch_size=1", "stream.max_length=48",
                          "stream.budget=50", "stream.test_cap=4"]
        plan, spec = prepare(load_config(preset, overrides + list(args.overrides)))
        method = spec.build()
        method.setup(plan.learner)
        saves: list[float] = []
        stamps: list[float] = []
        run = tmp / "run"

        def timed_save(progress) -> None:
            start = time.perf_counter()
            save_progress(run, progress)
            saves.append(time.perf_counter() - start)

        def stamp(*_) -> None:
            stamps.append(time.perf_counter())

        points = Checkpoints(timed_save, minutes=1e-9, every=1)
        cfg = plan.cfg
        train_on(plan.learner, method, plan.stream[0], plan.train[0], cfg.train, seed=cfg.seed, index=0,
                 on_step=[stamp], checkpoints=points)
        size = folder_mb(run / "progress")
        # the step between two stamps holds the save taken after the first of them
        steps = [b - a - s for a, b, s in zip(stamps[1:-1], stamps[2:], saves[1:])]
        adapter = sum(p.numel() for p in plan.learner.adapter.trainable())
        report = {
            "model": "Qwen2.5-0.5B architecture, random weights" if args.full_size else str(cfg.model.path),
            "method": spec.name, "adapter_parameters": adapter, "progress_mb": round(size, 1),
            "saves": len(saves), "save_ms": round(1000 * statistics.median(saves[1:] or saves), 1),
            "step_ms": round(1000 * statistics.median(steps), 1),
        }
        report["save_over_step"] = round(report["save_ms"] / report["step_ms"], 3)
        report["share_at_10_min"] = f"{100 * report['save_ms'] / 1000 / 600:.4f}%"
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
