"""The regime map (``tsr audit regime``): how much the bundled world forgets, point by point.

A *point* is a name and the ``key=value`` overrides that make it (a learning rate, steps per
task, LoRA targets and rank, the budget N, a base model); each (method, point, seed) is an
ordinary run of the grid (:mod:`tsr.engine.grid`), so the map shares finished runs with
``tsr compare`` and resumes run by run. With ``--relations`` each point also gets the probe
arms the designed-relation checks read (the targets with a partner or a conflict, every source,
mixed and target arms: C4's checks, :func:`tsr.analysis.transfer.check_relations`).

What it measures per point (:mod:`tsr.experiments.regime.report`): SeqFT's retention
(Overall / Plas, per seed), SeqFT's BWT, ER's and TSR's BWT (and every method's Overall), the
relation checks passed, and which of the calibration targets hold (:data:`TARGETS`, the regime
issue's; fixed before any point was measured).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ...data.records import read_yaml, require_file
from ...engine.grid import Point, check_methods
from ...errors import ConfigError
from ...model.settings import QKVO as LORA_QKVO

DEFAULT_METHODS = ("seqft", "er", "tsr")
QKVO = f"lora.targets=[{','.join(LORA_QKVO)}]"  # LoRA on the attention projections only

# The calibration targets, as fixed by the regime issue before any point was measured:
# (what, statistic, low, high); a statistic is a seed mean.
TARGETS = (("SeqFT retention (Overall / Plas)", "seqft_retention", 0.5, 0.8),
           ("SeqFT BWT", "seqft_bwt", -0.20, -0.05),
           ("ER BWT", "er_bwt", -0.05, 0.08),
           ("TSR BWT", "tsr_bwt", -0.05, 0.08))
RELATION_TARGETS = ("stance", "policy", "irony", "arith-cm", "arith-ds")  # synth-trace's checked targets
RELATIONS_NEEDED = 9  # of C4's 10 checks


@dataclasses.dataclass(frozen=True)
class RegimePoint:
    name: str
    overrides: tuple[str, ...]


def read_points(path: str | Path) -> list[RegimePoint]:
    """A points file: ``points: {name: [key=value, ...], ...}`` (a name with no overrides is the
    config as given)."""
    data = read_yaml(require_file(Path(path), "--points file"), ConfigError)
    points = data.get("points") if isinstance(data, dict) else None
    if not isinstance(points, dict) or not points:
        raise ConfigError(f"{path}: expected 'points:' mapping each point's name to its key=value overrides")
    out = []
    for name, overrides in points.items():
        items = overrides or []
        if not isinstance(items, list) or not all(isinstance(o, str) and "=" in o for o in items):
            raise ConfigError(f"{path}: point {name!r}: expected a list of key=value overrides")
        bad = [o for o in items if o.split("=", 1)[0].strip() in ("seed", "method.name", "name", "out_dir")]
        if bad:
            raise ConfigError(f"{path}: point {name!r}: {bad[0]!r} is set by the grid, not by a point")
        out.append(RegimePoint(str(name), tuple(items)))
    return out


def plan_points(methods: list[str], points: list[RegimePoint], seeds: list[int]) -> list[Point]:
    """Every method at every point and seed (the point's name is the variant)."""
    check_methods(methods)
    names = [p.name for p in points]
    if len(set(names)) != len(names):
        raise ConfigError("--points: a point name is given twice")
    return [Point(m, s, p.overrides, p.name) for p in points for m in methods for s in seeds]


# The map measured in docs/synthetic.md (its section "The regime map"): one factor at a time
# around qkvo-300 (LoRA on q,k,v,o at r=16, 300 steps over N=30: the paper's 40 epochs), and the
# default preset. The map's base factor (a base pretrained on the option-list corpus,
# ``tsr pretrain-base options_share=0.5``) needs that base's folder, so it is a points file's
# point (docs/synthetic.md shows the file), not a default one.
DEFAULT_POINTS = (
    RegimePoint("qkvo-300", (QKVO, "train.steps=300")),
    RegimePoint("qkvo-1000-lr1e-4", (QKVO, "train.steps=1000", "train.lr=1e-4")),
    RegimePoint("qkvo-300-r4", (QKVO, "train.steps=300", "lora.r=4", "lora.alpha=8")),
    RegimePoint("qkvo-100", (QKVO, "train.steps=100")),
    RegimePoint("qkvo-300-lr3e-4-N100", (QKVO, "train.steps=300", "train.lr=3e-4", "stream.budget=100")),
    RegimePoint("default", ()),
)
