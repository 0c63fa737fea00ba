"""Reductions: sum, mean, max, min, prod, std, variance (TVM's tensor/statistical)."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import TensorStructInfo

from .common import check_num_args
from .common import normalize_axes
from .common import tensor_arg
from .registry import AttrField
from .registry import define


def infer_statistical(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    axis, keepdims = call.attrs.axis, call.attrs.keepdims
    axes = normalize_axes(call, si.ndim, axis) if si.ndim != -1 and axis is not None else []
    if keepdims:
        out_ndim = si.ndim
    elif axis is None:
        out_ndim = 0
    elif si.ndim == -1:
        out_ndim = -1
    else:
        out_ndim = si.ndim - len(axes)
    if si.shape is None:
        if axis is None and keepdims and out_ndim != -1:
            return TensorStructInfo((1,) * out_ndim, si.dtype)
        if out_ndim == 0:
            return TensorStructInfo((), si.dtype)
        return TensorStructInfo(None, si.dtype, out_ndim)
    out = []
    for i, d in enumerate(si.shape):
        if axis is not None and i not in axes:
            out.append(d)
        elif keepdims:
            out.append(1)
    return TensorStructInfo(tuple(out), si.dtype)


STAT_ATTRS = (AttrField("axis", None, "opt_ints"), AttrField("keepdims", False, "bool"))

for _n in ("sum", "mean", "max", "min", "prod", "std", "variance", "median"):
    define("relax." + _n, args=("x",), attrs=STAT_ATTRS, infer=infer_statistical)


def infer_arg(call: Call):
    """argmax/argmin: one optional axis, int64 result."""
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    axis, keepdims = call.attrs.axis, call.attrs.keepdims
    if si.ndim == -1:
        return TensorStructInfo(None, "int64", si.ndim if keepdims else -1)
    ax = normalize_axes(call, si.ndim, [axis])[0] if axis is not None else None
    if si.shape is None:
        if keepdims:
            return TensorStructInfo(None, "int64", si.ndim)
        return TensorStructInfo((), "int64") if ax is None else TensorStructInfo(None, "int64", si.ndim - 1)
    out = []
    for i, d in enumerate(si.shape):
        if ax is not None and i != ax:
            out.append(d)
        elif keepdims:
            out.append(1)
    return TensorStructInfo(tuple(out), "int64")


for _n in ("argmax", "argmin"):
    define("relax." + _n, args=("x",), attrs=(AttrField("axis", None, "opt_int"), AttrField("keepdims", False, "bool")),
           infer=infer_arg)
