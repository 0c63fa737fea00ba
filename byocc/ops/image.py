"""``relax.image.resize2d`` (TVM's image/resize)."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo

from .common import check_ndim_for_layout
from .common import check_num_args
from .common import fail
from .common import fmt_sinfo
from .common import from_layout
from .common import parse_layout
from .common import sinfo_of
from .common import tensor_arg
from .common import to_layout
from .convert import attr_float32_imms
from .registry import AttrField
from .registry import define


def infer_resize2d(call: Call):
    check_num_args(call, 2)
    data = tensor_arg(call, 0, "data")
    size = sinfo_of(call.args[1])
    if not isinstance(size, ShapeStructInfo):
        fail(call, f"requires the size to be a shape, but it has type {fmt_sinfo(size)}")
    if size.ndim != -1 and size.ndim != 2:
        fail(call, f"requires the size to have 2 values, but it has {size.ndim}")
    a = call.attrs
    perm = parse_layout(call, a.layout, "NCHW", "data")
    check_ndim_for_layout(call, data, a.layout)
    dtype = a.out_dtype if a.out_dtype is not None else data.dtype
    if data.shape is None or size.values is None or perm is None:
        return TensorStructInfo(None, dtype, len(a.layout))
    nchw = to_layout(list(data.shape), perm)
    nchw[2], nchw[3] = size.values
    return TensorStructInfo(tuple(from_layout(nchw, perm)), dtype)


def _normalize_resize(attrs, span):
    if attrs["roi"] is None:  # TVM's Python wrapper fills the default region
        attrs["roi"] = attr_float32_imms((0.0, 0.0, 0.0, 0.0))
    return attrs


define("relax.image.resize2d", args=("data", "size"), arg_kinds={"size": "shape"},
       attrs=(AttrField("roi", None, "float32_imms"), AttrField("layout", "NCHW", "str"),
              AttrField("method", "linear", "str"),
              AttrField("coordinate_transformation_mode", "half_pixel", "str"),
              AttrField("rounding_method", "round", "str"), AttrField("cubic_alpha", -0.75, "float"),
              AttrField("cubic_exclude", 0, "int"), AttrField("extrapolation_value", 0.0, "float"),
              AttrField("out_dtype", None, "opt_dtype")),
       infer=infer_resize2d, normalize=_normalize_resize)
