"""`tsr report` on a grid whose setting labels are long: generation metrics in the tables, one
label per setting on the whole page, titles that fit their figures, and the page in Chromium at
1000 and 1600 pixels wide.

The grid: seqft and tsr on the toy stream (its generation task scored by ROUGE-L, eval.predictions
on), two seeds at two steps a task and one seed at three steps with another learning rate, under
a long stream name; and an unfinished run whose config differs in a key no finished run varies
(``stream.budget``), so that key is part of every setting's label.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import statistics
import subprocess
from html import unescape
from pathlib import Path

import numpy as np
import pytest
import yaml

from badinputs import TINY
from test_report import _section, _tables
from toy import write_toy_stream
from tsr.analysis import report, report_table, report_versus
from tsr.analysis.report import build_report
from tsr.analysis.titles import title_boxes
from tsr.runs.results import load_results
from tsr.interface.cli import main

STREAM = "toy-with-a-rather-long-stream-name-for-its-labels"
HEIGHT = 7000  # the screenshot: the whole page of the grid below


@pytest.fixture(scope="module")
def long_grid(tmp_path_factory):
    base = tmp_path_factory.mktemp("report-layout")
    toy = write_toy_stream(base / "data", pool=16, test=4)
    stream = toy.with_name(f"{STREAM}.yaml")
    stream.write_text(toy.read_text().replace("{name: copy, kind: generation,", "{name: copy, kind: generation, "
                                                                                "metric: rouge_l,"))
    root = base / "grid"
    common = [f"stream.source={stream}", f"out_dir={root}", *TINY, "eval.predictions=true", "eval.extra_tokens=2",
              "--workers", "1"]
    assert main(["compare", *common, "--methods", "seqft,tsr", "--seeds", "0,1"]) == 0
    assert main(["compare", *common, "train.steps=3", "train.lr=2e-3", "--methods", "seqft,tsr", "--seeds", "0"]) == 0
    # known ROUGE-L for the seqft runs at two steps, 0.4 and 0.5: copy is the last task, so its cell
    # after the last task is both its Overall and its Plas
    for seed, value in enumerate((0.4, 0.5)):
        path = next(p for p in root.glob(f"*-seqft-s{seed}-*")
                    if yaml.safe_load((p / "config.yaml").read_text())["train"]["steps"] == 2)
        data = json.loads((path / "results.json").read_text())
        data["gen"][2][2] = value
        (path / "results.json").write_text(json.dumps(data))
    half = root / "half"  # a tsr run stopped after its second task, its config one stream.budget apart
    shutil.copytree(next(p for p in root.glob("*-tsr-s1-*")), half)
    data = json.loads((half / "results.json").read_text())
    data.update({k: data[k][:2] for k in ("acc", "loss", "task_info", "gen")})
    (half / "results.json").write_text(json.dumps(data))
    cfg = yaml.safe_load((half / "config.yaml").read_text())
    cfg["stream"]["budget"] = 6
    (half / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return root


def squeeze(text: str) -> str:
    """``text`` without white space: a wrapped title reads the same as the label it wraps."""
    return re.sub(r"\s", "", text)


def _h3(section: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h3>(.*?)</h3>", section)]


def test_generation_metrics_are_in_the_tables_of_runs_that_computed_them(long_grid):
    page, found = build_report(long_grid)
    table = _section(page, "table")
    settings = [s for s in _h3(table) if not s.startswith("Unfinished")]
    assert len(settings) == 2 and table.count("<h4>ROUGE-L</h4>") == 2
    main_table, rouge = _tables(page, "table")[:2]
    assert main_table[0][:5] == ["method", "seeds", "Overall", "Plas", "BWT"]
    assert rouge[0] == ["method", "seeds", "Overall", "Plas"]  # copy is the last task: no BWT over it
    assert rouge[1] == ["seqft", "0,1", "0.450 ± 0.071", "0.450 ± 0.071"]  # the known values
    runs = [r for r in found.runs if r.setting == settings[0] and r.results.finished and r.method == "tsr"]
    values = [r.results.metrics()["overall_rouge_l"] for r in runs]
    assert rouge[2][:3] == ["tsr", "0,1", f"{statistics.fmean(values):.3f} ± {statistics.stdev(values):.3f}"]
    metrics = {row[0]: row[-1] for row in _tables(page, "runs")[0][1:]}
    done = next(r for r in found.runs if r.results.finished)
    assert f"Overall ROUGE-L {done.results.metrics()['overall_rouge_l']:.3f}" in metrics[found.rel(done.path)]


def test_a_setting_has_one_label_everywhere_on_the_page(long_grid, monkeypatch):
    drawn = []
    real = report_table.comparison_figure
    monkeypatch.setattr(report_table, "comparison_figure", lambda *a, **k: drawn.append(real(*a, **k)) or drawn[-1])
    page, found = build_report(long_grid)
    table = [s for s in _h3(_section(page, "table")) if not s.startswith("Unfinished")]
    matrices, curves = _h3(_section(page, "matrices")), _h3(_section(page, "curves"))
    assert all("stream.budget=4" in s for s in table)  # the key the unfinished run varies names them all
    assert matrices == curves == [*table, found.runs[-1].setting] and "stream.budget=6" in matrices[-1]
    assert {row[3] for row in _tables(page, "runs")[0][1:]} == set(matrices)
    routing = re.findall(r"</code> \((.*?)\)\. Colour", _section(page, "routing"))
    assert routing and set(routing) <= set(matrices)
    # each row of panels names its setting once, over its first panel (left-aligned)
    titles = [squeeze(ax.get_title("left")) for ax in drawn[0].axes if ax.get_title("left")]
    assert titles and all(any(t.startswith(squeeze(s)) for s in table) for t in titles)
    assert {s for s in table if any(t.startswith(squeeze(s)) for t in titles)} == set(table)


def test_no_title_leaves_its_figure_or_runs_into_another(long_grid, monkeypatch):
    """Every figure of the page, measured as drawn: each title inside the figure, no two overlapping."""
    boxes = []
    real = report.png_bytes

    def measured(fig, *args, **kwargs):
        boxes.append((fig.bbox.width, fig.bbox.height, title_boxes(fig)))
        return real(fig, *args, **kwargs)

    for module in (report, report_table, report_versus):
        monkeypatch.setattr(module, "png_bytes", measured)
    build_report(long_grid, against="seqft")  # the paired figure too: its panels carry the settings' labels
    assert len(boxes) >= 11
    for width, height, titles in boxes:
        for text, (x0, y0, x1, y1) in titles:
            assert x0 >= -0.5 and y0 >= -0.5 and x1 <= width + 0.5 and y1 <= height + 0.5, (text, width, (x0, x1))
        for i, (a, (ax0, ay0, ax1, ay1)) in enumerate(titles):
            for b, (bx0, by0, bx1, by1) in titles[i + 1:]:
                assert ax1 <= bx0 or bx1 <= ax0 or ay1 <= by0 or by1 <= ay0, (a, b)


def _chromium() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome",
                                                "chromium-headless-shell"))), None)


# what the injected script reports: the page wider than the window, an image cut off at its
# right edge, a heading, caption or cell whose text is wider than its box
MEASURE = """<script>
const w = window.innerWidth, bad = [];
if (document.documentElement.scrollWidth > w) bad.push("page " + document.documentElement.scrollWidth);
for (const img of document.images) if (img.getBoundingClientRect().right > w + 1) bad.push("img " + img.alt);
for (const el of document.querySelectorAll("h1, h2, h3, h4, figcaption, p, th, td"))
  if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "auto") bad.push(el.tagName + " " + el.textContent.slice(0, 60));
document.body.setAttribute("data-clipped", JSON.stringify(bad));
</script></body>"""


@pytest.mark.skipif(_chromium() is None, reason="no Chromium binary on PATH (Debian: apt-get install chromium)")
@pytest.mark.parametrize("width", [1000, 1600])
def test_chromium_renders_the_page_with_nothing_clipped(long_grid, tmp_path, width):
    """The page as Chromium lays it out at ``width`` pixels: nothing wider than the window or its
    box, and a screenshot whose figures were decoded. TSR_SCREENSHOTS=<folder> keeps the
    screenshots there (to look at them)."""
    from PIL import Image

    out = tmp_path / "report.html"
    assert main(["report", str(long_grid), "--out", str(out), "--against", "seqft"]) == 0
    html = out.read_text(encoding="utf-8")
    probe = tmp_path / "measured.html"
    probe.write_text(html.replace("</body>", MEASURE, 1), encoding="utf-8")
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},{HEIGHT}"]
    dom = subprocess.run([*flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    clipped = json.loads(unescape(re.search(r'data-clipped="([^"]*)"', dom).group(1)))
    assert clipped == [], clipped
    shot = tmp_path / f"report-{width}.png"
    subprocess.run([*flags, f"--screenshot={shot}", out.as_uri()], capture_output=True, timeout=120, check=True)
    if os.environ.get("TSR_SCREENSHOTS"):
        shutil.copy(shot, Path(os.environ["TSR_SCREENSHOTS"]) / shot.name)
    image = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert image.shape == (HEIGHT, width, 3)
    inked = (image.min(axis=2) < 235).mean(axis=1)                     # non-white share, per row
    coloured = (image.max(axis=2) - image.min(axis=2) > 60).mean(axis=1)  # saturated: figures, not text
    assert inked[:400].mean() > 0.01 and inked[400:800].mean() > 0.01  # the header, contents, first table
    assert coloured[800:].mean() > 0.001                                # the PNGs were decoded (0 without)
    # each embedded figure: nothing drawn on its outermost pixels (a title run off the edge would be)
    for data in re.findall(r'src="data:image/png;base64,([^"]+)"', html):
        figure = np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")).astype(int)
        edges = np.concatenate([figure[:, :2].reshape(-1, 3), figure[:, -2:].reshape(-1, 3)])
        assert (edges.min(axis=1) > 200).all()
    assert load_results(long_grid / "half").completed == 2
