"""Each baseline's mechanism inside a real learner: what it stores, distils toward, or rewrites."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tsr.data.collate import fit
from tsr.data.example import Example
from tsr.cl.losses import kd_mask, masked_ce
from tsr.cl.memory import TaskMemory, TaskRecord
from tsr.methods.context import TARGET, TaskContext
from tsr.engine.streams import task_context
from tsr.methods.sdft import REWRITE_PREFIX, agreed_answer, rewrite_prompt_ids
from tsr.engine.run import execute, prepare
from tsr.cl.teachers import Teachers
from tsr.methods.derpp_logits import topk_rows


@pytest.fixture
def plan(make_config):
    def build(*overrides):
        p, spec = prepare(make_config(*overrides))
        method = spec.build()
        method.setup(p.learner)
        return p, method
    return build


def context(p, t: int, memory: TaskMemory) -> TaskContext:
    return task_context(t, p.stream[t], list(p.train[t]), p.learner, tuple(memory), p.cfg.seed, p.cfg.train.batch_size,
                       Teachers(p.learner, "batch"))


def remember(p, memory: TaskMemory, state) -> None:
    j = len(memory)
    memory.add(TaskRecord(j, p.stream[j].name, p.stream[j].kind.value, None, tuple(p.replay[j]), state))


@torch.no_grad()
def nudge(learner, scale: float = 0.05, seed: int = 0) -> None:
    gen = torch.Generator().manual_seed(seed)
    for _, param in learner.adapter.named():
        param.add_(scale * torch.randn(param.shape, generator=gen))


def test_ewc_fisher_is_the_per_example_squared_gradient_at_the_tasks_end(plan):
    p, ewc = plan("method.name=ewc")
    nudge(p.learner)  # any trained state will do
    ctx = context(p, 0, TaskMemory())
    ewc.begin_task(ctx)
    ewc.end_task(ctx)
    params = [dict(p.learner.adapter.named())[n] for n in ewc._names]
    manual = [torch.zeros_like(q) for q in params]
    for enc in p.learner.encoder.encode_all(p.train[0], "t"):
        batch = p.learner.encoder.collate([enc])
        logits = p.learner.logits(batch)
        grads = torch.autograd.grad(masked_ce(logits, batch.labels), params)
        manual = [m + g ** 2 for m, g in zip(manual, grads)]
    manual = [m / len(p.train[0]) for m in manual]
    assert all(torch.allclose(a, b, rtol=1e-5, atol=1e-12) for a, b in zip(ewc._fisher[0], manual))
    # the next task pays lam * sum F (theta - theta*)^2 toward this task's end state
    memory = TaskMemory()
    remember(p, memory, p.learner.adapter.state())
    ctx1 = context(p, 1, memory)
    ewc.begin_task(ctx1)
    nudge(p.learner, seed=1)
    batch = ctx1.batch(TARGET)
    anchor = memory[0].snapshot
    by_hand = sum(float((f * (q.detach() - anchor[n]) ** 2).sum()) for f, q, n in zip(ewc._fisher[0], params, ewc._names))
    assert float(ewc.loss(ctx1, batch, TARGET)["ewc"].detach()) == pytest.approx(ewc.params.lam * by_hand, rel=1e-5)


def test_lwf_distils_toward_the_start_of_task_model(plan):
    p, lwf = plan("method.name=lwf", "method.weight=0.7", "method.kd_mask=answer")
    ctx0 = context(p, 0, TaskMemory())
    lwf.begin_task(ctx0)
    assert "kd" not in lwf.loss(ctx0, ctx0.batch(TARGET), TARGET)  # no previous model on the first task
    nudge(p.learner)
    start = p.learner.adapter.state()
    memory = TaskMemory()
    remember(p, memory, start)
    ctx = context(p, 1, memory)
    lwf.begin_task(ctx)
    nudge(p.learner, seed=1)  # training has moved the adapter; the teacher must not move with it
    batch = ctx.batch(TARGET)
    kd = float(lwf.loss(ctx, batch, TARGET)["kd"].detach())
    with torch.no_grad():
        student = p.learner.logits(batch)
        teacher = p.learner.logits_under(start, batch)
    mask = kd_mask("answer", batch.attention_mask, batch.labels)
    p_t = torch.softmax(teacher / 2, -1)  # the target: the start model's distribution at T = 2
    kl = (p_t * (p_t.log() - torch.log_softmax(student / 2, -1))).sum(-1)
    assert kd == pytest.approx(0.7 * 4 * float(kl[mask].mean()), rel=1e-4)


def test_l2_anchor_term_is_mu_times_the_squared_distance_to_the_source(plan):
    p, l2 = plan("method.name=l2_anchor", "method.mu=0.3", "method.source=parity")
    memory = TaskMemory()
    nudge(p.learner)
    remember(p, memory, p.learner.adapter.state())
    remember(p, memory, {k: v + 1 for k, v in p.learner.adapter.state().items()})  # vowel: elsewhere
    ctx = context(p, 2, memory)
    assert l2.begin_task(ctx) == {"source": "parity"}
    nudge(p.learner, seed=2)
    by_hand = sum(float(((q.detach() - memory[0].snapshot[n]) ** 2).sum()) for n, q in p.learner.adapter.named())
    terms = l2.loss(ctx, ctx.batch(TARGET), TARGET)
    assert float(terms["anchor"].detach()) == pytest.approx(0.3 * by_hand, rel=1e-5)


def test_derpp_stores_top_k_logits_of_the_finished_tasks_snapshot(plan):
    p, der = plan("method.name=derpp", "method.top_k=3")
    nudge(p.learner)
    memory = TaskMemory()
    remember(p, memory, p.learner.adapter.state())
    nudge(p.learner, seed=3)  # the live adapter differs from the snapshot
    ctx = context(p, 1, memory)
    assert der.begin_task(ctx) == {"buffer_examples": len(p.replay[0])}
    stored = der._stored[0]
    assert len(stored) == len(p.replay[0]) and stored.values.shape[1] == 3
    for i, enc in enumerate(p.learner.encoder.encode_all(p.replay[0], "r")[:3]):
        batch = p.learner.encoder.collate([enc])
        ((values, indices),) = topk_rows(p.learner.logits_under(memory[0].snapshot, batch), batch.labels, 3)
        mine_v, mine_i = stored.rows([i])
        assert torch.equal(mine_i, indices) and torch.allclose(mine_v, values, atol=1e-5)
    terms = der.loss(ctx, ctx.batch(TARGET), TARGET)
    assert set(terms) == {"ce", "der", "der_ce"} and float(terms["der"].detach()) > 0


# -- A-GEM --------------------------------------------------------------------------------------
def test_agem_reference_gradient_in_chunks_is_the_memory_batch_gradient(plan):
    from tsr.cl.projection import flatten
    from tsr.methods.agem import reference_gradient

    p, agem = plan("method.name=agem")
    assert agem.params.memory_batch == 256  # the official code's episodic-memory batch
    nudge(p.learner)
    examples = p.learner.encoder.encode_all(p.replay[0][:10], "r")
    params = p.learner.adapter.trainable()
    whole = flatten(torch.autograd.grad(masked_ce(*p.learner.answer_logits(p.learner.encoder.collate(examples))), params))
    for chunk in (1, 3, 10):
        assert torch.allclose(reference_gradient(p.learner, examples, params, chunk), whole, rtol=1e-4, atol=1e-7)
    # the chunks are cut from the batch sorted by length: each pads only to its own longest example
    lengths = [len(e.prompt_ids) + len(e.answer_ids) for e in examples]
    assert len(set(lengths)) > 1
    widths = []
    collate = p.learner.encoder.collate
    p.learner.encoder.collate = lambda chunk: widths.append(collate(chunk).input_ids.shape[1]) or collate(chunk)
    try:
        got = reference_gradient(p.learner, examples[::-1], params, 3)
    finally:
        del p.learner.encoder.collate
    ascending = sorted(lengths)
    assert widths == [max(ascending[i: i + 3]) for i in range(0, len(ascending), 3)]
    assert torch.allclose(got, whole, rtol=1e-4, atol=1e-7)


# -- SDFT ---------------------------------------------------------------------------------------
def test_rewrite_prompt_is_the_prefix_with_gold_then_the_training_prompt(plan):
    p, _ = plan("method.name=sdft")
    encoder = p.learner.encoder
    example = p.train[2][0]
    ids = rewrite_prompt_ids(encoder, example)
    prefix = encoder.tokenizer(REWRITE_PREFIX.format(answer=example.answer.strip()), add_special_tokens=False)["input_ids"]
    enc = encoder.encode(example)
    full, _ = fit(enc, encoder.max_length)
    assert ids == prefix + full[: len(full) - len(enc.answer_ids)]
    assert example.answer.strip() in encoder.tokenizer.decode(ids)


def test_sdft_agreement_rule():
    label = Example("Is 4 even? Answer:", " yes")
    assert agreed_answer(label, "yes ", classification=True) == " yes"   # the bare label
    # the model's own wording is kept when its final answer is the gold label
    assert agreed_answer(label, " yes, it is", classification=True) == " yes, it is"
    assert agreed_answer(label, " Yes", classification=True) is None     # labels are case-sensitive
    assert agreed_answer(label, " yesterday", classification=True) is None  # whole words only
    stance = (" favor", " against", " none")  # labels as tasks list them, with the answer's space
    gold = Example("Stance?", " favor")
    assert agreed_answer(gold, "against? no: favor", True, stance) == " against? no: favor"
    assert agreed_answer(gold, "favor, not against", True, stance) is None  # the last label counts
    assert agreed_answer(gold, "favor?\nagainst", True, stance) is None     # wherever it stands
    number = Example("3 * 4 =", " 12")
    assert agreed_answer(number, "3 * 4 = 12.0", True) == " 3 * 4 = 12.0"  # numbers compare as numbers
    assert agreed_answer(number, "12 or 13", True) is None
    assert agreed_answer(number, "1,200", True) is None
    text = Example("Repeat: a b\nOutput:", " a b")
    assert agreed_answer(text, " a and b", classification=False) == " a and b"
    assert agreed_answer(text, "  \n", classification=False) is None
    assert agreed_answer(text, " As the Reference Answer says, a b", classification=False) is None


def test_sdft_rewrites_the_training_set_before_the_task(plan, monkeypatch):
    p, sdft = plan("method.name=sdft", "method.max_new_tokens=5")
    learner, encoder = p.learner, p.learner.encoder
    said = encoder.tokenizer(" yes", add_special_tokens=False)["input_ids"]
    monkeypatch.setattr(learner, "greedy", lambda ids, n, cache=False: (said + [encoder.eos_id])[: n])

    def prepared(t: int):
        """The task's examples as the engine gets them from SDFT, and begin_task's facts on them."""
        ctx = context(p, t, TaskMemory())
        examples = sdft.training_examples(ctx)
        return sdft.begin_task(replace(ctx, train=tuple(examples))), examples

    info, train = prepared(0)  # parity: classification
    golds = [e.answer for e in p.train[0]]
    assert info == {"rewrites_kept": golds.count(" yes"), "rewrites_total": len(golds)}
    assert [e.answer for e in train] == golds  # agreeing labels are the gold labels
    info2, train2 = prepared(2)  # copy: generation, every complete rewrite kept
    assert info2["rewrites_kept"] == len(p.train[2])
    assert {e.answer for e in train2} == {" yes"} and [e.prompt for e in train2] == [e.prompt for e in p.train[2]]
    # a rewrite cut off by the token budget (no EOS) keeps the gold answer
    monkeypatch.setattr(learner, "greedy", lambda ids, n, cache=False: said * n)
    info3, train3 = prepared(2)
    assert info3["rewrites_kept"] == 0 and train3 == list(p.train[2])


def test_sdft_with_every_rewrite_rejected_equals_seqft(make_config, monkeypatch):
    from tsr.model.learner import Learner

    monkeypatch.setattr(Learner, "greedy", lambda self, ids, n, cache=False: [])  # never completes
    seq = execute(make_config("method.name=seqft", "name=seq"))
    sdft = execute(make_config("method.name=sdft", "name=sdft"))
    assert (seq.results.acc, seq.results.loss) == (sdft.results.acc, sdft.results.loss)
    assert [i["rewrites_kept"] for i in sdft.results.task_info] == [0, 0, 0]


def test_sdft_keeps_worded_rewrites_and_differs_from_seqft_on_classification(make_config, monkeypatch):
    """The model's own wording of a correct label is what SDFT trains on, so on classification
    tasks it is not SeqFT (it was, bit for bit, while only the bare label could be kept)."""
    from tsr.model.learner import Learner

    def worded(self, ids, n, cache=False):
        text = self.encoder.tokenizer.decode(ids)
        gold = text.split("Reference answer: ", 1)[1].split("\n", 1)[0]
        return (self.encoder.tokenizer(f" so {gold}", add_special_tokens=False)["input_ids"] + [self.encoder.eos_id])[:n]

    monkeypatch.setattr(Learner, "greedy", worded)
    seq = execute(make_config("method.name=seqft", "name=seq"))
    sdft = execute(make_config("method.name=sdft", "name=sdft"))
    kinds = seq.results.kinds
    assert "classification" in kinds
    for kind, info in zip(kinds, sdft.results.task_info):
        assert info["rewrites_kept"] == info["rewrites_total"] > 0
    first = kinds.index("classification")
    assert sdft.results.acc[first][first] != seq.results.acc[first][first] or \
        sdft.results.loss[first][first] != seq.results.loss[first][first]


def test_sdft_rewriter_is_the_start_of_task_model_or_the_shared_initialisation(plan, monkeypatch):
    for rewriter, moved in (("start", True), ("base", False)):
        p, sdft = plan("method.name=sdft", f"method.rewriter={rewriter}")
        nudge(p.learner)
        seen = []

        def spy(ids, n, cache=False, learner=p.learner):
            seen.append(sum(float(q.detach().abs().sum()) for name, q in learner.adapter.named() if ".lora_B." in name))
            return []

        monkeypatch.setattr(p.learner, "greedy", spy)
        sdft.training_examples(context(p, 1, TaskMemory()))  # where SDFT rewrites the task
        assert seen and all((b > 0) == moved for b in seen)
        assert any(".lora_B." in n and float(q.detach().abs().sum()) > 0 for n, q in p.learner.adapter.named())
