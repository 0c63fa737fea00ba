"""Quantisation: quantize, dequantize (TVM's tensor/qdq)."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import arith

from .common import fail
from .common import tensor_args
from .common import with_dtype
from .registry import AttrField
from .registry import define

_PARAM_OK_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float16")


def _check_params(call: Call, data, scale, zp):
    """The scale's and zero point's dtypes, the axis, and their shapes against the data's."""
    if scale.dtype not in ("float32", "float16"):
        fail(call, f"the scale must be float16 or float32, but it is {scale.dtype}")
    if zp.dtype not in _PARAM_OK_DTYPES:
        fail(call, f"the zero_point dtype must be one of {list(_PARAM_OK_DTYPES)}, but it is {zp.dtype}")
    axis = call.attrs.axis
    a = data.ndim + axis if axis < 0 else axis
    if data.ndim > 0 and not 0 <= a < data.ndim:
        fail(call, f"axis {axis} is out of range")

    def scalar_like(t):
        if t.ndim == 0:
            return True
        return t.shape is not None and len(t.shape) > 0 and all(arith.provably_equal(d, 1) for d in t.shape)

    for t, name in ((scale, "scale"), (zp, "zero_point")):
        if data.ndim == 0:
            if not scalar_like(t):
                fail(call, "scale and zero_point must be scalars or singleton tensors for a rank-0 input")
        elif not scalar_like(t) and t.shape is not None and data.shape is not None:
            if not arith.provably_equal(t.shape[0], data.shape[a]):
                fail(call, f"the input shape at dim {axis} is {data.shape[a]}, but the size of "
                           f"{name} is {t.shape[0]}")


def infer_dequantize(call: Call):
    out_dtype = call.attrs.out_dtype
    if out_dtype not in ("float16", "float32"):
        fail(call, f"unsupported output dtype {out_dtype} (expected float16 or float32)")
    data, scale, zp = tensor_args(call, ("data", "scale", "zero_point"))
    if data.dtype is None or scale.dtype is None or zp.dtype is None:
        return with_dtype(data, None)
    if data.dtype not in ("int8", "uint8", "int16", "uint16", "int32", "float8_e4m3fn", "float8_e5m2",
                          "float16", "float32"):
        fail(call, f"unsupported input dtype {data.dtype}")
    _check_params(call, data, scale, zp)
    return with_dtype(data, out_dtype)


def infer_quantize(call: Call):
    out_dtype = call.attrs.out_dtype
    if out_dtype not in ("int8", "uint8", "int16", "uint16", "float8_e4m3fn", "float8_e5m2"):
        fail(call, f"unsupported output dtype {out_dtype}")
    data, scale, zp = tensor_args(call, ("data", "scale", "zero_point"))
    if data.dtype is None or scale.dtype is None or zp.dtype is None:
        return with_dtype(data, None)
    if data.dtype not in ("float16", "float32"):
        fail(call, f"the input must be float16 or float32, but it is {data.dtype}")
    _check_params(call, data, scale, zp)
    return with_dtype(data, out_dtype)


QDQ_ARGS = ("data", "scale", "zero_point")
define("relax.quantize", args=QDQ_ARGS, params=QDQ_ARGS + ("axis", "out_dtype"),
       attrs=(AttrField("out_dtype", "int8", "dtype"), AttrField("axis", -1, "int")), infer=infer_quantize)
define("relax.dequantize", args=QDQ_ARGS, params=QDQ_ARGS + ("axis", "out_dtype"),
       attrs=(AttrField("out_dtype", "float32", "dtype"), AttrField("axis", -1, "int")), infer=infer_dequantize)
