"""Engine layer: the stream loop, running a config, the run directory, evaluation, results
and metrics, and grids of runs."""
