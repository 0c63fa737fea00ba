"""Run-time values of the numpy interpreter.

| Relax value | Python value |
|---|---|
| tensor | ``numpy.ndarray`` |
| tuple | ``tuple`` of values |
| shape (``R.shape([2, 3])``) | :class:`ShapeValue` (a ``tuple`` of ints) |
| primitive (``T.int64``, ``T.float64(0.5)``) | ``int`` / ``float`` / ``bool`` |
| string, dtype literal | ``str`` |
| function (member, local function) | :class:`Closure` |
| external (packed) function | :class:`PackedFunc` |
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

from byocc.ir import Function


class ShapeValue(tuple):
    """A Relax shape value: a tuple of ints, told apart from a Relax tuple."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"R.shape({list(self)})"


@dataclass(frozen=True, eq=False)
class Closure:
    """A Relax function value: the function, the values of its free variables and the
    symbolic dimensions bound where it was defined (a local function sees the enclosing
    function's dimension variables)."""

    func: Function
    name: str
    captured: dict = field(default_factory=dict)
    sym: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PackedFunc:
    """An external function, called by symbol (``R.ExternFunc("sym")``)."""

    symbol: str


def describe(value: Any) -> str:
    """A short description of a value for error messages."""
    import numpy as np

    if isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__"):
        return f"tensor {tuple(value.shape)} {value.dtype}"
    if isinstance(value, ShapeValue):
        return f"shape {list(value)}"
    if isinstance(value, tuple):
        return "tuple (" + ", ".join(describe(v) for v in value) + ")"
    if isinstance(value, Closure):
        return f"function {value.name}"
    if isinstance(value, PackedFunc):
        return f"external function {value.symbol!r}"
    return f"{type(value).__name__} {value!r}"


def flatten_outputs(value: Any) -> list:
    """Leaves of a (nested) result in order: tensors, shapes, scalars."""
    out: list = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple) and not isinstance(v, ShapeValue):
            stack.extend(reversed(v))
        else:
            out.append(v)
    return out


__all__ = ["Closure", "PackedFunc", "ShapeValue", "describe", "flatten_outputs"]
