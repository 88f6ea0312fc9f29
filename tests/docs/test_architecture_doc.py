"""docs/architecture.md's module table is generated from the package: one row per module, its
docstring's first paragraph in short. Regenerate it with ``python tests/docs/test_architecture_doc.py``
after adding, moving or re-describing a module."""

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "src" / "tsr"
# the table reads from the entry point down: the root, then each layer folder, top layer first
GROUPS = ("", "interface", "experiments", "analysis", "engine", "config", "methods", "cl", "model", "runs", "data")
WIDTH = 170
BLOCK = re.compile(r"(<!-- modules -->\n)(.*?)(<!-- /modules -->)", re.S)


def summary(source: str) -> str:
    """A module's docstring's first paragraph on one line, cut at a word near WIDTH characters."""
    doc = ast.get_docstring(ast.parse(source)) or ""
    text = " ".join(doc.split("\n\n", 1)[0].split()).replace("|", "\\|")
    return text if len(text) <= WIDTH else text[:WIDTH].rsplit(" ", 1)[0] + " …"


def modules(paths=None) -> list[str]:
    """Every module of the package (a sub-package's ``__init__`` holds no code of its own), in
    the table's order; ``paths``: module paths under the package instead of the files here."""
    found = [str(f.relative_to(PACKAGE)) for f in PACKAGE.rglob("*.py")] if paths is None else list(paths)
    found = [m for m in found if not m.endswith("__init__.py") or "/" not in m]
    group = {g: i for i, g in enumerate(GROUPS)}
    return sorted(found, key=lambda m: (group.get(m.split("/")[0] if "/" in m else "", len(GROUPS)), m))


def module_table(read=lambda m: (PACKAGE / m).read_text(encoding="utf-8"), paths=None) -> str:
    rows = [f"| `{m}` | {summary(read(m))} |" for m in modules(paths)]
    return "\n".join(["| module | what it is |", "|---|---|", *rows]) + "\n"


def test_module_table_is_generated_from_the_package():
    text = DOC.read_text(encoding="utf-8")
    block = BLOCK.search(text)
    assert block, "docs/architecture.md has no <!-- modules --> block"
    assert block.group(2) == module_table(), \
        "docs/architecture.md's module table is stale: regenerate it with `python tests/docs/test_architecture_doc.py`"


def drawn_layers(text: str) -> list[str]:
    """The layer folders of the drawing under "The house in one screen", top to bottom, and the
    foundation (its last line)."""
    house = text.split("## The house in one screen", 1)[1].split("```", 2)[1]
    folders = re.findall(r"^  ([a-z]+)/ ", house, re.M)
    return folders + (["foundation"] if re.search(r"^  errors .* the foundation", house, re.M) else [])


def enforced_layers() -> list[str]:
    """``LAYERS`` of tests/invariants/test_layers.py (bottom to top), read without importing it."""
    tree = ast.parse((ROOT / "tests" / "invariants" / "test_layers.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LAYERS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("tests/invariants/test_layers.py defines no LAYERS")


def test_the_drawing_is_the_layer_order_the_layer_test_enforces():
    drawn = drawn_layers(DOC.read_text(encoding="utf-8"))
    assert drawn == enforced_layers()[::-1], \
        f"docs/architecture.md draws the layers {drawn}; tests/invariants/test_layers.py enforces {enforced_layers()[::-1]}"


def test_a_drawing_out_of_order_is_caught():
    text = "## The house in one screen\n```\n  engine/ x\n  data/ y\n  errors rng  the foundation\n```\n"
    assert drawn_layers(text) == ["engine", "data", "foundation"] != enforced_layers()[::-1]


def test_every_module_has_a_docstring():
    assert [m for m in modules() if not summary((PACKAGE / m).read_text(encoding="utf-8"))] == []


if __name__ == "__main__":
    text = DOC.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        sys.exit(f"{DOC}: no <!-- modules --> block")
    DOC.write_text(BLOCK.sub(lambda m: m.group(1) + module_table() + m.group(3), text), encoding="utf-8")
