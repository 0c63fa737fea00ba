"""``simplify_dim``: the normal form TVM 0.27's arithmetic simplifier gives a dimension.

TVM simplifies the dims of a call's derived struct info whenever it substitutes the callee's
symbolic variables (the call site of every fused function with symbolic shapes), so those
dims print in its normal form. What was measured with TVM 0.27's ``Analyzer.simplify``:

* a product's constant factor goes last and constants fold: ``4 * n`` -> ``n * 4``,
  ``n * 2 * 3`` -> ``n * 6``, ``3 * (n * m)`` -> ``n * m * 3``;
* a sum's constant term goes last: ``2 + n`` -> ``n + 2``; ``n - 1`` stays;
* a constant multiplies into a sum: ``(n + 1) * 2`` -> ``n * 2 + 2``;
* a floor division by a positive constant dividing every coefficient divides them (the
  constant term floor-divides): ``n * 4 // 2`` -> ``n * 2``;
* variables keep their order (``m * n`` and ``n * m`` both stay), and so do the terms of a
  sum (``m + n`` stays).

Anything else (divisions that do not divide, ``%``, ``min``/``max``, products of sums) is kept
as an opaque factor whose operands are simplified. The polynomial form here is also the
linear canonical form the op inference rules use (:mod:`byocc.ops.dims`). Recursion follows
the expression tree of one dimension (a handful of nodes), never the bindings.
"""

from __future__ import annotations

from .prim import Dim, PrimBinary, PrimMinMax, TirVar


class _Poly:
    """const + sum(coef * prod(factors)); monomials keep their first-appearance order."""

    __slots__ = ("const", "terms")

    def __init__(self, const: int = 0, terms: dict | None = None):
        self.const = const
        self.terms: dict = terms if terms is not None else {}  # key -> [factors, coef]

    @staticmethod
    def atom(d) -> _Poly:
        return _Poly(0, {(_key(d),): [(d,), 1]})

    def add(self, other: _Poly, sign: int = 1) -> _Poly:
        terms = {k: [f, c] for k, (f, c) in self.terms.items()}
        for k, (f, c) in other.terms.items():
            if k in terms:
                terms[k][1] += sign * c
            else:
                terms[k] = [f, sign * c]
        return _Poly(self.const + sign * other.const, terms)

    def scale(self, c: int) -> _Poly:
        return _Poly(self.const * c, {k: [f, v * c] for k, (f, v) in self.terms.items()})

    def is_const(self) -> bool:
        return all(c == 0 for _, c in self.terms.values())

    def mul(self, other: _Poly) -> _Poly | None:
        if self.is_const():
            return other.scale(self.const)
        if other.is_const():
            return self.scale(other.const)
        if self.const == 0 and other.const == 0 and len(self.terms) == 1 and len(other.terms) == 1:
            (ka, (fa, ca)), = self.terms.items()
            (kb, (fb, cb)), = other.terms.items()
            return _Poly(0, {ka + kb: [fa + fb, ca * cb]})
        return None

    def divides_terms(self, c: int) -> bool:
        return all(v % c == 0 for _, v in self.terms.values())

    def linear(self):
        """``(coeffs, const)`` with ``coeffs`` an insertion-ordered ``{id(var): (var, k)}`` (no
        zero ``k``), or None when some term is not a single variable."""
        coeffs = {}
        for factors, c in self.terms.values():
            if c == 0:
                continue
            if len(factors) != 1 or not isinstance(factors[0], TirVar):
                return None
            coeffs[id(factors[0])] = (factors[0], c)
        return coeffs, self.const

    @staticmethod
    def from_linear(coeffs: dict, const: int) -> _Poly:
        return _Poly(const, {(("v", key),): [(var,), k] for key, (var, k) in coeffs.items()})

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


def _key(d):
    return ("v", id(d)) if isinstance(d, TirVar) else ("e", repr(d))


def _poly(d: Dim) -> _Poly:
    if isinstance(d, bool):
        return _Poly.atom(d)
    if isinstance(d, int):
        return _Poly(d)
    if isinstance(d, TirVar):
        return _Poly.atom(d)
    if isinstance(d, PrimBinary):
        a, b = _poly(d.a), _poly(d.b)
        if d.op == "+":
            return a.add(b)
        if d.op == "-":
            return a.add(b, -1)
        if d.op == "*":
            prod = a.mul(b)
            if prod is not None:
                return prod
            return _Poly.atom(PrimBinary("*", a.to_dim(), b.to_dim()))
        if d.op == "//" and b.is_const() and b.const > 0 and a.divides_terms(b.const):
            # (c*x + k) // c == x + k // c for integer x
            return _Poly(a.const // b.const, {k: [f, c // b.const] for k, (f, c) in a.terms.items()})
        return _Poly.atom(PrimBinary(d.op, a.to_dim(), b.to_dim()))
    if isinstance(d, PrimMinMax):
        return _Poly.atom(PrimMinMax(d.op, simplify_dim(d.a), simplify_dim(d.b)))
    return _Poly.atom(d)


def linear_form(d: Dim):
    """``(coeffs, const)``: ``d`` as ``sum(k * var) + const`` with ``coeffs`` an
    insertion-ordered ``{id(var): (var, k)}``, or None when ``d`` is not linear."""
    return _poly(d).linear()


def from_linear_form(coeffs: dict, const: int) -> Dim:
    """The dimension ``sum(k * var) + const`` in TVM's printed order (variables as given,
    constant last)."""
    return _Poly.from_linear(coeffs, const).to_dim()


def simplify_dim(d: Dim) -> Dim:
    """``d`` in TVM's simplified form (see the module docstring); ints and variables as is."""
    if isinstance(d, (int, TirVar)):
        return d
    out = _poly(d).to_dim()
    return d if out == d else out


def simplify_struct_info_dims(si):
    """``si`` with every symbolic tensor/shape dim simplified (the same object if none changes)."""
    from .struct_info import FuncStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo

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
    if isinstance(si, FuncStructInfo):
        return si
    return si


def _rest(si) -> tuple:
    """Fields of TensorStructInfo after ``shape_var`` (e.g. a device), if any."""
    import dataclasses

    names = [f.name for f in dataclasses.fields(si)]
    i = names.index("shape_var") + 1 if "shape_var" in names else len(names)
    return tuple(getattr(si, n) for n in names[i:])


__all__ = ["from_linear_form", "linear_form", "simplify_dim", "simplify_struct_info_dims"]
