"""`tsr report`: one self-contained HTML page for a folder of runs and probe reports.

A tiny grid (seqft and tsr, two seeds, two steps a task on the bundled base) is made once; an
unfinished run and a probe folder are added beside it, so every section has its data.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
from html.parser import HTMLParser
from pathlib import Path

import pytest

from badinputs import TINY, refuse
from toy import write_toy_stream
from tsr.experiments.probe.report import write_report
from tsr.analysis.report import build_report
from tsr.interface.cli import main
from tsr.data.streams import load_stream
from tsr.runs.results import load_results


def _arm(target, kind, arm, seed, acc, loss, source=None):
    return {"target": target, "kind": kind, "arm": arm, "source": source, "seed": seed, "acc": acc, "loss": loss}


def _probe(folder: Path, stream_file: Path) -> None:
    """A probe folder as `tsr probe` leaves it, from arms written by hand (known numbers)."""
    arms = []
    for seed, (t, f, mv, mc) in enumerate([(0.50, 0.90, 0.70, 0.40), (0.60, 0.80, 0.70, 0.50)]):
        arms += [_arm("parity", "classification", "target", seed, t, 1.0),
                 _arm("parity", "classification", "full", seed, f, 1.0),
                 _arm("parity", "classification", "mixed", seed, mv, 1.0, "vowel"),
                 _arm("parity", "classification", "mixed", seed, mc, 1.0, "copy")]
    signatures = {"gradb": {"seeds": [0, 1], "cosine": {"parity": {"vowel": 0.6, "copy": -0.2}},
                            "top1": {"parity": {"predicted": "vowel", "best": "vowel", "hit": True}},
                            "hit_rate": "1/1"}}
    (folder / "arms").mkdir(parents=True)
    write_report(folder, arms, load_stream(str(stream_file)), signatures=signatures)


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    base = tmp_path_factory.mktemp("report")
    stream = write_toy_stream(base / "data", pool=16, test=4)
    root = base / "grid"
    assert main(["compare", f"stream.source={stream}", f"out_dir={root}", *TINY, "--methods", "seqft,tsr",
                 "--seeds", "0,1", "--workers", "1"]) == 0
    # known scores for the seqft runs: Overall (parity, vowel after the last task) 0.25 and 0.75
    for seed, last in ((0, [0.0, 0.5, 0.0]), (1, [1.0, 0.5, 0.0])):
        path = next(root.glob(f"toy-seqft-s{seed}-*")) / "results.json"
        data = json.loads(path.read_text())
        data["acc"][-1] = last
        path.write_text(json.dumps(data))
    # a run stopped after its second task (a copy of a tsr run, cut to two rows)
    half = root / "half"
    shutil.copytree(next(root.glob("toy-tsr-s1-*")), half)
    data = json.loads((half / "results.json").read_text())
    data.update(acc=data["acc"][:2], loss=data["loss"][:2], task_info=data["task_info"][:2])
    (half / "results.json").write_text(json.dumps(data))
    _probe(root / "probe-toy", stream)
    return root


class Tables(HTMLParser):
    """Each ``<table>`` as rows of cell texts, and the section (``<h2 id>``) it is in."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.section, self.cell = "", None

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self.section = dict(attrs).get("id", "")
        elif tag == "table":
            self.tables.append((self.section, []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][1][-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def _tables(page: str, section: str) -> list[list[list[str]]]:
    parser = Tables()
    parser.feed(page)
    return [rows for s, rows in parser.tables if s == section]


def _section(page: str, anchor: str) -> str:
    start = page.index(f'<h2 id="{anchor}">')
    end = page.find("<h2 ", start + 1)
    return page[start:end if end > 0 else len(page)]


def test_the_page_has_every_section_with_the_runs_numbers(grid):
    page, found = build_report(grid)
    assert len(found.runs) == 5 and found.unfinished == 1 and len(found.probes) == 1
    for anchor in ("table", "matrices", "routing", "curves", "probe-1", "runs"):
        assert f'<h2 id="{anchor}">' in page and f'href="#{anchor}"' in page  # the section and its entry
    # the comparison table: one row per method, the mean ± sample std of the runs' Overall
    (table, unfinished) = _tables(page, "table")
    header, rows = table[0], {row[0]: row for row in table[1:]}
    overall = header.index("Overall")
    assert rows["seqft"][1] == "0,1" and rows["seqft"][overall] == "0.500 ± 0.354"
    tsr = [load_results(p).metrics()["overall"] for p in grid.glob("toy-tsr-s*")]
    assert rows["tsr"][overall] == f"{statistics.fmean(tsr):.3f} ± {statistics.stdev(tsr):.3f}"
    assert rows["tsr"][1] == "0,1"  # the unfinished tsr run is not averaged in: it is listed apart
    assert unfinished[1][:4] == ["half", "tsr", "1", "2 of 3"]
    assert _section(page, "table").count("<img") == 1  # the table as a figure (two methods)
    assert "<h4>" not in _section(page, "table")  # no run computed generation metrics: no table of them
    # a results matrix per run (folded) and the mean of each method's two finished seeds; routing
    # for the tsr runs only, one loss figure for the setting
    matrices = _section(page, "matrices")
    assert matrices.count("<img") == 5 + 2 and matrices.count("mean over seeds 0, 1, cell by cell") == 2
    assert "<summary>Each run's matrix (5)</summary>" in matrices
    assert _section(page, "routing").count("<img") == 3
    assert _section(page, "curves").count("<img") == 1
    assert "Colour: accuracy 0–1" in _section(page, "matrices")
    # the probe: headroom (S(10N) - S(N), paired by seed) and the signature audit
    probe = _section(page, "probe-1")
    headroom, hits, cosine = _tables(page, "probe-1")
    assert headroom[1][0] == "parity" and headroom[1][4] == "+0.300 ± 0.100"
    assert hits[1][:2] == ["gradb", "1/1"] and cosine[1][2] == "+0.60★"
    assert probe.count("<img") == 1 and "largest |benefit| in its column" in probe
    assert "probe-toy" in page and "4 finished run(s), 1 unfinished" in page


def test_the_mean_matrix_is_the_cell_wise_mean_and_missing_where_any_run_misses():
    from tsr.analysis.report import mean_rows

    a = [[0.5, None], [0.2, 0.4]]
    b = [[0.7, 0.1], [0.4, float("nan")]]
    assert mean_rows([a, b]) == [[pytest.approx(0.6), None], [pytest.approx(0.3), None]]
    assert mean_rows([a]) == [[0.5, None], [0.2, 0.4]]


def test_one_setting_is_named_once_not_over_every_column(grid, monkeypatch):
    import tsr.analysis.table_figure as table_figure

    titles = []
    original = table_figure.comparison_figure

    def record(*args, **kwargs):
        fig = original(*args, **kwargs)
        titles.extend(ax.get_title(loc) for ax in fig.axes for loc in ("left", "center") if ax.get_title(loc))
        titles.append(fig._suptitle.get_text())
        return fig

    monkeypatch.setattr("tsr.analysis.report_table.comparison_figure", record)
    page, found = build_report(grid)
    (setting,) = {r.setting for r in found.runs}
    assert titles[:2] == ["Overall (final mean accuracy) ↑", "BWT ↑"] and setting in titles[-1]
    assert f"in 1 setting(s) ({setting})" in page  # the header names it
    (runs,) = _tables(page, "runs")
    assert runs[0] == ["folder", "method", "seed", "tasks", "metrics"]  # no column repeating it
    assert "<h3>" not in _section(page, "matrices")
    for section in ("table", "matrices", "curves"):  # no sub-heading repeating it (Unfinished runs apart)
        assert "<h3>" + setting not in _section(page, section).replace("<h3>Unfinished", "")
    assert _section(page, "runs").split("</table></div>")[-1].strip() == "</body>\n</html>"  # no stray line after it


def test_learning_curves_name_an_unfinished_run_apart_from_its_finished_twin(grid, monkeypatch):
    import tsr.analysis.report as report

    drawn = {}
    real = report.loss_curves_figure
    monkeypatch.setattr(report, "loss_curves_figure", lambda panels, *a: drawn.update(panels) or real(panels, *a))
    build_report(grid)
    assert sorted(label for label, _ in drawn["tsr"]) == ["seed 0", "seed 1", "seed 1 (2 of 3 tasks)"]
    assert sorted(label for label, _ in drawn["seqft"]) == ["seed 0", "seed 1"]


def test_a_cell_of_one_run_is_its_mean_alone(grid):
    """A spread of one value is not 0: the page shows the mean without ± (a grid in progress)."""
    run = next(grid.glob("toy-seqft-s0-*"))
    page, _ = build_report(run)
    table = _tables(page, "table")[0]
    row = dict(zip(table[0], table[1]))
    assert row["seeds"] == "0" and row["Overall"] == f"{load_results(run).metrics()['overall']:.3f}"


def test_the_page_needs_nothing_from_outside(grid):
    page, _ = build_report(grid)
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(script|link|iframe)\b", page)
    for url in re.findall(r'(?:src|href)="([^"]*)"', page):
        assert url.startswith(("data:image/png;base64,", "#")), url
    assert "<style>" in page


def test_cli_writes_the_page_atomically(grid, tmp_path, capsys):
    out = tmp_path / "out" / "report.html"
    assert main(["report", str(grid), "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]  # no temporary file left


@pytest.mark.parametrize("make,fragment", [
    (lambda tmp: tmp / "empty", "no runs"),
    (lambda tmp: tmp / "nowhere", "no such folder"),
    (lambda tmp: tmp / "file.txt", "not a folder"),
])
def test_a_folder_without_runs_is_one_line_and_exit_2(make, fragment, tmp_path, capsys):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "file.txt").write_text("x")
    path = make(tmp_path)
    refuse(capsys, tmp_path, ["report", str(path)], fragment)
    refuse(capsys, tmp_path, ["report", str(path)], str(path))


def test_a_corrupt_run_or_probe_file_is_one_line_naming_it(grid, tmp_path, capsys):
    bad = tmp_path / "g"
    shutil.copytree(grid, bad)
    (bad / "half" / "results.json").write_text("{not json")
    refuse(capsys, bad, ["report", str(bad)], str(bad / "half" / "results.json"))
    shutil.rmtree(bad / "half")
    probe = bad / "probe-toy" / "report.json"
    report = json.loads(probe.read_text())
    report["matrix"]["parity"]["vowel"]["mean"] = "high"  # valid JSON, not a probe's number
    probe.write_text(json.dumps(report))
    refuse(capsys, bad, ["report", str(bad)], str(probe))
    probe.write_text("[1, 2]")
    refuse(capsys, bad, ["report", str(bad)], str(probe))


def test_a_damaged_log_costs_its_curve_not_the_page(grid, tmp_path):
    bad = tmp_path / "g"
    shutil.copytree(grid, bad, ignore=shutil.ignore_patterns("probe-*", "half"))
    log = next(bad.glob("toy-tsr-s0-*")) / "progress.jsonl"
    lines = log.read_text().splitlines()
    lines[2] = lines[2][:10]
    log.write_text("\n".join(lines) + "\n" + '{"event": "steps", "ta')  # and a torn last line
    page, _ = build_report(bad)
    curves = _section(page, "curves")
    assert f"{log}:3: not a JSON line, skipped" in curves and curves.count("not a JSON line") == 1


def test_names_are_text_in_the_page_and_in_its_figures(grid, tmp_path):
    odd = tmp_path / "g"
    shutil.copytree(grid, odd, ignore=shutil.ignore_patterns("probe-*", "half"))
    path = next(odd.glob("toy-tsr-s0-*")) / "results.json"
    data = json.loads(path.read_text())
    data["tasks"][0] = "odd $\\frac{$"  # mathtext that matplotlib cannot parse
    data["method"] = "tsr <b>&"
    path.write_text(json.dumps(data))
    page, _ = build_report(odd)
    assert "tsr &lt;b&gt;&amp;" in page and "<b>" not in page
    # the renamed run splits tsr's seeds: the page shows each row's seeds and says they differ
    table = _tables(page, "table")[0]
    seeds = {row[0]: row[1] for row in table[1:]}
    assert seeds["tsr"] == "1" and seeds["tsr <b>&"] == "0" and seeds["seqft"] == "0,1"
    assert "The rows cover different seeds (seqft: 0,1; tsr &lt;b&gt;&amp;: 0; tsr: 1)" in page


def _kd_audit(folder: Path) -> None:
    """An audit folder as `tsr audit kd` leaves it (hand-made runs, known numbers)."""
    from tsr.experiments.kd.report import write_kd_report
    from tsr.analysis.table import RunSummary
    from tsr.analysis.cells import cells
    from tsr.engine.grid import Point

    runs = {Point("tsr", s, (f"method.reference={t}",), t): RunSummary(Path(f"/r/{t}{s}"), "tsr", s, "toy",
                                                                        {"overall": v, "plas": v, "bwt": 0.0})
            for t, values in (("era", (0.7, 0.72)), ("none", (0.5, 0.52))) for s, v in enumerate(values)}
    write_kd_report(folder, cells(runs), ["era", "none"], "toy", "tsr audit kd --teachers era,none --seeds 0,1")


def test_audit_reports_are_sections_with_their_command_and_figure(grid, tmp_path, capsys):
    root = tmp_path / "g"
    shutil.copytree(grid, root)
    _kd_audit(root / "claims" / "kd")
    page, found = build_report(root)
    assert [(a.name, a.folder.name) for a in found.audits] == [("kd", "kd")]
    section = _section(page, "audit-1")
    assert "Distillation audit · toy" in section and "tsr audit kd --teachers era,none --seeds 0,1" in section
    assert section.count("<img") == 1 and "claims/kd/kd.md" in section
    assert 'href="#audit-1"' in page and "1 audit report(s)" in page
    # a folder holding only an audit report is a page too; a damaged one is one line naming it
    alone = tmp_path / "alone"
    _kd_audit(alone)
    assert main(["report", str(alone)]) == 0 and "1 audit report(s)" in capsys.readouterr().out
    (alone / "kd.json").write_text("{torn")
    refuse(capsys, tmp_path, ["report", str(alone)], f"{alone}: unreadable audit report")
    (alone / "kd.json").write_text("[]")
    refuse(capsys, tmp_path, ["report", str(alone)], "not an audit report")


def _overall(run_dir: Path) -> float:
    return load_results(run_dir).metrics()["overall"]


def test_against_a_method_adds_its_paired_section_with_each_seed(grid, monkeypatch):
    import tsr.analysis.report_versus as section

    drawn = {}
    real = section.paired_figure
    monkeypatch.setattr(section, "paired_figure", lambda diffs, *a, **k: drawn.update(diffs) or real(diffs, *a, **k))
    page, _ = build_report(grid, against="seqft")
    assert '<h2 id="paired">' in page and 'href="#paired"' in page
    # tsr - seqft seed by seed, from the runs' own results (seqft's Overall is 0.25 and 0.75 by hand)
    diffs = [_overall(next(grid.glob(f"toy-tsr-s{s}-*"))) - (0.25, 0.75)[s] for s in (0, 1)]
    ((header, row),) = _tables(page, "paired")
    assert header[:2] == ["method", "Overall − seqft"] and row[0] == "tsr"
    mean, se = statistics.fmean(diffs), statistics.stdev(diffs) / 2 ** 0.5
    assert row[1] == f"{mean if round(mean, 3) else 0.0:+.3f} ± {se:.3f}" + (" *" if abs(mean) > 2 * se else "")
    assert row[4] == f"{sum(d > 0 for d in diffs)} of 2"
    (setting,) = drawn
    assert drawn[setting]["tsr"] == pytest.approx({0: diffs[0], 1: diffs[1]})  # the unfinished run is no pair
    assert _section(page, "paired").count("<img") == 1
    assert 'style="background:rgb(' in _section(page, "paired")  # Overall's cell is shaded by its sign
    assert "two kinds of machine" not in page  # every run of the grid was made here


def test_against_a_method_without_runs_is_one_line_and_writes_nothing(grid, tmp_path, capsys):
    root = tmp_path / "g"
    shutil.copytree(grid, root, ignore=shutil.ignore_patterns("probe-*"))
    refuse(capsys, root, ["report", str(root), "--against", "derpp"], "--against derpp: no finished run")
    probe_only = tmp_path / "p"
    shutil.copytree(grid / "probe-toy", probe_only / "probe-toy")
    refuse(capsys, probe_only, ["report", str(probe_only), "--against", "er"], "holds no run to pair")


def test_runs_made_on_two_kinds_of_machine_are_said_in_the_header_and_the_pairs(grid, tmp_path):
    root = tmp_path / "g"
    shutil.copytree(grid, root, ignore=shutil.ignore_patterns("probe-*", "half"))
    meta_file = next(root.glob("toy-tsr-s1-*")) / "run.json"
    meta = json.loads(meta_file.read_text())
    meta["machine"] = {**meta["machine"], "cpu": "Another CPU"}
    meta_file.write_text(json.dumps(meta))
    page, _ = build_report(root, against="seqft")
    header = page[:page.index("<nav>")]
    assert "Machines: made on 2 kinds of machine" in header and "Another CPU" in header
    assert "1 pair(s) against seqft were made on two kinds of machine" in _section(page, "paired")
    assert "tsr seed 1" in _section(page, "paired")
    plain, _ = build_report(grid)
    assert "Machines:" not in plain and '<h2 id="paired">' not in plain


def test_a_paired_cell_is_shaded_by_its_difference_against_its_noise():
    from tsr.analysis.report_versus import _shade

    deepest_green, deepest_red, white = "background:rgb(105,205,105)", "background:rgb(255,120,120)", \
        "background:rgb(255,255,255)"
    assert _shade({"mean": 0.10, "se": 0.01, "n": 5}) == deepest_green   # ten standard errors: clipped
    assert _shade({"mean": -0.05, "se": 0.025, "n": 5}) == deepest_red   # exactly two
    assert _shade({"mean": 0.0, "se": 0.02, "n": 5}) == white
    half = _shade({"mean": 0.02, "se": 0.02, "n": 5})                    # one standard error: half way
    assert half == "background:rgb(180,230,180)"
    assert _shade({"mean": 0.3, "se": float("nan"), "n": 1}) == ""      # one seed: no noise to judge by
    assert _shade({"mean": -0.02, "se": 0.0, "n": 5}) == deepest_red    # every seed the same difference
    assert _shade({"mean": 0.0, "se": 0.0, "n": 5}) == white
