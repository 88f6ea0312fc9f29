"""`tsr signatures`: take every task's signature once and save it, for TSR to route on later
(``method.signatures=FILE``), on this model or, as a proxy, on another one (docs/signatures.md);
built by the audits' driver from :data:`tsr.experiments.signatures.audit.AUDIT`."""

from __future__ import annotations

from ...experiments.signatures.audit import AUDIT
from ..driver import add_audit


def add_parser(sub) -> None:
    add_audit(sub, AUDIT)
