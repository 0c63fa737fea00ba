"""Size rules of the code-generation layer: no function over 80 lines and no module over 600
lines in ``byocc/backends`` and ``byocc/runtime`` (a longer one is split along the step
skeleton: plan, step, template)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("byocc/backends", "byocc/runtime")
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_the_layer_has_modules():
    names = {p.relative_to(ROOT).as_posix() for p in _modules()}
    assert {"byocc/backends/cuda/elementwise.py", "byocc/runtime/build.py"} <= names


def test_no_module_over_600_lines():
    long = {p.relative_to(ROOT).as_posix(): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_80_lines():
    long = {}
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # from the first decorator to the last line of the body
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                n = node.end_lineno - first + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT).as_posix()}:{node.lineno} {node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
