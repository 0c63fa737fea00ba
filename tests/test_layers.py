"""The layer rule of design.md, enforced: every ``byocc`` import edge must be in the table.

Each module under ``byocc/`` belongs to the layer named by the first name after ``byocc``
(``byocc/text/parser.py`` -> ``text``, ``byocc/__main__.py`` -> ``__main__``), with no
exception: a module beside the packages is a layer of its own and fails unless the table
has it. Imports are read with ``ast`` (``import``, ``from ... import``, relative imports,
and literal ``importlib.import_module("byocc....")`` calls). The one exception design.md
documents: a function body in ``byocc/ir`` may import ``byocc.text.printer`` (so
``str(node)`` prints).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "byocc"

# design.md, "Layers": package -> the layers it may import (its own is always allowed).
_LIBRARY = frozenset({"ir", "ops", "text", "dpl", "transform", "backends", "frontend", "runtime"})
ALLOWED: dict[str, frozenset[str]] = {
    "ir": frozenset(),
    "ops": frozenset({"ir"}),
    "text": frozenset({"ir", "ops"}),
    "dpl": frozenset({"ir", "ops"}),
    "transform": frozenset({"ir", "ops", "dpl"}),
    "backends": frozenset({"ir", "ops", "dpl", "transform"}),
    "frontend": frozenset({"ir", "ops"}),
    "runtime": frozenset({"ir", "ops", "backends"}),
    # the TVM Python-API facade: "all but cli"
    "relax": _LIBRARY | {"script"},
    "script": _LIBRARY | {"relax"},
    "contrib": _LIBRARY | {"relax", "script"},  # ``tvm.contrib``'s names, part of the facade
    "cli": _LIBRARY | {"relax", "script"},  # "all"
    # `python -m byocc`: the CLI's entry point, run and never imported
    "__main__": frozenset({"cli"}),
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
        if dest not in ALLOWED[own]:
            if own == "ir" and in_function and target == EXCEPTION_TARGET:
                continue
            bad.append(f"{module}:{line}: layer {own} imports {target} (layer {dest})"
                       + (", but nothing imports cli" if dest == "cli" else ""))
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
    assert layers == LAYERS | {"root"}  # every layer of the table has modules, and no others


def test_nothing_imports_cli():
    """design.md: nothing imports cli (the table grants it to no layer but the entry point),
    and nothing imports the entry point."""
    assert [layer for layer, allowed in ALLOWED.items() if "cli" in allowed] == ["__main__"]
    assert not any("__main__" in allowed for allowed in ALLOWED.values())
    importers = [f"{module_name(p)}:{line}" for p in all_modules()
                 for target, line, _ in imports_of(p.read_text(encoding="utf-8"), module_name(p),
                                                   p.name == "__init__.py")
                 if layer_of(target) in ("cli", "__main__") and layer_of(module_name(p)) not in ("cli", "__main__")]
    assert importers == [], importers


@pytest.mark.parametrize(("module", "source", "expected"), [
    ("byocc.ops.nn", "from byocc.transform import x\n", "layer ops imports byocc.transform"),
    ("byocc.ops.nn", "from ..text import parse_module\n", "layer ops imports byocc.text"),
    ("byocc.text.parser", "import byocc.dpl.pattern\n", "layer text imports byocc.dpl.pattern"),
    ("byocc.backends.cutlass.codegen", "from ...runtime import build\n", "imports byocc.runtime"),
    ("byocc.transform.fuse", "from byocc import backends\n", "imports byocc.backends"),
    ("byocc.runtime.loader", "def f():\n    from byocc.cli import main\n", "nothing imports cli"),
    ("byocc.ir.expr", "from byocc.text.printer import print_expr\n", "layer ir imports byocc.text"),
    ("byocc.ir.expr", "def f():\n    from byocc.text import parse_module\n", "layer ir imports"),
    ("byocc.dpl.x", "import importlib\nimportlib.import_module('byocc.transform.y')\n", "layer dpl"),
    ("byocc.widgets", "", "not in any layer"),
    ("byocc.ops.nn", "from byocc.cli.run import run\n", "nothing imports cli"),
    ("byocc.relax.transform", "from byocc.cli.options import DIM\n", "nothing imports cli"),
    ("byocc.script.relax", "def f():\n    from byocc.cli import main\n", "nothing imports cli"),
    ("byocc.cli_helpers", "from byocc.cli import main\n", "not in any layer"),
    ("byocc.cli.main", "from byocc import __main__\n", "layer cli imports byocc.__main__"),
    ("byocc.__main__", "from byocc.runtime import build\n", "layer __main__ imports byocc.runtime"),
    ("byocc.transform.prepare", "from byocc.relax import op\n", "layer transform imports byocc.relax"),
    ("byocc.runtime.x", "import byocc.script\n", "layer runtime imports byocc.script"),
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
    ("byocc.__main__", "from byocc.cli import main\n"),
    ("byocc.relax.backend.cuda.cutlass", "from byocc.backends import partition_for_backend\n"),
    ("byocc.script.relax", "from byocc.relax import BlockBuilder\nfrom byocc.text import parse_module\n"),
    ("byocc.cli.verify", "from byocc.relax import transform\n"),
])
def test_checker_accepts_allowed_edges(module, source):
    assert violations_in(source, module) == []


# The generic layer of the backends (byocc/backends/*.py, byocc/backends/cuda/) and the runtime
# import no backend package: what a build needs from a backend is in the build plan.
_BACKEND_PACKAGES = ("byocc.backends.cutlass", "byocc.backends.cublas")


def test_the_generic_layer_imports_no_backend_package():
    backends = PACKAGE / "backends"
    generic = [*sorted(backends.glob("*.py")), *sorted((backends / "cuda").rglob("*.py")),
               *sorted((PACKAGE / "runtime").rglob("*.py"))]
    bad = [f"{module_name(p)}:{line}: imports {target}" for p in generic
           for target, line, _ in imports_of(p.read_text(encoding="utf-8"), module_name(p), p.name == "__init__.py")
           if target.startswith(_BACKEND_PACKAGES)]
    assert bad == []
# -- no import cycle inside byocc/backends ------------------------------------------------------
# Module-level imports count, those under ``if TYPE_CHECKING:`` included (a type-hint-only
# cycle still ties the modules together); imports in function bodies, the deliberate lazy
# loading of backend code, do not. ``from pkg import name`` is an edge to ``pkg.name`` when
# that is a module, else to ``pkg``.
BACKENDS = PACKAGE / "backends"


def module_level_imports(source: str, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``module`` imports outside function bodies."""
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != module:
            found.add(target)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = _resolve_relative(module, is_package, child.level, child.module)
                for alias in child.names:
                    add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
            visit(child)

    visit(ast.parse(source))
    return found


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (``[a, b, ..., a]``), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := walk(start)):
            return found
    return None


def backends_import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in sorted(BACKENDS.rglob("*.py")) if "__pycache__" not in p.parts}
    modules = set(paths)
    return {name: module_level_imports(p.read_text(encoding="utf-8"), name, p.name == "__init__.py", modules)
            for name, p in paths.items()}


def test_no_import_cycle_inside_backends():
    graph = backends_import_graph()
    assert graph["byocc.backends.cutlass.kernels"] >= {"byocc.backends.cutlass.config",
                                                       "byocc.backends.cutlass.sm90_unit"}
    cycle = import_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_cycle_check_counts_type_checking_imports_and_not_function_bodies():
    modules = {"byocc.backends.a", "byocc.backends.b", "byocc.backends"}
    a = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
    b = "from . import a\n"
    lazy = "def f():\n    from .b import B\n"
    graph = {"byocc.backends.a": module_level_imports(a, "byocc.backends.a", False, modules),
             "byocc.backends.b": module_level_imports(b, "byocc.backends.b", False, modules)}
    assert graph == {"byocc.backends.a": {"byocc.backends.b"}, "byocc.backends.b": {"byocc.backends.a"}}
    assert import_cycle(graph) == ["byocc.backends.a", "byocc.backends.b", "byocc.backends.a"]
    graph["byocc.backends.a"] = module_level_imports(lazy, "byocc.backends.a", False, modules)
    assert graph["byocc.backends.a"] == set() and import_cycle(graph) is None
