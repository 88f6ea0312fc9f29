"""The interface's layout: one module per command in commands/, one per audit in audits/, each
registered with the top-level parser; no module over 400 lines, no function over 80."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tsr.interface import audits, cli

INTERFACE = Path(__file__).resolve().parents[2] / "src" / "tsr" / "interface"
MODULES = sorted(INTERFACE.rglob("*.py"))
MAX_MODULE, MAX_FUNCTION = 400, 80


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(INTERFACE)))
def test_modules_and_functions_are_small(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION]
    assert not long, f"functions over {MAX_FUNCTION} lines: {', '.join(long)}"


def _registered(modules, folder: str) -> set[str]:
    return {m.__name__.rsplit(".", 1)[1] for m in modules if m.__name__.startswith(f"tsr.interface.{folder}.")}


def test_every_command_module_is_registered_and_adds_its_parser():
    modules = {p.stem for p in (INTERFACE / "commands").glob("*.py")} - {"__init__"}
    assert _registered(cli.COMMANDS, "commands") == modules
    assert audits in cli.COMMANDS
    for name in modules:
        assert callable(importlib.import_module(f"tsr.interface.commands.{name}").add_parser)


def test_every_audit_module_is_registered():
    modules = {p.stem for p in (INTERFACE / "audits").glob("*.py")} - {"__init__", "common"}
    assert _registered(audits.AUDITS, "audits") == modules
