"""Batched greedy decoding against one example at a time, on the same prompts and adapter.

Decodes the test prompts of synth-trace's generation tasks (summary, code, simplify) with the
budget ``eval.predictions`` gives them (the gold answer's tokens with EOS, plus
``--extra``) three ways: ``Learner.greedy`` per example without a KV cache (the reference the
tests compare with), the same with a KV cache, and ``greedy_batch`` (left padding, KV cache,
``--batch`` prompts per forward). Prints each arm's seconds, the ratio to the reference, and
whether the tokens agree. The adapter is the shared initialisation with B moved off zero, so
LoRA is on the path.

    python bench/generate.py                       # bundled base, 32 prompts per task
    python bench/generate.py --examples 100 --batch 32 --threads 2
"""

from __future__ import annotations

import argparse
import time

import torch

from tsr.config import load_config
from tsr.engine.predict import prompt_ids
from tsr.engine.run import draw_data
from tsr.data.streams import load_stream
from tsr.model.generate import greedy_batch
from tsr.model.learner import build_learner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=32, help="test prompts per generation task")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--extra", type=int, default=16, help="eval.extra_tokens")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    cfg = load_config(None, [f"model.threads={args.threads}", f"stream.test_cap={args.examples}"])
    learner = build_learner(cfg)
    with torch.no_grad():
        for name, p in learner.adapter.named():
            if ".lora_B." in name:
                p.normal_(0, 0.02, generator=torch.Generator().manual_seed(0))
    stream = load_stream(cfg.stream.source, cfg.stream.root, cfg.stream.options, cfg.stream.order, cfg.seed)
    _, _, tests = draw_data(cfg, stream)
    encoded = [e for task, test in zip(stream, tests) if not task.is_classification
               for e in learner.encoder.encode_all(test, task.name)]
    prompts = [prompt_ids(e, learner.encoder.max_length, learner.encoder.eos_id) for e in encoded]
    budgets = [len(e.answer_ids) + args.extra for e in encoded]
    arms = {
        "one at a time, no cache": lambda: [learner.greedy(p, b) for p, b in zip(prompts, budgets)],
        "one at a time, KV cache": lambda: [learner.greedy(p, b, cache=True) for p, b in zip(prompts, budgets)],
        f"batched ({args.batch}), KV cache": lambda: greedy_batch(learner, prompts, budgets, args.batch),
    }
    reference, base = None, None
    print(f"{len(prompts)} prompts, {sum(map(len, prompts)) / len(prompts):.0f} tokens on average")
    for label, arm in arms.items():
        start = time.perf_counter()
        tokens = arm()
        seconds = time.perf_counter() - start
        reference = tokens if reference is None else reference
        base = seconds if base is None else base
        same = sum(a == b for a, b in zip(tokens, reference))
        print(f"{label:28} {seconds:7.2f} s  x{base / seconds:5.2f}  same tokens as the reference: "
              f"{same}/{len(tokens)}")


if __name__ == "__main__":
    main()
