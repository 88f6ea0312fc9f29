"""Whose answers a run gives after each task (``tsr audit answers``): trains nothing (:mod:`tsr.analysis.answers`)."""
