"""docs/config.md is generated from the config dataclasses and the bundled presets."""

from pathlib import Path

from tsr.config import RunConfig
from tsr.interface.config_reference import reference_markdown
from tsr.methods.registry import METHODS

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def test_config_reference_is_current():
    assert DOC.read_text(encoding="utf-8") == reference_markdown(), \
        "docs/config.md is stale: regenerate it with `python -m tsr.interface.config_reference > docs/config.md`"


def test_every_key_and_method_is_documented_with_a_meaning():
    page = reference_markdown()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    for key in ("seed", "model.compile", "lora.targets", "stream.replay_source", "train.grad_clip", "eval.all_tasks"):
        row = next(r for r in rows if r.startswith(f"| `{key}` |"))
        assert row.rstrip(" |").split("|")[-1].strip(), f"{key} has no meaning in docs/config.md"
    assert all(f"| `{name}` |" in page for name in METHODS)
    # a changed default shows in the page: the page is built from the dataclasses, not copied
    assert f"| `train.steps` | `{RunConfig().train.steps}` |" in page
