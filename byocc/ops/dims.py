"""Arithmetic on tensor dimensions, as TVM's inference rules need it.

Dimensions are Python ints or symbolic :class:`~byocc.ir.PrimExpr` trees. The helpers here
mirror the two layers TVM uses:

* the PrimExpr operators' constant folding (``x * 1 -> x``, ``x + 0 -> x``, int op int), used
  where TVM builds an expression without simplifying (flatten's product, concat's sum);
* a small "analyzer": a linear canonical form (``sum(coeff * var) + const``) that proves two
  dims equal or different and simplifies what TVM passes through ``analyzer->Simplify``.
"""

from __future__ import annotations

from byocc.ir.prim import Dim, PrimBinary, PrimMinMax, TirVar
from byocc.ir.prim_simplify import from_linear_form, linear_form


def is_int(d: Dim) -> bool:
    return isinstance(d, int) and not isinstance(d, bool)


# --------------------------------------------------------------------------- folding ops
def add(a: Dim, b: Dim) -> Dim:
    if is_int(a) and is_int(b):
        return a + b
    if is_int(a) and a == 0:
        return b
    if is_int(b) and b == 0:
        return a
    return PrimBinary("+", a, b)


def sub(a: Dim, b: Dim) -> Dim:
    if is_int(a) and is_int(b):
        return a - b
    if is_int(b) and b == 0:
        return a
    return PrimBinary("-", a, b)


def mul(a: Dim, b: Dim) -> Dim:
    if is_int(a) and is_int(b):
        return a * b
    if is_int(a) and a == 1:
        return b
    if is_int(b) and b == 1:
        return a
    if (is_int(a) and a == 0) or (is_int(b) and b == 0):
        return 0
    return PrimBinary("*", a, b)


def floordiv(a: Dim, b: Dim) -> Dim:
    if is_int(a) and is_int(b) and b != 0:
        return a // b
    if is_int(b) and b == 1:
        return a
    return PrimBinary("//", a, b)


def product(dims) -> Dim:
    out: Dim = 1
    for d in dims:
        out = mul(out, d)
    return out


# --------------------------------------------------------------------------- linear form
def linear(d: Dim):
    """``(coeffs, const)`` with ``coeffs`` an insertion-ordered ``{id(var): (var, k)}``, or
    ``None`` when ``d`` is not linear in its variables (:func:`byocc.ir.prim_simplify.linear_form`)."""
    if is_int(d):
        return {}, d
    return linear_form(d)


def from_linear(coeffs: dict, const: int) -> Dim:
    """Rebuild a dimension from a linear form: variables in order, constant last."""
    return from_linear_form(coeffs, const)


def simplify(d: Dim) -> Dim:
    """Best-effort ``analyzer->Simplify``: ints fold; linear expressions are canonicalised."""
    if is_int(d) or isinstance(d, TirVar):
        return d
    lin = linear(d)
    if lin is not None:
        return from_linear(*lin)
    if isinstance(d, PrimBinary):
        a, b = simplify(d.a), simplify(d.b)
        if d.op == "//" and is_int(b):
            la = linear(a)
            if la is not None and b > 0 and all(n % b == 0 for _, n in la[0].values()):
                return from_linear({k: (v, n // b) for k, (v, n) in la[0].items()}, la[1] // b)
        folded = {"+": add, "-": sub, "*": mul, "//": floordiv}.get(d.op)
        if folded is not None:
            return folded(a, b)
        if d.op == "%" and is_int(a) and is_int(b) and b != 0:
            return a % b
        return PrimBinary(d.op, a, b)
    if isinstance(d, PrimMinMax):
        a, b = simplify(d.a), simplify(d.b)
        if is_int(a) and is_int(b):
            return max(a, b) if d.op == "max" else min(a, b)
        if equal(a, b):
            return a
        return PrimMinMax(d.op, a, b)
    return d


def _diff(a: Dim, b: Dim):
    la, lb = linear(a), linear(b)
    if la is None or lb is None:
        return None
    coeffs = dict(la[0])
    for key, (var, k) in lb[0].items():
        old = coeffs.get(key, (var, 0))[1]
        coeffs[key] = (var, old - k)
    return {k: v for k, v in coeffs.items() if v[1] != 0}, la[1] - lb[1]


def equal(a: Dim, b: Dim) -> bool:
    """``CanProveEqual``: structurally equal or equal linear forms."""
    if a is b:
        return True
    if is_int(a) and is_int(b):
        return a == b
    try:
        if a == b:
            return True
    except Exception:  # pragma: no cover - defensive, dims compare by value
        pass
    d = _diff(a, b)
    return d is not None and not d[0] and d[1] == 0


def provably_different(a: Dim, b: Dim) -> bool:
    """``CanProve(a != b)``: two ints that differ, or linear forms differing by a constant."""
    if is_int(a) and is_int(b):
        return a != b
    d = _diff(a, b)
    return d is not None and not d[0] and d[1] != 0


def as_int(d: Dim):
    """The int value of ``d`` if it is a known constant, else ``None``."""
    if is_int(d):
        return d
    s = simplify(d)
    return s if is_int(s) else None
