"""Loading a script of bench/ or studies/ as a module, for the tests of its functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parents[1]


def load_script(folder: str, name: str):
    """<folder>/<name>.py of the repository as a module (bench/ and studies/ are no packages)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
