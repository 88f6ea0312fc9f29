"""Which runs are runs of one setting: the config facts the tables group by, read from the runs.

Runs of one setting differ only in their seed and in keys that never change results (where a
run is saved, how it logs, its threads); a key added to the config after some runs were saved
reads, in those runs, as its neutral value (the value that leaves results as they were). Those
two facts belong to the config's declarations (:func:`tsr.schema.setting`), which this layer
does not import: every run writes them into its own ``run.json`` (``grouping``: the keys that
are not settings, and the neutral value of every key that has one), and a set of runs is grouped
by the union of what its runs recorded. Runs made before runs recorded them read by
:data:`LEGACY`, the facts as they stood then (a test pins that each still holds); it never needs
a new key, since every run made after it records its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import yaml


def value_text(value: Any) -> str:
    """A config value as compact YAML text, so that values compare as text."""
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("\n...")


def flatten(data: dict, prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}}`` as ``{"a.b": "1"}`` (values as :func:`value_text`)."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and key != "options":
            out.update(flatten(value, name + "."))
        else:
            out[name] = value_text(value)
    return out


@dataclass(frozen=True)
class Grouping:
    """``not_settings``: keys that never separate runs (a whole section ends with a dot,
    ``log.``); ``neutral``: each added key's neutral value, as text."""

    not_settings: frozenset[str] = frozenset()
    neutral: Mapping[str, str] = field(default_factory=dict)

    def merged(self, *others: "Grouping") -> "Grouping":
        not_settings, neutral = set(self.not_settings), dict(self.neutral)
        for other in others:
            not_settings |= other.not_settings
            neutral.update(other.neutral)
        return Grouping(frozenset(not_settings), neutral)

    def is_setting(self, key: str) -> bool:
        """Whether a config key can separate runs (not the seed, nor where or how a run is logged)."""
        prefixes = tuple(k for k in self.not_settings if k.endswith("."))
        return key not in self.not_settings and not key.startswith(prefixes)

    def comparable(self, config: dict[str, str] | None) -> dict[str, str]:
        """A flattened config as runs are grouped by: a key the run predates reads as its neutral
        value, and ``eval.extra_tokens`` counts only with predictions on."""
        out = {**self.neutral, **(config or {})}
        if out.get("eval.predictions") != "true":
            out.pop("eval.extra_tokens", None)
        return out

    def varying_keys(self, configs: Iterable[dict[str, str] | None]) -> list[str]:
        """The flattened config keys whose values differ between ``configs`` (settings only)."""
        configs = [self.comparable(c) for c in configs]
        keys = sorted({k for c in configs for k in c})
        return [k for k in keys if self.is_setting(k) and len({c.get(k) for c in configs}) > 1]

    def record(self) -> dict[str, Any]:
        """As ``run.json`` holds it."""
        return {"not_settings": sorted(self.not_settings), "neutral": dict(sorted(self.neutral.items()))}


def from_record(record: Any) -> Grouping:
    """A run's recorded ``grouping`` (anything else, as a run made before the record, is none)."""
    if not isinstance(record, dict):
        return Grouping()
    not_settings = record.get("not_settings") or []
    neutral = record.get("neutral") or {}
    if not isinstance(not_settings, list) or not isinstance(neutral, dict):
        return Grouping()
    return Grouping(frozenset(map(str, not_settings)), {str(k): str(v) for k, v in neutral.items()})


def of_records(records: Iterable[Any]) -> Grouping:
    """The grouping of a set of runs: :data:`LEGACY` with what each run recorded."""
    return LEGACY.merged(*(from_record(r) for r in records))


# The facts as they stood when runs began to record their own (tsr 0.x, this project's config and
# its 13 registered methods); tests/runs/test_grouping.py pins each against the config's declarations.
LEGACY = Grouping(
    frozenset({"seed", "out_dir", "name", "model.threads", "model.gradient_checkpointing", "stream.truncate",
               "train.checkpoint_minutes", "eval.logits_mb", "log.",
               "model.fsdp"}),  # added since; listed because it never changes results, so it holds for them too
    {"eval.predictions": "false", "eval.schedule": "full", "method.kd_gamma": "4.0", "method.kd_posthoc": "0.2",
     "method.kd_repel": "0.001", "method.kd_reshape": "none", "method.kd_timing": "interleaved",
     "method.need": "none", "method.need_floor": "0.5", "method.need_gate": "''", "method.need_gate_min": "0.05",
     "method.need_weight": "0.5", "method.signatures": "''", "method.signatures_proxy": "false",
     "model.adapter_dtype": "float32", "model.autocast": "none", "model.compile": "false",
     "model.quantization": "none", "model.revision": "null", "train.accumulate": "1", "train.fused_head": "auto",
     "train.packing": "false", "train.schedule": "constant", "train.warmup": "0"},
)
