"""The package's layers: every import inside ``tsr`` points down (or stays in its layer), and the
package root holds only the interface, the config and the foundation (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tsr"

# bottom to top; a module may import its own layer and the layers before it
LAYERS = ["foundation", "data", "runs", "model", "cl", "methods", "config", "engine", "analysis", "experiments",
          "interface"]
# analysis reads run folders and draws: it reaches nothing that trains (run folders are read through
# the runs layer)
TRAINS = ("tsr.engine.loop", "tsr.engine.pool", "tsr.engine.ray_pool", "tsr.engine.grid", "tsr.engine.run",
          "tsr.methods", "tsr.model")
ROOT_MODULES = {"errors": "foundation", "rng": "foundation", "atomic": "foundation", "schema": "foundation",
                "extensions": "foundation", "version": "foundation",
                "config": "config", "__main__": "interface", "api": "interface", "__init__": "interface"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    assert parts[0] == "tsr", module
    if len(parts) == 1:
        return "interface"  # the package itself: the public API (its version is tsr.version)
    if parts[1] in ROOT_MODULES:
        return ROOT_MODULES[parts[1]]
    assert parts[1] in LAYERS, f"tsr.{parts[1]} is in no layer"
    return parts[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import of a ``tsr`` module in the file, lazy ones too."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    return imports_in(path.read_text(encoding="utf-8"), package)


def imports_in(source: str, package: str) -> list[tuple[int, str]]:
    """The ``tsr`` imports of ``source``, a module of ``package``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "tsr":
                continue
            # "from tsr.x import y" may import the module tsr.x.y
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if _is_module(sub) else target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "tsr"]
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_import_points_upward(path):
    here = layer_of(module_name(path))
    upward = [(line, target) for line, target in imports_of(path)
              if LAYERS.index(layer_of(target)) > LAYERS.index(here)]
    assert not upward, f"{module_name(path)} ({here}) imports upward: " + ", ".join(
        f"line {line}: {target} ({layer_of(target)})" for line, target in upward)


@pytest.mark.parametrize("path", sorted((PACKAGE / "analysis").rglob("*.py")), ids=lambda p: module_name(p))
def test_analysis_imports_nothing_that_trains(path):
    training = [(line, target) for line, target in imports_of(path)
                if any(target == t or target.startswith(t + ".") for t in TRAINS)]
    assert not training, f"{module_name(path)} imports what trains: " + ", ".join(
        f"line {line}: {target}" for line, target in training)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (lazy imports too); a package's __init__ counts
    as the package."""
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        graph[module_name(path)] = {t for _, t in imports_of(path) if _is_module(t)} - {module_name(path)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_closes_a_circle():
    found = circles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_circle_finder_sees_a_circle():
    """Negative control: a -> b -> c -> a is one circle, d -> a none."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_root_holds_only_the_interface_config_and_foundation():
    root = {p.stem for p in PACKAGE.glob("*.py")}
    assert root <= set(ROOT_MODULES), f"modules at the package root: {sorted(root - set(ROOT_MODULES))}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert folders <= set(LAYERS) - {"foundation"}  # config: a module or a folder
    assert set(LAYERS) - {"foundation", "config"} <= folders


def test_the_walker_sees_an_upward_import():
    """Negative control: a model module importing the engine, lazily inside a function, is
    reported as upward."""
    found = imports_in("def f():\n    from ..engine.loop import train_on\n", "tsr.model")
    assert found == [(2, "tsr.engine.loop")]
    assert LAYERS.index(layer_of(found[0][1])) > LAYERS.index("model")


def test_the_public_api_names_only_modules_of_the_package():
    """``tsr/__init__.py`` imports its names lazily, by module name: each must be a module of
    the package that defines the name (the walker above cannot see these imports)."""
    import importlib

    import tsr

    for name, module in tsr._EXPORTS.items():
        assert _is_module(module), module
        assert hasattr(importlib.import_module(module), name), f"{module} defines no {name}"


# what analysis may reach, directly or through what it imports: run folders, examples and the foundation
ANALYSIS_REACHES = ("analysis", "runs", "data", "foundation")


def closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(graph.get(v, ()))
    return seen


@pytest.mark.parametrize("path", sorted((PACKAGE / "analysis").rglob("*.py")), ids=lambda p: module_name(p))
def test_what_analysis_reaches_through_its_imports_trains_nothing(path):
    """The transitive closure of each analysis module's imports (lazy ones too) stays in the
    layers that read runs: a reader that imports a reader that imports the trainer is caught."""
    graph = import_graph()
    # a package's __init__ runs before any of its modules: it is reached too
    reached = closure(graph, module_name(path))
    reached |= {".".join(m.split(".")[:i]) for m in reached for i in range(2, len(m.split(".")))}
    outside = sorted(m for m in reached if layer_of(m) not in ANALYSIS_REACHES)
    assert not outside, f"{module_name(path)} reaches {outside}"


def test_the_closure_sees_a_reader_that_reaches_the_trainer():
    """Negative control: analysis -> runs -> engine is caught through the middle module."""
    graph = {"tsr.analysis.a": {"tsr.runs.b"}, "tsr.runs.b": {"tsr.engine.loop"}}
    reached = closure(graph, "tsr.analysis.a")
    assert [m for m in sorted(reached) if layer_of(m) not in ANALYSIS_REACHES] == ["tsr.engine.loop"]


def test_a_fresh_interpreter_reads_tables_without_torch_or_a_method():
    import subprocess
    import sys

    code = ("import sys, tsr.analysis.table, tsr.analysis.report, tsr.runs.store; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith(('tsr.methods', 'tsr.model', "
            "'tsr.config', 'tsr.engine'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
