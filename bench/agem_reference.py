"""A-GEM's reference gradient with the memory batch sorted by length against the drawn order.

A-GEM (``tsr.methods.agem``) computes, at every step from the second task on, the gradient of
the training loss on a memory batch (256 examples by default), in chunks of 16. Sorting the
batch by length before cutting it into chunks pads each chunk only to its own longest example;
the gradient is the same sum over answer tokens. This script draws memory batches the way a
run does (uniformly, without replacement, from 100 replay examples of each past task of
``synth-trace``), warms both paths up on one batch (the compiled blocks meet their shapes),
times both paths interleaved in one process (CPU time of the main thread, one
torch thread: other processes on a shared machine do not inflate it) and reports the ratio and
the largest difference between the two gradients.

    python bench/agem_reference.py                    # bundled base, 3 batches of 256, about 1 minute
    python bench/agem_reference.py --batches 5 --memory-batch 128 --past 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from tsr.config import load_config
from tsr.engine.run import prepare
from tsr.methods.agem import reference_gradient


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=3, help="memory batches timed (default 3)")
    ap.add_argument("--memory-batch", type=int, default=256, help="examples per memory batch (default 256)")
    ap.add_argument("--chunk", type=int, default=16, help="examples per forward/backward pass (default 16)")
    ap.add_argument("--past", type=int, default=7, help="past tasks in the memory (default 7: the last task)")
    ap.add_argument("overrides", nargs="*", help="config overrides (default: the embedded default)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    plan, _ = prepare(load_config(None, ["model.threads=1", *args.overrides]))
    learner = plan.learner
    memory = [e for replay in plan.replay[: args.past] for e in learner.encoder.encode_all(replay, "replay")]
    params = learner.adapter.trainable()
    rng = np.random.default_rng(0)
    times: dict[bool, list[float]] = {True: [], False: []}
    worst = 0.0
    pads = {True: 0, False: 0}
    def draw() -> list:
        return [memory[i] for i in rng.choice(len(memory), min(args.memory_batch, len(memory)), replace=False)]

    warm = draw()  # compiled blocks meet their shapes first (a run's first steps do the same), untimed
    for by_length in (True, False):
        reference_gradient(learner, warm, params, args.chunk, by_length)
    for b in range(args.batches):
        picked = draw()
        grads = {}
        for by_length in (b % 2 == 0, b % 2 != 0):  # alternate which path goes first
            start = time.thread_time()
            grads[by_length] = reference_gradient(learner, picked, params, args.chunk, by_length)
            times[by_length].append(time.thread_time() - start)
            chunks = sorted(picked, key=lambda e: len(e.prompt_ids) + len(e.answer_ids)) if by_length else picked
            pads[by_length] += sum(args.chunk * max(len(e.prompt_ids) + len(e.answer_ids) for e in chunks[i: i + args.chunk])
                                   for i in range(0, len(chunks), args.chunk))
        scale = float(grads[False].abs().max())
        worst = max(worst, float((grads[True] - grads[False]).abs().max()) / max(scale, 1e-30))
    sorted_s, drawn_s = statistics.median(times[True]), statistics.median(times[False])
    print(f"memory: {len(memory)} examples of {args.past} past task(s); {args.batches} batches of "
          f"{args.memory_batch}, chunks of {args.chunk}")
    print(f"padded tokens per batch: drawn order {pads[False] / args.batches:.0f}, by length {pads[True] / args.batches:.0f}")
    print(f"median CPU time per reference gradient: drawn order {drawn_s:.2f} s, by length {sorted_s:.2f} s; "
          f"ratio {sorted_s / drawn_s:.2f}")
    print(f"largest difference between the gradients, relative to the largest entry: {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
