"""Shared pieces of struct-info inference (TVM's op_common): argument access, errors,
axis normalisation, broadcasting, dtype classes, data layouts."""

from __future__ import annotations

from functools import lru_cache

from byocc.ir import Call
from byocc.ir import Expr
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimStructInfo
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import Var
from byocc.ir import arith
from byocc.ir.prim import dim_text


# --------------------------------------------------------------------------- errors
def fail(call: Call, message: str):
    """Raise a located TypeInferenceError naming the op."""
    raise TypeInferenceError(f"{op_name(call)}: {message}", call.span)


def op_name(call: Call) -> str:
    return getattr(call.op, "name", None) or type(call.op).__name__


def fmt_sinfo(si) -> str:
    """A short readable struct info for error messages."""
    if isinstance(si, TensorStructInfo):
        if si.shape is not None:
            body = "(" + ", ".join(dim_text(d) for d in si.shape) + ("," if len(si.shape) == 1 else "") + ")"
        elif si.ndim >= 0:
            body = f"ndim={si.ndim}"
        else:
            body = ""
        parts = [p for p in (body, f'dtype="{si.dtype}"' if si.dtype else "") if p]
        return "R.Tensor(" + ", ".join(parts) + ")"
    if isinstance(si, TupleStructInfo):
        return "R.Tuple(" + ", ".join(fmt_sinfo(f) for f in si.fields) + ")"
    if isinstance(si, ShapeStructInfo):
        return "R.Shape"
    if isinstance(si, PrimStructInfo):
        return f"T.{si.dtype}"
    if si is None:
        return "no type"
    return "R.Any" if isinstance(si, ObjectStructInfo) else type(si).__name__




# --------------------------------------------------------------------------- arguments
def sinfo_of(expr: Expr):
    si = getattr(expr, "struct_info", None)
    if si is None and isinstance(expr, Tuple):
        si = TupleStructInfo(tuple(sinfo_of(f) for f in expr.fields))
    return si


def check_num_args(call: Call, n: int | tuple):
    ok = len(call.args) in n if isinstance(n, tuple) else len(call.args) == n
    if not ok:
        want = " or ".join(map(str, n)) if isinstance(n, tuple) else str(n)
        fail(call, f"expects {want} arguments, but was called with {len(call.args)}")


def tensor_arg(call: Call, i: int, name: str | None = None) -> TensorStructInfo:
    if i >= len(call.args):
        fail(call, f"is missing argument {i}{f' ({name})' if name else ''}")
    si = sinfo_of(call.args[i])
    if not isinstance(si, TensorStructInfo):
        label = f" ({name})" if name else ""
        fail(call, f"requires argument {i}{label} to be a tensor, but it has type {fmt_sinfo(si)}")
    return si


def tensor_args(call: Call, names: tuple) -> list:
    check_num_args(call, len(names))
    return [tensor_arg(call, i, n) for i, n in enumerate(names)]


def shape_values(si: TensorStructInfo):
    """Known shape values of a tensor struct info (through a shape variable if needed)."""
    if si.shape is not None:
        return si.shape
    if si.shape_var is not None:
        vsi = getattr(si.shape_var, "struct_info", None)
        if isinstance(vsi, ShapeStructInfo) and vsi.values is not None:
            return vsi.values
    return None


def with_dtype(si: TensorStructInfo, dtype) -> TensorStructInfo:
    return TensorStructInfo(si.shape, dtype, si.ndim, si.shape_var)


def tensor_from_shape_expr(shape_arg: Expr, dtype) -> TensorStructInfo:
    """TVM's ``TensorStructInfo(shape_expr, dtype)``: a ShapeExpr gives known dims; a
    shape-typed variable becomes the tensor's ``shape_var``."""
    if isinstance(shape_arg, ShapeExpr):
        return TensorStructInfo(tuple(shape_arg.values), dtype)
    ssi = getattr(shape_arg, "struct_info", None)
    if isinstance(shape_arg, Var):
        ndim = ssi.ndim if isinstance(ssi, ShapeStructInfo) else -1
        return TensorStructInfo(None, dtype, ndim, shape_arg)
    if isinstance(ssi, ShapeStructInfo):
        if ssi.values is not None:
            return TensorStructInfo(tuple(ssi.values), dtype)
        return TensorStructInfo(None, dtype, ssi.ndim)
    return TensorStructInfo(None, dtype, -1)


# --------------------------------------------------------------------------- dtypes
def is_float(dtype: str) -> bool:
    return dtype.startswith("float") or dtype.startswith("bfloat")


def is_int_dtype(dtype: str) -> bool:
    return dtype.startswith("int") or dtype.startswith("uint")


def require_float(call: Call, si: TensorStructInfo, what: str = "the input tensor"):
    if si.dtype is not None and not is_float(si.dtype):
        fail(call, f"requires {what} to have a float dtype, but its dtype is {si.dtype}")


def element_dtype(si):
    if isinstance(si, PrimStructInfo):
        return si.dtype
    if isinstance(si, TensorStructInfo):
        return si.dtype
    return None


def binary_out_dtype(call: Call, lhs, rhs):
    """TVM's InferBinaryArithOpOutDtype: unknown stays unknown, else both must match
    (a bool operand is exempt); the result has the LHS dtype."""
    ld, rd = element_dtype(lhs), element_dtype(rhs)
    if ld is None or rd is None:
        for side, si in (("LHS", lhs), ("RHS", rhs)):
            if not isinstance(si, (TensorStructInfo, PrimStructInfo)):
                fail(call, f"binary operators need tensor or primitive operands, but the {side} has type {fmt_sinfo(si)}")
        return None
    if ld != rd and ld != "bool" and rd != "bool":
        fail(call, f"binary operators must have the same dtype for both operands, "
                   f"but the LHS is {ld} and the RHS is {rd}")
    return ld


# --------------------------------------------------------------------------- axes
def normalize_axes(call: Call, ndim: int, axes) -> list:
    seen = set()
    out = []
    for axis in axes:
        if axis < -ndim or axis >= ndim:
            fail(call, f"axis {axis} is out of range for a tensor of {ndim} dimensions "
                       f"(expected [{-ndim}, {ndim}))")
        a = axis + ndim if axis < 0 else axis
        if a in seen:
            fail(call, f"the axes must not repeat, but axis {a} appears twice")
        seen.add(a)
        out.append(a)
    return out


def normalize_axis(call: Call, ndim: int, axis: int) -> int:
    return normalize_axes(call, ndim, [axis])[0]


# --------------------------------------------------------------------------- broadcasting
def broadcast_shapes(call: Call, s1, s2):
    """Broadcast two known shapes. Returns the shape, or None when it cannot be decided
    symbolically (TVM then falls back to a rank-only result); conflicts raise."""
    n1, n2 = len(s1), len(s2)
    out = []
    for i in range(1, min(n1, n2) + 1):
        d0, d1 = s1[n1 - i], s2[n2 - i]
        if arith.is_static(d0) and d0 == 1:
            out.append(d1)
        elif arith.is_static(d1) and d1 == 1:
            out.append(d0)
        elif arith.provably_equal(d0, d1):
            out.append(d0)
        elif arith.is_static(d0) and arith.is_static(d1):
            fail(call, f"the first input shape at dim {n1 - i} is {d0} and the second input shape "
                       f"at dim {n2 - i} is {d1}, which are not broadcastable")
        else:
            return None
    longer = s1 if n1 > n2 else s2
    for i in range(min(n1, n2) + 1, max(n1, n2) + 1):
        out.append(longer[max(n1, n2) - i])
    return tuple(reversed(out))


# --------------------------------------------------------------------------- layouts
def parse_layout(call: Call, layout: str, target: str, what: str) -> list | None:
    """Permutation ``perm`` with ``layout[perm[i]] == target[i]``; None for a packed
    (sub-indexed) layout byocc cannot convert. Raises if not convertible."""
    perm = _layout_perm(layout, target)
    if perm is False:
        fail(call, f"requires the {what} layout to be convertible from {target}, "
                   f"but the given layout {layout} is not")
    return None if perm is None else list(perm)


@lru_cache(maxsize=256)
def _layout_perm(layout: str, target: str) -> tuple | None | bool:
    """:func:`parse_layout`'s answer for two layout strings (False: not convertible)."""
    if not layout.isalpha() or not layout.isupper():
        return None
    if sorted(layout) != sorted(target):
        return False
    return tuple(layout.index(c) for c in target)


def check_ndim_for_layout(call: Call, si: TensorStructInfo, layout: str):
    if si.ndim != -1 and si.ndim != len(layout):
        fail(call, f"layout {layout} requires a {len(layout)}-dim input, but the given input has ndim {si.ndim}")


def to_layout(values, perm):
    """Reorder ``values`` (in the tensor's own layout) into the target layout."""
    return [values[p] for p in perm]


def from_layout(values, perm):
    """Inverse of :func:`to_layout`: target-layout values back into the tensor layout."""
    out = [None] * len(perm)
    for i, p in enumerate(perm):
        out[p] = values[i]
    return out
