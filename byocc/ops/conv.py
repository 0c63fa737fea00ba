"""Convolution and pooling (TVM's nn/convolution and nn/pooling), 1-D to 3-D.

Shapes are computed in the canonical layout (``NCHW`` data, ``OIHW`` / ``IOHW`` kernels) and
permuted back to the output layout; plain permuted layouts (``NHWC``, ``OHWI``, ``HWIO``...)
are supported, packed layouts (``NCHW4c``) give a rank-only result.
"""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import TensorStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import arith

from .common import binary_out_dtype
from .common import check_ndim_for_layout
from .common import check_num_args
from .common import fail
from .common import from_layout
from .common import parse_layout
from .common import tensor_arg
from .common import tensor_args
from .common import to_layout
from .registry import AttrField
from .registry import define

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


# --------------------------------------------------------------------------- attribute normalisation
def _complete_padding(pad: tuple, n: int, op: str, span) -> tuple:
    if len(pad) == 1:
        return pad * (2 * n)
    if len(pad) == n and n > 1:
        return pad + pad
    if len(pad) == 2 * n:
        return pad
    raise TypeInferenceError(f"{op}: padding must have 1, {n} or {2 * n} values, but got {list(pad)}"
                             if n > 1 else f"{op}: padding must have 1 or 2 values, but got {list(pad)}", span)


def _expand(values: tuple, n: int, what: str, op: str, span) -> tuple:
    if len(values) == 1 and n > 1:
        values = values * n
    if len(values) != n:
        raise TypeInferenceError(f"{op}: {what} must have {n} values, but got {list(values)}", span)
    return values


def conv_normalizer(n: int, op: str, transpose: bool = False):
    def normalize(a: dict, span):
        a["padding"] = _complete_padding(a["padding"], n, op, span)
        a["strides"] = _expand(a["strides"], n, "strides", op, span)
        a["dilation"] = _expand(a["dilation"], n, "dilation", op, span)
        if transpose:
            a["output_padding"] = _expand(a["output_padding"], n, "output_padding", op, span)
        if a["groups"] <= 0:
            raise TypeInferenceError(f"{op}: the number of groups must be positive, but got {a['groups']}", span)
        if a["out_layout"] is None:
            a["out_layout"] = a["data_layout"]
        return a

    return normalize


def pool_normalizer(n: int, op: str):
    def normalize(a: dict, span):
        a["padding"] = _complete_padding(a["padding"], n, op, span)
        a["pool_size"] = _expand(a["pool_size"], n, "pool_size", op, span)
        a["strides"] = _expand(a["strides"], n, "strides", op, span)
        a["dilation"] = _expand(a["dilation"], n, "dilation", op, span)
        if a["out_layout"] is None:
            a["out_layout"] = a["layout"]
        return a

    return normalize


def adaptive_normalizer(n: int, op: str):
    def normalize(a: dict, span):
        if a["output_size"] is not None:
            a["output_size"] = _expand(a["output_size"], n, "output_size", op, span)
        if a["out_layout"] is None:
            a["out_layout"] = a["layout"]
        return a

    return normalize


# --------------------------------------------------------------------------- inference
def _layouts(call: Call, n: int, data_layout: str, kernel_layout: str | None, kernel_target: str | None, out_layout: str):
    tgt = "NC" + SPATIAL[n]
    dp = parse_layout(call, data_layout, tgt, "data")
    kp = parse_layout(call, kernel_layout, kernel_target, "kernel") if kernel_layout is not None else []
    op_ = parse_layout(call, out_layout, tgt, "output")
    return dp, kp, op_


def conv_infer(n: int, transpose: bool):
    kernel_target = ("IO" if transpose else "OI") + SPATIAL[n]

    def infer(call: Call):
        data, weight = tensor_args(call, ("data", "weight"))
        a = call.attrs
        data_layout, kernel_layout, out_layout = a.data_layout, a.kernel_layout, a.out_layout
        dp, kp, op_ = _layouts(call, n, data_layout, kernel_layout, kernel_target, out_layout)
        check_ndim_for_layout(call, data, data_layout)
        check_ndim_for_layout(call, weight, kernel_layout)
        out_dtype = a.out_dtype
        if out_dtype is None:
            out_dtype = binary_out_dtype(call, data, weight)
        if data.shape is None or weight.shape is None or dp is None or kp is None or op_ is None:
            return TensorStructInfo(None, out_dtype, len(out_layout))
        d = to_layout(list(data.shape), dp)
        w = to_layout(list(weight.shape), kp)
        g = a.groups
        if not transpose:
            c_data, c_kernel = arith.as_int(d[1]), arith.as_int(w[1])
            if c_data is not None and c_kernel is not None and c_data != c_kernel * g:
                fail(call, f"the data's channel size ({c_data}) should equal the weight's input channel size "
                           f"({c_kernel}) times the number of groups ({g})")
            o = arith.as_int(w[0])
            if o is not None and o % g != 0:
                fail(call, f"the number of output channels ({o}) must be divisible by the number of groups ({g})")
            out = [d[0], w[0]]
            padding, dilation, strides = a.padding, a.dilation, a.strides
            for i in range(n):
                di, wi, pad, dil, stride = d[2 + i], w[2 + i], padding[i] + padding[n + i], dilation[i], strides[i]
                if (type(di) is int and type(wi) is int and type(pad) is int and type(dil) is int
                        and type(stride) is int and stride != 0):
                    out.append((di + pad - dil * (wi - 1) - 1) // stride + 1)  # what arith folds to
                    continue
                num = arith.sub(arith.sub(arith.add(di, pad), arith.mul(dil, arith.sub(wi, 1))), 1)
                out.append(arith.simplify_dim(arith.add(arith.floordiv(num, stride), 1)))
        else:
            if arith.provably_different(d[1], w[0]):
                fail(call, f"the data's channel size ({d[1]}) should equal the weight's input channel size ({w[0]})")
            c = arith.as_int(w[0])
            if c is not None and c % g != 0:
                fail(call, f"the weight's input channel size ({c}) must be divisible by the number of groups ({g})")
            for i in range(n):
                if a.output_padding[i] >= a.strides[i]:
                    fail(call, f"output padding ({list(a.output_padding)}) must be smaller than the strides ({list(a.strides)})")
            out = [d[0], arith.mul(w[1], g)]
            for i in range(n):
                size = arith.add(arith.add(arith.add(
                    arith.sub(arith.mul(arith.sub(d[2 + i], 1), a.strides[i]), a.padding[i] + a.padding[n + i]),
                    arith.mul(a.dilation[i], arith.sub(w[2 + i], 1))), a.output_padding[i]), 1)
                out.append(arith.simplify_dim(size))
        return TensorStructInfo(tuple(from_layout(out, op_)), out_dtype)

    return infer


def _pool_operand(call: Call, n: int):
    """``(data, attrs, data layout permutation, output layout permutation)`` of a pooling call."""
    check_num_args(call, 1)
    data = tensor_arg(call, 0, "data")
    a = call.attrs
    dp, _, op_ = _layouts(call, n, a.layout, None, None, a.out_layout)
    check_ndim_for_layout(call, data, a.layout)
    return data, a, dp, op_


def pool_infer(n: int):
    def infer(call: Call):
        data, a, dp, op_ = _pool_operand(call, n)
        if data.shape is None or dp is None or op_ is None:
            return TensorStructInfo(None, data.dtype, len(a.out_layout))
        d = to_layout(list(data.shape), dp)
        out = [d[0], d[1]]
        for i in range(n):
            num = arith.sub(arith.sub(arith.add(d[2 + i], a.padding[i] + a.padding[n + i]),
                                    a.dilation[i] * (a.pool_size[i] - 1)), 1)
            if a.ceil_mode:
                num = arith.add(num, a.strides[i] - 1)
            raw = arith.add(arith.floordiv(num, a.strides[i]), 1)
            if a.ceil_mode:
                ri, hi = arith.as_int(raw), arith.as_int(d[2 + i])
                if ri is not None and hi is not None:
                    raw = ri - 1 if (ri - 1) * a.strides[i] >= hi + a.padding[i] else ri
            out.append(arith.simplify_dim(raw))
        return TensorStructInfo(tuple(from_layout(out, op_)), data.dtype)

    return infer


def adaptive_infer(n: int):
    def infer(call: Call):
        data, a, dp, op_ = _pool_operand(call, n)
        if data.shape is None or dp is None or op_ is None:
            if data.shape is not None and a.out_layout == a.layout and a.output_size is None:
                return data
            return TensorStructInfo(None, data.dtype, len(a.out_layout))
        d = to_layout(list(data.shape), dp)
        if a.output_size is not None:
            d[2:] = list(a.output_size)
        return TensorStructInfo(tuple(from_layout(d, op_)), data.dtype)

    return infer


# --------------------------------------------------------------------------- registration
def _conv_attrs(n: int, transpose: bool):
    dl = "NC" + SPATIAL[n]
    kl = ("IO" if transpose else "OI") + SPATIAL[n]
    ones = (1,) * n
    fields = [AttrField("strides", ones, "ints"), AttrField("padding", (0,) * n, "ints")]
    if transpose:
        fields.append(AttrField("output_padding", (0,) * n, "ints"))
    fields += [AttrField("dilation", ones, "ints"), AttrField("groups", 1, "int"),
               AttrField("data_layout", dl, "str"), AttrField("kernel_layout", kl, "str"),
               AttrField("out_layout", None, "opt_str"), AttrField("out_dtype", None, "opt_dtype")]
    return tuple(fields)


for _n in (1, 2, 3):
    _name = f"relax.nn.conv{_n}d"
    define(_name, args=("data", "weight"), attrs=_conv_attrs(_n, False), infer=conv_infer(_n, False),
           normalize=conv_normalizer(_n, "R." + _name[6:]))
    _name = f"relax.nn.conv{_n}d_transpose"
    define(_name, args=("data", "weight"), attrs=_conv_attrs(_n, True), infer=conv_infer(_n, True),
           normalize=conv_normalizer(_n, "R." + _name[6:], transpose=True))

    _layout = "NC" + SPATIAL[_n]
    for _kind, _incl in (("max", False), ("avg", _n != 2)):
        _name = f"relax.nn.{_kind}_pool{_n}d"
        _fields = (AttrField("pool_size", (1,) * _n, "ints"), AttrField("strides", (1,) * _n, "ints"),
                   AttrField("dilation", (1,) * _n, "ints"), AttrField("padding", (0,) * _n, "ints"),
                   AttrField("ceil_mode", False, "bool"), AttrField("count_include_pad", _incl, "bool"),
                   AttrField("layout", _layout, "str"), AttrField("out_layout", None, "opt_str"))
        # Python call order: pool_size, strides, padding, dilation, ... (print order differs)
        _params = ("data", "pool_size", "strides", "padding", "dilation", "ceil_mode",
                   "count_include_pad", "layout", "out_layout")
        define(_name, args=("data",), params=_params, attrs=_fields, infer=pool_infer(_n),
               normalize=pool_normalizer(_n, "R." + _name[6:]))
    _name = f"relax.nn.adaptive_avg_pool{_n}d"
    define(_name, args=("data",),
           attrs=(AttrField("output_size", None, "opt_ints"), AttrField("layout", _layout, "str"),
                  AttrField("out_layout", None, "opt_str")),
           infer=adaptive_infer(_n), normalize=adaptive_normalizer(_n, "R." + _name[6:]))
