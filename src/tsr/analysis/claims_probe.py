"""A claims cell read from a probe ledger: C4's designed-relation checks on the arms archived
by ``tsr archive`` (docs/rundir.md), with the rule of :mod:`tsr.analysis.verdicts`.

Only complete seeds count: a seed whose every target has its target-only arm and a mixed arm
from every other task of the stream. A probe still running has a matrix with holes, and checks
over holes would read as checks over the whole stream; with no complete seed there is no cell
(the page then gives the reason of claims.yaml's ``unmeasured`` list). Each arm names the
machine it ran on (arms made before arms recorded it: "machine not recorded").
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..data.synth.spec import relation_table
from ..data.synth.streams import resolve_spec
from ..runs.archive import ARMS, read_probes
from .machines import recorded_name
from .transfer import check_relations, count_checks, transfer_matrix
from .verdicts import count_verdict

def probe_arms(file: Path, folder: str) -> tuple[dict, list[dict]]:
    """The config and the arms of the probe folder ``folder`` in the ledger ``file``."""
    for rec in read_probes(file):
        if rec["path"] == folder:
            files = rec["probe"]
            arms = [json.loads(text) for name, text in sorted(files.items()) if name.startswith(f"{ARMS}/")]
            return yaml.safe_load(files["config.yaml"]) or {}, arms
    raise ValueError(f"{file}: no probe folder {folder!r}")


def complete_seeds(arms: list[dict], tasks: list[str]) -> list[int]:
    """The seeds with a target arm and a mixed arm from every other task, for every task."""
    have = {(a["seed"], a["target"], a["arm"], a.get("source")) for a in arms}
    need = [(t, "target", None) for t in tasks] + [(t, "mixed", s) for t in tasks for s in tasks if s != t]
    return sorted(seed for seed in {a["seed"] for a in arms} if all((seed, *k) in have for k in need))


def relations_reading(config: dict, arms: list[dict]) -> tuple[int, int, list[int], str] | None:
    """(checks passed, checks, complete seeds, machines) of the designed relations over the
    complete seeds' arms; None without a complete seed."""
    stream = config.get("stream") or {}
    relations = relation_table(resolve_spec(str(stream.get("source")), stream.get("options") or {}))
    seeds = complete_seeds(arms, sorted(relations))
    if not seeds:
        return None
    used = [a for a in arms if a["seed"] in seeds and a["arm"] in ("target", "mixed")]
    kinds = {a["target"]: a["kind"] for a in used}
    passed, total = count_checks(check_relations(transfer_matrix(used), kinds, relations))
    machines = sorted({recorded_name(a.get("machine")) for a in used})
    return passed, total, seeds, " + ".join(machines)


def probe_cell_parts(spec: dict, root: Path, criterion: str) -> tuple[str, str, str, int] | None:
    """(measured "passed/total (n)", verdict, machines, margin in checks) of a ``probe:`` spec."""
    config, arms = probe_arms(root / spec["probe"], spec["folder"])
    got = relations_reading(config, arms)
    if got is None:
        return None
    passed, total, seeds, machines = got
    needed = int(criterion.split()[1])  # "≥ 9 of 10"
    v = count_verdict(passed, total, needed, len(seeds))
    return f"{passed}/{total} ({len(seeds)})", v, machines, passed - needed
