"""Indexing: take, strided_slice (TVM's tensor/index); gather_elements, gather_nd (TVM's
tensor/manipulate, the ONNX GatherElements/GatherND meaning)."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimBinary
from byocc.ir import PrimMinMax
from byocc.ir import PrimStructInfo
from byocc.ir import PrimValue
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo
from byocc.ir import arith

from .common import check_num_args
from .common import fail
from .common import fmt_sinfo
from .common import is_int_dtype
from .common import normalize_axes
from .common import normalize_axis
from .common import sinfo_of
from .common import tensor_arg
from .registry import AttrField
from .registry import define


def infer_take(call: Call):
    check_num_args(call, 2)
    data = tensor_arg(call, 0, "x")
    isi = sinfo_of(call.args[1])
    if isinstance(isi, PrimStructInfo):
        isi = TensorStructInfo((), isi.dtype)
    elif not isinstance(isi, TensorStructInfo):
        fail(call, f"requires the indices to be a tensor or a scalar value, but they have type {fmt_sinfo(isi)}")
    if isi.dtype is not None and not is_int_dtype(isi.dtype):
        fail(call, f"requires integer indices, but the indices have dtype {isi.dtype}")
    axis = call.attrs.axis
    if axis is None and data.ndim != 1:
        fail(call, f"expects a 1-dimensional input when axis is not given, but the input has ndim {data.ndim}")
    if data.ndim == -1 or isi.ndim == -1:
        return TensorStructInfo(None, data.dtype, -1)
    a = normalize_axis(call, data.ndim, axis) if axis is not None else 0
    if data.shape is None or isi.shape is None:
        return TensorStructInfo(None, data.dtype, isi.ndim + data.ndim - 1)
    out = []
    for i, d in enumerate(data.shape):
        if i == a:
            out.extend(isi.shape)
        else:
            out.append(d)
    return TensorStructInfo(tuple(out), data.dtype)


define("relax.take", args=("x", "indices"),
       attrs=(AttrField("axis", None, "opt_int"), AttrField("mode", "fast", "str")), infer=infer_take)


def _index_tensors(call: Call):
    data = tensor_arg(call, 0, "data")
    idx = tensor_arg(call, 1, "indices")
    if idx.dtype is not None and not is_int_dtype(idx.dtype):
        fail(call, f"requires integer indices, but the indices have dtype {idx.dtype}")
    return data, idx


def infer_gather_elements(call: Call):
    """TVM's InferStructInfoGatherElements: the indices' shape, the data's dtype; both of
    one rank, ``axis`` in it."""
    check_num_args(call, 2)
    data, idx = _index_tensors(call)
    if data.ndim != -1 and idx.ndim != -1 and data.ndim != idx.ndim:
        fail(call, f"requires the data and the indices to have the same rank, but they have "
                   f"{data.ndim} and {idx.ndim} dimensions")
    ndim = data.ndim if data.ndim != -1 else idx.ndim
    if ndim != -1:
        normalize_axis(call, ndim, call.attrs.axis)
    if idx.shape is None:
        return TensorStructInfo(None, data.dtype, ndim)
    return TensorStructInfo(tuple(idx.shape), data.dtype)


def infer_gather_nd(call: Call):
    """TVM's InferStructInfoGatherND: ``indices.shape[:-1] + data.shape[batch_dims + k:]``
    with ``k = indices.shape[-1]``; the first ``batch_dims`` dims of both agree."""
    check_num_args(call, 2)
    data, idx = _index_tensors(call)
    b = call.attrs.batch_dims
    if b < 0:
        fail(call, f"requires batch_dims >= 0, but it is {b}")
    if data.ndim == -1 or idx.ndim == -1 or idx.shape is None or data.shape is None:
        return TensorStructInfo(None, data.dtype, -1)
    if idx.ndim < 1 or data.ndim <= b or idx.ndim <= b:
        fail(call, f"requires indices of rank > batch_dims ({b}) and data of rank > batch_dims, but they "
                   f"have {idx.ndim} and {data.ndim} dimensions")
    k = arith.as_int(idx.shape[-1])
    if k is None:
        return TensorStructInfo(None, data.dtype, -1)
    if b + k > data.ndim:
        fail(call, f"the last dimension of the indices ({k}) plus batch_dims ({b}) exceeds the data's "
                   f"rank {data.ndim}")
    for i in range(b):
        if arith.provably_different(data.shape[i], idx.shape[i]):
            fail(call, f"requires the batch dimensions of the data and the indices to agree, but "
                       f"dimension {i} is {data.shape[i]} and {idx.shape[i]}")
    return TensorStructInfo(tuple(idx.shape[:-1]) + tuple(data.shape[b + k:]), data.dtype)


define("relax.gather_elements", args=("data", "indices"), attrs=(AttrField("axis", 0, "int"),),
       infer=infer_gather_elements)
define("relax.gather_nd", args=("data", "indices"), attrs=(AttrField("batch_dims", 0, "int"),),
       infer=infer_gather_nd)


def _prim_tuple(expr):
    """Values of a tuple of PrimValues (ints or symbolic dims), or None if unknown."""
    if isinstance(expr, Tuple):
        out = []
        for f in expr.fields:
            if not isinstance(f, PrimValue):
                return None
            out.append(f.value)
        return out
    return None


def _slice_length(begin, end, stride, dim, assume_inbound: bool):
    """topi::GetLength for known ints (Python slice semantics, clamped); a best effort
    for symbolic extents."""
    if all(arith.is_static(v) for v in (begin, end, stride, dim)):
        if stride == 0:
            return None
        return len(range(*slice(begin, end, stride).indices(dim)))
    if arith.is_static(begin) and arith.is_static(end) and arith.is_static(stride) and stride == 1:
        if begin == 0 and end >= 2**31 - 1:
            return dim
        if 0 <= begin <= end and assume_inbound:
            return end - begin
    if arith.is_static(stride) and stride == 1:
        return _symbolic_slice_length(begin, end, dim, assume_inbound)
    return None


def _symbolic_slice_length(begin, end, dim, assume_inbound: bool):
    """topi::GetLength with stride 1 and a symbolic index or extent, in the form TVM 0.27's
    simplifier prints: ``end - begin`` when in bounds is assumed; else each index clamped to
    the extent (``T.min(i, dim)``; 0 and ``dim`` itself stay) and ``dim - T.min(b, dim)``
    written ``T.max(dim - b, 0)`` (``dim - b`` when that is provably >= 0). None when an
    index may be negative (symbolic dims are sizes, never negative)."""
    if not (arith.provably_non_negative(begin) and arith.provably_non_negative(end)):
        return None
    if assume_inbound:
        return arith.simplify_dim(PrimBinary("-", end, begin))

    def clamp(i):
        if arith.is_static(i) and i == 0:
            return 0
        if arith.provably_equal(i, dim) or (arith.is_static(i) and i >= 2**31 - 1):
            return dim
        return PrimMinMax("min", i, dim)

    b, e = clamp(begin), clamp(end)
    if arith.is_static(b) and b == 0:
        return e
    if e is dim:
        rest = arith.simplify_dim(PrimBinary("-", dim, begin))
        if arith.provably_non_negative(rest):
            return rest
        return PrimMinMax("max", arith.simplify_binary("-", dim, begin), 0)
    return PrimBinary("-", e, b)


def infer_strided_slice(call: Call):
    check_num_args(call, (4, 5))
    data = sinfo_of(call.args[0])
    if not isinstance(data, TensorStructInfo):
        fail(call, f"requires the first argument to be a tensor, but it has type {fmt_sinfo(data)}")
    names = ("axes", "begin", "end", "strides")
    for i in range(1, len(call.args)):
        si = sinfo_of(call.args[i])
        ok = isinstance(si, ObjectStructInfo) or (
            isinstance(si, TupleStructInfo) and all(isinstance(f, PrimStructInfo) and f.dtype == "int64" for f in si.fields))
        if not ok:
            fail(call, f"requires the {names[i - 1]} argument to be a tuple of int64 values, "
                       f"but it has type {fmt_sinfo(si)}")
    axes = _prim_tuple(call.args[1])
    begin = _prim_tuple(call.args[2])
    end = _prim_tuple(call.args[3])
    strides = _prim_tuple(call.args[4]) if len(call.args) > 4 else ([1] * len(axes) if axes is not None else None)
    if data.shape is None or None in (axes, begin, end, strides):
        return TensorStructInfo(None, data.dtype, data.ndim)
    if not (len(axes) == len(begin) == len(end) == len(strides)):
        fail(call, "requires axes, begin, end and strides to have the same length, but they have "
                   f"{len(axes)}, {len(begin)}, {len(end)} and {len(strides)} elements")
    if any(not arith.is_static(a) for a in axes):
        return TensorStructInfo(None, data.dtype, data.ndim)
    norm = normalize_axes(call, data.ndim, axes)
    out = list(data.shape)
    for i, a in enumerate(norm):
        length = _slice_length(begin[i], end[i], strides[i], out[a], call.attrs.assume_inbound)
        if length is None:
            return TensorStructInfo(None, data.dtype, data.ndim)
        out[a] = length
    return TensorStructInfo(tuple(out), data.dtype)


define("relax.strided_slice", args=("x", "axes", "begin", "end", "strides"),
       attrs=(AttrField("assume_inbound", False, "bool"),),
       arg_kinds={"axes": "prim_tuple", "begin": "prim_tuple", "end": "prim_tuple", "strides": "prim_tuple"},
       arg_defaults={"strides": None}, infer=infer_strided_slice)
