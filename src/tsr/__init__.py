"""tsr: continual fine-tuning of language models with Transfer-Selective Replay.

The public API is the names in ``__all__`` (docs/api.md): run a config (:func:`run`,
:func:`compare`, :func:`probe`), read what it saved (:func:`load_results`, :func:`metrics`),
export its adapter (:func:`export`), build streams from Python objects (:class:`Example`,
:class:`Task`, :class:`Stream`, :func:`from_hf`), and add methods and benchmarks without
editing the package (:class:`Method`, :func:`register_method`, :func:`register_benchmark`).

Each name is imported when first used, so ``import tsr`` loads nothing heavy (no torch) and
has no side effects. The package is layered (data -> model -> continual-learning maths ->
methods -> engine -> analysis -> interface); see docs/architecture.md.
"""

from .version import __version__

# public name -> the module that defines it (imported on first use)
_EXPORTS = {
    # configs and running them
    "RunConfig": "tsr.config",
    "load_config": "tsr.config",
    "run": "tsr.api",
    "Outcome": "tsr.engine.run",
    "compare": "tsr.api",
    "probe": "tsr.api",
    "export": "tsr.api",
    # what a run saved
    "Results": "tsr.runs.results",
    "load_results": "tsr.runs.results",
    "metrics": "tsr.api",
    # data
    "Example": "tsr.data.example",
    "Task": "tsr.data.example",
    "TaskKind": "tsr.data.example",
    "Stream": "tsr.data.example",
    "load_stream": "tsr.data.streams",
    "from_hf": "tsr.data.hf",
    # extending tsr
    "Method": "tsr.methods.base",
    "TaskContext": "tsr.methods.context",
    "Draw": "tsr.methods.context",
    "register_method": "tsr.methods.registry",
    "register_benchmark": "tsr.data.streams",
    # errors
    "TsrError": "tsr.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tsr' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
