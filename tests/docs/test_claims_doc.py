"""docs/claims.md: its tables are what the run ledgers and the rule give, and its C8 orders are
the curricula of the published matrices.

The page's tables are generated (:mod:`tsr.analysis.claims`); these tests fail when a printed
table differs from what the ledgers and ``measurements/claims/claims.yaml`` give, when a printed
verdict is not the rule's for its printed number, and when a claim's first-screen verdict is not
its rows'. C8 runs the best-source curriculum as an explicit order (the matrix's probe folder is
not kept); the orders written there must be what :func:`greedy_order` computes from the 56-pair
matrices published in docs/calibration.md (synth-trace) and docs/signatures.md (synth-numglue).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import yaml

from tsr.analysis.claims import SPEC, MixedMachines, build, check, printed
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
    """The C8 section's command text."""
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    return text.split("\n## C8\n", 1)[1].split("\n## ", 1)[0]


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


def table_lines(block: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in block.splitlines()[2:]]


def status_rows() -> list[dict[str, str]]:
    """Every line of the page's per-claim tables (a family's member lines carry their row's id)."""
    rows, last = [], None
    for name, block in printed().items():
        if name == "status":
            continue
        for cells in table_lines(block):
            row = dict(zip(("claim", "headline", "criterion", "regime", "measured", "verdict", "machine"), cells))
            row["member"] = not row["claim"]
            row["claim"] = row["claim"] or last
            last = row["claim"]
            rows.append(row)
    return rows


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


def test_every_verdict_of_the_claim_tables_follows_the_rule():
    rows = status_rows()
    assert {r["claim"][:3] for r in rows} >= {"C1a", "C5a", "C11"}
    assert len({r["claim"] for r in rows}) >= 40
    checked = 0
    for row in rows:
        measured = row["measured"].split(", ", 1)[0]  # the decisive member follows the number
        if row["verdict"] == "unpaired":  # pairs across machines: no verdict, two machines named
            assert " + " in row["machine"], row
            continue
        assert row["verdict"] == written_verdict(measured, row["criterion"]), (row["claim"], row["regime"])
        assert row["machine"], row
        checked += 1
    assert checked >= 60


def test_each_claims_first_screen_verdict_follows_its_rows():
    """A claim holds when all its rows in the regime hold, does not hold when one does not."""
    rows = [r for r in status_rows() if not r["member"]]
    summary = table_lines(printed()["status"])
    assert [c[0].split("]")[0].lstrip("[") for c in summary] == [f"C{i}" for i in range(1, 13)]
    for cells in summary:
        claim = cells[0].split("]")[0].lstrip("[")
        for regime, cell in zip(("default", "near-calibrated", "real base"), cells[2:]):
            verdicts = [r["verdict"] for r in rows if re.fullmatch(rf"{claim}[a-z]?", r["claim"]) and r["regime"] == regime]
            if not verdicts:  # the real base says why (cost, or running now); the bundled regimes may
                assert cell.startswith("not measured: ") if regime == "real base" else (
                    cell == "not measured" or cell.startswith("not measured: ")), (claim, regime, cell)
                continue
            want = ("does not hold" if "does not hold" in verdicts else "unpaired" if "unpaired" in verdicts
                    else "holds" if set(verdicts) == {"holds"} else "inconclusive")
            assert cell.startswith(f"**{want}**"), (claim, regime, cell)


def test_the_printed_tables_are_what_the_ledgers_give():
    """Every generated table of the page is what the spec and the run ledgers give now."""
    assert check() == [], "python -m tsr.analysis.claims --write"


def test_a_printed_cell_that_differs_from_the_ledgers_is_caught(tmp_path):
    page = tmp_path / "claims.md"
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    assert "+0.093 ± 0.027 (5), greedy" in text  # C8a's default cell, from the C12 ledger
    page.write_text(text.replace("+0.093 ± 0.027 (5), greedy", "+0.067 ± 0.024 (5), greedy"), encoding="utf-8")
    assert check(page) == ["C8"]


def test_the_generator_refuses_pairs_across_machines_unless_asked(tmp_path):
    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    row = next(r for r in spec["rows"] if r["id"] == "C8d")
    assert row["default"].pop("mixed") == "unpaired"  # TSR's synth-numglue orders ran on two machines
    spec["rows"] = [row]
    spec["claims"] = {"C8": spec["claims"]["C8"]}
    for name, ledger in spec["ledgers"].items():
        files = ledger["file"] if isinstance(ledger["file"], list) else [ledger["file"]]
        ledger["file"] = [str(SPEC.parents[2] / f) for f in files]
    bad = tmp_path / "claims.yaml"
    bad.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    with pytest.raises(MixedMachines, match="kinds of machine"):
        build(bad)


def test_every_c12_figure_is_without_the_headroom_gate_as_the_page_says():
    ledgers = sorted((SPEC.parents[1] / "c12").glob("*.jsonl"))
    need = [yaml.safe_load(json.loads(line)["config.yaml"])["method"] for file in ledgers
            for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    need = [m for m in need if m["name"] == "tsr_need"]
    assert need and all(m["need_gate"] == "" for m in need)
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    assert f"`need_gate`\nwas empty in every `tsr_need` run of the ledgers ({len(need)} runs)" in text


def test_the_page_is_a_reference_not_a_notebook():
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "dated narrative goes to docs/history/"
    assert "so far" not in text
    assert "history/claims-notebook.md" in text and (DOCS / "history" / "claims-notebook.md").is_file()


def test_the_verdict_reader_sees_a_wrong_verdict():
    """Negative control: a row that claims 'holds' within two standard errors is caught."""
    assert written_verdict("+0.029 ± 0.027 (5)", "> 0") == "inconclusive"
    assert written_verdict("10/10 (8)", "≥ 9 of 10") == "holds"
    assert written_verdict("+0.2 ± 0.01 (4)", "> 0") == "inconclusive"
