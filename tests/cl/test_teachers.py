"""The teacher cache modes: what they keep and what they return."""

import pytest
import torch

from tsr.cl.teachers import Teachers
from tsr.config import load_config
from tsr.data.collate import Encoded
from tsr.errors import ConfigError
from tsr.model.learner import build_learner

EXAMPLES = [Encoded((5, 6, 7, 8), (9, 2)), Encoded((5, 6), (10, 11, 2)), Encoded((5, 6, 7, 8, 9, 10), (12, 2)),
            Encoded((7, 8), (13, 2)), Encoded((5,), (14, 15, 16, 2))]


def learner_for(model_dir, *overrides):
    learner = build_learner(load_config("paper", [f"model.path={model_dir}", "model.threads=1", *overrides]))
    with torch.no_grad():  # a teacher state away from the initialisation
        for n, p in learner.adapter.named():
            if ".lora_B." in n:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(2))
    return learner


def test_hidden_cache_keeps_hidden_states_and_gives_the_cached_log_probs(tiny_model):
    learner = learner_for(tiny_model)
    state = learner.adapter.state()
    config = learner.model.get_base_model().config
    modes = {mode: Teachers(learner, mode, chunk=2) for mode in ("cached", "hidden")}
    batch = learner.encoder.collate([EXAMPLES[i] for i in (4, 0, 2)])
    batch.keys = [("d", 4), ("d", 0), ("d", 2)]
    out = {}
    for mode, teachers in modes.items():
        teachers.register("d", EXAMPLES)
        out[mode] = teachers.log_probs("ref", state, batch, 2.0)
        again = teachers.log_probs("ref", state, batch, 2.0)  # from the cache: no forward, same tensor
        assert teachers.forwards == 3 and torch.equal(again, out[mode])
    torch.testing.assert_close(out["hidden"], out["cached"], rtol=1e-5, atol=1e-5)
    # per cached position: the hidden size instead of the vocabulary (same examples, float32 both)
    assert modes["hidden"]._bytes * config.vocab_size == modes["cached"]._bytes * config.hidden_size
    # padded positions hold the log-probabilities of zero logits in both modes
    assert torch.equal(out["hidden"][2, -1], out["cached"][2, -1])


@pytest.mark.filterwarnings("ignore:Model has `tie_word_embeddings=True`")  # peft's, for the head this test adapts
def test_hidden_cache_refuses_an_output_head_with_lora(tiny_model):
    learner = build_learner(load_config("paper", [f"model.path={tiny_model}", "model.threads=1",
                                                  "lora.targets=[q_proj, lm_head]"]))
    with pytest.raises(ConfigError, match="train.teacher: 'hidden' needs an output head without LoRA"):
        Teachers(learner, "hidden")
