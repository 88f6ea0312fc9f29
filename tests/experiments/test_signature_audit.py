"""The signature audit's scoring by hand, its files, and `tsr probe --signatures` refusals."""

import json
import math

import pytest

from tsr.experiments.signatures.run import score_table, spearman, summarise
from tsr.experiments.signatures.report import write_audit
from tsr.interface.cli import main


def test_spearman_by_hand():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: x ranks (1.5, 1.5, 3), y ranks (1, 2, 3) -> rho = 0.5 / 0.5**0.5 / 2**0.5
    assert spearman([5, 5, 7], [1, 2, 3]) == pytest.approx(math.sqrt(3) / 2)
    assert math.isnan(spearman([1, 1], [1, 2]))


MATRIX = {"t": {"p": {"mean": 0.3, "se": 0.1, "n": 2}, "c": {"mean": -0.2, "se": 0.1, "n": 2},
                "u": {"mean": 0.0, "se": 0.1, "n": 2}},
          "g": {"p": {"mean": -0.5, "se": 0.1, "n": 2}, "t": {"mean": 0.2, "se": 0.1, "n": 2}}}
KINDS = {"t": "classification", "g": "generation", "p": "classification", "c": "classification",
         "u": "classification"}
RELATIONS = {"p": {"t": "partner"}, "c": {"t": "conflict"}}


def test_score_table_by_hand():
    # for t: similarity ranks c > p > u, benefits p > u > c; for g (a loss: -0.5 helps) p ranks first
    table = {"t": {"p": 0.5, "c": 0.9, "u": 0.1}, "g": {"p": 0.2, "t": 0.1}}
    s = score_table(table, MATRIX, KINDS, RELATIONS)
    assert s["top1"]["t"] == {"predicted": "c", "best": "p", "hit": False, "regret": pytest.approx(0.5)}
    assert s["top1"]["g"]["hit"] and s["hits"] == 1 and s["top1"]["g"]["regret"] == 0
    assert s["mean_regret"] == pytest.approx(0.5)  # over the accuracy target t only (g is a loss)
    assert s["spearman"]["t"] == pytest.approx(-0.5) and s["spearman"]["g"] == pytest.approx(1.0)
    assert s["mean_spearman"] == pytest.approx(0.25)
    assert s["partner_above_conflict"] == 0.0 and s["pairs"] == 1


def test_summarise_gives_seed_mean_and_spread(tmp_path):
    seeds = {0: {"t": {"p": 0.9, "c": 0.1, "u": 0.0}, "g": {"p": 0.2, "t": 0.1}},
             1: {"t": {"p": 0.0, "c": 0.5, "u": 0.1}, "g": {"p": 0.1, "t": 0.2}}}
    a = summarise("gradb", seeds, MATRIX, KINDS, RELATIONS)
    assert a["cosine"]["t"]["p"] == pytest.approx(0.45)
    assert a["hit_rate"] == "2/2"  # the seed-mean table picks p for t and p for g
    assert a["per_seed"]["0"]["hits"] == 2 and a["per_seed"]["1"]["hits"] == 0
    assert a["spread"]["hits"]["mean"] == 1.0 and a["spread"]["hits"]["sd"] == pytest.approx(math.sqrt(2))
    assert a["per_target"]["t"]["hits"] == 1
    assert a["spread"]["partner_above_conflict"]["mean"] == 0.5
    audit = {"gradb": {**a, "seconds_per_task": 0.1, "probe_batches": 2},
             "proto": {**summarise("proto", seeds, MATRIX, KINDS), "seconds_per_task": 0.05, "probe_batches": 2}}
    write_audit(tmp_path, audit, ["t", "g", "p", "c", "u"])
    assert "| gradb | gradient | 2/2 |" in (tmp_path / "signatures.md").read_text()
    # seed 0 picks p for t (regret 0), seed 1 picks c (regret 0.5): per seed 0.25 ± 0.35
    assert a["mean_regret"] == 0 and a["spread"]["mean_regret"]["mean"] == pytest.approx(0.25)
    assert "| 0.000 | 0.250 ± 0.35 |" in (tmp_path / "signatures.md").read_text()
    assert len((tmp_path / "signatures.csv").read_text().splitlines()) == 1 + 2 * 2
    assert json.loads((tmp_path / "signatures.json").read_text())["proto"]["partner_above_conflict"] is None
    assert (tmp_path / "signatures.png").stat().st_size > 1000


def _probe_args(tiny_model, toy_stream, out, *extra):
    return ["probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=2",
            "stream.budget=3", "stream.test_cap=2", "stream.max_length=48", "model.threads=1", "model.compile=false",
            "--seeds", "0", "--workers", "1", "--out", str(out), *extra]


def _one_error_line(capsys, *needles):
    captured = capsys.readouterr()
    lines = [x for x in (captured.out + captured.err).splitlines() if x.strip()]
    assert lines[-1].startswith("tsr: error:") and "Traceback" not in captured.err
    assert all(n in lines[-1] for n in needles), lines[-1]


def test_unknown_signature_is_one_line_before_anything_runs(tiny_model, toy_stream, tmp_path, capsys):
    out = tmp_path / "p"
    assert main(_probe_args(tiny_model, toy_stream, out, "--signatures", "gradb,protto")) == 2
    _one_error_line(capsys, "unknown signature 'protto'")
    assert not out.exists()


def test_a_folder_without_mixed_arms_is_one_line(tiny_model, toy_stream, tmp_path, capsys):
    out = tmp_path / "p"
    assert main(_probe_args(tiny_model, toy_stream, out, "--arms", "target", "--targets", "parity",
                            "--signatures", "all")) == 2
    _one_error_line(capsys, "no mixed arms", str(out))


@pytest.mark.slow
def test_probe_audits_every_signature(tiny_model, toy_stream, tmp_path, capsys):
    out = tmp_path / "p"
    # a bare --signatures followed by an override keeps the override
    assert main(_probe_args(tiny_model, toy_stream, out, "--signatures", "seed=0")) == 0
    assert set(json.loads((out / "signatures.json").read_text())) == {"gradb", "gradb_norm", "gradb_last4"}
    assert main(_probe_args(tiny_model, toy_stream, out, "--signatures", "all")) == 0
    audit = json.loads((out / "signatures.json").read_text())
    assert len(audit) == 11 and audit["jointot"]["seeds"] == [0] and audit["jointot_emb"]["seeds"] == [0]
    assert audit["gradb"]["machine"]["threads"] >= 1 and "cpu" in audit["proto"]["machine"]  # a reading names it
    assert set(json.loads((out / "report.json").read_text())["signatures"]) == set(audit)
    assert "signatures.md" in capsys.readouterr().out
