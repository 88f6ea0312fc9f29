"""The probe sections of `tsr report`: headroom, the transfer matrix, the signature audit and
the probe's learning curves, each drawn from a probe folder's ``report.json`` (what `tsr probe`
wrote; :mod:`tsr.experiments.probe.report`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import RunError, reason
from .curves import curves_figure
from .heatmap import transfer_figure
from .html import Cell, diverging, esc, figure, number, png_bytes, table, text


@dataclass
class Probe:
    path: Path      # the folder holding report.json
    name: str       # its path relative to the report's folder
    report: dict


def find_probes(root: Path, skip) -> list[Path]:
    """Probe report files under ``root``: a ``report.json`` in a probe folder (beside ``arms/``
    or ``data.json``) or in one of its ``at-STEP`` folders; ``skip(path)`` leaves some out."""
    found = []
    for path in sorted(Path(root).rglob("report.json")):
        folder = path.parent
        probe = any((f / "arms").is_dir() or (f / "data.json").is_file() for f in (folder, folder.parent))
        if probe and not skip(path):
            found.append(path)
    return found


def load_probe(path: Path, root: Path) -> Probe:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise RunError(f"{path}: unreadable probe report ({reason(err)})") from None
    if not (isinstance(report, dict) and isinstance(report.get("tasks"), list)
            and isinstance(report.get("kinds"), dict) and all(t in report["kinds"] for t in report["tasks"])):
        raise RunError(f"{path}: not a probe report (expected the tasks and kinds that `tsr probe` writes)")
    name = str(path.parent.relative_to(root)) if path.parent != root else path.parent.name
    return Probe(path.parent, name, report)


def _stat(value: dict | None, signed: bool = False) -> str:
    """``mean ± se`` (the se left out where undefined: one seed)."""
    if not isinstance(value, dict) or value.get("mean") is None:
        return "–"
    se = value.get("se")
    spread = f" ± {se:.3f}" if isinstance(se, (int, float)) and math.isfinite(se) else ""
    return number(value["mean"], signed=signed) + spread


def _headroom(report: dict) -> str:
    rows, seeds = [], set()
    for target in report["tasks"]:
        row = report["headroom"].get(target)
        if not isinstance(row, dict):
            continue
        seeds.add(row.get("headroom", {}).get("n"))
        rows.append([text(target), text(row.get("metric", "")), Cell(_stat(row.get("target")), num=True),
                     Cell(_stat(row.get("full")), num=True), Cell(_stat(row.get("headroom"), signed=True), num=True)])
    caption = ("S(N): the target arm (N examples); S(10N): the full arm (10N examples); headroom: "
               "S(10N) − S(N) for accuracy, the loss gap L(N) − L(10N) for answer loss, so positive "
               "always means room to improve. Mean ± standard error over seeds "
               f"(n = {', '.join(str(s) for s in sorted(x for x in seeds if x is not None))}).")
    return table(["target", "metric", "S(N)", "S(10N)", "headroom"], rows, caption, numeric={2, 3, 4})


def _signatures(report: dict) -> str:
    parts = []
    sigs = report["signatures"]
    order = report["tasks"]
    rows = [[text(kind), Cell(esc(s.get("hit_rate", "–")), num=True),
             Cell(str(len(s.get("seeds", []))), num=True), text(", ".join(str(x) for x in s.get("seeds", [])))]
            for kind, s in sigs.items() if isinstance(s, dict)]
    parts.append(table(["signature", "top-1 hits", "seeds", "which"], rows,
                       "Top-1: the source whose signature is most similar (cosine, at the shared "
                       "initialisation) against the transfer matrix's best source, per target.",
                       numeric={1, 2}))
    for kind, s in sigs.items():
        if not isinstance(s, dict):
            continue
        cosine, top1 = s.get("cosine", {}), s.get("top1", {})
        targets = [t for t in order if t in cosine]
        if not targets:
            continue
        body = []
        for target in targets:
            row = [text(target)]
            hit = top1.get(target, {})
            for source in order:
                value = cosine[target].get(source)
                if value is None:
                    row.append(Cell("–", num=True))
                    continue
                mark = "★" if hit.get("predicted") == source else ""
                row.append(Cell(f"{value:+.2f}{mark}", num=True, best=hit.get("best") == source,
                                style=diverging(value)))
            verdict = "–" if not hit else ("hit" if hit.get("hit") else "miss")
            body.append(row + [text(verdict)])
        parts.append(f"<h4>{esc(kind)}</h4>" + table(
            ["target \\ source", *order, "top-1"], body,
            "Cosine of the two tasks' signatures, mean over seeds; colour on a fixed −1…+1 scale "
            "(green positive, red negative). ★: the most similar source (the signature's pick); "
            "bold: the matrix's best source.", numeric=set(range(1, len(order) + 1))))
    return "".join(parts)


def probe_section(anchor: str, probe: Probe) -> str:
    """The probe's section; a report.json whose content does not fit is a one-line error naming it."""
    try:
        return _section(anchor, probe)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise RunError(f"{probe.path / 'report.json'}: not a probe report tsr can read ({reason(err)})") from None


def _section(anchor: str, probe: Probe) -> str:
    report, order = probe.report, probe.report["tasks"]
    kinds = probe.report["kinds"]
    parts = [f'<h2 id="{esc(anchor)}">Probe: {esc(probe.name)}</h2>',
             f'<p class="note">{len(order)} tasks: {esc(", ".join(order))}. Folder <code>{esc(probe.path)}</code>.</p>']
    if isinstance(report.get("headroom"), dict):
        parts += ["<h3>Headroom</h3>", _headroom(report)]
    matrix = report.get("matrix")
    if isinstance(matrix, dict) and matrix:
        fig = transfer_figure(matrix, kinds, order, title=f"transfer matrix · {probe.name}")
        parts += ["<h3>Transfer matrix</h3>", figure(
            png_bytes(fig, dpi=110), "transfer matrix",
            "Rows: source, columns: target. Each cell: the mixed arm's score minus the target arm's "
            "(Δ accuracy; Δ loss for generation targets, where negative helps), mean ± standard "
            "error over seeds. Colour: the benefit divided by the largest |benefit| in its column "
            "(green helps, red hurts), so columns of either kind share one scale; outlined: the "
            "column's best source.")]
        checks = report.get("relation_checks")
        if isinstance(checks, list) and checks:
            rows = []
            for row in checks:
                verdicts = [f"{role} {s}: {'ok' if v.get('pass') else 'FAIL'}"
                            for role, key in (("partner", "partners"), ("conflict", "conflicts"))
                            for s, v in row.get(key, {}).items()]
                rows.append([text(row.get("target", "")), text(row.get("best", "")), text("; ".join(verdicts))])
            parts.append(table(["target", "best source", "designed relations"], rows,
                               "The synthetic stream's designed partners and conflicts, checked against the matrix."))
    matched = report.get("exposure_matched")
    if isinstance(matched, dict) and isinstance(matched.get("matrix"), dict) and matched["matrix"]:
        half = matched.get("half_step", "?")
        fig = transfer_figure(matched["matrix"], kinds, order, title=f"exposure-matched · {probe.name}")
        parts += ["<h3>Exposure-matched transfer matrix</h3>", figure(
            png_bytes(fig, dpi=110), "exposure-matched transfer matrix",
            f"Each mixed arm against the target arm after step {esc(half)} (half the steps, so the target "
            "has seen its N examples as often as in the mixed arm): what the source adds net of the steps "
            "it displaces. A diagnostic of this project, not the paper's protocol. Colours as above.")]
    if isinstance(report.get("signatures"), dict) and report["signatures"]:
        parts += ["<h3>Signature audit</h3>", _signatures(report)]
    curves = report.get("curves")
    if isinstance(curves, dict) and curves:
        # report.json keeps an undefined standard error (one seed) as null
        points = {t: {label: [tuple(math.nan if v is None else v for v in p) for p in pts]
                      for label, pts in arms.items()} for t, arms in curves.items()}
        fig = curves_figure(points, kinds, order, title=f"probe learning curves · {probe.name}")
        parts += ["<h3>Probe learning curves</h3>", figure(
            png_bytes(fig, dpi=100), "probe learning curves",
            "Each target's score after each probe checkpoint: the target and full arms bold, "
            "each mixed arm dashed; mean over seeds, bands ± standard error.")]
    return "\n".join(parts)
