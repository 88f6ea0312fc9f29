"""`tsr probe`: the headroom audit and the pairwise transfer matrix (the paper's probe protocol),
with the signature audit and the arm table of its folder (docs/calibration.md, docs/audits.md);
built by the audits' driver from :data:`tsr.experiments.probe.audit.AUDIT`."""

from __future__ import annotations

from ...experiments.probe.audit import AUDIT
from ..driver import add_audit


def add_parser(sub) -> None:
    add_audit(sub, AUDIT)
