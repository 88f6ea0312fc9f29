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
