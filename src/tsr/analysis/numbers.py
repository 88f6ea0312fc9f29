"""How a number prints in every report table: three decimals, a sign where the number is a
difference, one placeholder where there is no number, and never ``-0.000``."""

from __future__ import annotations

import math

MISSING = "-"


def number(x: float | None, signed: bool = False, digits: int = 3) -> str:
    """``x`` to ``digits`` decimals (``+`` / ``-`` in front when ``signed``); a value that rounds
    to zero prints as zero (``+0.000``, not ``-0.000``: the sign of a rounded-away difference
    says nothing); ``None`` and NaN print as :data:`MISSING`."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    if round(x, digits) == 0:
        x = 0.0
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
