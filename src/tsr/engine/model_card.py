"""The model card an export writes beside the adapter or merged model: ``README.md`` in the
format the Hugging Face hub reads (and PEFT writes): a YAML header (``base_model``,
``library_name``, ``tags``, ``pipeline_tag``), then what the weights are: the base, the stream
and its tasks in order, the method and seed, which adapter this is, the results matrix and the
stream metrics, and how to load it.
"""

from __future__ import annotations

import json
from typing import Any

from ..version import __version__
from ..runs.results import Results

METRIC_NAMES = {"overall": "Overall", "plas": "Plasticity", "bwt": "BWT", "overall_loss": "Overall loss",
                "plas_loss": "Plasticity loss", "bwt_loss": "BWT loss", "fwt": "FWT", "fwt_loss": "FWT loss"}


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def results_table(results: Results) -> list[str]:
    """The results matrix as a Markdown table: a row per finished task (the scores after it), a
    column per task; accuracy for classification tasks, answer loss for generation tasks."""
    header = "| after task | " + " | ".join(f"{t} ({'acc' if k == 'classification' else 'loss'})"
                                            for t, k in zip(results.tasks, results.kinds)) + " |"
    lines = [header, "|" + "---|" * (len(results.tasks) + 1)]
    for i, (acc, loss) in enumerate(zip(results.acc, results.loss)):
        cells = [_cell(a if k == "classification" else x) for a, x, k in zip(acc, loss, results.kinds)]
        lines.append(f"| {i + 1} {results.tasks[i]} | " + " | ".join(cells) + " |")
    return lines


def model_card(*, base: str, merged: bool, what: str, method: str, seed: int, source: str,
               results: Results | None, r: int, alpha: float, modules: int) -> str:
    """The card's text. ``base``: the base's hub id or folder; ``what``: which adapter
    (:attr:`tsr.engine.export.Exported.what`); ``source``: the run's ``stream.source``."""
    header: dict[str, Any] = {"base_model": base, "library_name": "transformers" if merged else "peft",
                              "pipeline_tag": "text-generation",
                              "tags": ["tsr", "continual-learning", method] + ([] if merged else ["lora"])}
    front = ["---"] + [f"{key}: {json.dumps(value)}" for key, value in header.items()] + ["---", ""]
    kind = "the base model with a LoRA adapter merged in" if merged else "a LoRA adapter"
    body = [f"# {method} on {source}", "",
            f"This is {kind}, {what}, trained by tsr {__version__} with the "
            f"method `{method}` (seed {seed}) on the stream `{source}`, one task after another.", "",
            f"- **Base model:** `{base}`",
            f"- **Adapter:** LoRA r {r}, alpha {alpha:g}, on {modules} modules" + (" (merged)" if merged else "")]
    if results is not None:
        body.append(f"- **Tasks, in order:** {', '.join(f'{t} ({k})' for t, k in zip(results.tasks, results.kinds))}")
        body += ["", "## Results", "",
                 "Scores after each task (accuracy: exact match, higher is better; loss: mean answer-token "
                 "cross-entropy, lower is better):", "", *results_table(results)]
        metrics = {k: v for k, v in results.metrics().items() if k in METRIC_NAMES}
        if metrics:
            body += ["", "| " + " | ".join(METRIC_NAMES[k] for k in metrics) + " |", "|" + "---|" * len(metrics),
                     "| " + " | ".join(_cell(v) for v in metrics.values()) + " |"]
    if merged:
        load = ["from transformers import AutoModelForCausalLM, AutoTokenizer", "",
                'model = AutoModelForCausalLM.from_pretrained("THIS_FOLDER_OR_REPO")',
                'tokenizer = AutoTokenizer.from_pretrained("THIS_FOLDER_OR_REPO")']
    else:
        load = ["from peft import PeftModel", "from transformers import AutoModelForCausalLM", "",
                f"base = AutoModelForCausalLM.from_pretrained({base!r})",
                'model = PeftModel.from_pretrained(base, "THIS_FOLDER_OR_REPO")']
    body += ["", "## Loading", "", "```python", *load, "```", ""]
    return "\n".join(front + body)
