"""Tensor creation: zeros, ones, full and the ``*_like`` forms, tril/triu (TVM's tensor/create)."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo

from .common import check_num_args
from .common import fail
from .common import fmt_sinfo
from .common import sinfo_of
from .common import tensor_arg
from .common import tensor_from_shape_expr
from .common import with_dtype
from .registry import AttrField
from .registry import define


def _shape_arg(call: Call, i: int):
    si = sinfo_of(call.args[i])
    if not isinstance(si, ShapeStructInfo):
        fail(call, f"requires the shape argument to be a shape, but it has type {fmt_sinfo(si)}")
    return si


def infer_zeros_ones(call: Call):
    check_num_args(call, 1)
    _shape_arg(call, 0)
    return tensor_from_shape_expr(call.args[0], call.attrs.dtype)


def infer_like(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    return si if call.attrs.dtype is None else with_dtype(si, call.attrs.dtype)


def infer_full(call: Call):
    check_num_args(call, 2)
    _shape_arg(call, 0)
    fill = sinfo_of(call.args[1])
    if not isinstance(fill, TensorStructInfo) or fill.ndim not in (-1, 0):  # -1: unknown rank
        fail(call, f"requires the fill value to be a rank-0 tensor, but it has type {fmt_sinfo(fill)}")
    dtype = call.attrs.dtype if call.attrs.dtype is not None else fill.dtype
    return tensor_from_shape_expr(call.args[0], dtype)


def infer_full_like(call: Call):
    check_num_args(call, 2)
    si = tensor_arg(call, 0, "x")
    fill = tensor_arg(call, 1, "fill_value")
    if fill.ndim not in (-1, 0):
        fail(call, f"requires the fill value to be a rank-0 tensor, but it has ndim {fill.ndim}")
    return si if call.attrs.dtype is None else with_dtype(si, call.attrs.dtype)


for _n in ("zeros", "ones"):
    define("relax." + _n, args=("shape",), attrs=(AttrField("dtype", kind="dtype"),),
           arg_kinds={"shape": "shape"}, infer=infer_zeros_ones)
    define(f"relax.{_n}_like", args=("x",), attrs=(AttrField("dtype", None, "opt_dtype"),), infer=infer_like)
define("relax.full", args=("shape", "fill_value"), attrs=(AttrField("dtype", None, "opt_dtype"),),
       arg_kinds={"shape": "shape"}, infer=infer_full)
define("relax.full_like", args=("x", "fill_value"), attrs=(AttrField("dtype", None, "opt_dtype"),),
       infer=infer_full_like)


def infer_tril_triu(call: Call):
    check_num_args(call, 2)
    si = tensor_arg(call, 0, "x")
    if si.ndim != -1 and si.ndim < 2:
        fail(call, f"requires the input to have at least 2 dimensions, but it has {si.ndim}")
    return si


for _n in ("tril", "triu"):
    define("relax." + _n, args=("x", "k"), arg_kinds={"k": "prim"}, arg_defaults={"k": 0},
           infer=infer_tril_triu)
