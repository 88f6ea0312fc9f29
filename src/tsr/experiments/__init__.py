"""Experiments layer: the paper's audits that train, one folder each (plan, run, report), on
the engine's runs and probe arms; :mod:`tsr.analysis` reads what they leave and draws it."""
