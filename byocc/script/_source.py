"""Reading a decorated class's or function's source back and parsing it (byocc.text)."""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from collections.abc import Mapping
from typing import Any
from typing import TypeVar

from byocc.ir import InputError
from byocc.ir import IRModule


def source_of(obj: Any, what: str, scope: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """``(text, file name)`` of ``obj``'s definition, decorators included, dedented and
    preceded by blank lines so that line numbers in errors are the file's.

    Symbolic dimensions declared outside the definition (``n = TypeVar("n")`` in ``scope``,
    the namespace the decorator ran in) and used in it are declared again at the top."""
    try:
        lines, start = inspect.getsourcelines(obj)
        filename = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError) as e:
        raise InputError(f"{what}: cannot read the source of {getattr(obj, '__qualname__', obj)!r} "
                         f"({e}); define it in a file, or use byocc.script.from_source(text)") from None
    text = textwrap.dedent("".join(lines))
    header = _type_var_lines(text, scope or {})
    padding = max(start - 1 - len(header), 0)
    return "".join(line + "\n" for line in header) + "\n" * padding + text, filename


def _type_var_lines(text: str, scope: Mapping[str, Any]) -> list[str]:
    """``n = TypeVar("n")`` for each TypeVar of ``scope`` whose name ``text`` mentions."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    out = []
    for name, value in sorted(scope.items()):
        if isinstance(value, TypeVar) and name in words and value.__name__ == name:
            out.append(f'{name} = TypeVar("{name}")')
    return out


def caller_scope(depth: int = 2) -> dict[str, Any]:
    """Globals and locals of the frame ``depth`` levels up (where the decorator was applied)."""
    frame = sys._getframe(depth)
    try:
        return {**frame.f_globals, **frame.f_locals}
    finally:
        del frame


#: The modules whose names a script spells with a printed prefix: ``tvm.script.relax`` is
#: ``R``, ``relax.op.nn`` is ``R.nn`` (``relax.op.add(x, y)`` in a script is ``R.add(x, y)``).
NAMESPACES = {
    "byocc.script.ir": "I",
    "byocc.script.relax": "R",
    "byocc.script.tirx": "T",
    "byocc.relax.op": "R",
    "byocc.relax.op.nn": "R.nn",
    "byocc.relax.op.image": "R.image",
    "byocc.relax.op.builtin": "R.builtin",
}


def python_scope(scope: Mapping[str, Any] | None) -> Any:
    """The parser's view (:class:`byocc.text._scope.PythonScope`) of a decorator's caller's
    names."""
    from byocc.text._scope import PythonScope

    return PythonScope(scope or {}, NAMESPACES)


def parse_source(obj: Any, what: str, scope: Mapping[str, Any] | None = None) -> IRModule:
    from byocc.text import parse_module

    text, filename = source_of(obj, what, scope)
    return parse_module(text, filename, scope=python_scope(scope))


class Placeholder:
    """What an annotation such as ``R.Tensor((10, 10), "float32")`` evaluates to while Python
    defines the decorated function; the parser reads the annotation from the source."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Placeholder:
        return self

    def __getattr__(self, name: str) -> Placeholder:
        if name.startswith("__"):
            raise AttributeError(name)
        return Placeholder(f"{self.name}.{name}")

    def __getitem__(self, item: Any) -> Placeholder:
        return self

    def __repr__(self) -> str:
        return f"<annotation {self.name}>"


__all__ = ["Placeholder", "caller_scope", "parse_source", "source_of"]
