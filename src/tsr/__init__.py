"""tsr: continual fine-tuning of language models with Transfer-Selective Replay.

The package is layered (data -> model -> continual-learning maths -> methods -> engine ->
evaluation and analysis -> cli); see docs/architecture.md.
"""

__version__ = "0.1.0"
