"""The scale audit: the same probe on several base models, headroom per model and which
best-source choices are stable across them (tsr audit scale)."""

import json

import pytest

from badinputs import refuse
from toy import toy_corpus
from tsr.experiments.probe import plan as pr
from tsr.experiments.probe import run as probe_run
from tsr.experiments.signatures import run as signature_audit
from tsr.experiments.scale.plan import at_model
from tsr.experiments.scale.report import pick, scale_markdown, scale_summary, stability
from tsr.analysis.transfer import headroom
from tsr.interface.cli import main
from tsr.config import load_config
from tsr.model.tiny import build_tiny

TINY = ["train.steps=2", "stream.test_cap=4", "stream.max_length=48", "model.threads=1", "model.compile=false",
        "stream.budget=3"]


@pytest.fixture(scope="module")
def wider_model(tmp_path_factory):
    """A second tiny base of another width and depth than ``tiny_model`` (a 'larger scale')."""
    return build_tiny(tmp_path_factory.mktemp("tiny-wider"), "qwen2", toy_corpus(), vocab_size=320,
                      warm_up_steps=0, hidden=48, layers=3, heads=4, kv_heads=2)


# -- the report, by hand ---------------------------------------------------------------------------------


def test_stability_by_hand():
    labels = ["small", "mid", "big"]
    choices = {"small": {"a": "x", "b": "y", "c": "x", "d": "z"},
               "mid": {"a": "x", "b": "y", "c": "y", "d": "z"},
               "big": {"a": "x", "b": "y", "c": "x"}}  # d: no choice at the big model
    found = stability(choices, labels, ["a", "b", "c", "d"])
    assert {t: r["stable"] for t, r in found["targets"].items()} == {"a": True, "b": True, "c": False, "d": None}
    assert (found["stable"], found["of"]) == (2, 3)  # c differs at mid; d is not decided
    assert found["agree_with_first"] == {"mid": {"agree": 3, "of": 4}, "big": {"agree": 3, "of": 3}}
    assert found["targets"]["c"]["picks"] == {"small": "x", "mid": "y", "big": "x"}
    # the signature's pick: the most similar source among those asked for
    assert pick({"x": 0.1, "y": 0.7, "z": 0.4}, None) == "y"
    assert pick({"x": 0.1, "y": 0.7, "z": 0.4}, ["x", "z"]) == "z"
    assert pick({"x": 0.1, "y": None, "z": float("nan")}, None) == "x"  # undefined similarities: no candidates
    assert pick({"x": 0.1}, ["y"]) is None


def _arm(target, arm, seed, score, source=None, kind="classification"):
    key = "acc" if kind == "classification" else "loss"
    return {"target": target, "arm": arm, "source": source, "seed": seed, "kind": kind, key: score}


def test_scale_summary_by_hand():
    arms = {
        "small": [_arm("t", "target", 0, 0.40), _arm("t", "target", 1, 0.50),
                  _arm("t", "full", 0, 0.70), _arm("t", "full", 1, 0.60),
                  _arm("t", "mixed", 0, 0.45, "u"), _arm("t", "mixed", 1, 0.55, "u"),
                  _arm("t", "mixed", 0, 0.50, "v"), _arm("t", "mixed", 1, 0.52, "v"),
                  _arm("g", "target", 0, 2.0, kind="generation"), _arm("g", "full", 0, 1.5, kind="generation"),
                  _arm("g", "mixed", 0, 1.8, "u", "generation"), _arm("g", "mixed", 0, 1.9, "v", "generation")],
        "big": [_arm("t", "target", 0, 0.80), _arm("t", "target", 1, 0.80),
                _arm("t", "full", 0, 0.82), _arm("t", "full", 1, 0.84),
                _arm("t", "mixed", 0, 0.79, "u"), _arm("t", "mixed", 1, 0.80, "u"),
                _arm("t", "mixed", 0, 0.81, "v"), _arm("t", "mixed", 1, 0.81, "v"),
                _arm("g", "target", 0, 1.0, kind="generation"), _arm("g", "full", 0, 0.9, kind="generation"),
                _arm("g", "mixed", 0, 0.95, "u", "generation"), _arm("g", "mixed", 0, 1.1, "v", "generation")],
    }
    tables = {"small": {"gradb": {"t": {"u": 0.9, "v": 0.1, "g": 0.5}, "g": {"u": 0.2, "v": 0.3, "t": 0.1}}},
              "big": {"gradb": {"t": {"u": 0.8, "v": 0.3, "g": 0.2}, "g": {"u": 0.1, "v": 0.4, "t": 0.6}}}}
    kinds = {"t": "classification", "g": "generation"}
    s = scale_summary(arms, ["small", "big"], ["/m/small", "/m/big"], ["t", "g"], kinds, tables, ["u", "v"])
    small, big = s["per_model"]["small"], s["per_model"]["big"]
    # headroom: S(10N) - S(N) paired by seed, (0.30, 0.10) -> 0.20 ± 0.10; the loss gap for g
    assert small["headroom"]["t"]["headroom"]["mean"] == pytest.approx(0.20)
    assert small["headroom"]["t"]["headroom"]["se"] == pytest.approx(0.10)
    assert small["headroom"]["t"]["target"]["mean"] == pytest.approx(0.45)
    assert small["headroom"]["g"]["headroom"]["mean"] == pytest.approx(0.5)
    assert big["headroom"]["t"]["headroom"]["mean"] == pytest.approx(0.03)
    means = s["mean_over_accuracy_targets"]  # over the accuracy targets: g is a loss, not in the means
    assert (means["big"]["headroom"]["mean"], means["big"]["headroom"]["n"]) == (pytest.approx(0.03), 1)
    # the best source of t: u gains (+0.05, +0.05), v (+0.10, +0.02) -> v at +0.06; at big u -0.005, v +0.01
    assert small["best"]["t"]["source"] == "v" and small["best"]["t"]["gain"]["mean"] == pytest.approx(0.06)
    assert big["best"]["t"]["source"] == "v" and big["best"]["t"]["gain"]["mean"] == pytest.approx(0.01)
    assert means["small"]["best_gain"]["mean"] == pytest.approx(0.06) and means["small"]["target"]["mean"] == 0.45
    # g: lower loss is better, the gain is the loss drop: small u (0.2), big u (0.05)
    assert small["best"]["g"]["source"] == "u" and small["best"]["g"]["gain"]["mean"] == pytest.approx(0.2)
    assert big["best"]["g"]["source"] == "u" and big["best"]["g"]["gain"]["mean"] == pytest.approx(0.05)
    assert (s["stability"]["matrix"]["stable"], s["stability"]["matrix"]["of"]) == (2, 2)
    # gradb picks among u, v: t <- u at both; g <- v at both (t is not a source asked for)
    assert small["picks"]["gradb"] == {"t": "u", "g": "v"} and big["picks"]["gradb"] == {"t": "u", "g": "v"}
    assert (s["stability"]["gradb"]["stable"], s["stability"]["gradb"]["of"]) == (2, 2)
    # every source allowed: big's g now picks t, so g's routing choice is not stable
    s = scale_summary(arms, ["small", "big"], ["/m/small", "/m/big"], ["t", "g"], kinds, tables)
    assert s["stability"]["gradb"]["targets"]["g"]["picks"] == {"small": "v", "big": "t"}
    assert (s["stability"]["gradb"]["stable"], s["stability"]["gradb"]["of"]) == (1, 2)


# -- the command ---------------------------------------------------------------------------------------


def _stamps(root):
    return {p: p.stat().st_mtime_ns for p in sorted(root.glob("runs/probe-*/arms/*.json"))}


@pytest.mark.slow
def test_audit_scale_end_to_end_resumes_and_equals_the_probe(tiny_model, wider_model, toy_stream, tmp_path,
                                                           monkeypatch, capsys):
    common = ["paper", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    out = tmp_path / "audit"
    args = ["audit", "scale", *common, "--models", f"{tiny_model},{wider_model}", "--labels", "small,wide",
            "--arms", "target,full,mixed", "--signatures", "gradb", "--seeds", "0,1", "--workers", "1",
            "--out", str(out)]
    assert main(args) == 0
    summary = json.loads((out / "scale.json").read_text())
    assert [m["label"] for m in summary["models"]] == ["small", "wide"]
    folders = sorted((tmp_path / "runs").glob("probe-*"))
    assert len(folders) == 2  # one probe folder per model: the two models' arms never mix
    assert len(_stamps(tmp_path)) == 2 * 3 * 2 * 4  # models x targets x seeds x (target, full, 2 mixed)
    stamps = _stamps(tmp_path)
    for label, model in (("small", tiny_model), ("wide", wider_model)):
        cfg = load_config("paper", [f"model.path={model}", f"stream.source={toy_stream}",
                                    f"out_dir={tmp_path / 'runs'}", *TINY])
        folder = pr.probe_dir(cfg, pr.load_probe_stream(cfg))
        assert folder == pr.probe_dir(at_model(cfg, str(model)), pr.load_probe_stream(cfg))
        assert f"path: {model}" in (folder / "config.yaml").read_text()
        arms = [json.loads(p.read_text()) for p in (folder / "arms").glob("*.json")]
        assert {a["seed"] for a in arms} == {0, 1} and len(arms) == 24
        # the report's headroom is transfer.headroom of the model's probe folder
        assert summary["per_model"][label]["headroom"] == headroom(arms)
        # the equivalent path: tsr probe of that model reuses the same arms (trains nothing) and reports the same
        assert main(["probe", *common[:1], f"model.path={model}", *common[1:], "--arms", "target,full,mixed",
                     "--seeds", "0,1", "--workers", "1", "--signatures", "gradb"]) == 0
        report = json.loads((folder / "report.json").read_text())
        assert report["headroom"] == summary["per_model"][label]["headroom"]
        assert {t: b["source"] for t, b in summary["per_model"][label]["best"].items()} == report["column_best"]
        cosine = report["signatures"]["gradb"]["cosine"]
        assert summary["per_model"][label]["picks"]["gradb"] == {t: max(row, key=row.get) for t, row in cosine.items()}
        assert (out / label / "signatures.md").is_file()  # the model's signature audit beside the report
    assert _stamps(tmp_path) == stamps
    for kind in ("matrix", "gradb"):
        decided = [r for r in summary["stability"][kind]["targets"].values() if None not in r["picks"].values()]
        assert summary["stability"][kind]["stable"] == sum(len(set(r["picks"].values())) == 1 for r in decided)
        assert summary["stability"][kind]["of"] == len(decided)
    assert summary["stability"]["gradb"]["of"] == 3
    # a target leaves the matrix's count exactly when its best source is tied at some model
    tied = {t for e in summary["per_model"].values() for t, b in e["best"].items() if b["tied"]}
    assert summary["stability"]["matrix"]["of"] == 3 - len(tied)
    text = (out / "scale.md").read_text()
    assert "tsr audit scale" in text and "Choices across scale" in text and "gradb (signature top-1)" in text
    assert (out / "scale.png").stat().st_size > 10000
    # a second call trains nothing and takes no signature again
    signatures = {p: p.stat().st_mtime_ns for p in out.glob("*/signature-tables.json")}
    assert len(signatures) == 2

    def refused(*a, **k):
        raise AssertionError("the second call recomputed something")

    monkeypatch.setattr(probe_run, "run_job", refused)
    monkeypatch.setattr(signature_audit, "seed_tables", refused)
    assert main(args) == 0
    assert _stamps(tmp_path) == stamps
    assert signatures == {p: p.stat().st_mtime_ns for p in out.glob("*/signature-tables.json")}
    again = json.loads((out / "scale.json").read_text())
    assert again["per_model"] == summary["per_model"] and again["stability"] == summary["stability"]
    assert main([*args, "--report-only"]) == 0
    assert json.loads((out / "scale.json").read_text())["per_model"] == summary["per_model"]


def test_bad_scale_inputs(tiny_model, wider_model, toy_stream, tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    common = ["audit", "scale", "paper", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    missing = tmp_path / "no-such-model"
    refuse(capsys, tmp_path, [*common, "--models", f"{tiny_model},{missing}"], f"model path '{missing}' does not exist")
    refuse(capsys, tmp_path, [*common, "--models", str(tiny_model)], "at least two models (got 1)")
    refuse(capsys, tmp_path, [*common], "at least two models (got 0)")
    refuse(capsys, tmp_path, [*common, "--models", f"{tiny_model},{wider_model}", "--labels", "a,b,c"],
           "--labels: 3 label(s) for 2 models")
    refuse(capsys, tmp_path, [*common, "--models", f"{tiny_model},{wider_model}", "--labels", "a,a"], "'a' is given twice")
    refuse(capsys, tmp_path, [*common, "--models", f"{tiny_model},{tiny_model}"], "is given twice")
    refuse(capsys, tmp_path, [*common, "--models", f"{tiny_model},{wider_model}", "--arms", "random"],
           "unknown arm 'random'")
    refuse(capsys, tmp_path, [*common, "--models", f"{tiny_model},{wider_model}", "--arms", "target"],
           "needs full arms")
    refuse(capsys, tmp_path, [*common, "--models", f"{tiny_model},{wider_model}", "--signatures", "nope"],
           "unknown signature 'nope'")
    refuse(capsys, tmp_path, [*common, "--models", f"{tiny_model},{wider_model}", "--report-only"], "no target arm")


def test_a_tied_best_source_is_no_choice():
    """On a model where no source moves the score every source ties: that target has no matrix
    choice there (it used to count as stable, the first source by name at every model)."""
    flat = [_arm("t", "target", 0, 0.5), _arm("t", "mixed", 0, 0.5, "u"), _arm("t", "mixed", 0, 0.5, "v"),
            _arm("w", "target", 0, 0.5), _arm("w", "mixed", 0, 0.6, "u"), _arm("w", "mixed", 0, 0.5, "v")]
    arms = {"small": flat, "big": [dict(a) for a in flat]}
    s = scale_summary(arms, ["small", "big"], ["/a", "/b"], ["t", "w"], {"t": "classification", "w": "classification"})
    assert s["per_model"]["small"]["best"]["t"]["tied"] and not s["per_model"]["small"]["best"]["w"]["tied"]
    found = s["stability"]["matrix"]
    assert found["targets"]["t"]["stable"] is None and found["targets"]["w"]["stable"] is True
    assert (found["stable"], found["of"]) == (1, 1)
    assert "| t | tie (" in scale_markdown(s)
