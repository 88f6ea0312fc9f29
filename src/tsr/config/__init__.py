"""The run configuration: one strict, typed schema (:mod:`.sections`), assembled from the
dataclass defaults, the model's own settings, a preset or YAML file and ``key.sub=value``
overrides (:mod:`.layers`).

The defaults are the reference paper's hyperparameters (Appendix "Full-stream setup"); the
bundled base brings its own tuned settings, and the config presets are the other place a
default differs. Unknown keys and bad values are errors naming the key's path. The ``method``
section is typed when the config is built: the chosen method's (or method preset's) parameter
dataclass checks it (:mod:`tsr.methods.registry`).
"""

from .layers import (PRESET_DIR, _flat_keys, _read_yaml, annotated_yaml, apply_override, auto_targets_of, config_sources, dump_yaml,
                     from_plain, load_config, load_preset, merge, model_layer, parse_override, preset_names,
                     resolve_layers, with_method)
from ..model.settings import LoraConfig, ModelConfig
from .sections import EvalConfig, LogConfig, RunConfig, StreamConfig, TrainConfig, grouping_of, neutral_keys

__all__ = ["EvalConfig", "LogConfig", "LoraConfig", "ModelConfig", "PRESET_DIR", "RunConfig", "StreamConfig", "TrainConfig", "_flat_keys",
           "_read_yaml", "annotated_yaml", "apply_override", "auto_targets_of", "config_sources", "dump_yaml", "from_plain", "grouping_of",
           "load_config", "load_preset", "merge", "model_layer", "neutral_keys", "parse_override", "preset_names",
           "resolve_layers", "with_method"]
