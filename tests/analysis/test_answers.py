"""`tsr audit answers`: whose answers a run gives, checked against a hand count on a made-up
predictions folder (two classification tasks with different label words)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from badinputs import refuse
from tsr.analysis.answers import first_word, share, takeover, takeover_markdown
from tsr.interface.cli import main


def _rows(pairs: list[tuple[str, str]], correct: list[bool] | None = None) -> list[dict]:
    return [{"index": i, "prompt": "p", "answer": f" {a}", "prediction": f" {p}\nmore",
             **({"correct": correct[i]} if correct else {})} for i, (a, p) in enumerate(pairs)]


def _run(root: Path) -> Path:
    """stance (favor/against) then policy (hawk/dove); after policy, 3 of stance's 4 predictions
    open with a policy word, 1 with a stance word; policy's own predictions are its words."""
    rounds = {
        "after-00-stance": {"00-stance": _rows([("favor", "favor"), ("against", "against"),
                                                ("favor", "against"), ("against", "against")])},
        "after-01-policy": {"00-stance": _rows([("favor", "hawk"), ("against", "dove"), ("favor", "favor"),
                                                ("against", "hawk")], [False, False, True, False]),
                            "01-policy": _rows([("hawk", "hawk"), ("dove", "dove")])},
    }
    run = root / "run"
    for folder, files in rounds.items():
        (run / "predictions" / folder).mkdir(parents=True)
        for name, rows in files.items():
            (run / "predictions" / folder / f"{name}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return run


def test_first_word_and_share():
    assert first_word(" hawk\nAnswer: x") == "hawk" and first_word("   ") == ""
    assert first_word(" none.") == "none" and first_word(' "favor", said') == '"favor' and first_word("...") == ""
    rows = [{"prediction": " a b"}, {"prediction": "c"}, {"prediction": ""}]
    assert share(rows, {"a", ""}) == pytest.approx(2 / 3)
    assert math.isnan(share([], {"a"}))


def test_takeover_by_hand(tmp_path):
    summary = takeover(_run(tmp_path))
    assert summary["tasks"] == ["stance", "policy"]
    first, second = summary["rows"]
    assert first == {"after": "stance", "cells": {}}  # only the task just trained was scored
    cell = second["cells"]["stance"]
    assert second["after"] == "policy" and set(second["cells"]) == {"stance"}
    assert cell == {"own": 0.25, "newest": 0.75, "accuracy": 0.25, "n": 4}
    table = takeover_markdown(summary)
    assert "| policy | 0.25 / 0.75 (0.25) | (trained) |" in table
    assert summary["overall"] == {"own": 0.25, "newest": 0.75, "cells": 1, "shared": 0}
    assert "Over the 1 cells" in table and "own 0.25, newest 0.75" in table


def test_overall_leaves_out_tasks_that_share_answer_words(tmp_path):
    """irony's labels are stance's words: after irony, stance's cell says nothing of whose answer
    it is and is left out of the two overall numbers; policy's is kept."""
    from tsr.analysis.answers import overall

    rows = [{"after": "irony", "cells": {"stance": {"own": 1.0, "newest": 1.0}, "policy": {"own": 0.0, "newest": 0.5}}}]
    words = {"stance": {"favor", "none"}, "policy": {"hawk"}, "irony": {"none", "ironic"}}
    assert overall(rows, words) == {"own": 0.0, "newest": 0.5, "cells": 1, "shared": 1}
    assert overall([], words) == {"own": None, "newest": None, "cells": 0, "shared": 0}


def test_the_command_writes_the_report_and_refuses_a_run_without_predictions(tmp_path, capsys):
    run = _run(tmp_path)
    assert main(["audit", "answers", str(run), "--out", str(tmp_path / "out")]) == 0
    saved = json.loads((tmp_path / "out" / "answers.json").read_text(encoding="utf-8"))
    assert saved["rows"][1]["cells"]["stance"]["newest"] == 0.75
    assert saved["command"].startswith("tsr audit answers ")
    assert (tmp_path / "out" / "answers.png").stat().st_size > 0
    empty = tmp_path / "empty"
    empty.mkdir()
    refuse(capsys, empty, ["audit", "answers", str(empty)], "eval.predictions=true")


def test_tsr_report_shows_the_answers_audit_as_a_section(tmp_path, capsys):
    from tsr.analysis.report import build_report

    run = _run(tmp_path)
    assert main(["audit", "answers", str(run)]) == 0
    page, found = build_report(tmp_path)
    assert [(a.name, a.folder.name) for a in found.audits] == [("answers", "run")]
    assert "Whose answers · run" in page and "tsr audit answers" in page
