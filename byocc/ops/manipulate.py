"""Shape manipulation: reshape, permute_dims, expand_dims, squeeze, flatten, concat, split,
broadcast_to, repeat, tile, stack (TVM's tensor/manipulate)."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import arith
from byocc.ir.prim import PrimMinMax

from .common import check_num_args
from .common import fail
from .common import fmt_sinfo
from .common import normalize_axes
from .common import normalize_axis
from .common import shape_values
from .common import sinfo_of
from .common import tensor_arg
from .common import tensor_from_shape_expr
from .registry import AttrField
from .registry import define


# --------------------------------------------------------------------------- reshape
def prepare_reshape(args, span):
    """TVM's ConvertNewShapeToExpr: ``0`` copies the input dim, one ``-1`` is inferred."""
    if len(args) != 2 or not isinstance(args[1], ShapeExpr):
        return args
    values = list(args[1].values)
    minus = [i for i, v in enumerate(values) if arith.is_static(v) and v == -1]
    zeros = [i for i, v in enumerate(values) if arith.is_static(v) and v == 0]
    if not minus and not zeros:
        return args
    from byocc.ir import TypeInferenceError

    if len(minus) > 1:
        raise TypeInferenceError("R.reshape accepts at most one -1 in the new shape", span)
    data = sinfo_of(args[0])
    old = shape_values(data) if isinstance(data, TensorStructInfo) else None
    if old is None:
        raise TypeInferenceError("R.reshape needs the input's shape to infer -1 or 0 in the new shape", span)
    for i in zeros:
        values[i] = old[i]
    if minus:
        known = 1
        for i, v in enumerate(values):
            if i not in minus:
                known = arith.mul(known, v)
        values[minus[0]] = arith.simplify_dim(arith.floordiv(arith.product(old), known))
    return (args[0], ShapeExpr(tuple(values), args[1].span))


def infer_reshape(call: Call):
    check_num_args(call, 2)
    data = sinfo_of(call.args[0])
    new = sinfo_of(call.args[1])
    if not isinstance(data, TensorStructInfo):
        fail(call, f"requires the input data to be a tensor, but it has type {fmt_sinfo(data)}")
    if not isinstance(new, ShapeStructInfo):
        fail(call, f"requires the new shape to be a shape, but it has type {fmt_sinfo(new)}")
    old = shape_values(data)
    if new.values is not None and old is not None:
        p_new, p_old = arith.product(new.values), arith.product(old)
        if arith.provably_different(arith.simplify_dim(p_new), arith.simplify_dim(p_old)):
            fail(call, f"the new shape {list(new.values)} (product {p_new}) is not convertible from "
                       f"the old shape {list(old)} (product {p_old})")
    target = call.args[1]
    if isinstance(target, Var) and new.values is not None:
        return TensorStructInfo(tuple(new.values), data.dtype)
    return tensor_from_shape_expr(target, data.dtype)


define("relax.reshape", args=("x", "shape"), arg_kinds={"shape": "shape"}, infer=infer_reshape,
       prepare=prepare_reshape)


# --------------------------------------------------------------------------- permute_dims
def infer_permute_dims(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    axes = call.attrs.axes
    if axes is None and si.ndim == -1:
        return TensorStructInfo(None, si.dtype, -1)
    if axes is not None and si.ndim != -1 and len(axes) != si.ndim:
        fail(call, f"expects the number of axes to equal the input's ndim, but the ndim is {si.ndim} "
                   f"and {len(axes)} axes were given")
    perm = normalize_axes(call, si.ndim, axes) if axes is not None else list(range(si.ndim - 1, -1, -1))
    if perm == list(range(len(perm))):
        return si
    if si.shape is None:
        return TensorStructInfo(None, si.dtype, si.ndim)
    return TensorStructInfo(tuple(si.shape[a] for a in perm), si.dtype)


define("relax.permute_dims", args=("x",), attrs=(AttrField("axes", None, "opt_ints"),),
       infer=infer_permute_dims)


# --------------------------------------------------------------------------- expand/squeeze/flatten
def infer_expand_dims(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    axis = call.attrs.axis
    if not axis:
        return si
    if si.ndim == -1:
        return TensorStructInfo(None, si.dtype, -1)
    out_ndim = si.ndim + len(axis)
    axes = normalize_axes(call, out_ndim, axis)
    if si.shape is None:
        return TensorStructInfo(None, si.dtype, out_ndim)
    it = iter(si.shape)
    return TensorStructInfo(tuple(1 if i in axes else next(it) for i in range(out_ndim)), si.dtype)


define("relax.expand_dims", args=("x",), attrs=(AttrField("axis", kind="ints"),), infer=infer_expand_dims)


def infer_squeeze(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    axis = call.attrs.axis
    if axis is not None and len(axis) == 0:
        return si
    if si.ndim == -1:
        return TensorStructInfo(None, si.dtype, -1)
    shape = shape_values(si)
    remove = [False] * si.ndim
    if axis is not None:
        axes = normalize_axes(call, si.ndim, axis)
        if shape is None:
            return TensorStructInfo(None, si.dtype, si.ndim - len(axes))
        for a in axes:
            if not arith.is_static(shape[a]) or shape[a] == 1:
                remove[a] = True
    else:
        if shape is None:
            return TensorStructInfo(None, si.dtype, -1)
        for i, d in enumerate(shape):
            if not arith.is_static(d):
                return TensorStructInfo(None, si.dtype, -1)
            if d == 1:
                remove[i] = True
    out = tuple(d for i, d in enumerate(shape) if not remove[i])
    if si.shape is None:  # shaped by a variable
        if len(out) == si.ndim:
            return si
        return TensorStructInfo(None, si.dtype, len(out) if axis is not None else -1)
    return TensorStructInfo(out, si.dtype)


define("relax.squeeze", args=("x",), attrs=(AttrField("axis", None, "opt_ints"),), infer=infer_squeeze)


def infer_flatten(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    if si.ndim == -1:
        return TensorStructInfo(None, si.dtype, 1)
    if si.ndim == 0:
        return TensorStructInfo((1,), si.dtype)
    if si.ndim == 1:
        return si
    if si.shape is None:
        return TensorStructInfo(None, si.dtype, 1)
    return TensorStructInfo((arith.product(si.shape),), si.dtype)


define("relax.flatten", args=("x",), infer=infer_flatten)


# --------------------------------------------------------------------------- concat / stack
def _tuple_tensors(call: Call):
    tsi = sinfo_of(call.args[0])
    if not isinstance(tsi, TupleStructInfo):
        fail(call, f"expects a tuple of tensors, but the input has type {fmt_sinfo(tsi)}")
    for f in tsi.fields:
        if not isinstance(f, TensorStructInfo):
            fail(call, f"expects a tuple of tensors, but the input has type {fmt_sinfo(tsi)}")
    if not tsi.fields:
        fail(call, "expects at least one tensor in the input tuple, but the tuple is empty")
    return list(tsi.fields)


def _common_dtype(call: Call, tys, what: str):
    dtype, void = None, False
    for t in tys:
        if t.dtype is None:
            void = True
        elif dtype is None:
            dtype = t.dtype
        elif t.dtype != dtype:
            fail(call, f"expects all input tensors to have the same dtype, but got {dtype} and {t.dtype}")
    return None if void else dtype


def infer_concat(call: Call):
    check_num_args(call, 1)
    tys = _tuple_tensors(call)
    axis_attr = call.attrs.axis
    out_ndim = -1 if axis_attr is not None else 1
    dtype = _common_dtype(call, tys, "concat")
    unknown = False
    shapes = []
    for t in tys:
        if out_ndim == -1:
            out_ndim = t.ndim
        elif t.ndim != -1 and t.ndim != out_ndim:
            fail(call, f"expects all input tensors to have the same ndim, but got {out_ndim} and {t.ndim}")
        if t.shape is not None:
            shapes.append(t.shape)
            continue
        unknown = True
        sv = shape_values(t)
        if sv is not None:
            shapes.append(sv)
    if out_ndim == -1:
        return tys[0] if len(tys) == 1 else TensorStructInfo(None, dtype, -1)
    axis = normalize_axis(call, out_ndim, axis_attr) if axis_attr is not None else 0
    if len(tys) == 1:
        return tys[0]
    if not shapes:
        return TensorStructInfo(None, dtype, out_ndim)
    first = shapes[0][axis]
    if all(s[axis] == first for s in shapes):
        total = arith.mul(first, len(shapes))
    else:
        total = 0
        for s in shapes:
            total = arith.add(total, s[axis])
    for d in range(len(shapes[0])):
        if d == axis:
            continue
        for s in shapes[1:]:
            if arith.provably_different(s[d], shapes[0][d]):
                fail(call, f"expects the input tensors to have the same shape on every dimension except the "
                           f"concatenation axis, but dimension {d} is {shapes[0][d]} and {s[d]}")
            if not arith.provably_equal(s[d], shapes[0][d]):
                unknown = True
    if unknown:
        return TensorStructInfo(None, dtype, out_ndim)
    out = list(shapes[0])
    out[axis] = total
    return TensorStructInfo(tuple(out), dtype)


define("relax.concat", args=("tensors",), attrs=(AttrField("axis", 0, "opt_int"),),
       arg_kinds={"tensors": "tuple"}, infer=infer_concat)


def infer_stack(call: Call):
    check_num_args(call, 1)
    tys = _tuple_tensors(call)
    dtype = _common_dtype(call, tys, "stack")
    out_ndim = tys[0].ndim + 1 if tys[0].ndim != -1 else -1
    for t in tys:
        if t.ndim != -1 and t.ndim != tys[0].ndim:
            fail(call, f"expects all input tensors to have the same ndim, but got {tys[0].ndim} and {t.ndim}")
    if out_ndim == -1:
        return TensorStructInfo(None, dtype, -1)
    axis = normalize_axis(call, out_ndim, call.attrs.axis if call.attrs.axis is not None else 0)
    if any(t.shape is None for t in tys):
        return TensorStructInfo(None, dtype, out_ndim)
    for s in tys[1:]:
        for d in range(len(s.shape)):
            if arith.provably_different(s.shape[d], tys[0].shape[d]):
                fail(call, "expects all input tensors to have the same shape")
            if not arith.provably_equal(s.shape[d], tys[0].shape[d]):
                return TensorStructInfo(None, dtype, out_ndim)
    out = list(tys[0].shape)
    out.insert(axis, len(tys))
    return TensorStructInfo(tuple(out), dtype)


define("relax.stack", args=("tensors",), attrs=(AttrField("axis", 0, "opt_int"),),
       arg_kinds={"tensors": "tuple"}, infer=infer_stack)


# --------------------------------------------------------------------------- split
def _clamp(v, hi):
    """``min(max(v, 0), hi)`` with TVM's folding on ints."""
    if arith.is_static(v) and arith.is_static(hi):
        return min(max(v, 0), hi)
    if arith.is_static(v) and v <= 0:
        return 0
    return PrimMinMax("min", v if not arith.is_static(v) or v >= 0 else 0, hi)


def infer_split(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    ios = call.attrs.indices_or_sections
    axis = -1 if si.ndim == -1 else normalize_axis(call, si.ndim, call.attrs.axis)
    shape = si.shape
    if isinstance(ios, tuple):
        if not ios:
            return si
        if shape is None:
            return TupleStructInfo(tuple(TensorStructInfo(None, si.dtype, si.ndim) for _ in range(len(ios) + 1)))
        dim = shape[axis]
        fields = []
        for i in range(len(ios) + 1):
            left = 0 if i == 0 else ios[i - 1]
            right = ios[i] if i < len(ios) else dim
            left, right = _clamp(left, dim), _clamp(right, dim)
            length = arith.simplify_dim(arith.sub(right, left))
            if arith.is_static(length):
                length = max(length, 0)
            out = list(shape)
            out[axis] = length
            fields.append(TensorStructInfo(tuple(out), si.dtype))
        return TupleStructInfo(tuple(fields))
    n = ios
    if n <= 0:
        fail(call, f"expects a positive number of sections, but got {n}")
    if n == 1:
        return si
    if shape is None:
        return TupleStructInfo(tuple(TensorStructInfo(None, si.dtype, si.ndim) for _ in range(n)))
    dim = shape[axis]
    if arith.is_static(dim):
        part = -(-dim // n)
        last = dim - part * (n - 1)
    else:
        part = arith.simplify_dim(arith.floordiv(arith.add(dim, n - 1), n))
        last = arith.simplify_dim(arith.sub(dim, arith.mul(part, n - 1)))
    out = list(shape)
    out[axis] = part
    fields = [TensorStructInfo(tuple(out), si.dtype)] * (n - 1)
    out[axis] = last
    fields.append(TensorStructInfo(tuple(out), si.dtype))
    return TupleStructInfo(tuple(fields))


def _normalize_split(attrs, span):
    from byocc.ir import TypeInferenceError

    ios = attrs["indices_or_sections"]
    if not isinstance(ios, tuple) and ios <= 0:
        raise TypeInferenceError(f"R.split expects a positive number of sections, but got {ios}", span)
    return attrs


define("relax.split", args=("x",),
       attrs=(AttrField("indices_or_sections", kind="int_or_ints"), AttrField("axis", 0, "int")),
       infer=infer_split, normalize=_normalize_split)


# --------------------------------------------------------------------------- broadcast_to, repeat, tile
def infer_broadcast_to(call: Call):
    check_num_args(call, 2)
    data = sinfo_of(call.args[0])
    tgt = sinfo_of(call.args[1])
    if not isinstance(data, TensorStructInfo):
        fail(call, f"requires the input data to be a tensor, but it has type {fmt_sinfo(data)}")
    if not isinstance(tgt, ShapeStructInfo):
        fail(call, f"requires the target shape to be a shape, but it has type {fmt_sinfo(tgt)}")
    if data.ndim != -1 and tgt.ndim != -1 and tgt.ndim < data.ndim:
        fail(call, f"expects the target shape to have at least as many dimensions as the input "
                   f"({data.ndim}), but it has {tgt.ndim}")
    old = shape_values(data)
    if old is not None and tgt.values is not None:
        n_old, n_tgt = len(old), len(tgt.values)
        for i in range(n_old):
            o, t = old[n_old - i - 1], tgt.values[n_tgt - i - 1]
            if arith.is_static(o) and o == 1:
                continue
            if arith.provably_different(o, t):
                fail(call, f"the input shape is not broadcastable to the target shape: target dim "
                           f"{n_tgt - i - 1} is {t} while input dim {n_old - i - 1} is {o}")
    return tensor_from_shape_expr(call.args[1], data.dtype)


define("relax.broadcast_to", args=("x", "shape"), arg_kinds={"shape": "shape"}, infer=infer_broadcast_to)


def infer_repeat(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "data")
    repeats, axis = call.attrs.repeats, call.attrs.axis
    if axis is not None and si.ndim != -1 and not -si.ndim <= axis < si.ndim:
        fail(call, f"axis {axis} is out of range for a tensor of {si.ndim} dimensions")
    if si.shape is None:
        if axis is not None:
            return si if repeats == 1 else TensorStructInfo(None, si.dtype, si.ndim)
        return TensorStructInfo(None, si.dtype, 1)
    if axis is None:
        return TensorStructInfo((arith.simplify_dim(arith.mul(arith.product(si.shape), repeats)),), si.dtype)
    a = normalize_axis(call, si.ndim, axis)
    out = list(si.shape)
    out[a] = arith.simplify_dim(arith.mul(out[a], repeats))
    return TensorStructInfo(tuple(out), si.dtype)


define("relax.repeat", args=("data",),
       attrs=(AttrField("repeats", kind="int"), AttrField("axis", None, "opt_int")), infer=infer_repeat)


def infer_tile(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "data")
    reps = call.attrs.repeats
    if si.ndim == -1:
        return TensorStructInfo(None, si.dtype, -1)
    out_ndim = max(si.ndim, len(reps))
    if si.shape is None:
        return TensorStructInfo(None, si.dtype, out_ndim)
    shape = (1,) * (out_ndim - si.ndim) + tuple(si.shape)
    reps = (1,) * (out_ndim - len(reps)) + tuple(reps)
    return TensorStructInfo(tuple(arith.simplify_dim(arith.mul(d, r)) for d, r in zip(shape, reps)), si.dtype)


define("relax.tile", args=("data",), attrs=(AttrField("repeats", kind="ints"),), infer=infer_tile)
