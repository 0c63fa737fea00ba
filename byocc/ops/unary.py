"""Element-wise unary operators (TVM's tensor/unary, datatype) and ``clip``."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import PrimStructInfo

from .common import check_num_args
from .common import fail
from .common import fmt_sinfo
from .common import require_float
from .common import sinfo_of
from .common import tensor_arg
from .common import with_dtype
from .registry import AttrField
from .registry import define


def unary_infer(require_float_dtype: bool, out_dtype: str | None = None):
    """Result = the input's struct info (shape kept as is), dtype optionally replaced."""

    def infer(call: Call):
        check_num_args(call, 1)
        si = tensor_arg(call, 0, "x")
        if require_float_dtype:
            require_float(call, si)
        return with_dtype(si, out_dtype) if out_dtype else si

    return infer


FLOAT_ONLY = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "log",
              "rsqrt", "sigmoid", "sin", "sinh", "sqrt", "tan", "tanh", "erf")
ANY_DTYPE = ("abs", "bitwise_not", "ceil", "floor", "logical_not", "negative", "round", "sign",
             "square", "trunc")
CHECKS = ("isfinite", "isinf", "isnan")

for _n in FLOAT_ONLY:
    define("relax." + _n, args=("x",), infer=unary_infer(True))
for _n in ANY_DTYPE:
    define("relax." + _n, args=("x",), infer=unary_infer(False))
for _n in CHECKS:
    define("relax." + _n, args=("x",), infer=unary_infer(False, "bool"))


def infer_clip(call: Call):
    check_num_args(call, 3)
    si = tensor_arg(call, 0, "x")
    for i, name in ((1, "min"), (2, "max")):
        bound = sinfo_of(call.args[i])
        if not isinstance(bound, PrimStructInfo):
            fail(call, f"requires {name} to be a primitive value, but it has type {fmt_sinfo(bound)}")
    return si


define("relax.clip", args=("x", "min", "max"), infer=infer_clip,
       arg_kinds={"min": "prim", "max": "prim"})


def infer_astype(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "x")
    return with_dtype(si, call.attrs.dtype)


define("relax.astype", args=("x",), attrs=(AttrField("dtype", kind="dtype"),), infer=infer_astype)


def infer_wrap_param(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "data")
    return with_dtype(si, call.attrs.dtype)


define("relax.wrap_param", args=("data",), attrs=(AttrField("dtype", "float32", "dtype"),),
       infer=infer_wrap_param)

