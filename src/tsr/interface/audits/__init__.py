"""`tsr audit NAME`: the paper's audits as commands, each built by the one driver
(:mod:`tsr.interface.driver`) from its audit object in :mod:`tsr.experiments` (its params
dataclass, plan, run and report). A new audit is a folder there whose ``audit.py`` holds
``Params`` and ``AUDIT``, listed in :data:`AUDITS`."""

from __future__ import annotations

from ...experiments.answers import audit as answers
from ...experiments.arms import audit as arms
from ...experiments.budget import audit as budget
from ...experiments.carriers import audit as carriers
from ...experiments.intervention import audit as intervention
from ...experiments.kd import audit as kd
from ...experiments.orders import audit as orders
from ...experiments.regime import audit as regime
from ...experiments.scale import audit as scale
from ..args import add
from ..driver import add_audit

EXAMPLES = """examples:
  tsr audit budget seeds=0,1,2,3,4 --workers 2          # S_t(N) for N = 10..500, headroom vs N_max = 500
  tsr audit arms runs/probe-synth-trace-1a2b3c4d5e      # the arm table of a probe folder
  tsr audit kd teachers=era,random,oracle,recent,base,none seeds=0,1,2,3,4   # teacher-identity ablation
  tsr audit orders methods=er,tsr shuffles=2 greedy=runs/probe-synth-trace-1a2b3c4d5e seeds=0,1,2
  tsr audit intervention targets=stance,irony,arith-ds  # the paper's local intervention
  tsr audit carriers from_probe=runs/probe-synth-trace-1a2b3c4d5e top=5 seeds=0,1,2  # init / anchor / mixing
  tsr audit scale models=models/qwen-0.5b,models/qwen-7b arms=target,full,mixed signatures=gradb
  tsr audit regime seeds=0,1,2                          # how much the world forgets at each point of a map
  tsr audit answers runs/diag/synth-trace-seqft-s0-1a2b3c4d5e   # whose answers a run gives after each task
Each audit writes JSON, markdown and a figure into its folder; `tsr audit NAME --help` lists its
params (key=value; the older --flag spellings still work, for one release)."""

# in the order `tsr audit --help` lists them
AUDITS = (budget, intervention, carriers, scale, arms, answers, kd, regime, orders)


def add_parser(sub) -> None:
    """``tsr audit`` and its audits, on the top-level subparsers ``sub``."""
    p = add(sub, "audit", "The paper's audits as commands: budget sweep (with label efficiency), arm table, "
            "local intervention, carriers, distillation teachers, task orders, scale, the regime map, whose answers.",
            None, EXAMPLES)
    audits = p.add_subparsers(dest="audit", required=True, metavar="NAME")
    for module in AUDITS:
        add_audit(audits, module.AUDIT)
