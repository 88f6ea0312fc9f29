"""Writing a signature audit (:mod:`tsr.experiments.signatures`): every signature side by
side as markdown (``signatures.md``), CSV (``signatures.csv``, one row per signature and
target), JSON (``signatures.json``) and one figure (``signatures.png``: signature x target, the
top-1 hits over seeds and the rank correlation)."""

from __future__ import annotations

import math
from pathlib import Path

from ...atomic import write_figure, write_json, write_text


def _f(x, fmt="{:+.2f}") -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def _pm(spread: dict, fmt="{:+.2f}") -> str:
    sd = spread.get("sd")
    return _f(spread.get("mean"), fmt) + ("" if sd is None or math.isnan(sd) else f" ± {sd:.2f}")


def audit_markdown(audit: dict, order: list[str]) -> str:
    """The side-by-side table, then per target the top-1 hits over seeds and the mean rho."""
    first = next(iter(audit.values()))
    seeds = first["seeds"]
    lines = [f"# Signature audit\n\nSimilarities at the shared initialisation of seeds {', '.join(map(str, seeds))} "
             f"({first.get('probe_batches', '?')} probe batches per task) against the measured transfer matrix "
             "(mean over the folder's seeds). *Seed-mean*: the table averaged over seeds, scored once; *per seed*: "
             "each seed's table scored alone, mean ± sd over seeds. Partner > conflict: the share of (target, "
             "designed partner, designed conflict) triples where the partner is more similar. Regret: the "
             "matrix's best benefit minus the benefit of the source picked, mean over accuracy targets "
             "(0: always the best; the oracle's benefit is what is at stake).\n",
             "| signature | family | top-1 (seed-mean) | top-1 per seed | mean ρ (seed-mean) | mean ρ per seed "
             "| regret (seed-mean) | regret per seed | partner > conflict | s / task |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for kind, a in audit.items():
        pac = a.get("partner_above_conflict")
        pairs = f" ({a['pairs']})" if a.get("pairs") else ""
        lines.append(f"| {kind} | {a['family']}{'' if a['paper'] else ' (new)'} | {a['hit_rate']} | "
                     f"{_pm(a['spread']['hits'], '{:.1f}')} / {a['top1'] and len(a['top1'])} | "
                     f"{_f(a['mean_spearman'])} | {_pm(a['spread']['mean_spearman'])} | "
                     f"{_f(a.get('mean_regret'), '{:.3f}')} | {_pm(a['spread'].get('mean_regret') or {}, '{:.3f}')} | "
                     f"{_f(pac, '{:.2f}')}{pairs} | "
                     f"{_f(a.get('seconds_per_task'), '{:.2f}')} |")
    targets = [t for t in order if t in first["per_target"]]
    lines += ["\n## Per target\n\nEach cell: top-1 hits over seeds / rank correlation ρ of the seed-mean table "
              "(★: the seed-mean table's pick is the matrix's best source).\n",
              "| signature | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    for kind, a in audit.items():
        cells = []
        for t in targets:
            mark = "★" if a["top1"].get(t, {}).get("hit") else ""
            cells.append(f"{a['per_target'][t]['hits']}/{len(seeds)} {_f(a['spearman'].get(t))}{mark}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    best = {t: first["top1"][t]["best"] for t in targets if t in first["top1"]}
    lines.append("\nMatrix best source: " + ", ".join(f"{t} ← {s}" for t, s in best.items()) + ".")
    lines += ["\n## Picks (seed-mean table)\n", "| signature | " + " | ".join(targets) + " |",
              "|---|" + "---|" * len(targets)]
    for kind, a in audit.items():
        lines.append(f"| {kind} | " + " | ".join(a["top1"].get(t, {}).get("predicted", "–") for t in targets) + " |")
    return "\n".join(lines) + "\n"


def audit_csv(audit: dict, order: list[str]) -> str:
    rows = ["signature,target,best_source,predicted,hit,hits_over_seeds,seeds,spearman,spearman_seed_mean,"
            "spearman_seed_sd,mean_spearman,partner_above_conflict,seconds_per_task"]
    for kind, a in audit.items():
        for t in (t for t in order if t in a["top1"]):
            h, pt = a["top1"][t], a["per_target"][t]
            rows.append(",".join(str(x) for x in (
                kind, t, h["best"], h["predicted"], int(h["hit"]), pt["hits"], len(a["seeds"]),
                _num(a["spearman"].get(t)), _num(pt["spearman"]["mean"]), _num(pt["spearman"]["sd"]),
                _num(a["mean_spearman"]), _num(a.get("partner_above_conflict")), _num(a.get("seconds_per_task")))))
    return "\n".join(rows) + "\n"


def _num(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6f}"


def audit_figure(audit: dict, order: list[str], title: str = "signature audit"):
    from ...analysis.plotting import pyplot

    _, plt = pyplot()
    import numpy as np

    kinds = list(audit)
    first = audit[kinds[0]]
    targets = [t for t in order if t in first["per_target"]]
    n = len(first["seeds"])
    hits = np.array([[audit[k]["per_target"][t]["hits"] / n for t in targets] for k in kinds])
    rho = np.array([[audit[k]["spearman"].get(t, math.nan) for t in targets] for k in kinds], dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(2.2 + 1.3 * len(targets), 1.2 + 0.45 * len(kinds)), squeeze=False)
    for ax, data, cmap, lim, label in ((axes[0][0], hits, "Greens", (0, 1), f"top-1 hits over {n} seed(s)"),
                                       (axes[0][1], rho, "RdBu", (-1, 1), "Spearman ρ (seed-mean table)")):
        ax.imshow(np.nan_to_num(data, nan=0.0), cmap=cmap, vmin=lim[0], vmax=lim[1], aspect="auto")
        ax.set_xticks(range(len(targets)), targets, rotation=40, ha="right", fontsize=8)
        ax.set_yticks(range(len(kinds)), kinds, fontsize=8)
        ax.set_title(f"{label}; colour {lim[0]}…{lim[1]}", fontsize=9)
        for i in range(len(kinds)):
            for j in range(len(targets)):
                v = data[i, j]
                text = f"{round(v * n)}/{n}" if data is hits else ("–" if math.isnan(v) else f"{v:+.2f}")
                ax.text(j, i, text, ha="center", va="center", fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def write_audit(out: Path, audit: dict, order: list[str], title: str = "signature audit") -> None:
    """``signatures.md``, ``.csv``, ``.json`` and ``.png`` in ``out``."""
    out = Path(out)
    write_text(out / "signatures.md", audit_markdown(audit, order))
    write_text(out / "signatures.csv", audit_csv(audit, order))
    write_json(out / "signatures.json", audit)
    write_figure(out / "signatures.png", audit_figure(audit, order, title), dpi=130)


__all__ = ["audit_csv", "audit_figure", "audit_markdown", "write_audit"]
