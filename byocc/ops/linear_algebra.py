"""``relax.matmul`` (TVM's tensor/linear_algebra)."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import TensorStructInfo
from byocc.ir import arith

from .common import binary_out_dtype
from .common import broadcast_shapes
from .common import fail
from .common import tensor_args
from .registry import AttrField
from .registry import define


def infer_matmul(call: Call):
    x1, x2 = tensor_args(call, ("x1", "x2"))
    out_dtype = call.attrs.out_dtype if call.attrs.out_dtype is not None else binary_out_dtype(call, x1, x2)
    if x1.ndim == -1 or x2.ndim == -1:
        return TensorStructInfo(None, out_dtype, -1)
    n1, n2 = x1.ndim, x2.ndim
    if n1 == 0 or n2 == 0:
        side = "LHS" if n1 == 0 else "RHS"
        fail(call, f"matmul operands must not be scalars, but the {side} is a zero-dimensional tensor")
    pre1 = 1 if n1 == 1 else 0
    app2 = 1 if n2 == 1 else 0
    n1, n2 = max(n1, 2), max(n2, 2)
    out_ndim = max(n1, n2) - pre1 - app2
    s1, s2 = x1.shape, x2.shape
    if s1 is None or s2 is None:
        return TensorStructInfo(None, out_dtype, out_ndim)
    prefix1 = s1[: len(s1) - 2 + pre1]
    prefix2 = s2[: len(s2) - 2 + app2]
    prefix = broadcast_shapes(call, prefix1, prefix2)
    if prefix is None:
        return TensorStructInfo(None, out_dtype, out_ndim)
    red1 = s1[-1]
    red2 = s2[n2 - 2] if not app2 else s2[0]
    if arith.provably_different(red1, red2):
        fail(call, f"matmul requires the reduction length of the operands to be equal, but the LHS "
                   f"has shape {list(s1)} and the RHS has shape {list(s2)} ({red1} != {red2})")
    out = list(prefix)
    if not pre1:
        out.append(s1[n1 - 2])
    if not app2:
        out.append(s2[n2 - 1])
    return TensorStructInfo(tuple(out), out_dtype)


define("relax.matmul", args=("x1", "x2"), attrs=(AttrField("out_dtype", None, "opt_dtype"),),
       infer=infer_matmul)
