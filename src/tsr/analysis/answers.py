"""Whose answers a model gives (``tsr audit answers``): after each task of a run, the share of
each earlier task's test predictions that open with one of that task's own answer words, and
the share that open with one of the newest task's.

The regime map's diagnosis of forgetting (docs/synthetic.md, "Why the bundled world forgets"):
a model that answers a stance prompt with the policy task's labels right after training on
policy has not only lost stance's rule, it hands every prompt to the newest task (*takeover*),
whatever labels the prompt lists. Forgetting by takeover shows as a low *own* share and a high
*newest* share; forgetting within the task's own format (the right labels, the wrong rule) as
a high own share and a low accuracy.

Reads a run folder's ``predictions/`` (``eval.predictions``; with ``eval.schedule=full`` every
earlier task is scored after every task, and with ``eval.all_tasks=true`` the later ones too,
whose columns then show which trained task answers a prompt the model has not yet learnt). A task's answer words are the first whitespace-
separated words of its reference answers over every scoring round; a prediction's word is its
own first word (closing punctuation dropped from both). Nothing is recomputed from the model.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..data.records import read_jsonl
from ..errors import RunError

ROUND_PREFIX = "after-"


PUNCTUATION = ".,;:!?\"'"


def first_word(text: str) -> str:
    """The first whitespace-separated word of ``text`` without the punctuation that closes it
    (``none.`` is ``none``: a model that ends its answers with a full stop still answers in
    that word); "" for an empty answer."""
    words = str(text).split()
    return words[0].rstrip(PUNCTUATION) if words else ""


def _task_of(file: Path) -> str:
    """``NN-<task>.jsonl`` -> ``<task>``."""
    return file.stem.split("-", 1)[1] if "-" in file.stem else file.stem


def read_rounds(run: Path, source: str = "predictions") -> list[tuple[str, dict[str, list[dict]]]]:
    """The run's scoring rounds in order: (task just trained, {scored task: its prediction rows}),
    from ``run/source`` (``predictions``, or ``decoded``: :mod:`tsr.experiments.answers.decode`)."""
    folder = Path(run) / source
    rounds = sorted(p for p in folder.glob(f"{ROUND_PREFIX}*") if p.is_dir()) if folder.is_dir() else []
    if not rounds and source != "predictions":
        raise RunError(f"{folder}: no after-* folders")
    if not rounds:
        raise RunError(f"{run}: no predictions/after-* folders (run with eval.predictions=true, "
                       "and eval.schedule=full to score every earlier task after every task)")
    out = []
    for r in rounds:
        newest = r.name[len(ROUND_PREFIX):].split("-", 1)[-1]
        out.append((newest, {_task_of(f): [row for _, row in read_jsonl(f)] for f in sorted(r.glob("*.jsonl"))}))
    return out


def answer_words(rounds: list[tuple[str, dict[str, list[dict]]]]) -> dict[str, set[str]]:
    """Each task's answer words: the first words of its reference answers in every round."""
    words: dict[str, set[str]] = {}
    for _, scored in rounds:
        for task, rows in scored.items():
            words.setdefault(task, set()).update(first_word(r.get("answer", "")) for r in rows)
    return words


def share(rows: list[dict], words: set[str]) -> float:
    """The share of ``rows`` whose prediction opens with one of ``words`` (NaN for no rows)."""
    if not rows:
        return math.nan
    return sum(first_word(r.get("prediction", "")) in words for r in rows) / len(rows)


def takeover(run: Path, source: str = "predictions") -> dict:
    """``{"tasks": [...], "rows": [{"after", "cells": {task: {own, newest, accuracy, n}}}]}`` over
    the tasks scored in each round but the one just trained (which is not its own newest);
    ``source``: as :func:`read_rounds`."""
    rounds = read_rounds(run, source)
    words = answer_words(rounds)
    tasks: list[str] = []
    rows = []
    for newest, scored in rounds:
        tasks += [t for t in scored if t not in tasks]
        cells = {}
        for task, preds in scored.items():
            if task == newest:
                continue
            correct = [bool(p.get("correct")) for p in preds if "correct" in p]
            cells[task] = {"own": share(preds, words[task]), "newest": share(preds, words.get(newest, set())),
                           "accuracy": sum(correct) / len(correct) if correct else None, "n": len(preds)}
        rows.append({"after": newest, "cells": cells})
    return {"run": str(run), "source": source, "tasks": tasks, "rows": rows, "overall": overall(rows, words)}


def overall(rows: list[dict], words: dict[str, set[str]]) -> dict:
    """The table in two numbers: the mean own and newest shares over every cell whose task shares
    no answer word with the round's newest task (where they share one, a word counts in both
    shares and says nothing of whose answer it is); ``cells`` counted, ``shared`` left out."""
    kept = [c for row in rows for task, c in row["cells"].items()
            if not words[task] & words.get(row["after"], set()) and not math.isnan(c["own"])]
    shared = sum(len(row["cells"]) for row in rows) - len(kept)
    mean = (lambda key: sum(c[key] for c in kept) / len(kept)) if kept else (lambda key: None)
    return {"own": mean("own"), "newest": mean("newest"), "cells": len(kept), "shared": shared}


def takeover_markdown(summary: dict) -> str:
    """One row per round, one column per earlier task: own / newest share (accuracy)."""
    tasks = summary["tasks"]
    lines = ["| after | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    for row in summary["rows"]:
        cells = []
        for t in tasks:
            c = row["cells"].get(t)
            if c is None:
                cells.append("(trained)" if t == row["after"] else "")
            else:
                acc = "" if c["accuracy"] is None else f" ({c['accuracy']:.2f})"
                cells.append(f"{c['own']:.2f} / {c['newest']:.2f}{acc}")
        lines.append(f"| {row['after']} | " + " | ".join(cells) + " |")
    total = summary.get("overall")
    if total and total["cells"]:
        lines += ["", f"Over the {total['cells']} cells whose task shares no answer word with the row's newest task "
                      f"({total['shared']} left out): own {total['own']:.2f}, newest {total['newest']:.2f}."]
    lines += ["", "Each cell: the share of that task's test predictions opening with one of its own answer words / "
              "with one of the newest task's (the row's), and its accuracy. A low own share with a high newest "
              "share is takeover: the prompt answered as the newest task's. Tasks whose answer words overlap "
              "(the same label set) count in both shares."]
    return "\n".join(lines) + "\n"


def takeover_figure(summary: dict, title: str):
    """The newest task's share as a heatmap (rows: after that task; columns: the other scored tasks)."""
    from .plotting import pyplot

    _, plt = pyplot()
    tasks, rows = summary["tasks"], summary["rows"]
    grid = [[row["cells"].get(t, {}).get("newest", math.nan) for t in tasks] for row in rows]
    fig, ax = plt.subplots(figsize=(1.1 + 0.75 * len(tasks), 1.0 + 0.45 * len(rows)))
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="Reds")
    for i, row in enumerate(rows):
        for j, t in enumerate(tasks):
            c = row["cells"].get(t)
            if c is not None:
                ax.text(j, i, f"{c['newest']:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if c["newest"] > 0.6 else "black")
    ax.set_xticks(range(len(tasks)), tasks, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), [r["after"] for r in rows], fontsize=8)
    ax.set_xlabel("test set of another task")
    ax.set_ylabel("after training on")
    fig.colorbar(im, ax=ax, fraction=0.04, label="answers in the newest task's words")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
