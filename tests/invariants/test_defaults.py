"""One source for every default: a hyperparameter's default value is written once.

Every default declared in the package (a config or method dataclass field, a function's keyword
default, a module constant, a command-line flag's default) is collected by name and value; the
same (name, value) declared in two places fails, so a default cannot drift from its copies.
Names are compared without the prefixes that only say whose it is (``kd_temperature`` and
``temperature``, ``DEFAULT_MU`` and ``mu``). Values 0, 1, -1, booleans, None and strings are
not hyperparameter literals; lists of three or more names are (the LoRA targets). Left out:
the toy model builders (model/tiny.py, model/presets.py: architecture facts, not settings),
the analysis layer's display precision, and the pairs in ALLOWED, each with its reason.
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tsr"
SKIP = {"model/tiny.py", "model/presets.py"}
SKIP_DIRS = {"analysis"}
SKIP_NAMES = {"digits"}
ALLOWED = {("weight_decay", 0.01): "the bundled base's pretraining recipe and a run's AdamW: two settings that "
                                   "share torch's default"}
TRIVIAL = {0, 1, -1}


def _norm(name: str) -> str:
    n = name.lower().lstrip("-").replace("-", "_")
    for prefix in ("default_", "kd_", "max_", "min_"):
        n = n.removeprefix(prefix)
    return n


def _literal(node: ast.AST):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return None if node.value in TRIVIAL else node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return _literal(ast.Constant(-node.operand.value))
    if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) >= 3 and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
            "setting", "field", "infinite") and node.args:
        return _literal(node.args[0])
    return None


def declared_defaults(source: str) -> list[tuple[str, object, int]]:
    """(name, value, line) of every default declared in ``source``."""
    out = []

    def add(name: str, value_node: ast.AST, line: int) -> None:
        value = _literal(value_node)
        if value is not None and _norm(name) not in SKIP_NAMES:
            out.append((_norm(name), value, line))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            add(node.target.id, node.value, node.lineno)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            add(node.targets[0].id, node.value, node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            positional = node.args.posonlyargs + node.args.args
            for arg, default in zip(positional[len(positional) - len(node.args.defaults):], node.args.defaults):
                add(arg.arg, default, node.lineno)
            for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults):
                if default is not None:
                    add(arg.arg, default, node.lineno)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            flag = next((a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)), "")
            for kw in node.keywords:
                if kw.arg == "default":
                    add(flag, kw.value, node.lineno)
    return out


def test_no_default_is_written_twice():
    seen: dict[tuple, list[str]] = collections.defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in SKIP or rel.split("/")[0] in SKIP_DIRS:
            continue
        for name, value, line in declared_defaults(path.read_text(encoding="utf-8")):
            seen[(name, value)].append(f"{rel}:{line}")
    twice = {k: v for k, v in seen.items() if len(v) > 1 and k not in ALLOWED}
    assert not twice, "defaults written more than once: " + "; ".join(f"{k[0]}={k[1]!r} at {', '.join(v)}"
                                                                       for k, v in twice.items())


def test_the_scan_sees_a_copied_default():
    """Negative control: the KD temperature written in a method and again in a loss is caught."""
    found = declared_defaults("class P:\n    kd_temperature: float = 2.0\n\ndef kl(x, temperature=2.0):\n    pass\n")
    assert [(n, v) for n, v, _ in found] == [("temperature", 2.0), ("temperature", 2.0)]
