"""Crash-safe writes: an interrupted write leaves the previous file whole and no temporaries."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from tsr.atomic import write_figure, write_json
from tsr.errors import TsrError


def test_interrupted_figure_write_keeps_the_old_file_and_closes_the_figure(tmp_path, monkeypatch):
    path = tmp_path / "plot.png"
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    write_figure(path, fig)
    old = path.read_bytes()
    assert old.startswith(b"\x89PNG") and not plt.fignum_exists(fig.number)

    fig2, _ = plt.subplots()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(fig2, "savefig", broken)
    with pytest.raises(TsrError, match="plot.png: cannot write \\(disk full\\)"):  # one line, naming the file
        write_figure(path, fig2)
    assert path.read_bytes() == old
    assert not plt.fignum_exists(fig2.number)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png"]


def test_json_write_replaces_the_whole_file(tmp_path):
    path = tmp_path / "a.json"
    write_json(path, {"x": list(range(100))})
    write_json(path, {"x": 1})
    assert path.read_text() == '{\n  "x": 1\n}\n'
