"""The layer rule of design.md, enforced: every ``byocc`` import edge must be in the table.

Each module under ``byocc/`` belongs to the layer named by its first package
(``byocc/text/parser.py`` -> ``text``); ``byocc/__main__.py`` and ``byocc/cli_*.py`` are
part of ``cli``. Imports are
read with ``ast`` (``import``, ``from ... import``, relative imports, and literal
``importlib.import_module("byocc....")`` calls). The one documented exception: a function
body in ``byocc/ir`` may import ``byocc.text.printer`` (so ``str(node)`` prints).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "byocc"

# design.md, "Layers": package -> the layers it may import (its own is always allowed).
ALLOWED: dict[str, frozenset[str]] = {
    "ir": frozenset(),
    "ops": frozenset({"ir"}),
    "text": frozenset({"ir", "ops"}),
    "dpl": frozenset({"ir", "ops"}),
    "transform": frozenset({"ir", "ops", "dpl"}),
    "backends": frozenset({"ir", "ops", "dpl", "transform"}),
    "frontend": frozenset({"ir", "ops"}),
    "runtime": frozenset({"ir", "ops", "backends"}),
    "cli": frozenset({"ir", "ops", "text", "dpl", "transform", "backends", "frontend", "runtime"}),
    # the Python API facades (byocc.relax, byocc.script): top layers with the CLI's rights
    "relax": frozenset({"ir", "ops", "text", "dpl", "transform", "backends", "frontend", "runtime"}),
    "script": frozenset({"ir", "ops", "text", "dpl", "transform", "backends", "frontend", "runtime"}),
}
LAYERS = frozenset(ALLOWED)
EXCEPTION_TARGET = "byocc.text.printer"  # importable from a function body in byocc/ir


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    """The layer of a ``byocc`` module; ``"root"`` for the package itself."""
    parts = module.split(".")
    if parts[0] != "byocc":
        return None
    if len(parts) == 1:
        return "root"
    if parts[1] == "__main__" or parts[1].startswith("cli_"):  # byocc/cli_*.py: CLI helpers
        return "cli"
    return parts[1]


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(source: str, module: str, is_package: bool) -> list[tuple[str, int, bool]]:
    """``(imported module, line, inside a function body)`` for every byocc import."""
    tree = ast.parse(source)
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                target = child.module
                if child.level:
                    target = _resolve_relative(module, is_package, child.level, child.module)
                if target:
                    found.append((target, child.lineno, in_function))
                    if target == "byocc":  # `from byocc import text` imports the layer text
                        found.extend((f"byocc.{a.name}", child.lineno, in_function)
                                     for a in child.names if a.name in LAYERS)
            elif isinstance(child, ast.Call) and _is_import_module(child.func):
                arg = child.args[0] if child.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append((arg.value, child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return [(name, line, inner) for name, line, inner in found if name.split(".")[0] == "byocc"]


def _is_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module")


def violations_in(source: str, module: str, is_package: bool = False) -> list[str]:
    """Every import edge of ``module`` that design.md's table lacks, as readable lines."""
    own = layer_of(module)
    if own not in LAYERS and own != "root":
        return [f"{module}: not in any layer of design.md's table"]
    bad = []
    for target, line, in_function in imports_of(source, module, is_package):
        dest = layer_of(target)
        if dest in (own, "root"):
            continue
        if own == "root":
            bad.append(f"{module}:{line}: the package root imports {target}")
            continue
        if dest == "cli":
            bad.append(f"{module}:{line}: imports {target}, but nothing may import cli")
            continue
        if dest not in ALLOWED[own]:
            if own == "ir" and in_function and target == EXCEPTION_TARGET:
                continue
            bad.append(f"{module}:{line}: layer {own} imports {target} (layer {dest})")
    return bad


def all_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_byocc_import_follows_the_layer_table():
    problems: list[str] = []
    for path in all_modules():
        name = module_name(path)
        problems += violations_in(path.read_text(encoding="utf-8"), name, path.name == "__init__.py")
    assert problems == [], "layer violations:\n" + "\n".join(problems)


def test_the_walk_sees_the_layers():
    layers = {layer_of(module_name(p)) for p in all_modules()}
    assert {"root", "ir", "cli"} <= layers


@pytest.mark.parametrize(("module", "source", "expected"), [
    ("byocc.ops.nn", "from byocc.transform import x\n", "layer ops imports byocc.transform"),
    ("byocc.ops.nn", "from ..text import parse_module\n", "layer ops imports byocc.text"),
    ("byocc.text.parser", "import byocc.dpl.pattern\n", "layer text imports byocc.dpl.pattern"),
    ("byocc.backends.cutlass.codegen", "from ...runtime import build\n", "imports byocc.runtime"),
    ("byocc.transform.fuse", "from byocc import backends\n", "imports byocc.backends"),
    ("byocc.runtime.loader", "def f():\n    from byocc.cli import main\n", "nothing may import cli"),
    ("byocc.ir.expr", "from byocc.text.printer import print_expr\n", "layer ir imports byocc.text"),
    ("byocc.ir.expr", "def f():\n    from byocc.text import parse_module\n", "layer ir imports"),
    ("byocc.dpl.x", "import importlib\nimportlib.import_module('byocc.transform.y')\n", "layer dpl"),
    ("byocc.widgets", "", "not in any layer"),
    ("byocc.ops.nn", "from byocc.cli_runtime import run\n", "nothing may import cli"),
])
def test_checker_flags_forbidden_edges(module, source, expected):
    problems = violations_in(source, module)
    assert len(problems) == 1 and expected in problems[0], problems


@pytest.mark.parametrize(("module", "source"), [
    ("byocc.ir.expr", "def __str__(self):\n    from byocc.text.printer import print_expr\n"),
    ("byocc.ir.module", "class M:\n    def script(self):\n        from byocc.text.printer import x\n"),
    ("byocc.transform.fuse", "from byocc.dpl import is_op\nfrom ..ir import Call\n"),
    ("byocc.cli.partition", "def f():\n    from byocc.backends import get_patterns_with_prefix\n"),
    ("byocc.runtime.build", "from byocc.backends.cutlass import codegen\n"),
    ("byocc.frontend.onnx", "from byocc import __version__\nimport numpy\n"),
])
def test_checker_accepts_allowed_edges(module, source):
    assert violations_in(source, module) == []
