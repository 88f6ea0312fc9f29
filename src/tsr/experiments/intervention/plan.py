"""The local intervention's protocol constants (the reference paper's Appendix "Local
intervention"): how many repetitions, at which step scales, ranked by which signature. The
measurement is :mod:`tsr.experiments.intervention.run`, the statistics
:mod:`tsr.experiments.intervention.report`."""

from __future__ import annotations

from ...methods.tsr import TSRParams

REPS = 30  # repetitions (independent batches) per target and seed, the paper's
SCALES = (0.25, 0.5, 1.0)  # multiples of the measured one-step displacement, the paper's
SIGNATURE = TSRParams().probe  # the stored signature ranked against the measured changes: the one TSR routes on
