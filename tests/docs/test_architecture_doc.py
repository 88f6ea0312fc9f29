"""docs/architecture.md's module table names every module of the package, and no module that is gone."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_module_table_lists_every_module():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("## Modules", 1)[1]
    listed = set(re.findall(r"^\| `([\w/]+\.py)` \|", text, re.M))
    package = ROOT / "src" / "tsr"
    modules = {str(f.relative_to(package)) for f in package.rglob("*.py")
               if f.name != "__init__.py" or f.parent == package}   # sub-package __init__ files hold no code of their own
    assert sorted(modules - listed) == [], "modules missing from docs/architecture.md's table"
    assert sorted(listed - modules) == [], "docs/architecture.md lists modules that do not exist"
