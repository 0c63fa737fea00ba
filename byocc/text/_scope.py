"""The Python names around a decorated script (TVMScript's closure variables).

TVM evaluates the names a script does not define in the namespace of the code that applied
the decorator: ``@tvm.script.ir_module``, ``relax.op.add(x, y)`` or ``R.const(weight)`` with
``weight`` a numpy array of the enclosing function all mean what that Python code says.
byocc reads the decorated source as text, so the decorator hands the parser a
:class:`PythonScope` (its caller's globals and locals), and:

* :func:`resolve_dotted_names` rewrites, once before reading, every attribute chain whose
  root is a Python name that leads to one of the TVMScript namespaces (``tvm.script.ir``,
  ``relax.op``, ...) into the printed spelling (``I.ir_module``, ``R.add``), so the readers
  see one spelling only;
* the expression reader asks :meth:`PythonScope.value` for a name the script does not bind.

Text read from a file has no scope: nothing here runs on that path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .syntax import Attr
from .syntax import CallExpr
from .syntax import ClassDef
from .syntax import FuncDef
from .syntax import Name
from .syntax import Node

#: Roots the readers know by their printed spelling; never resolved through Python.
PRINTED_ROOTS = frozenset(("R", "I", "T"))


class PythonScope:
    """Python names (``names``) and how the TVMScript namespaces among their values are
    spelled in text: ``namespaces`` maps a module's ``__name__`` to its printed prefix
    (``"byocc.script.relax"`` -> ``"R"``); a function defined in such a module is that
    prefix and its name (``byocc.script.ir.ir_module`` -> ``"I.ir_module"``)."""

    __slots__ = ("names", "namespaces", "_memo")

    def __init__(self, names: Mapping[str, Any], namespaces: Mapping[str, str]) -> None:
        self.names = names
        self.namespaces = namespaces
        self._memo: dict[str, str | None] = {}

    def has(self, name: str) -> bool:
        return name in self.names

    def value(self, name: str) -> Any:
        """The Python value of ``name`` (KeyError if the scope lacks it)."""
        return self.names[name]

    def printed_name(self, dotted: str) -> str | None:
        """The printed spelling of a dotted name (``tvm.script.ir_module`` ->
        ``I.ir_module``), or None when it does not lead into a TVMScript namespace."""
        if dotted in self._memo:
            return self._memo[dotted]
        parts = dotted.split(".")
        out: str | None = None
        if parts[0] in self.names:
            value = self.names[parts[0]]
            for i in range(len(parts)):
                if i:
                    try:
                        value = getattr(value, parts[i])
                    except Exception:  # noqa: BLE001  (any Python object: a failing getattr means "not ours")
                        break
                prefix = self._prefix(value)
                if prefix is not None:
                    out = ".".join([prefix, *parts[i + 1:]])
                    break
        self._memo[dotted] = out
        return out

    def _prefix(self, value: Any) -> str | None:
        name = getattr(value, "__name__", None)
        if not isinstance(name, str):
            return None
        if type(value).__name__ == "module":
            return self.namespaces.get(name)
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and callable(value):
            prefix = self.namespaces.get(home)
            if prefix is not None and getattr(value, "__qualname__", name) == name:
                return f"{prefix}.{name}"
        return None


def resolve_dotted_names(stmts: list[Node], scope: PythonScope) -> None:
    """Rewrite in place every attribute chain that :meth:`PythonScope.printed_name` resolves
    (and a bare name used as a decorator) into the printed spelling, keeping its position.
    One pass over the tree with an explicit stack."""
    stack: list[Any] = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (FuncDef, ClassDef)):
            node.decorators = [_resolve_decorator(d, scope) for d in node.decorators]
        for cls in type(node).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                child = getattr(node, slot, None)
                if isinstance(child, Attr):
                    new = _resolve(child, scope)
                    if new is not child:
                        setattr(node, slot, new)
                        continue
                    stack.append(child)
                elif isinstance(child, Node):
                    stack.append(child)
                elif isinstance(child, list):
                    _resolve_list(child, scope, stack)


def _resolve_list(items: list[Any], scope: PythonScope, stack: list[Any]) -> None:
    for i, item in enumerate(items):
        if isinstance(item, Attr):
            new = _resolve(item, scope)
            if new is not item:
                items[i] = new
                continue
            stack.append(item)
        elif isinstance(item, Node):
            stack.append(item)
        elif isinstance(item, tuple):  # a dictionary's (key, value) pairs
            pair = list(item)
            _resolve_list(pair, scope, stack)
            items[i] = (pair[0], pair[1])


def _resolve_decorator(node: Node, scope: PythonScope) -> Node:
    callee = node.func if isinstance(node, CallExpr) else node
    if isinstance(callee, Name) and callee.id not in PRINTED_ROOTS:
        new = _printed(callee, callee.id, scope)
        if new is not callee:
            if isinstance(node, CallExpr):
                node.func = new
                return node
            return new
    return node


def _resolve(node: Attr, scope: PythonScope) -> Node:
    parts: list[str] = []
    root: Node = node
    while isinstance(root, Attr):
        parts.append(root.attr)
        root = root.value
    if not isinstance(root, Name) or root.id in PRINTED_ROOTS or not scope.has(root.id):
        return node
    parts.append(root.id)
    return _printed(node, ".".join(reversed(parts)), scope)


def _printed(node: Node, dotted: str, scope: PythonScope) -> Node:
    printed = scope.printed_name(dotted)
    if printed is None or printed == dotted:
        return node
    first, *rest = printed.split(".")
    name = _placed(Name.__new__(Name), node)
    name.id = first
    out: Node = name
    for attr in rest:
        a = _placed(Attr.__new__(Attr), node)
        a.value = out
        a.attr = attr
        out = a
    return out


def _placed(new: Any, node: Node) -> Any:
    new.line, new.col, new.end_line, new.end_col = node.line, node.col, node.end_line, node.end_col
    return new


__all__ = ["PRINTED_ROOTS", "PythonScope", "resolve_dotted_names"]
