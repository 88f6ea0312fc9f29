"""Every repository path a page links to, or names as a module in backticks, exists: a module
that moves takes its mentions in the docs with it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
LINK = re.compile(r"\]\((\.\./|\./)?((?:src|bench|stress|studies|tests|docs)/[^)#\s]+)")
# a module of this package named by its path under src/tsr (lower case: `model/Regular/EWC.py` is
# another project's file, cited)
MODULE = re.compile(r"`((?:analysis|cl|config|data|engine|experiments|interface|methods|model)/[a-z0-9_/]+\.py)`")


def _paths(page: Path):
    text = page.read_text(encoding="utf-8")
    for match in LINK.finditer(text):
        relative, path = match.group(1), match.group(2)
        yield match.group(0), page.parent / relative / path if relative else ROOT / path
    for match in MODULE.finditer(text):
        yield match.group(0), ROOT / "src" / "tsr" / match.group(1)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_linked_or_named_path_exists(page):
    missing = [mention for mention, path in _paths(page) if not path.resolve().exists()]
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"
