"""``relax.where`` (TVM's tensor/search). argmax/argmin live with the reductions."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import TensorStructInfo

from .common import binary_out_dtype
from .common import broadcast_shapes
from .common import fail
from .common import tensor_args
from .registry import define


def infer_where(call: Call):
    cond, x1, x2 = tensor_args(call, ("condition", "x1", "x2"))
    if cond.dtype is not None and cond.dtype != "bool":
        fail(call, f"requires the condition to have dtype bool, but it has dtype {cond.dtype}")
    dtype = binary_out_dtype(call, x1, x2)
    ndim = -1 if -1 in (cond.ndim, x1.ndim, x2.ndim) else max(cond.ndim, x1.ndim, x2.ndim)
    if cond.shape is not None and x1.shape is not None and x2.shape is not None:
        out = broadcast_shapes(call, x1.shape, x2.shape)
        if out is not None:
            out = broadcast_shapes(call, cond.shape, out)
        if out is None:
            return TensorStructInfo(None, dtype, ndim)
        return TensorStructInfo(out, dtype)
    if cond.shape_var is not None and cond.shape_var is x1.shape_var and cond.shape_var is x2.shape_var:
        return TensorStructInfo(None, dtype, cond.ndim, cond.shape_var)
    return TensorStructInfo(None, dtype, ndim)


define("relax.where", args=("condition", "x1", "x2"), infer=infer_where)
