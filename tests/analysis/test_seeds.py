"""Which seeds each comparison cell covers, and the refusal of uneven cells (tsr.analysis.seeds)."""

from pathlib import Path

import pytest

from tsr.analysis.cells import cell_seeds, cells, check_cells, covered
from tsr.analysis.seeds import check_even, seed_label, uneven
from tsr.analysis.table import RunSummary
from tsr.errors import RunError
from tsr.engine.grid import Point


@pytest.mark.parametrize("seeds,label", [
    ((), "-"), ((3,), "3"), ((0, 1), "0,1"), ((2, 0, 1), "0-2"), ((0, 1, 2, 3, 4), "0-4"),
    ((0, 2, 5, 6, 7), "0,2,5-7"), ((0, 1, 3, 4), "0,1,3,4"), ((1, 1, 2), "1,2"),
])
def test_seed_label_names_every_seed_and_shortens_runs_of_three(seeds, label):
    assert seed_label(seeds) == label


def test_uneven_names_each_seed_set_and_its_groups_largest_first():
    assert uneven({"a": (0, 1, 2), "b": [2, 1, 0]}) is None
    assert uneven({"a": (0, 1, 2), "b": ()}) is None  # a group without runs is not a seed set
    assert uneven({"tsr": (0, 1, 2, 3, 4), "seqft": (0, 1, 2), "er": (0, 1, 2)}) == "tsr: 0-4; seqft, er: 0-2"


def test_check_even_refuses_in_one_line_unless_asked():
    groups = {"tsr": (0, 1, 2), "er": (0, 1)}
    with pytest.raises(RunError) as err:
        check_even(groups, "kd audit of toy")
    assert str(err.value).startswith("kd audit of toy: cells cover different seeds (tsr: 0-2; er: 0,1)")
    assert "--uneven-seeds" in str(err.value) and "\n" not in str(err.value)
    assert check_even(groups, "x", allow=True) == "tsr: 0-2; er: 0,1"
    assert check_even({"tsr": (0, 1)}, "x") is None


def test_grid_cells_are_checked_across_methods_and_variants():
    def run(method, variant, seed):
        point = Point(method, seed, (), variant)
        return point, RunSummary(Path(f"/r/{method}-{variant}-{seed}"), method, seed, "s",
                                 {"overall": 0.5, "plas": 0.6, "bwt": 0.0})

    runs = dict(run(m, v, s) for m, v, seeds in (("tsr", "era", (0, 1, 2)), ("tsr", "none", (0, 1)),
                                                 ("er", "-", (0, 1, 2))) for s in seeds)
    table = cells(runs)
    assert cell_seeds(table["tsr"]["none"]) == (0, 1) and covered(table["er"]["-"]) == "0-2" and covered(None) == "-"
    with pytest.raises(RunError, match=r"cells cover different seeds \(tsr era, er -: 0-2; tsr none: 0,1\)"):
        check_cells(table, "g")
    assert check_cells(table, "g", allow=True) == "tsr era, er -: 0-2; tsr none: 0,1"
