"""docs/claims.md: the greedy orders its C8 commands run are the curricula of the published matrices.

C8 runs the best-source curriculum as an explicit order (the matrix's probe folder is not
kept); this pins that the orders written there are what :func:`greedy_order` computes from the
56-pair matrices published in docs/calibration.md (synth-trace) and docs/signatures.md
(synth-numglue), so the pages cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tsr.experiments.orders.plan import greedy_order
from tsr.data.streams import load_stream

DOCS = Path(__file__).resolve().parents[2] / "docs"


def published_matrix(page: str, heading: str) -> tuple[dict, dict[str, str]]:
    """``({target: {source: {"mean", "n"}}}, {target: kind})`` from the first table after ``heading``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split(heading, 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("|")][:10]
    header = [h.strip() for h in rows[0].strip("|").split("|")][1:]
    targets = [h.removesuffix(" (L)") for h in header]
    kinds = {h.removesuffix(" (L)"): "generation" if h.endswith("(L)") else "classification" for h in header}
    matrix: dict = {t: {} for t in targets}
    for row in rows[2:]:
        source, *cells = [c.strip() for c in row.strip("|").split("|")]
        for target, cell in zip(targets, cells):
            if cell != "—":
                mean = float(cell.replace("*", "").split("±")[0].replace("−", "-"))
                matrix[target][source] = {"mean": mean, "n": 8}
    assert len(matrix) == 8 and sum(len(v) for v in matrix.values()) == 56
    return matrix, kinds


def c8_row() -> str:
    return next(line for line in (DOCS / "claims.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("| C8 |"))


@pytest.mark.parametrize("stream_name,page,heading,first", [
    ("synth-trace", "calibration.md", "## The transfer matrix (56 pairs, 8 seeds)", "stance"),
    ("synth-numglue", "signatures.md", "### synth-numglue, 3 seeds", "ng"),
])
def test_c8_greedy_orders_are_the_published_curricula(stream_name, page, heading, first):
    matrix, kinds = published_matrix(page, heading)
    stream = load_stream(stream_name)
    row = c8_row()
    written = re.search(rf"greedy=({first}[\w>-]+)", row).group(1).split(">")
    assert written == greedy_order(matrix, kinds, stream.names)
    assert re.search(rf"greedy-reversed=({written[-1]}[\w>-]+)", row).group(1).split(">") == written[::-1]  # the pair
    assert written != stream.names  # a curriculum of its own, not the canonical order's runs


def status_rows() -> list[dict[str, str]]:
    """The rows of claims.md's status table, by column name."""
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    lines = [line for line in text.split("## Status", 1)[1].splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    end = next(i for i, line in enumerate(lines[2:], 2) if not line.startswith("| C") or line.count("|") != lines[0].count("|"))
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:end]]


def written_verdict(measured: str, criterion: str) -> str:
    """The verdict the rule gives a measured cell: ``mean ± se (n)`` or ``passed/total (n)``."""
    from tsr.analysis.verdicts import count_verdict, verdict

    count = re.fullmatch(r"(\d+)/(\d+) \((\d+)\)", measured)
    if count:
        needed = int(re.match(r"≥ (\d+) of", criterion).group(1))
        return count_verdict(int(count.group(1)), int(count.group(2)), needed, int(count.group(3)))
    stat = re.fullmatch(r"([+−-]?[\d.]+) ± ([\d.]+) \((\d+)\)", measured)
    assert stat, f"a measured cell the rule cannot read: {measured!r}"
    mean = float(stat.group(1).replace("−", "-"))
    return verdict(mean, float(stat.group(2)), int(stat.group(3)), criterion)


def test_every_verdict_of_the_status_table_follows_the_rule():
    rows = status_rows()
    assert len(rows) >= 30 and {r["claim"][:3] for r in rows} >= {"C1a", "C5a", "C11"}
    checked = 0
    for row in rows:
        for regime in ("default", "near-calibrated"):
            measured, written = row[f"{regime}: measured"], row[f"{regime}: verdict"]
            if measured in ("—", ""):
                assert written == "not measured", row["claim"]
                continue
            assert written == written_verdict(measured, row["criterion"]), (row["claim"], regime)
            checked += 1
    assert checked >= 25


def test_the_verdict_reader_sees_a_wrong_verdict():
    """Negative control: a row that claims 'holds' within two standard errors is caught."""
    assert written_verdict("+0.029 ± 0.027 (5)", "> 0") == "inconclusive"
    assert written_verdict("10/10 (8)", "≥ 9 of 10") == "holds"
    assert written_verdict("+0.2 ± 0.01 (4)", "> 0") == "inconclusive"
