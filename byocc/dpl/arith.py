"""Proving symbolic dimensions equal (the part of TVM's ``arith.Analyzer`` patterns need).

Used by the matcher's shape predicates (spec/partitioning.md section 3.1, ``has_shape`` and
``is_shape``) and by the backend check functions (spec/backends.md section 2: "provably
equal"). A dimension is canonicalised to a polynomial over atoms: a :class:`TirVar` (by
identity) or an opaque ``//``/``%``/``min``/``max`` node over canonical children. Two dims
are provably equal when their difference is the zero polynomial. This proves what TVM's
analyzer proves for sums and products of shape variables (``2 * n == n + n``); for floor
division and friends it falls back to structural equality of the canonical operands.
"""

from __future__ import annotations

from byocc.ir.prim import PrimBinary, PrimMinMax, TirVar

# A polynomial: {monomial: coefficient}; a monomial is a sorted tuple of atom keys.
_Poly = dict


def _const(c: int) -> _Poly:
    return {(): c} if c else {}


def _add(a: _Poly, b: _Poly, sign: int = 1) -> _Poly:
    out = dict(a)
    for mono, c in b.items():
        v = out.get(mono, 0) + sign * c
        if v:
            out[mono] = v
        else:
            out.pop(mono, None)
    return out


def _mul(a: _Poly, b: _Poly) -> _Poly:
    out: _Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            mono = tuple(sorted(ma + mb, key=_atom_sort_key))
            v = out.get(mono, 0) + ca * cb
            if v:
                out[mono] = v
            else:
                out.pop(mono, None)
    return out


def _atom_sort_key(atom) -> tuple:
    return (atom[0], repr(atom[1:]))


def _freeze(p: _Poly) -> tuple:
    return tuple(sorted(p.items(), key=lambda kv: repr(kv[0])))


def _as_int(p: _Poly):
    if not p:
        return 0
    if len(p) == 1 and () in p:
        return p[()]
    return None


def canonical(dim) -> _Poly:
    """The canonical polynomial of a dimension (``int`` or PrimExpr)."""
    if isinstance(dim, bool):
        return _const(int(dim))
    if isinstance(dim, int):
        return _const(dim)
    if isinstance(dim, TirVar):
        return {(("v", id(dim)),): 1}
    if isinstance(dim, PrimBinary):
        a, b = canonical(dim.a), canonical(dim.b)
        if dim.op == "+":
            return _add(a, b)
        if dim.op == "-":
            return _add(a, b, -1)
        if dim.op == "*":
            return _mul(a, b)
        ia, ib = _as_int(a), _as_int(b)
        if ia is not None and ib is not None and ib != 0:
            return _const(ia // ib if dim.op == "//" else ia % ib)
        if dim.op == "//" and ib == 1:
            return a
        if dim.op == "%" and ib == 1:
            return {}
        return {((dim.op, _freeze(a), _freeze(b)),): 1}
    if isinstance(dim, PrimMinMax):
        a, b = canonical(dim.a), canonical(dim.b)
        ia, ib = _as_int(a), _as_int(b)
        if ia is not None and ib is not None:
            return _const(max(ia, ib) if dim.op == "max" else min(ia, ib))
        if _freeze(a) == _freeze(b):
            return a
        fa, fb = sorted((_freeze(a), _freeze(b)), key=repr)
        return {((dim.op, fa, fb),): 1}
    # unknown kind of dimension: only equal to itself
    return {(("?", id(dim)),): 1}


def can_prove_equal(a, b) -> bool:
    """True when ``a == b`` holds for every value of the shape variables."""
    if a is b:
        return True
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return not _add(canonical(a), canonical(b), -1)


def const_value(dim):
    """The integer value of a dimension if it is a constant after simplification, else None."""
    if isinstance(dim, int):
        return dim
    return _as_int(canonical(dim))


def is_static(dim) -> bool:
    """True for a plain integer dimension (TVM: an ``IntImm``)."""
    return isinstance(dim, int) and not isinstance(dim, bool)


def product(dims) -> object:
    """The product of dimensions, folding constants as TVM's constructors do (``1 * n`` is ``n``).

    Returns an ``int`` when every factor is static, else a symbolic expression (a
    :class:`TirVar` when only one symbolic factor remains and the constant factor is 1).
    """
    const = 1
    symbolic: list = []
    for d in dims:
        if is_static(d):
            const *= d
        else:
            symbolic.append(d)
    if not symbolic:
        return const
    out = symbolic[0]
    for d in symbolic[1:]:
        out = PrimBinary("*", out, d)
    if const != 1:
        out = PrimBinary("*", const, out)
    return out


__all__ = ["can_prove_equal", "canonical", "const_value", "is_static", "product"]
