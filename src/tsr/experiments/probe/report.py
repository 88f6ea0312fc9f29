"""Writing a probe's results: headroom, the transfer matrix (JSON, CSV, markdown, PNG) and,
for synthetic streams, the check of the measured matrix against the designed relations."""

from __future__ import annotations

from pathlib import Path

from ...atomic import write_json, write_text
from ...data.example import Stream
from ...analysis.arms import signature_routes, write_arm_table
from ...analysis.curves import curve_points, save_curves
from ...analysis.heatmap import save_heatmap
from ...analysis.transfer import check_relations, column_best, exposure_matched, headroom, headroom_markdown, matrix_csv, matrix_markdown, relations_markdown, transfer_matrix


def designed_relations(stream_source: str, options: dict) -> dict[str, dict[str, str]] | None:
    """The relation table of a synthetic stream, or None for other streams."""
    if not stream_source.startswith("synth"):
        return None
    from ...data.synth.spec import relation_table
    from ...data.synth.streams import resolve_spec

    return relation_table(resolve_spec(stream_source, options))


def write_report(out: Path, arms: list[dict], stream: Stream, relations: dict | None = None,
                 signatures: dict | None = None, steps: int | None = None) -> dict:
    """Write every file of a probe report into ``out``; returns what ``report.json`` holds.

    With ``steps`` (the arms' step count) and arms scored on the way (probe checkpoints), the
    learning curves are drawn too (``curves.png``), and with target arms scored at
    ``steps // 2`` the exposure-matched matrix is written (``exposure-matched.md``). With
    mixed or random arms, the arm table (target-only, full, random, oracle; ``arm-table.md``).
    """
    out = Path(out)
    order = stream.names
    kinds = {t.name: t.kind.value for t in stream}
    report: dict = {"tasks": order, "kinds": kinds}
    if any(a["arm"] == "full" for a in arms):
        rows = headroom(arms)
        report["headroom"] = rows
        write_text(out / "headroom.md", headroom_markdown(rows, order))
    if any(a["arm"] == "mixed" for a in arms):
        matrix = transfer_matrix(arms)
        report["matrix"] = matrix
        report["column_best"] = column_best(matrix, kinds)
        write_text(out / "matrix.md", matrix_markdown(matrix, kinds, order))
        write_text(out / "matrix.csv", matrix_csv(matrix, kinds))
        save_heatmap(matrix, kinds, order, out / "matrix.png", title=f"transfer matrix · {stream.name}")
        if relations:
            report["relations"] = relations
            report["relation_checks"] = check_relations(matrix, kinds, relations)
            write_text(out / "relations.md", relations_markdown(report["relation_checks"]))
        matched = exposure_matched(arms, steps // 2) if steps and steps >= 2 else []
        if any(a["arm"] == "mixed" for a in matched):
            report["exposure_matched"] = _matched(matched, kinds, order, relations, steps)
            write_text(out / "exposure-matched.md", report["exposure_matched"].pop("markdown"))
    points = curve_points(arms, steps) if steps else {}
    if points:
        report["curves"] = points
        save_curves(points, kinds, order, out / "curves.png", title=f"learning curves · {stream.name}")
    if any(a["arm"] == "target" for a in arms) and any(a["arm"] in ("mixed", "random") for a in arms):
        report["arm_table"] = write_arm_table(out, arms, order, signature_routes(signatures))
    if signatures:
        report["signatures"] = signatures
    write_json(out / "report.json", report)
    return report


def _matched(arms: list[dict], kinds: dict, order: list[str], relations: dict | None, steps: int) -> dict:
    matrix = transfer_matrix(arms)
    text = [f"# Exposure-matched transfer matrix\n\nEach mixed arm ({steps} steps, half of them on the "
            f"target's N examples) against the target arm after {steps // 2} steps: what the source's "
            "half of the steps adds, net of the target steps it displaces. A diagnostic of this "
            "project, not the paper's protocol (that is matrix.md).\n", matrix_markdown(matrix, kinds, order)]
    found: dict = {"half_step": steps // 2, "matrix": matrix, "column_best": column_best(matrix, kinds)}
    if relations:
        found["relation_checks"] = check_relations(matrix, kinds, relations)
        text.append("\n" + relations_markdown(found["relation_checks"]))
    found["markdown"] = "\n".join(text)
    return found
