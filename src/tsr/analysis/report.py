"""`tsr report`: one self-contained HTML page for a folder of runs and probe reports.

The page holds the comparison table (:mod:`tsr.analysis.report_table`, with
:mod:`tsr.analysis.table`'s grouping: runs share a row only when their configs differ in nothing
but the seed; unfinished runs are listed apart; generation metrics where runs computed them), each
run's results matrix, TSR's routing weights per task, the training loss over the steps from
each run's log, for each probe folder its headroom, transfer matrix and signature audit
(:mod:`tsr.analysis.report_probe`), and each audit folder's command and figure
(:mod:`tsr.analysis.report_audits`); with ``--against METHOD``, every method minus METHOD paired
by seed (:mod:`tsr.analysis.report_versus`). The header says when the runs were made on more
than one kind of machine (:mod:`tsr.analysis.machines`). A section appears only when its data
exists. Everything is read from the saved files (``results.json``, ``config.yaml``, ``run.json``, ``progress.jsonl``,
a probe's ``report.json``); nothing is recomputed but the metrics, as `tsr table` does. Settings
are named once for the page (:func:`tsr.analysis.table.run_labels` over every run on it), and
every section uses that name.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..version import __version__
from ..atomic import write_text
from ..runs.folders import refuse_own_file
from ..runs.results import Results, load_results
from ..errors import RunError, reason
from .curves import loss_curves_figure
from .heatmap import results_figure, routing_figure
from .html import Cell, esc, figure, page, png_bytes, table, text
from .machines import machines_note
from .report_audits import Audit, audit_section, find_audits
from .report_probe import Probe, find_probes, load_probe, probe_section
from .report_table import comparison_section, metrics_line
from .report_versus import paired_section
from .runlog import read_loss_log
from .table import METHOD_ORDER, Labels, RunSummary, find_runs, run_labels, summarise


@dataclass
class Run:
    summary: RunSummary
    results: Results
    setting: str     # the labels of tsr table: every config key that varies between runs is named
    method: str
    steps: int | None

    @property
    def path(self) -> Path:
        return self.summary.path

    @property
    def label(self) -> str:
        """The run among its method's runs: its seed, and how far it got if it is unfinished."""
        done = "" if self.results.finished else f" ({self.results.completed} of {len(self.results.tasks)} tasks)"
        return f"seed {self.results.seed}{done}"

    @property
    def title(self) -> str:
        return f"{self.method} · {self.label}"


@dataclass
class Found:
    root: Path
    runs: list[Run]
    started: list[tuple[Path, dict]]   # run folders where no task has finished yet, with run.json
    probes: list[Probe]
    audits: list[Audit]
    labels: Labels     # every run's (setting, method): the one naming of settings on the page

    def rel(self, path: Path) -> str:
        return _rel(path, self.root)

    @property
    def settings(self) -> list[str]:
        """The runs' settings, in the page's order."""
        return list(dict.fromkeys(r.setting for r in self.runs))

    def heading(self, setting: str) -> str:
        """A setting's sub-heading within a section; none on a page of one setting, which its
        header names."""
        return f"<h3>{esc(setting)}</h3>" if len(self.settings) > 1 else ""

    @property
    def unfinished(self) -> int:
        return sum(not r.results.finished for r in self.runs) + len(self.started)


def _hidden(path: Path, root: Path) -> bool:
    """Inside a folder being built or replaced (``.<name>.<random>.tmp``, ``.<name>.old``)."""
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def _rel(path: Path, root: Path) -> str:
    """A folder as the page names it: relative to the report's folder (its own name for that one)."""
    return str(path.relative_to(root)) if path != root else path.name


def _steps(summary: RunSummary) -> int | None:
    value = (summary.config or {}).get("train.steps")
    return int(value) if value is not None and value.isascii() and value.isdigit() else None


def _run_json(path: Path) -> dict:
    try:
        meta = json.loads((path / "run.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise RunError(f"{path / 'run.json'}: unreadable ({reason(err)})") from None
    return meta if isinstance(meta, dict) else {}


def collect(root: Path) -> Found:
    """Every run (finished or not) and probe report under ``root``; a folder holding none is
    an error naming it."""
    root = Path(root)
    if not root.exists():
        raise RunError(f"{root}: no such folder")
    if not root.is_dir():
        raise RunError(f"{root}: not a folder (give a run folder, a folder of runs or a probe folder)")
    paths = [p for p in find_runs([root]) if not _hidden(p, root)]
    summaries = [summarise(p) for p in paths]
    labels = run_labels(summaries)
    runs = [Run(s, load_results(s.path), *labels[s.path], _steps(s)) for s in summaries]
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}  # the comparison table's row order
    runs.sort(key=lambda r: (r.setting, rank.get(r.summary.method, len(rank)), r.method, r.results.seed, str(r.path)))
    started = [(p.parent, _run_json(p.parent)) for p in sorted(root.rglob("run.json"))
               if not (p.parent / "results.json").exists() and not _hidden(p.parent, root)]
    probes = [load_probe(p, root) for p in find_probes(root, lambda p: _hidden(p, root))]
    audits = find_audits(root, lambda p: _hidden(p, root))
    if not runs and not started and not probes and not audits:
        raise RunError(f"{root}: no runs (results.json), probe reports (report.json) or audit reports under it")
    return Found(root, runs, started, probes, audits, labels)


def _loss_range(runs: list[Run]) -> dict[str, tuple[float, float]]:
    """Per generation task: the lowest and highest answer loss over every run of the page."""
    seen: dict[str, list[float]] = {}
    for r in runs:
        rows = r.results.loss + ([r.results.zero_shot["loss"]] if r.results.zero_shot else [])
        for j, (name, kind) in enumerate(zip(r.results.tasks, r.results.kinds)):
            if kind == "generation":
                seen.setdefault(name, []).extend(row[j] for row in rows if row[j] is not None and math.isfinite(row[j]))
    return {name: (min(v), max(v)) for name, v in seen.items() if v}


def mean_rows(matrices: list[list[list]]) -> list[list]:
    """The cell-wise mean of results matrices of one shape; a cell missing (None or not finite)
    in any of them is missing in the mean."""
    def mean(cells: tuple) -> float | None:
        if any(c is None or not math.isfinite(c) for c in cells):
            return None
        return sum(cells) / len(cells)
    return [[mean(cells) for cells in zip(*rows)] for rows in zip(*matrices)]


def _matrix_rows(res: Results) -> list[tuple[str, list, list]]:
    rows = [("zero-shot", res.zero_shot["acc"], res.zero_shot["loss"])] if res.zero_shot else []
    return rows + [(res.tasks[i], res.acc[i], res.loss[i]) for i in range(res.completed)]


def _mean_figure(runs: list[Run], spans) -> str:
    """The mean matrix over a method's finished runs of one setting (its seeds)."""
    first = runs[0].results
    acc, loss = mean_rows([r.results.acc for r in runs]), mean_rows([r.results.loss for r in runs])
    rows = [(first.tasks[i], acc[i], loss[i]) for i in range(len(acc))]
    if all(r.results.zero_shot for r in runs):
        zero = {key: mean_rows([[r.results.zero_shot[key]] for r in runs])[0] for key in ("acc", "loss")}
        rows.insert(0, ("zero-shot", zero["acc"], zero["loss"]))
    seeds = ", ".join(str(r.results.seed) for r in runs)
    title = f"{runs[0].method} · mean of {len(runs)} seeds"
    fig = results_figure(first.tasks, first.kinds, rows, spans, title)
    return figure(png_bytes(fig), f"mean results matrix of {runs[0].method}",
                  f"<strong>{esc(runs[0].method)}</strong>: the mean over seeds {esc(seeds)}, cell by cell. "
                  "Colour: accuracy 0–1; loss (L) per task, lowest dark.")


def _matrices(found: Found) -> str:
    spans = _loss_range(found.runs)
    parts = ['<h2 id="matrices">Results matrices</h2>',
             '<p class="note">Row: after training on that task; column: the task evaluated. Classification '
             "columns show accuracy, coloured on a fixed 0–1 scale (darker is higher); generation columns "
             "(L) show answer loss, coloured from the highest (light) to the lowest (dark) loss of that task "
             "over every run on this page. A dash: not evaluated then (eval.schedule). A method with more "
             "than one finished run of a setting is shown by its mean over the seeds; each run's own "
             "matrix is under it, folded.</p>"]
    for setting in found.settings:
        means, singles = [], []
        of_setting = [r for r in found.runs if r.setting == setting]
        for method in dict.fromkeys(r.method for r in of_setting):
            mine = [r for r in of_setting if r.method == method]
            done = [r for r in mine if r.results.finished]
            if len(done) > 1 and len({tuple(r.results.tasks) for r in done}) == 1:
                means.append(_mean_figure(done, spans))
            singles += mine
        figures = [figure(png_bytes(results_figure(r.results.tasks, r.results.kinds, _matrix_rows(r.results), spans,
                                                   r.title)),
                          f"results matrix of {r.path.name}",
                          f"<code>{esc(r.path.name)}</code><br>{esc(metrics_line(r.results))}. Colour: accuracy "
                          "0–1; loss (L) per task, lowest dark.") for r in singles]
        heading = found.heading(setting)
        if means:
            parts.append(f"{heading}<div class=\"grid\">{''.join(means)}</div>"
                         f"<details><summary>Each run's matrix ({len(figures)})</summary>"
                         f"<div class=\"grid\">{''.join(figures)}</div></details>")
        else:
            parts.append(f"{heading}<div class=\"grid\">{''.join(figures)}</div>")
    return "\n".join(parts)


def _routes(task_info: list) -> list[dict]:
    """Each task's routing (``weights``: past task -> number, ``top``), {} where there is none."""
    def valid(info) -> bool:
        weights = info.get("weights") if isinstance(info, dict) else None
        return isinstance(weights, dict) and bool(weights) and all(
            isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) for w in weights.values())
    return [{"weights": i["weights"], "top": i.get("top")} if valid(i) else {} for i in task_info]


def _routing(found: Found) -> str:
    routed = [(r, _routes(r.results.task_info)) for r in found.runs]
    routed = [(r, routes) for r, routes in routed if any(routes)]
    if not routed:
        return ""
    figures = [figure(png_bytes(routing_figure(r.results.tasks, routes, r.title)),
                      f"routing weights of {r.path.name}",
                      f"<code>{esc(r.path.name)}</code> ({esc(r.setting)}). Colour: the weight, from 0 to the "
                      "largest weight in this figure; outlined: the top source by signature cosine.")
               for r, routes in routed]
    return ('<h2 id="routing">Routing weights</h2>\n<p class="note">The weights TSR gave each past task when '
            "a task began (results.json's task_info): each row sums to 1 and sets how often that past "
            "task's replay data is drawn.</p>\n" f"<div class=\"grid\">{''.join(figures)}</div>")


def _curves(found: Found) -> str:
    parts, problems = [], []
    for setting in found.settings:
        panels: dict[str, list] = {}
        tasks: list[tuple[int, str]] = []
        for r in (r for r in found.runs if r.setting == setting):
            log = read_loss_log(r.path)
            problems += log.problems
            per_task = r.steps or log.most_steps
            curve = log.curve(per_task)
            if curve:
                panels.setdefault(r.method, []).append((r.label, curve))
                tasks = tasks or [(per_task * t, name) for t, name in enumerate(r.results.tasks)]
        if not panels:
            continue
        fig = loss_curves_figure(panels, tasks, f"training cross-entropy · {setting}")
        parts.append(found.heading(setting) + figure(
            png_bytes(fig), f"training loss, {setting}",
            "Cross-entropy of the training batches (target and replay), the mean of each logged window of "
            "steps (progress.jsonl), against the step since the run began; log scale shared by the panels; "
            "dotted: task boundaries. One line per run, named by its seed (and its progress if unfinished)."))
    if not parts:
        return ""
    notes = "".join(f'<p class="problem">{esc(p)}</p>' for p in problems)
    return '<h2 id="curves">Learning curves</h2>\n' + "\n".join(parts) + notes


def _runs(found: Found) -> str:
    """Every run; the setting column only where the page has more than one (the header names a
    page's one setting)."""
    several = len(found.settings) > 1
    rows = [[text(_rel(r.path, found.root)), text(r.method), Cell(str(r.results.seed), num=True)]
            + ([text(r.setting)] if several else [])
            + [Cell(f"{r.results.completed} of {len(r.results.tasks)}", num=True), text(metrics_line(r.results))]
            for r in found.runs]
    headers = ["folder", "method", "seed"] + (["setting"] if several else []) + ["tasks", "metrics"]
    return '<h2 id="runs">Runs</h2>\n' + table(headers, rows, "", numeric={2, 4 if several else 3})


def build_report(root: Path, against: str | None = None) -> tuple[str, Found]:
    """The HTML page for ``root`` and what it was built from; ``against``: a method (a row of
    the comparison table) every other is paired with, seed by seed, in a section of its own."""
    import matplotlib

    found = collect(root)
    # names in figures are text, never mathtext: a task called `$\frac{$` must not stop the page
    with matplotlib.rc_context({"text.parse_math": False}):
        return _page(found, against), found


def _page(found: Found, against: str | None = None) -> str:
    sections: list[tuple[str, str, str]] = []   # (anchor, name, html)
    if found.runs or found.started:
        sections.append(("table", "Comparison table", comparison_section(found)))
    if against is not None:
        if not found.runs:
            raise RunError(f"--against {against}: {found.root} holds no run to pair")
        sections.append(("paired", f"Paired against {against}", paired_section(found, against)))
    if found.runs:
        sections.append(("matrices", "Results matrices", _matrices(found)))
        sections += [(a, n, h) for a, n, h in (("routing", "Routing weights", _routing(found)),
                                               ("curves", "Learning curves", _curves(found))) if h]
    for i, probe in enumerate(found.probes, start=1):
        sections.append((f"probe-{i}", f"Probe: {probe.name}", probe_section(f"probe-{i}", probe)))
    for i, audit in enumerate(found.audits, start=1):
        sections.append((f"audit-{i}", f"Audit: {audit.name} · {_rel(audit.folder, found.root)}",
                         f'<h2 id="audit-{i}">{esc(audit.heading)}</h2>\n' + audit_section(audit, _rel(audit.folder, found.root))))
    if found.runs:
        sections.append(("runs", "Runs", _runs(found)))
    finished = len(found.runs) - sum(not r.results.finished for r in found.runs)
    settings = found.settings
    machines = machines_note(r.path for r in found.runs)
    where = f" ({esc(settings[0])})" if len(settings) == 1 else ""
    header = (f"<p>Folder <code>{esc(found.root.resolve())}</code></p>\n"
              f"<p>{finished} finished run(s), {found.unfinished} unfinished, in {len(settings)} setting(s){where}; "
              f"{len(found.probes)} probe report(s), {len(found.audits)} audit report(s).</p>\n"
              + (f'<p class="problem">Machines: {esc(machines)}.</p>\n' if machines else "") +
              f"<p>Generated {esc(datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z'))} "
              f"by tsr {__version__}.</p>")
    title = f"tsr report · {found.root.resolve().name}"
    return page(title, header, [(a, n) for a, n, _ in sections], [h for _, _, h in sections])


def write_html_report(root: Path, out: Path | None = None, against: str | None = None) -> tuple[Path, Found]:
    """Write the page for ``root`` to ``out`` (default ``<root>/report.html``) atomically
    (``against``: as :func:`build_report`)."""
    out = Path(out) if out is not None else Path(root) / "report.html"
    if out.is_dir():
        raise RunError(f"{out}: is a folder; give the report's file name")
    refuse_own_file(out)  # --out DIR/run/results.json would replace the run's results
    page_html, found = build_report(root, against)
    try:
        write_text(out, page_html)
    except OSError as err:
        raise RunError(f"{out}: cannot write the report ({reason(err)})") from None
    return out, found
