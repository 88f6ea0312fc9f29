"""How TSR weighs its past tasks beyond the signature similarity: the need-aware routing."""
