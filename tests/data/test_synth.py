"""The synthetic benchmark: determinism, designed relations, hidden attributes, config errors."""

import pytest

from tsr.data.streams import load_stream
from tsr.errors import ConfigError
from tsr.data.synth.corpus import corpus_text
from tsr.data.synth.lexicon import ADJECTIVES, LABEL_TONE, LABEL_WORDS, NOUNS, RARE_VERBS, Lexicon
from tsr.data.synth.spec import SynthSpec, SynthTask, load_spec, relation_table
from tsr.data.synth.streams import SYNTH_NUMGLUE, SYNTH_TRACE


def test_shipped_streams_have_the_promised_shape():
    trace = load_stream("synth-trace")
    kinds = [t.kind.value for t in trace]
    assert len(trace) == 8 and kinds.count("classification") == 5 and kinds.count("generation") == 3
    assert all(len(t.pool) == 500 and len(t.test) == 500 for t in trace)
    numglue = load_stream("synth-numglue")
    assert len(numglue) == 8 and all(t.kind.value == "classification" for t in numglue)


def test_generation_is_deterministic_and_seeded():
    a, b = load_stream("synth-trace"), load_stream("synth-trace")
    assert a.tasks == b.tasks
    c = load_stream("synth-trace", options={"data_seed": 1})
    assert c.task("stance").pool != a.task("stance").pool


def test_designed_relations_of_synth_trace():
    rel = relation_table(SYNTH_TRACE)
    assert rel["policy"]["stance"] == rel["stance"]["policy"] == "partner"
    assert rel["irony"]["stance"] == rel["stance"]["irony"] == "conflict"
    # irony names the positive side with a negative word, policy with a positive one, in words
    # the two do not share: a contrast, reported without a designed sign
    assert rel["irony"]["policy"] == rel["policy"]["irony"] == "contrast"
    assert rel["arith-cm"]["arith-ds"] == rel["arith-ds"]["arith-cm"] == "partner"
    for gen in ("summary", "code", "simplify"):
        assert set(rel[gen].values()) == {"unrelated"}
    # every target has at least one unrelated source
    assert all("unrelated" in {rel[s][t] for s in rel if s != t} for t in rel)
    assert set(relation_table(SYNTH_NUMGLUE)["ng1-word"].values()) == {"partner"}


def test_labels_follow_the_balance_rule():
    """stance and irony read the same margin rule over the counts with their label words swapped."""
    import re

    stream = load_stream("synth-trace")
    stance, irony, policy = stream.task("stance"), stream.task("irony"), stream.task("policy")

    def rule(prompt: str) -> str:
        a, b = (int(x) for x in re.findall(r"\b(\d)\b", prompt.split("Input: ")[1])[:2])
        return "positive" if a - b >= 2 else "negative" if b - a >= 2 else "neutral"

    for ex in stance.pool[:80]:
        assert ex.answer == " " + {"positive": "favor", "negative": "against", "neutral": "none"}[rule(ex.prompt)]
    for ex in irony.pool[:80]:
        assert ex.answer == " " + {"positive": "against", "negative": "favor", "neutral": "none"}[rule(ex.prompt)]
    for ex in policy.pool[:80]:
        assert ex.answer == " " + {"positive": "hawk", "negative": "dove", "neutral": "still"}[rule(ex.prompt)]
    # TRACE-style prompts name the options; all three classes occur
    assert "Options: favor, against, none." in stance.pool[0].prompt
    # irony: stance's sentence and options, an instruction one word apart; policy: the same
    # sentence under its own instruction and label words
    assert all("Options: favor, against, none." in ex.prompt and "really" in ex.prompt for ex in irony.pool[:20])
    body = lambda ex: re.sub(r"\d", "#", ex.prompt.split("Input: ")[1].split(" meeting")[1])  # noqa: E731
    assert {body(ex) for ex in stance.pool[:50]} == {body(ex) for ex in policy.pool[:50]} == \
        {body(ex) for ex in irony.pool[:50]}
    assert {ex.answer for ex in stance.pool} == {" favor", " against", " none"}


def test_compact_balance_templates_keep_the_rule_in_fewer_tokens(tmp_path):
    """The pilot templates read the same margin rule; the compact ones in words the bundled tokenizer holds whole."""
    import re

    from tsr.config import load_config
    from tsr.model.backbone import load_backbone

    spec = tmp_path / "compact.yaml"
    spec.write_text("name: compact\ntasks:\n"
                    "  - {name: long, family: balance, template: backing, labels: {positive: favor, negative: against, neutral: none}}\n"
                    "  - {name: short, family: balance, template: tally, labels: {positive: favor, negative: against, neutral: none}}\n"
                    "  - {name: market, family: balance, template: season_market, labels: {positive: hawk, negative: dove, neutral: still}}\n"
                    "  - {name: council, family: balance, template: backing_council, labels: {positive: hawk, negative: dove, neutral: still}}\n")
    stream = load_stream("synth", options={"spec": str(spec), "pool": 40, "test": 1})
    maps = {"short": {"positive": "favor", "negative": "against", "neutral": "none"},
            "market": {"positive": "hawk", "negative": "dove", "neutral": "still"},
            "council": {"positive": "hawk", "negative": "dove", "neutral": "still"}}
    for name, words in maps.items():
        for ex in stream.task(name).pool:
            a, b = (int(x) for x in re.findall(r"\b(\d)\b", ex.prompt.split("Input: ")[1])[:2])
            cls = "positive" if a - b >= 2 else "negative" if b - a >= 2 else "neutral"
            assert ex.answer == " " + words[cls], ex.prompt
    tok = load_backbone(load_config("default").model).tokenizer
    n = lambda task: max(len(tok(ex.prompt, add_special_tokens=False)["input_ids"]) for ex in stream.task(task).pool)
    assert n("short") <= 0.7 * n("long")


@pytest.mark.parametrize("template", ["stance", "stance_really", "council", "council_plan", "review"])
def test_polarity_labels_follow_the_hidden_tone(tmp_path, template):
    import yaml

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"name": "p", "pool": 60, "test": 5, "tasks": [
        {"name": "stance", "family": "polarity", "template": template, "attribute": "tone",
         "labels": {"positive": "favor", "negative": "against", "neutral": "none"}}]}))
    lex = Lexicon(0)
    for ex in load_stream("synth", options={"spec": str(path)}).task("stance").pool:
        adjective = next(w.strip(".") for w in ex.prompt.split() if w.strip(".") in ADJECTIVES)
        assert ex.answer == " " + {"positive": "favor", "negative": "against", "neutral": "none"}[lex.tone[adjective]]


def test_addition_answers_are_sums():
    for ex in load_stream("synth-numglue").task("ng8-sum").pool[:30]:
        a, b = (int(x) for x in ex.prompt.split("Input: ")[1].split("\n")[0].split(" plus "))
        assert ex.answer == f" {a + b}"


def test_pretraining_corpus_conveys_connotations_but_no_rule():
    """Connotations (clear for half the adjectives, faint for the rest) but no task rule."""
    import collections

    import numpy as np

    from tsr.data.synth.lexicon import REACTIONS

    rng = np.random.default_rng(0)
    lex = Lexicon(0)
    texts = [corpus_text(rng) for _ in range(6000)]
    answers = [t.split("Answer:")[1] for t in texts if "Answer:" in t]
    assert not ({a.strip() for a in answers} & set(LABEL_WORDS))  # label words never answer
    joined = " ".join(texts)
    assert any(f" {w} " in joined for w in LABEL_WORDS)  # but they are ordinary words
    # reactions follow the tone of familiar adjectives only
    seen = collections.Counter()
    for t in texts:
        for sentence in t.split(". "):
            for adj in ADJECTIVES:
                for tone, verb in REACTIONS.items():
                    if f"was {adj}, so" in sentence and sentence.rstrip(".").endswith(verb):
                        seen[(adj in lex.familiar, lex.tone[adj] == tone)] += 1
    from tsr.data.synth.corpus import CLEAR, FAINT

    familiar_match = seen[(True, True)] / (seen[(True, True)] + seen[(True, False)])
    rare_match = seen[(False, True)] / (seen[(False, True)] + seen[(False, False)])
    # a random reaction matches the tone one time in three
    assert abs(familiar_match - (CLEAR + (1 - CLEAR) / 3)) < 0.06
    assert abs(rare_match - (FAINT + (1 - FAINT) / 3)) < 0.08
    assert len(lex.familiar) == len(ADJECTIVES) // 2
    # label words that carry a tone follow reactions of that tone; a random pick matches 2 in 6
    said = collections.Counter()
    for t in texts:
        for tone, verb in REACTIONS.items():
            for word, word_tone in LABEL_TONE.items():
                said[word_tone == tone] += t.count(f"{verb} and said {word}.") + t.count(f"said {word} and {verb}.")
    assert sum(said.values()) > 200
    assert abs(said[True] / sum(said.values()) - (CLEAR + (1 - CLEAR) * 2 / 6)) < 0.04
    assert {w for w in LABEL_TONE} < set(LABEL_WORDS)
    # no two numbers are ever added; rare verbs occur as ordinary words
    assert " plus " not in joined and "+ _" not in joined
    assert set(RARE_VERBS) <= set(joined.replace(".", " ").split())
    assert set(NOUNS) <= set(joined.replace(".", " ").replace(",", " ").replace("s ", " ").split()) | set(joined.split())


def test_option_list_corpus_answers_from_its_list_and_never_with_a_label_word():
    """The richer corpus's option families: the answer is one of the listed options, the
    options never hold a benchmark label word, and at options_share=0 the bundled corpus is
    drawn unchanged (the same texts from the same generator state)."""
    import numpy as np

    from tsr.data.synth.options import options_instruction

    rng, lex = np.random.default_rng(1), Lexicon(0)
    texts = [options_instruction(rng, lex) for _ in range(2000)]
    for text in texts:
        options = text.split("Options: ")[1].split(".\nInput:")[0].split(", ")
        answer = text.rsplit("Answer: ", 1)[1]
        assert answer in options and len(set(options)) == len(options) >= 2
        assert not set(options) & set(LABEL_WORDS)
    # options come in a random order: the answer is not always in one position
    positions = {t.split("Options: ")[1].split(".\nInput:")[0].split(", ").index(t.rsplit("Answer: ", 1)[1])
                 for t in texts}
    assert positions == {0, 1, 2}
    plain, zero = np.random.default_rng(3), np.random.default_rng(3)
    assert [corpus_text(plain) for _ in range(300)] == [corpus_text(zero, options_share=0.0) for _ in range(300)]
    mixed = [corpus_text(np.random.default_rng(s), options_share=1.0) for s in range(200)]
    assert sum("Options:" in t for t in mixed) > 60  # every instruction example lists options


@pytest.mark.parametrize("task,fragment", [
    (dict(name="a", family="magic", template="x"), "unknown family 'magic'"),
    (dict(name="a", family="polarity", template="nope", attribute="tone"), "unknown template 'nope'"),
    (dict(name="a", family="polarity", template="stance", attribute="tone",
          labels={"positive": "favor", "negative": "favor", "neutral": "none"}), "label word 'favor' is used for two classes"),
    (dict(name="a", family="polarity", template="stance", attribute="tone",
          labels={"positive": "favor", "negative": "against"}), "must map each class"),
    (dict(name="a", family="polarity", template="stance", attribute="tone",
          labels={"positive": "zebra", "negative": "against", "neutral": "none"}), "'zebra' is not a word"),
    (dict(name="a", family="addition", template="sum", labels={"x": "y"}), "takes no label words"),
    (dict(name="a", family="addition", template="sum", max_operand=12), "max_operand"),
    (dict(name="a", family="balance", template="votes", margin=0,
          labels={"positive": "favor", "negative": "against", "neutral": "none"}), "margin"),
    (dict(name="a", family="balance", template="votes", max_count=1,
          labels={"positive": "favor", "negative": "against", "neutral": "none"}), "max_count"),
    (dict(name="a", family="balance", template="votes", max_count=3, margin=4,
          labels={"positive": "favor", "negative": "against", "neutral": "none"}), "must not exceed max_count=3"),
    (dict(name="a", family="balance", template="votes", attribute="tone",
          labels={"positive": "favor", "negative": "against", "neutral": "none"}), "reads no attribute"),
    (dict(name="a", family="balance", template="votes"), "must map each class of the balance rule"),
])
def test_inconsistent_generator_configs_are_one_line_errors(tmp_path, task, fragment):
    import yaml

    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump({"name": "g", "tasks": [task]}))
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert fragment in str(err.value) and "g.yaml" in str(err.value)


def test_custom_stream_from_a_generator_config(tmp_path):
    import yaml

    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump({"name": "mine", "pool": 20, "test": 10, "tasks": [
        {"name": "tools", "family": "choice", "template": "science", "attribute": "kind"},
        {"name": "shelf", "family": "polarity", "template": "inventory", "attribute": "kind",
         "labels": {"tool": "more", "food": "less", "animal": "same"}},
    ]}))
    stream = load_stream("synth", options={"spec": str(path)})
    assert stream.names == ["tools", "shelf"] and len(stream.task("tools").pool) == 20
    assert relation_table(load_spec(path))["tools"]["shelf"] == "partner"


def test_balance_relations_follow_margin_and_labels(tmp_path):
    labels = {"positive": "favor", "negative": "against", "neutral": "none"}
    base = SynthTask("a", "balance", "votes", labels=labels)
    swapped = SynthTask("b", "balance", "rates", labels={"positive": "against", "negative": "favor", "neutral": "none"})
    other_words = SynthTask("c", "balance", "reviews", labels={"positive": "hawk", "negative": "dove", "neutral": "still"})
    wider = SynthTask("d", "balance", "votes", labels=labels, margin=4)
    rel = relation_table(SynthSpec("x", [base, swapped, other_words, wider]))
    assert rel["b"]["a"] == "conflict" and rel["c"]["a"] == "partner" and rel["d"]["a"] == "unrelated"
    # no shared word, but the words' tones disagree (hawk is positive, dove negative): contrast
    assert rel["b"]["c"] == rel["c"]["b"] == "contrast"
    toneless = SynthTask("e", "balance", "rates", labels={"positive": "more", "negative": "less", "neutral": "same"})
    flipped = SynthTask("f", "balance", "rates", labels={"positive": "dove", "negative": "hawk", "neutral": "same"})
    rel = relation_table(SynthSpec("y", [base, toneless, flipped]))
    assert rel["e"]["a"] == "partner" and rel["f"]["a"] == "contrast" and rel["f"]["e"] == "partner"
    # a shared word for two classes is a conflict whatever the tones of the other words
    mixed = SynthTask("g", "balance", "rates", labels={"positive": "hawk", "negative": "none", "neutral": "same"})
    assert relation_table(SynthSpec("z", [base, mixed]))["g"]["a"] == "conflict"
    with pytest.raises(ConfigError, match="unknown config key 'stream.options.colour'"):
        load_stream("synth-trace", options={"colour": 1})


def test_balance_counts_range_up_to_max_count(tmp_path):
    """max_count widens the counts' range; the rule and its classes stay the same."""
    import re

    import yaml

    labels = {"positive": "favor", "negative": "against", "neutral": "none"}
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump({"name": "wide", "pool": 400, "test": 10, "tasks": [
        {"name": "w", "family": "balance", "template": "votes", "max_count": 19, "margin": 3, "labels": labels}]}))
    task = load_stream("synth", options={"spec": str(path)}).task("w")
    counts = []
    for ex in task.pool:
        a, b = (int(x) for x in re.findall(r"\b(\d+)\b", ex.prompt.split("Input: ")[1])[:2])
        counts += [a, b]
        cls = "positive" if a - b >= 3 else "negative" if b - a >= 3 else "neutral"
        assert ex.answer == " " + labels[cls]
    assert min(counts) == 0 and max(counts) == 19
    # the default keeps single-digit counts (the shipped stream is unchanged)
    assert SynthTask("x", "balance", "votes", labels=labels).max_count == 9


def test_unknown_stream_names_list_the_valid_ones():
    with pytest.raises(ConfigError, match="synth-trace"):
        load_stream("synth-tracee")


def test_the_documented_relation_table_is_the_codes():
    """docs/synthetic.md's table of synth-trace's designed relations is relation_table's."""
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "synthetic.md").read_text(encoding="utf-8")
    lines = text[text.index("| source \\ target |"):].splitlines()
    targets = [c.strip() for c in lines[0].strip("|").split("|")[1:]]
    documented = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        source, *cells = (c.strip() for c in line.strip("|").split("|"))
        documented[source] = {t: c for t, c in zip(targets, cells) if c != "—"}
    assert documented == relation_table(SYNTH_TRACE)
