"""The floor of TSR's step time over ER's, estimated from the shapes of a run (no timing).

What TSR's objective adds to ER's step: the output head on every attended position of a
distilled batch (forward and backward) where ER runs it on the answer positions only, and the
teacher's head from its cached hidden states. Distilled is every batch from the second task
on: with the paper's era teacher a replayed batch is distilled against its own era's snapshot,
a current-task batch against the top-routed one (Eq. 6; ``method.reference: era``). Caching
what the KL needs of the teacher saves its head: its log-probabilities (4 bytes x vocabulary
per position) or its moments (the expected head row and negative entropy, 4 bytes x (hidden
size + 1): ``train.teacher: expected``); their floor is printed beside. With LoRA the frozen
weights get no weight gradients, so a token costs about 4 x (body parameters) FLOP forward and
backward and a head position 4 x (head parameters), the teacher's head 2 x. A step of a task
after the first draws a replayed batch with probability ``alpha`` (``method.alpha``), else a
current-task batch; both methods draw the same way. The estimate reads the run's own data (the
config's stream, budget, max length and truncation, its tokenizer): the replay data of the
tasks before the last, and the training data of the tasks after the first:

    python bench/floor.py model.path=smollm2-135m                    # synth-trace
    python bench/floor.py model.path=smollm2-135m stream.source=trace8 stream.root=DIR \\
        "stream.options={tasks: [C-STANCE, Py150]}" stream.truncate=left stream.replay_per_task=16

It is an estimate of matrix-product arithmetic, not a measurement: attention's own products,
norms, activations, memory traffic, kernel launches and the softmax over the vocabulary are left
out. Work both methods pay alike (most of those) makes the measured ratio lower than the estimate.
"""

from __future__ import annotations

import sys
from statistics import mean

from tsr.config import load_config
from tsr.engine.run import prepare


def lengths(plan, examples, split: str) -> tuple[float, float]:
    """Mean attended and answer tokens per example of ``examples`` with the run's encoder."""
    batch = plan.learner.encoder.collate(plan.learner.encoder.encode_all(examples, split))
    attended = batch.attention_mask.sum(dim=1).tolist()
    answer = (batch.labels[:, 1:] != -100).sum(dim=1).tolist()
    return mean(attended), mean(answer)


def floor(argv: list[str]) -> dict[str, float]:
    cfg = load_config(None, ["method.name=tsr", *argv])
    plan, _ = prepare(cfg)
    model = plan.learner.model.get_base_model()
    head = model.get_output_embeddings().weight
    embed = model.get_input_embeddings().weight
    total = sum(p.numel() for n, p in model.named_parameters() if "lora_" not in n)
    tied = head.data_ptr() == embed.data_ptr()
    body = total - embed.numel() - (0 if tied else head.numel())
    h = head.numel()
    replay = lengths(plan, [e for r in plan.replay[:-1] for e in r], "replay")  # what later tasks replay
    current = lengths(plan, [e for t in plan.train[1:] for e in t], "train")  # the tasks that distil
    alpha = float(cfg.method.params.alpha)

    def er(a, s):
        return a * 4 * body + s * 4 * h

    def tsr(a, s):
        return a * 4 * body + a * (4 + 2) * h

    def cached(a, s):  # the teacher's log-probabilities or moments stored, not recomputed
        return a * 4 * body + a * 4 * h

    def step(rule) -> float:
        return alpha * rule(*replay) + (1 - alpha) * rule(*current)

    return {"body": body, "head": h, "attended": replay[0], "answer": replay[1],
            "current_attended": current[0], "current_answer": current[1], "alpha": alpha,
            "replayed_step": tsr(*replay) / er(*replay),
            "current_step": tsr(*current) / er(*current),
            "floor": step(tsr) / step(er), "floor_cached": step(cached) / step(er)}


def main(argv: list[str] | None = None) -> int:
    out = floor(list(sys.argv[1:] if argv is None else argv))
    print(f"body {out['body'] / 1e6:.1f} M parameters, head {out['head'] / 1e6:.1f} M; replay data "
          f"{out['attended']:.1f} attended, {out['answer']:.1f} answer tokens per example; training data "
          f"{out['current_attended']:.1f} and {out['current_answer']:.1f}")
    print(f"a distilled step: replayed TSR {out['replayed_step']:.3f}x ER, current-task {out['current_step']:.3f}x; "
          f"replayed on a fraction {out['alpha']:.2f} of the steps: floor {out['floor']:.3f}x ER "
          f"(floor + 10%: {out['floor'] * 1.1:.3f})")
    print(f"with the teacher cached as log-probabilities or moments (no teacher head): floor "
          f"{out['floor_cached']:.3f}x ER (floor + 10%: {out['floor_cached'] * 1.1:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
