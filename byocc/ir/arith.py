"""Arithmetic on symbolic dimensions: the one place for it (the part of TVM's ``arith`` byocc
needs). A dimension is an ``int`` or a :class:`~byocc.ir.prim.PrimExpr` tree.

* Folding constructors. :func:`simplify_binary` folds ``int op int`` (TVM's node
  constructors, as the parser and ``n * 2`` build dims); :func:`add`, :func:`sub`,
  :func:`mul`, :func:`floordiv` and :func:`product` also fold ``x + 0``, ``x * 1``, ``x * 0``
  (TVM's PrimExpr operators, where its op inference builds a dim without simplifying).
* One polynomial form, ``const + sum(coef * monomial)``, behind
  :func:`simplify_dim` (the normal form TVM 0.27's ``Analyzer.simplify`` prints),
  :func:`linear_form` and what op inference proves with it (:func:`provably_equal`,
  :func:`provably_different`), and :func:`can_prove_equal` (what pattern checks prove).
* :func:`eval_dim`: the value of a dimension once its variables are bound.

What was measured with TVM 0.27's ``Analyzer.simplify`` (the normal form):

* a product's constant factor goes last and constants fold: ``4 * n`` -> ``n * 4``,
  ``n * 2 * 3`` -> ``n * 6``, ``3 * (n * m)`` -> ``n * m * 3``;
* a sum's constant term goes last: ``2 + n`` -> ``n + 2``; ``n - 1`` stays;
* a constant multiplies into a sum: ``(n + 1) * 2`` -> ``n * 2 + 2``;
* a floor division by a positive constant dividing every coefficient divides them (the
  constant term floor-divides): ``n * 4 // 2`` -> ``n * 2``;
* variables keep their order (``m * n`` and ``n * m`` both stay), and so do the terms of a
  sum (``m + n`` stays).

Anything else (divisions that do not divide, ``%``, ``min``/``max``, products of sums) is an
opaque atom over simplified operands. For proofs the same form is built *commutatively*:
monomials are keyed by their sorted atoms, products of sums expand, and an atom's key is
built from its operands' keys (``min``/``max`` operands unordered), so ``2 * n == n + n`` and
``n * m == m * n``. Recursion follows the expression tree of one dimension (a handful of
nodes), never the bindings.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from .diagnostics import InterpretError
from .diagnostics import Span
from .prim import Dim
from .prim import PrimBinary
from .prim import PrimMinMax
from .prim import TirVar

if TYPE_CHECKING:
    from typing import TypeGuard

    from .struct_info import StructInfo
    from .struct_info import TensorStructInfo

    #: ``{id(var): (var, coefficient)}`` in insertion order, and the constant term.
    LinearForm = tuple[dict[int, tuple[TirVar, int]], int]


def is_static(d: object) -> TypeGuard[int]:
    """True for a plain integer dimension (TVM: an ``IntImm``; ``bool`` is not one)."""
    return isinstance(d, int) and not isinstance(d, bool)


# --------------------------------------------------------------------------- folding
#: The integer meaning of each PrimBinary operator (``/`` is TVM's floor division too).
INT_OPS: dict[str, Callable[[int, int], int]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "//": operator.floordiv, "/": operator.floordiv, "%": operator.mod,
}
_DIVISIONS = frozenset({"//", "/", "%"})


def simplify_binary(op: str, a: Dim, b: Dim) -> Dim:
    """Build ``a op b``, folding constant operands (what TVM's constructors do for ints)."""
    if isinstance(a, int) and isinstance(b, int) and op in INT_OPS and op != "/" \
            and not (b == 0 and op in _DIVISIONS):
        return INT_OPS[op](a, b)
    return PrimBinary(op, a, b)


def add(a: Dim, b: Dim) -> Dim:
    if is_static(a) and a == 0:
        return b
    if is_static(b) and b == 0:
        return a
    return simplify_binary("+", a, b)


def sub(a: Dim, b: Dim) -> Dim:
    if is_static(b) and b == 0:
        return a
    return simplify_binary("-", a, b)


def mul(a: Dim, b: Dim) -> Dim:
    if is_static(a) and is_static(b):
        return a * b
    if is_static(a) and a in (0, 1):
        return b if a == 1 else 0
    if is_static(b) and b in (0, 1):
        return a if b == 1 else 0
    return PrimBinary("*", a, b)


def floordiv(a: Dim, b: Dim) -> Dim:
    if is_static(b) and b == 1:
        return a
    return simplify_binary("//", a, b)


def product(dims: Iterable[Dim]) -> Dim:
    """``((1 * d0) * d1) * ...`` with :func:`mul`'s folding (TVM's ``reduce(mul, dims, 1)``)."""
    out: Dim = 1
    for d in dims:
        out = mul(out, d)
    return out


# --------------------------------------------------------------------------- the polynomial
class _Poly:
    """``const + sum(coef * prod(factors))``; ``terms`` maps a monomial key to
    ``[factors, coef]`` in first-appearance order. ``commutative`` forms (for proofs) key a
    monomial by its sorted atom keys."""

    __slots__ = ("commutative", "const", "terms")

    def __init__(self, const: int = 0, terms: dict | None = None, commutative: bool = False):
        self.const = const
        self.terms: dict = terms if terms is not None else {}
        self.commutative = commutative

    def _new(self, const: int, terms: dict) -> _Poly:
        return _Poly(const, terms, self.commutative)

    def add(self, other: _Poly, sign: int = 1) -> _Poly:
        terms = {k: [f, c] for k, (f, c) in self.terms.items()}
        for k, (f, c) in other.terms.items():
            if k in terms:
                terms[k][1] += sign * c
            else:
                terms[k] = [f, sign * c]
        return self._new(self.const + sign * other.const, terms)

    def scale(self, c: int) -> _Poly:
        return self._new(self.const * c, {k: [f, v * c] for k, (f, v) in self.terms.items()})

    def is_const(self) -> bool:
        return all(c == 0 for _, c in self.terms.values())

    def _monomials(self) -> list:
        """``(key, factors, coef)`` of every term, the constant as ``((), (), const)``."""
        out = [(k, f, c) for k, (f, c) in self.terms.items() if c != 0]
        if self.const:
            out.append(((), (), self.const))
        return out

    def mul(self, other: _Poly) -> _Poly | None:
        """The product; None in the ordered form when neither side is a constant or a single
        monomial (TVM keeps such a product opaque)."""
        if self.is_const():
            return other.scale(self.const)
        if other.is_const():
            return self.scale(other.const)
        if not self.commutative:
            if self.const or other.const or len(self.terms) != 1 or len(other.terms) != 1:
                return None
        out = self._new(0, {})
        for ka, fa, ca in self._monomials():
            for kb, fb, cb in other._monomials():
                key = tuple(sorted(ka + kb, key=repr)) if self.commutative else ka + kb
                if not key:
                    out.const += ca * cb
                elif key in out.terms:
                    out.terms[key][1] += ca * cb
                else:
                    out.terms[key] = [fa + fb, ca * cb]
        return out

    def divide_exactly(self, c: int) -> _Poly | None:
        """``self // c`` for a positive ``c`` dividing every coefficient: ``(c*x + k) // c``
        is ``x + k // c`` for integer ``x``; else None."""
        if c <= 0 or any(v % c for _, v in self.terms.values()):
            return None
        return self._new(self.const // c, {k: [f, v // c] for k, (f, v) in self.terms.items()})

    def key(self) -> tuple:
        """A hashable form equal for equal polynomials (of the same kind)."""
        return (self.const, tuple(sorted(((k, c) for k, (_, c) in self.terms.items() if c), key=repr)))

    def linear(self) -> LinearForm | None:
        """``(coeffs, const)`` with ``coeffs`` an insertion-ordered ``{id(var): (var, k)}`` (no
        zero ``k``), or None when some term is not a single variable."""
        coeffs: dict[int, tuple[TirVar, int]] = {}
        for factors, c in self.terms.values():
            if c == 0:
                continue
            if len(factors) != 1 or not isinstance(factors[0], TirVar):
                return None
            coeffs[id(factors[0])] = (factors[0], c)
        return coeffs, self.const

    def to_dim(self) -> Dim:
        out: Dim | None = None
        for factors, coef in self.terms.values():
            if coef == 0:
                continue
            mono: Dim = factors[0]
            for f in factors[1:]:
                mono = PrimBinary("*", mono, f)
            if out is None:
                out = mono if coef == 1 else PrimBinary("*", mono, coef)
            elif coef > 0:
                out = PrimBinary("+", out, mono if coef == 1 else PrimBinary("*", mono, coef))
            else:
                out = PrimBinary("-", out, mono if coef == -1 else PrimBinary("*", mono, -coef))
        if out is None:
            return self.const
        if self.const > 0:
            return PrimBinary("+", out, self.const)
        if self.const < 0:
            return PrimBinary("-", out, -self.const)
        return out


def _atom(d: Dim, key: Any, commutative: bool) -> _Poly:
    return _Poly(0, {(key,): [(d,), 1]}, commutative)


def _poly(d: Dim, commutative: bool = False) -> _Poly:
    if isinstance(d, int):
        return _Poly(int(d), None, commutative)
    if isinstance(d, TirVar):
        return _atom(d, ("v", id(d)), commutative)
    if isinstance(d, PrimBinary):
        a, b = _poly(d.a, commutative), _poly(d.b, commutative)
        if d.op == "+":
            return a.add(b)
        if d.op == "-":
            return a.add(b, -1)
        if d.op == "*":
            prod = a.mul(b)
            if prod is not None:
                return prod
        elif b.is_const() and b.const != 0 and d.op in ("//", "%"):
            if a.is_const():
                return _Poly(a.const // b.const if d.op == "//" else a.const % b.const, None, commutative)
            if d.op == "%" and b.const == 1:
                return _Poly(0, None, commutative)
            quotient = a.divide_exactly(b.const) if d.op == "//" else None
            if quotient is not None:
                return quotient
        return _opaque(d.op, a, b, lambda x, y: PrimBinary(d.op, x, y), commutative)
    if isinstance(d, PrimMinMax):
        a, b = _poly(d.a, commutative), _poly(d.b, commutative)
        if a.is_const() and b.is_const():
            return _Poly((max if d.op == "max" else min)(a.const, b.const), None, commutative)
        if a.key() == b.key():
            return a
        return _opaque(d.op, a, b, lambda x, y: PrimMinMax(d.op, x, y), commutative)
    return _atom(d, ("?", id(d)), commutative)  # an unknown kind of dimension: only itself


def _opaque(op: str, a: _Poly, b: _Poly, build: Callable[[Dim, Dim], Dim], commutative: bool) -> _Poly:
    """``a op b`` as one atom over its simplified operands."""
    node = build(a.to_dim(), b.to_dim())
    if not commutative:
        return _atom(node, ("e", repr(node)), False)
    ka, kb = a.key(), b.key()
    if op in ("max", "min"):
        ka, kb = sorted((ka, kb), key=repr)
    return _atom(node, (op, ka, kb), True)


def linear_form(d: Dim) -> LinearForm | None:
    """``(coeffs, const)``: ``d`` as ``sum(k * var) + const`` with ``coeffs`` an
    insertion-ordered ``{id(var): (var, k)}``, or None when ``d`` is not linear."""
    if is_static(d):
        return {}, d
    return _poly(d).linear()


def from_linear_form(coeffs: Mapping[int, tuple[TirVar, int]], const: int) -> Dim:
    """The dimension ``sum(k * var) + const`` in TVM's printed order (variables as given,
    constant last)."""
    return _Poly(const, {(("v", key),): [(var,), k] for key, (var, k) in coeffs.items()}).to_dim()


def simplify_dim(d: Dim) -> Dim:
    """``d`` in TVM's simplified form (see the module docstring); ints and variables as is."""
    if isinstance(d, (int, TirVar)):
        return d
    out = _poly(d).to_dim()
    return d if out == d else out


def as_int(d: Dim) -> int | None:
    """The int value of ``d`` if it simplifies to a constant, else None."""
    if is_static(d):
        return d
    s = simplify_dim(d)
    return s if is_static(s) else None


# --------------------------------------------------------------------------- proofs
def can_prove_equal(a: Dim, b: Dim) -> bool:
    """True when ``a == b`` holds for every value of the shape variables (the commutative
    form of the difference is zero); what pattern checks prove (docs/codegen.md#shared-matching-rules)."""
    if a is b:
        return True
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    diff = _poly(a, True).add(_poly(b, True), -1)
    return diff.is_const() and diff.const == 0


def linear_difference(a: Dim, b: Dim) -> tuple[list[int], int] | None:
    """``a - b`` as (its nonzero variable coefficients, its constant) when both are linear,
    else None."""
    la, lb = linear_form(a), linear_form(b)
    if la is None or lb is None:
        return None
    coeffs = {key: k for key, (_, k) in la[0].items()}
    for key, (_, k) in lb[0].items():
        coeffs[key] = coeffs.get(key, 0) - k
    return [k for k in coeffs.values() if k], la[1] - lb[1]


def _linear_difference(a: Dim, b: Dim) -> int | None:
    """``a - b`` when both are linear and it is a constant, else None."""
    diff = linear_difference(a, b)
    if diff is None or diff[0]:
        return None
    return diff[1]


def provably_equal(a: Dim, b: Dim) -> bool:
    """What op inference proves equal (TVM's ``CanProveEqual`` as its inference sees
    shapes): the same dimension, or linear forms that agree."""
    if a is b:
        return True
    if is_static(a) and is_static(b):
        return a == b
    return a == b or _linear_difference(a, b) == 0


def provably_different(a: Dim, b: Dim) -> bool:
    """``CanProve(a != b)``: two ints that differ, or linear forms differing by a constant."""
    if is_static(a) and is_static(b):
        return a != b
    diff = _linear_difference(a, b)
    return diff is not None and diff != 0


def provably_non_negative(d: Dim) -> bool:
    """``CanProve(d >= 0)`` for shape arithmetic: a linear form whose coefficients and
    constant are all non-negative (symbolic dimensions are sizes, never negative)."""
    if is_static(d):
        return d >= 0
    lf = linear_form(d)
    return lf is not None and lf[1] >= 0 and all(k >= 0 for _, k in lf[0].values())


# --------------------------------------------------------------------------- evaluation
def eval_dim(dim: Any, scope: Mapping, span: Span | None = None) -> int:
    """The integer value of a dimension with its variables bound in ``scope`` (TirVar ->
    int, by identity); an unbound variable or a division by zero is an InterpretError."""
    if isinstance(dim, bool):
        return int(dim)
    if isinstance(dim, (int, float)):
        return dim  # type: ignore[return-value]
    if isinstance(dim, TirVar):
        try:
            return scope[dim]
        except KeyError:
            raise InterpretError(f"symbolic dimension {dim.name!r} is not bound to a value here", span) from None
    if isinstance(dim, PrimBinary) and dim.op in INT_OPS:
        a, b = eval_dim(dim.a, scope, span), eval_dim(dim.b, scope, span)
        if b == 0 and dim.op in _DIVISIONS:
            raise InterpretError(f"division by zero while evaluating a dimension ({a} {dim.op} 0)", span)
        return INT_OPS[dim.op](a, b)
    if isinstance(dim, PrimMinMax):
        a, b = eval_dim(dim.a, scope, span), eval_dim(dim.b, scope, span)
        return max(a, b) if dim.op == "max" else min(a, b)
    raise InterpretError(f"cannot evaluate the dimension {dim!r}", span)


def simplify_struct_info_dims(si: StructInfo) -> StructInfo:
    """``si`` with every symbolic tensor/shape dim simplified (the same object if none changes)."""
    from .struct_info import ShapeStructInfo
    from .struct_info import TensorStructInfo
    from .struct_info import TupleStructInfo

    if isinstance(si, TensorStructInfo) and si.shape is not None:
        dims = tuple(simplify_dim(x) for x in si.shape)
        if all(a is b for a, b in zip(dims, si.shape)):
            return si
        return TensorStructInfo(dims, si.dtype, si.ndim, si.shape_var, *_rest(si))
    if isinstance(si, ShapeStructInfo) and si.values is not None:
        vals = tuple(simplify_dim(x) for x in si.values)
        if all(a is b for a, b in zip(vals, si.values)):
            return si
        return ShapeStructInfo(vals, si.ndim)
    if isinstance(si, TupleStructInfo):
        fields = tuple(simplify_struct_info_dims(f) for f in si.fields)
        if all(a is b for a, b in zip(fields, si.fields)):
            return si
        return TupleStructInfo(fields)
    return si


def _rest(si: TensorStructInfo) -> tuple[Any, ...]:
    """Fields of TensorStructInfo after ``shape_var`` (e.g. a device), if any."""
    import dataclasses

    names = [f.name for f in dataclasses.fields(si)]
    i = names.index("shape_var") + 1 if "shape_var" in names else len(names)
    return tuple(getattr(si, n) for n in names[i:])


__all__ = [
    "add", "as_int", "can_prove_equal", "eval_dim", "floordiv", "from_linear_form", "is_static",
    "linear_difference", "linear_form", "mul", "product", "provably_different", "provably_equal", "provably_non_negative",
    "simplify_binary",
    "simplify_dim", "simplify_struct_info_dims", "sub",
]
