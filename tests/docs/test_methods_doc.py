"""docs/methods.md quotes each baseline's docstring and defaults exactly (the docstring is the source)."""

import importlib
from pathlib import Path

import pytest

from tsr.methods.registry import METHODS
from tsr.schema import to_plain

DOC = Path(__file__).resolve().parents[2] / "docs" / "methods.md"
BASELINES = ["ewc", "lwf", "sdft", "agem", "derpp", "param_init", "l2_anchor"]


def section(name: str) -> str:
    cls = METHODS[name]
    mod = importlib.import_module(cls.__module__)
    defaults = to_plain(cls.Params())
    listed = ", ".join(f"`method.{k}={'null' if v is None else v}`" for k, v in defaults.items())
    return f"## `{name}`\n\n{mod.__doc__.strip()}\n\nConfig keys and defaults: {listed}.\n"


def source_section() -> str:
    from tsr.methods import carrier_source as source

    return f"## Source choice (`param_init`, `l2_anchor`)\n\n{source.__doc__.strip()}\n"


@pytest.mark.parametrize("name", BASELINES)
def test_docs_quote_the_docstring_and_defaults(name):
    assert section(name) in DOC.read_text(encoding="utf-8"), f"regenerate the {name} section of {DOC}"


def test_docs_quote_the_source_choice():
    assert source_section() in DOC.read_text(encoding="utf-8")
