"""Aggregating finished runs into the layout of the reference paper's Table 3.

Rows are methods, column groups are settings (stream x backbone), and each cell is the
mean +- sample standard deviation over seeds of Overall, Plas and BWT, all recomputed from
each run's ``results.json``.

Runs are averaged only when their configs agree on everything but the seed (and where the run
was saved, its name and thread count): a config key that varies between the runs given
(``train.steps``, ``stream.budget``, ...) is added to the setting's label, and a method
parameter that varies between runs of one method to the row's label (``ewc (lam=100)``). Runs
that have not finished are listed apart, so a grid in progress shows what it has.
"""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from rich.table import Table

from ..data.example import GEN_METRICS
from ..data.records import read_yaml
from ..runs import store
from ..runs.saved import saved_step
from ..runs.results import Results, load_results
from ..runs.grouping import flatten, of_records
from ..runs.metrics import retention
from ..errors import RunError
from .numbers import number
from .seeds import check_even, seed_label, uneven

# The paper's row order: no mechanism, rehearsal-free, rehearsal-based, TSR and its variants.
METHOD_ORDER = ("seqft", "ewc", "lwf", "sdft", "olora", "gainlora", "deal", "agem", "derpp",
                "er10", "er", "tsr_argmax", "tsr_soft", "tsr_pool_hybrid", "tsr_v1", "tsr_v2", "tsr")
METRICS = ("overall", "plas", "bwt")
LOSS_METRICS = ("overall_loss", "plas_loss", "bwt_loss")


def gen_metrics(summaries: list[RunSummary]) -> tuple[str, ...]:
    """The generation-metric columns some run of ``summaries`` has (``eval.predictions``):
    Overall, Plas and BWT of ROUGE-L, edit similarity and SARI, in that order."""
    present = {k for s in summaries for k in s.metrics}
    return tuple(f"{stat}_{m}" for m in GEN_METRICS for stat in ("overall", "plas", "bwt") if f"{stat}_{m}" in present)


@dataclass(frozen=True)
class RunSummary:
    path: Path
    method: str
    seed: int
    setting: str
    metrics: dict[str, float]
    config: dict[str, str] | None = None   # flattened `key.sub` -> value as YAML text
    completed: int | None = None           # tasks finished, when the run has not finished
    grouping: dict | None = None           # what its run.json records to group it by (tsr.runs.grouping)

    @property
    def finished(self) -> bool:
        return self.completed is None


def with_retention(summaries: list[RunSummary]) -> list[RunSummary]:
    """Each run with its retention, Overall / Plas (the share of its end-of-learning accuracy the
    stream's end keeps, the regime map's calibration quantity; docs/synthetic.md), as one more
    metric; undefined (None) where Plas is 0 or missing."""
    return [replace(s, metrics=s.metrics | {"retention": retention(s.metrics.get("overall"), s.metrics.get("plas"))})
            if s.finished else s for s in summaries]


def find_runs(paths: list[Path]) -> list[Path]:
    """Run directories under ``paths`` (a run directory itself, or folders holding runs)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if (path / "results.json").is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p.parent for p in path.rglob("results.json")))
        else:
            raise RunError(f"{path}: not a run directory or a folder of runs")
    return found


def _setting(cfg: dict) -> str:
    """``stream · model``: what a run was measured on."""
    model = (cfg.get("model") or {}).get("preset") or (cfg.get("model") or {}).get("path", "?")
    source = str((cfg.get("stream") or {}).get("source", "?"))
    return f"{Path(source).stem if source.endswith(('.yaml', '.yml')) else source} · {Path(str(model)).name}"


def summarise(path: Path) -> RunSummary:
    results: Results = load_results(path)
    setting, flat = "run", None
    cfg_file = path / "config.yaml"
    if cfg_file.is_file():
        cfg = read_yaml(cfg_file, RunError) or {}
        if not isinstance(cfg, dict) or not all(isinstance(cfg.get(k, {}), dict) for k in ("model", "stream")):
            raise RunError(f"{cfg_file}: not a run config (expected the mapping with model and stream "
                           "sections that `tsr run` writes)")
        setting, flat = _setting(cfg), flatten(cfg)
    completed = None if results.finished else results.completed
    return RunSummary(path, results.method, results.seed, setting, results.metrics(), flat, completed,
                      recorded_grouping(path))


def recorded_grouping(path: Path) -> dict | None:
    """The ``grouping`` a run's run.json records (None for a run made before runs recorded it)."""
    try:
        meta = json.loads((path / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta.get("grouping") if isinstance(meta, dict) else None


def summary_of_row(row: dict) -> RunSummary:
    """A run as the results store (:mod:`tsr.runs.store`) holds it."""
    cfg = row["config"]
    return RunSummary(Path(row["path"]), row["method"], row["seed"], _setting(cfg) if cfg else "run",
                      row["metrics"], flatten(cfg) if cfg else None, None if row["finished"] else row["completed"],
                      row.get("grouping"))


def summaries(paths: list[Path]) -> list[RunSummary]:
    """Every run under ``paths``: a folder of runs through its results store (brought up to
    date first), a run folder by itself; from the folders alone where the store cannot be
    written (a read-only folder)."""
    out: list[RunSummary] = []
    for path in map(Path, paths):
        if path.is_dir() and not (path / "results.json").is_file():
            try:
                rows = store.refresh(path)
            except (sqlite3.Error, OSError):
                rows = None
            if rows is not None:
                out.extend(summary_of_row(r) for r in rows)
                continue
        out.extend(summarise(p) for p in find_runs([path]))
    return out


Labels = dict[Path, tuple[str, str]]


def run_labels(summaries: list[RunSummary]) -> Labels:
    """(setting, method) labels that keep runs of different configs apart: every key that
    varies between the runs is named, in the setting (run keys) or the row (method keys).

    The one function that names settings: a page or table labels every run it shows, finished
    or not, with one call of it, so a setting reads the same wherever it appears."""
    grouping = of_records(s.grouping for s in summaries)

    def varying(group: list[RunSummary], wanted) -> list[str]:
        return [k for k in grouping.varying_keys(s.config for s in group) if wanted(k)]

    run_keys = varying(summaries, lambda k: not k.startswith("method."))
    labels = {}
    for s in summaries:
        cfg = grouping.comparable(s.config)  # a key the run predates reads as its neutral value, not '-'
        setting = s.setting + "".join(f" · {k}={cfg.get(k, '-')}" for k in run_keys)
        same_method = [o for o in summaries if o.method == s.method]
        method_keys = varying(same_method, lambda k: k.startswith("method.") and k != "method.name")
        method = s.method + (" (" + ", ".join(f"{k[7:]}={cfg.get(k, '-')}" for k in method_keys) + ")"
                             if method_keys else "")
        labels[s.path] = (setting, method)
    return labels


def metric_value(metrics: dict, name: str) -> float:
    """A run's metric as a float for the tables' arithmetic: NaN where the run lacks it or it is
    undefined (None, as results.json and the results store hold it)."""
    value = metrics.get(name)
    return math.nan if value is None else float(value)


def mean_std(values: list[float]) -> tuple[float, float, int]:
    values = [v for v in values if v is not None and not math.isnan(v)]  # an undefined metric is None
    if not values:
        return math.nan, math.nan, 0
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), std, len(values)


def axes(summaries: list[RunSummary], labels: Labels | None = None) -> tuple[list[str], list[str]]:
    """The settings and the methods of :func:`aggregate`'s table, in its order, without its cells:
    the finished runs' labels, settings sorted, methods in the paper's row order."""
    done = [s for s in summaries if s.finished]
    labels = labels if labels is not None else run_labels(summaries)
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    methods = sorted({labels[s.path][1] for s in done},
                     key=lambda label: (rank.get(label.split(" (")[0], len(rank)), label))
    return sorted({labels[s.path][0] for s in done}), methods


def aggregate(summaries: list[RunSummary], metrics: tuple[str, ...] = METRICS, labels: Labels | None = None):
    """{setting: {method: {metric: (mean, std, n)}}} and the ordered settings and methods, over
    the finished runs; runs of different configs never share a cell (see the module doc).
    ``labels``: :func:`run_labels` of every run shown beside the table (default: of ``summaries``,
    finished or not, so an unfinished run listed apart names its setting as the table does)."""
    done = [s for s in summaries if s.finished]
    labels = labels if labels is not None else run_labels(summaries)
    settings, methods = axes(summaries, labels)
    cells: dict[str, dict[str, dict[str, tuple[float, float, int]]]] = {}
    for setting in settings:
        for method in methods:
            group = [s for s in done if labels[s.path] == (setting, method)]
            if group:
                cells.setdefault(setting, {})[method] = {
                    m: mean_std([metric_value(g.metrics, m) for g in group]) for m in metrics}
    return cells, settings, methods


def seed_sets(summaries: list[RunSummary], labels: Labels | None = None) -> dict[str, dict[str, tuple[int, ...]]]:
    """``{setting: {method: seeds}}``: the seeds each cell of :func:`aggregate` covers (with the
    same ``labels``)."""
    done = [s for s in summaries if s.finished]
    labels = labels if labels is not None else run_labels(summaries)
    out: dict[str, dict[str, set[int]]] = {}
    for s in done:
        setting, method = labels[s.path]
        out.setdefault(setting, {}).setdefault(method, set()).add(s.seed)
    return {k: {m: tuple(sorted(v)) for m, v in rows.items()} for k, rows in out.items()}


def check_seeds(seeds: dict[str, dict[str, tuple[int, ...]]], allow: bool = False) -> list[str]:
    """Refuse (one-line :class:`RunError`) a setting whose rows cover different seeds unless
    ``allow``; the phrases of the uneven settings, for a table printed anyway."""
    return [f"{setting}: {phrase}" for setting, rows in seeds.items()
            if (phrase := check_even(rows, setting, allow))]


def unfinished(summaries: list[RunSummary]) -> list[str]:
    """One line per run that has not finished: its folder and how far it got (with the step a
    mid-task checkpoint saved in the next task, where there is one)."""
    lines = []
    for s in summaries:
        if s.finished:
            continue
        within = saved_step(s.path)
        step = f", task {within[0] + 1} saved at step {within[1]}" if within and within[0] == s.completed else ""
        lines.append(f"{s.path}: {s.method} seed {s.seed}, {s.completed} tasks finished{step}")
    return lines


def _cell(stat: tuple[float, float, int] | None, signed: bool) -> str:
    if stat is None or math.isnan(stat[0]):
        return "-"
    mean, std, n = stat
    return number(mean, signed) + (f" ± {std:.3f}" if n > 1 else "")


def _rows(cells, settings, methods, metrics, seeds):
    for method in methods:
        row = [method]
        for setting in settings:
            cell = cells.get(setting, {}).get(method)
            row.append(seed_label(seeds.get(setting, {}).get(method, ())) if cell else "-")
            for m in metrics:
                row.append(_cell((cell or {}).get(m), m.startswith("bwt")))
        yield row


def _header(settings, metrics):
    return ["method"] + [f"{s} {m}" for s in settings for m in ("seeds", *metrics)]


def rich_table(cells, settings, methods, metrics=METRICS, *, seeds) -> Table:
    """The terminal's table; a table of one setting names it in its title, not over every column."""
    single = len(settings) == 1
    title = "mean ± std over seeds (one seed: the mean alone)"
    table = Table(title=f"{settings[0]}\n{title}" if single else title)
    table.add_column("method", style="bold")
    for s in settings:
        for m in ("seeds", *metrics):
            table.add_column(m if single else f"{s}\n{m}", justify="right")
    for row in _rows(cells, settings, methods, metrics, seeds):
        table.add_row(*row)
    return table


def markdown_table(cells, settings, methods, metrics=METRICS, *, seeds) -> str:
    header = _header(settings, metrics)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in _rows(cells, settings, methods, metrics, seeds)]
    return "\n".join(lines) + "\n"


def csv_table(cells, settings, methods, metrics=METRICS, *, seeds) -> str:
    out = ["setting,method,metric,mean,std,n,seeds"]
    for s in settings:
        for method in methods:
            covered = " ".join(map(str, seeds.get(s, {}).get(method, ())))
            for m in metrics:
                stat = cells.get(s, {}).get(method, {}).get(m)
                if stat is not None:
                    out.append(f"{s},{method},{m},{stat[0]:.6f},{stat[1]:.6f},{stat[2]},{covered}")
    return "\n".join(out) + "\n"


# The paper's row groups (rules between them): no mechanism, rehearsal-free, rehearsal, TSR.
FAMILY = {"seqft": 0, "ewc": 1, "lwf": 1, "sdft": 1, "olora": 1, "gainlora": 1, "deal": 1,
          "agem": 2, "derpp": 2, "er10": 2, "er": 2}
PAPER_NAMES = {"seqft": "SeqFT", "ewc": "EWC", "lwf": "LwF", "sdft": "SDFT", "olora": "O-LoRA",
               "gainlora": "GainLoRA", "deal": "DEAL", "agem": "A-GEM", "derpp": "DER++",
               "er10": r"ER ($10\%$ replay)", "er": "ER", "tsr": "TSR"}
LATEX_METRIC = {"overall": r"Overall$\uparrow$", "plas": r"Plas$\uparrow$", "bwt": r"BWT$\uparrow$",
                "overall_loss": r"Overall loss$\downarrow$", "plas_loss": r"Plas loss$\downarrow$",
                "bwt_loss": r"BWT loss$\downarrow$"}


def _tex(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                 ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):
        text = text.replace(a, b) if a != "\\" else text.replace(a, "\0")
    return text.replace("\0", r"\textbackslash{}").replace("·", r"$\cdot$").replace("±", r"$\pm$")


def _tex_number(value: float, signed: bool) -> str:
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    return text.replace("0.", ".", 1) if abs(value) < 1 else text  # the paper's .264, -.134


def latex_table(cells, settings, methods, metrics=METRICS, *, seeds) -> str:
    """The comparison as LaTeX in the paper's Table-3 layout (booktabs): a column group per
    setting, mean with a small ± std per cell (the mean alone for one run), the best value per column in bold (highest
    accuracy metric, lowest loss metric), rules between the method families."""
    best: dict[tuple[str, str], float] = {}
    for s in settings:
        for m in metrics:
            values = [cells[s][meth][m][0] for meth in methods
                      if m in cells.get(s, {}).get(meth, {}) and not math.isnan(cells[s][meth][m][0])]
            if values:
                best[s, m] = (min if m.endswith("_loss") else max)(values)
    width = len(metrics)
    covered = {f"{meth} ({s})" if len(settings) > 1 else meth: seeds.get(s, {}).get(meth, ())
               for s in settings for meth in methods}
    lines = [f"% seeds: {uneven(covered) or seed_label(next((v for v in covered.values() if v), ()))}",
             r"\begin{tabular}{l " + " ".join("c" * width for _ in settings) + "}", r"\toprule"]
    lines.append(" & " + " & ".join(rf"\multicolumn{{{width}}}{{c}}{{{_tex(s)}}}" for s in settings) + r" \\")
    lines.append("".join(rf"\cmidrule(lr){{{2 + i * width}-{1 + (i + 1) * width}}}" for i in range(len(settings))))
    lines.append("Method & " + " & ".join(LATEX_METRIC.get(m, _tex(m)) for _ in settings for m in metrics) + r" \\")
    lines.append(r"\midrule")
    family = None
    for method in methods:
        base = method.split(" (")[0]
        fam = FAMILY.get(base, 3)
        if family is not None and fam != family:
            lines.append(r"\midrule")
        family = fam
        name = PAPER_NAMES.get(base, _tex(base)) + _tex(method[len(base):])
        cols = []
        for s in settings:
            for m in metrics:
                stat = cells.get(s, {}).get(method, {}).get(m)
                if stat is None or math.isnan(stat[0]):
                    cols.append("--")
                    continue
                mean = _tex_number(stat[0], m.startswith("bwt"))
                mean = rf"\mathbf{{{mean}}}" if best.get((s, m)) == stat[0] else mean
                spread = rf"{{\scriptscriptstyle\pm {_tex_number(stat[1], False)}}}" if stat[2] > 1 else ""
                cols.append(f"${mean}{spread}$")
        lines.append(f"{name}\n & " + " & ".join(cols) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
