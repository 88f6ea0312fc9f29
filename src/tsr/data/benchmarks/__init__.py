"""Named benchmarks: one module per benchmark read from disk or the hub (the synthetic ones
live in :mod:`tsr.data.synth`)."""
