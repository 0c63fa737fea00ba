"""Element-wise binary operators with broadcasting (TVM's tensor/binary)."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import PrimStructInfo
from byocc.ir import TensorStructInfo

from .common import binary_out_dtype
from .common import broadcast_shapes
from .common import check_num_args
from .common import fail
from .common import fmt_sinfo
from .common import shape_values
from .common import sinfo_of
from .registry import define


def _infer_broadcast(call: Call, compare: bool):
    check_num_args(call, 2)
    lhs, rhs = sinfo_of(call.args[0]), sinfo_of(call.args[1])
    for side, si in (("LHS", lhs), ("RHS", rhs)):
        if not isinstance(si, (TensorStructInfo, PrimStructInfo)):
            fail(call, f"arguments must be tensors or primitive values, but the {side} has type {fmt_sinfo(si)}")
    dtype = binary_out_dtype(call, lhs, rhs)
    if compare:
        dtype = "bool"
    if isinstance(lhs, PrimStructInfo) and isinstance(rhs, PrimStructInfo):
        return PrimStructInfo(dtype)

    def ndim(si):
        return 1 if isinstance(si, PrimStructInfo) else si.ndim

    def shape(si):
        return (1,) if isinstance(si, PrimStructInfo) else shape_values(si)

    n1, n2 = ndim(lhs), ndim(rhs)
    out_ndim = -1 if n1 == -1 or n2 == -1 else max(n1, n2)
    s1, s2 = shape(lhs), shape(rhs)
    if s1 is not None and s2 is not None:
        out = broadcast_shapes(call, s1, s2)
        if out is not None:
            return TensorStructInfo(out, dtype)
    if (isinstance(lhs, TensorStructInfo) and isinstance(rhs, TensorStructInfo)
            and lhs.shape_var is not None and lhs.shape_var is rhs.shape_var):
        return TensorStructInfo(None, dtype, lhs.ndim, lhs.shape_var)
    return TensorStructInfo(None, dtype, out_ndim)


def infer_arith(call: Call):
    return _infer_broadcast(call, compare=False)


def infer_compare(call: Call):
    return _infer_broadcast(call, compare=True)


ARITH = ("add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum",
         "mod", "floor_mod", "log_add_exp", "atan2", "logical_and", "logical_or", "logical_xor",
         "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")

for _n in ARITH:
    define("relax." + _n, args=("x1", "x2"), infer=infer_arith)
for _n in COMPARE:
    define("relax." + _n, args=("x1", "x2"), infer=infer_compare)
