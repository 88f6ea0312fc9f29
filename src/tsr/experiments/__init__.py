"""Experiments layer: the paper's audits that train, one folder each (plan, run, report), on
the engine's runs and probe arms; :mod:`tsr.analysis` reads what they leave and draws it."""

SEEDS = (0,)  # an audit's seeds when none are given: one, a quick look (the paper's audits use five)
