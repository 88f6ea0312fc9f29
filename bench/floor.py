"""The floor of TSR's step time over ER's, estimated from the shapes of a run (no timing).

What TSR's objective adds to ER's step: on a replayed batch, the output head on every attended
position (forward and backward) where ER runs it on the answer positions only, and the teacher's
head from its cached hidden states (a cache of the teacher's log-probabilities, exact too, saves
that head at 4 bytes x vocabulary per position; its floor is printed beside). With LoRA the
frozen weights get no weight gradients, so a token costs about 4 x (body parameters) FLOP forward and backward and a head position 4 x (head
parameters), the teacher's head 2 x. Replayed batches are a fraction ``alpha`` of the steps
(``method.alpha``); on the other steps both methods do the same work. The estimate reads the
run's own replay data (the config's stream, budget, max length and truncation, its tokenizer):

    python bench/floor.py model.path=smollm2-135m                    # synth-trace
    python bench/floor.py model.path=smollm2-135m stream.source=trace8 stream.root=DIR \\
        "stream.options={tasks: [C-STANCE, Py150]}" stream.truncate=left stream.replay_per_task=16

It is an estimate of arithmetic, not a measurement: memory traffic, kernel launches and the
softmax over the vocabulary are left out.
"""

from __future__ import annotations

import sys
from statistics import mean

from tsr.config import load_config
from tsr.engine.run import prepare


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
    attended, answer = [], []
    for replay in plan.replay[:-1]:  # the data later tasks replay
        batch = plan.learner.encoder.collate(plan.learner.encoder.encode_all(replay, "replay"))
        attended += batch.attention_mask.sum(dim=1).tolist()
        answer += (batch.labels[:, 1:] != -100).sum(dim=1).tolist()
    a, s = mean(attended), mean(answer)
    er = a * 4 * body + s * 4 * h
    tsr = a * 4 * body + a * (4 + 2) * h
    cached = a * 4 * body + a * 4 * h  # the teacher's log-probabilities stored, not recomputed
    alpha = float(cfg.method.params.alpha)
    return {"body": body, "head": h, "attended": a, "answer": s, "replayed_step": tsr / er,
            "alpha": alpha, "floor": (1 - alpha) + alpha * tsr / er,
            "floor_cached": (1 - alpha) + alpha * cached / er}


def main(argv: list[str] | None = None) -> int:
    out = floor(list(sys.argv[1:] if argv is None else argv))
    print(f"body {out['body'] / 1e6:.1f} M parameters, head {out['head'] / 1e6:.1f} M; replay data: "
          f"{out['attended']:.1f} attended, {out['answer']:.1f} answer tokens per example")
    print(f"a replayed step: TSR {out['replayed_step']:.3f}x ER; replayed on a fraction {out['alpha']:.2f} of the "
          f"steps: floor {out['floor']:.3f}x ER (floor + 10%: {out['floor'] * 1.1:.3f})")
    print(f"with the teacher's log-probabilities cached (no teacher head, 4 bytes x vocabulary per position): "
          f"floor {out['floor_cached']:.3f}x ER")
    return 0


if __name__ == "__main__":
    sys.exit(main())
