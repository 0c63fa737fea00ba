"""Symbolic integer expressions used as tensor dimensions (TVM's TIR PrimExpr subset).

A dimension is a plain Python ``int`` or a :class:`PrimExpr`: a :class:`TirVar` (identity
equality: two variables called ``n`` in two functions are different), or an arithmetic node
(:class:`PrimBinary`, :class:`PrimMinMax`), value-equal over their children. Arithmetic on
dimensions (folding, simplification, proofs, evaluation) is :mod:`byocc.ir.arith`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import arith as _arith  # the sugar folds through arith (which builds on these nodes)
from .diagnostics import Span


class PrimExpr:
    __slots__ = ()

    # arithmetic sugar so passes and the parser can write ``n * 2``
    def __add__(self, other: Dim) -> Dim: return _arith.simplify_binary("+", self, other)
    def __radd__(self, other: Dim) -> Dim: return _arith.simplify_binary("+", other, self)
    def __sub__(self, other: Dim) -> Dim: return _arith.simplify_binary("-", self, other)
    def __rsub__(self, other: Dim) -> Dim: return _arith.simplify_binary("-", other, self)
    def __mul__(self, other: Dim) -> Dim: return _arith.simplify_binary("*", self, other)
    def __rmul__(self, other: Dim) -> Dim: return _arith.simplify_binary("*", other, self)
    def __floordiv__(self, other: Dim) -> Dim: return _arith.simplify_binary("//", self, other)
    def __rfloordiv__(self, other: Dim) -> Dim: return _arith.simplify_binary("//", other, self)
    def __mod__(self, other: Dim) -> Dim: return _arith.simplify_binary("%", self, other)
    def __rmod__(self, other: Dim) -> Dim: return _arith.simplify_binary("%", other, self)


Dim = int | PrimExpr


@dataclass(frozen=True, slots=True, eq=False)
class TirVar(PrimExpr):
    """A symbolic int64 dimension variable (``n = TypeVar("n")`` / ``n = T.int64()``)."""

    name: str
    dtype: str = "int64"
    span: Span | None = None

    def __repr__(self) -> str:
        return f"TirVar({self.name!r}@{id(self):x})"


PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}


@dataclass(frozen=True, slots=True)
class PrimBinary(PrimExpr):
    op: str  # one of + - * // %
    a: Dim
    b: Dim


@dataclass(frozen=True, slots=True)
class PrimMinMax(PrimExpr):
    op: str  # "max" | "min"
    a: Dim
    b: Dim


def dim_vars(dim: Dim, out: list | None = None) -> list:
    """Free :class:`TirVar` s of a dimension, in left-to-right first-occurrence order."""
    if out is None:
        out = []
    stack = [dim]
    while stack:
        d = stack.pop()
        if isinstance(d, TirVar):
            if not any(v is d for v in out):
                out.append(d)
        elif isinstance(d, (PrimBinary, PrimMinMax)):
            stack.append(d.b)
            stack.append(d.a)
    return out


def substitute_dim(dim: Dim, mapping: dict) -> Dim:
    """Replace TirVars (keyed by identity via ``id``-keyed dict of var -> dim)."""
    if isinstance(dim, int):
        return dim
    if isinstance(dim, TirVar):
        return mapping.get(dim, dim)
    if isinstance(dim, PrimBinary):
        return _arith.simplify_binary(dim.op, substitute_dim(dim.a, mapping), substitute_dim(dim.b, mapping))
    if isinstance(dim, PrimMinMax):
        a, b = substitute_dim(dim.a, mapping), substitute_dim(dim.b, mapping)
        if isinstance(a, int) and isinstance(b, int):  # folds, as TVM's Simplify after Substitute
            return min(a, b) if dim.op == "min" else max(a, b)
        return PrimMinMax(dim.op, a, b)
    return dim


def dims_equal(a: Dim, b: Dim) -> bool:
    """Syntactic equality of two dimensions (TirVars by identity)."""
    return a is b or a == b


def dim_text(dim: Dim) -> str:
    """A dimension as text for messages: ``n * 2``, ``T.max(a, b)`` (no precedence
    parentheses; the printer has the TVM-exact form)."""
    if isinstance(dim, TirVar):
        return dim.name
    if isinstance(dim, PrimBinary):
        return f"{dim_text(dim.a)} {dim.op} {dim_text(dim.b)}"
    if isinstance(dim, PrimMinMax):
        return f"T.{dim.op}({dim_text(dim.a)}, {dim_text(dim.b)})"
    return str(dim)
