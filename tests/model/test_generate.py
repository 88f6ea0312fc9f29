"""Batched greedy decoding gives the tokens of one-example greedy decoding."""

from __future__ import annotations

import pytest
import torch

from tsr.config import load_config
from tsr.model.generate import greedy_batch
from tsr.model.learner import build_learner


def learner_for(model_dir, *overrides):
    return build_learner(load_config("paper", [f"model.path={model_dir}", "model.threads=1", *overrides]))


def moved_adapter(learner):
    with torch.no_grad():  # B off zero, so that decoding runs through a non-trivial adapter
        for n, p in learner.adapter.named():
            if ".lora_B." in n:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(1))
    return learner


# prompts of different lengths (so rows are padded by different amounts), from the toy tasks
TEXTS = ["Is 12 even? Answer:", "Word: apple. Vowel start? Answer:", "Repeat: river stone\nOutput:",
         "Is 7 even? Answer:", "Repeat: tiger lemon piano\nOutput:", "Word: cloud. Vowel start? Answer:",
         "Repeat: garden\nOutput:"]


@pytest.mark.parametrize("arch", ["qwen2", "llama", "gemma3"])
@pytest.mark.parametrize("cache", [True, False])
def test_batched_greedy_equals_one_example_greedy(model_factory, arch, cache):
    learner = moved_adapter(learner_for(model_factory(arch)))
    tok = learner.tokenizer
    prompts = [tok(t, add_special_tokens=False)["input_ids"] for t in TEXTS]
    assert len({len(p) for p in prompts}) >= 4
    budgets = [3, 9, 12, 1, 12, 9, 6]
    single = [learner.greedy(p, b, cache=False) for p, b in zip(prompts, budgets)]
    batched = greedy_batch(learner, prompts, budgets, batch_size=4, cache=cache)
    assert batched == single
    # the check has teeth: rows stop at EOS and at their budgets, and some run several tokens
    assert any(s and s[-1] == learner.encoder.eos_id for s in single)
    assert any(len(s) == b and s[-1] != learner.encoder.eos_id for s, b in zip(single, budgets))
    assert max(len(s) for s in single) >= 4
    # one budget for all, one batch or one row per batch: the same tokens
    assert greedy_batch(learner, prompts, 5, batch_size=16, cache=cache) == \
        [learner.greedy(p, 5, cache=False) for p in prompts]
    assert greedy_batch(learner, prompts[:3], budgets[:3], batch_size=1, cache=cache) == single[:3]


def test_batched_greedy_edge_cases(tiny_model):
    learner = learner_for(tiny_model)
    assert greedy_batch(learner, [], 4) == []
    assert greedy_batch(learner, [[5, 6]], 0) == [[]]
    with pytest.raises(ValueError, match="at least one token"):
        greedy_batch(learner, [[5], []], 3)
    with pytest.raises(ValueError, match="2 token budgets for 1 prompts"):
        greedy_batch(learner, [[5]], [1, 2])
