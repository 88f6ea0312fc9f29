"""The arm table of a probe folder (``tsr audit arms``): trains nothing (:mod:`tsr.analysis.arms`)."""
