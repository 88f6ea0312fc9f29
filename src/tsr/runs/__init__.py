"""Runs layer: the run folder's format as data, read and written without the trainer.

A run's results and the metrics recomputed from them, its generation metrics, the results store
(the SQLite index of an output folder), archives of finished runs, folder locks and link checks,
and where a task's saved progress stands. Nothing here imports torch, a method, a model or the
config: :mod:`tsr.analysis` reads runs through this layer alone.
"""
