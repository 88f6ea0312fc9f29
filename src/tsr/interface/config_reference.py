"""docs/config.md, generated from the config dataclasses, their field docstrings, the bundled
presets and every method's parameters: ``python -m tsr.interface.config_reference >
docs/config.md`` (a test fails when the page is stale)."""

from __future__ import annotations

import dataclasses
from importlib import resources
from typing import Any

import yaml

from ..config import PRESET_DIR, RunConfig, _flat_keys, _read_yaml, model_layer, preset_names
from ..methods.registry import METHODS, PRESETS, MethodSpec
from ..schema import to_plain

REFERENCE_INTRO = """# Configuration

<!-- Generated from the config dataclasses and the bundled presets by
     `python -m tsr.interface.config_reference > docs/config.md`; a test fails when this page is stale. -->

A run is described by one typed config (`tsr/config/`, with the `model` and `lora` sections in
`tsr/model/settings.py`). It is built from

1. the defaults below, which are the reference paper's hyperparameters (Appendix "Full-stream
   setup"); any model takes them, except
2. the bundled base, which brings its own tuned settings (table below) whenever `model.path`
   is `bundled`;
3. a bundled config preset (table below) or a YAML file, which may start from a preset with a
   top-level `preset:` key (a backbone's preset, e.g. `qwen2.5-7b`, names its batch size);
4. `key.sub=value` overrides on the command line (values are parsed as YAML: `[a, b]`,
   `true`, `1e-4`); a mapping given in parts merges key by key (`stream.options.a=1
   stream.options.b=2` keeps both); a sub-key set under a key that another layer set to a
   plain value (`method: tsr_need` in a file, then `method.probe_batches=1`) is an error naming
   the key, since one of the two layers is wrong.

Unknown keys and bad values are errors that name the key's path
(`unknown config key 'train.lrr' (valid keys in 'train': steps, lr, ...)`). A number that is
not finite (`inf`, `nan`) is refused wherever it appears, except `method.tau` of TSR, where
`inf` means uniform routing. `tsr config
[CONFIG] [key=value ...]` prints the resolved config, each value that is not a default marked
with where it came from; every run directory keeps it as
`config.yaml`, and its hash (the *fingerprint*) names the run. Choosing another method on the
command line (`method.name=er`) drops the previous method's parameters, so `tsr run
method.name=er` runs ER with its own defaults.
"""


def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a dataclass."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body, docs = tree.body[0].body, {}
    for stmt, after in zip(body, body[1:]):
        if isinstance(stmt, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[stmt.target.id] = " ".join(str(after.value.value).split())
    return docs


def _cell(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
    return f"`{text}`"


def _key_rows(cls: type, prefix: str) -> list[str]:
    docs, rows = _attribute_docs(cls), []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default) and not isinstance(default, MethodSpec):
            rows += _key_rows(type(default), f"{prefix}{f.name}.")
        elif isinstance(default, MethodSpec):
            rows.append(f"| `method.name` | `{default.name}` | {docs.get(f.name, '')} |")
        else:
            rows.append(f"| `{prefix}{f.name}` | {_cell(default)} | {docs.get(f.name, '')} |")
    return rows


def reference_markdown() -> str:
    """docs/config.md: every key with its default and meaning, the config presets, and every
    method's parameters, from the dataclasses and the bundled presets."""
    out = [REFERENCE_INTRO, "## Config presets\n", "| preset | differs from the defaults in | what it is |", "|---|---|---|"]
    for name in preset_names():
        text = resources.files("tsr").joinpath(PRESET_DIR, f"{name}.yaml").read_text(encoding="utf-8")
        first = _first_sentence(text)
        keys = ", ".join(f"`{k}`" for k in _flat_keys(_read_yaml(text, f"preset {name}")))
        out.append(f"| `{name}` | {keys} | {first} |")
    bundled = model_layer("bundled")
    out += ["", "## The bundled base's own settings\n",
            "Applied whenever `model.path` is `bundled`, beneath any preset, file or override "
            "(`presets/models/bundled.yaml`; docs/calibration.md says why each):\n",
            "| key | value |", "|---|---|"]
    out += [f"| `{k}` | {_cell(_get(bundled, k))} |" for k in _flat_keys(bundled)]
    out += ["", "## Keys\n", "| key | default | meaning |", "|---|---|---|", *_key_rows(RunConfig, ""), ""]
    out += ["## Method parameters\n", "`method.name` picks a method or a method preset; the other `method.*` keys are "
            "that method's parameters (docs/methods.md says where each default comes from).\n",
            "| method | parameters and defaults |", "|---|---|"]
    for name in sorted(METHODS):
        params = to_plain(METHODS[name].Params())
        listed = ", ".join(f"`{k}={_cell(v)[1:-1]}`" for k, v in params.items()) or "none"
        out.append(f"| `{name}` | {listed} |")
    out += ["", "| method preset | method and parameters |", "|---|---|"]
    for name in sorted(PRESETS):
        base, params, _ = PRESETS[name]
        listed = ", ".join(f"`{k}={_cell(v)[1:-1]}`" for k, v in params.items())
        out.append(f"| `{name}` | `{base}`{': ' + listed if listed else ''} |")
    return "\n".join(out) + "\n"


def _first_sentence(text: str) -> str:
    """The first sentence of a preset file's leading comment."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    words = " ".join(lines)
    end = words.find(". ")
    return words if end < 0 else words[: end + 1]


def _get(data: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        data = data[part]
    return data


if __name__ == "__main__":
    import sys

    sys.stdout.write(reference_markdown())
