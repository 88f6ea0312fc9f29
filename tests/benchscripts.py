"""Loading a script of bench/ as a module, for the tests of its functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).parents[1] / "bench"


def load_bench(name: str):
    """bench/<name>.py as a module (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
