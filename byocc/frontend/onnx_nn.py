"""ONNX operator converters for neural-network operators: convolution, pooling,
normalisation, softmax, Gemm/MatMul, activations with parameters, Pad."""

from __future__ import annotations

from byocc.ir import UnsupportedError
from byocc.ir import arith

from .onnx_ops import converter
from .onnx_ops import ints
from .onnx_ops import opt


# --------------------------------------------------------------------------- linear algebra
@converter("MatMul")
def _matmul(imp, node, inputs, attrs):
    return [imp.make("relax.matmul", imp.tensor(inputs[0]), imp.tensor(inputs[1]))]


@converter("Gemm")
def _gemm(imp, node, inputs, attrs):
    a, b = imp.tensor(inputs[0]), imp.tensor(inputs[1])
    dtype = imp.dtype(inputs[0])
    if attrs.get("transA", 0):
        a = imp.op("relax.permute_dims", a, axes=[1, 0])
    if attrs.get("transB", 0):
        b = imp.op("relax.permute_dims", b, axes=[1, 0])
    out = imp.make("relax.matmul", a, b)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if alpha != 1.0:
        out = imp.make("relax.multiply", imp.emit(out), imp.scalar(alpha, dtype))
    c_name = opt(inputs, 2)
    if c_name:
        c = imp.tensor(c_name)
        if beta != 1.0:
            c = imp.op("relax.multiply", c, imp.scalar(beta, dtype))
        out = imp.make("relax.add", imp.emit(out), c)
    return [out]


# --------------------------------------------------------------------------- conv / pool
def _spatial(imp, x_name: str) -> tuple:
    shape = imp.shape(x_name)
    nsp = len(shape) - 2
    if nsp not in (1, 2, 3):
        raise UnsupportedError(f"{nsp} spatial dimensions (byocc supports 1-3)")
    return shape, nsp


def _split_pad(total: int, upper: bool) -> tuple[int, int]:
    """A total padding split into (begin, end): SAME_UPPER puts the odd one at the end."""
    small, big = total // 2, total - total // 2
    return (small, big) if upper else (big, small)


def _pads(imp, attrs, in_sp, kernel, strides, dilation) -> list:
    """ONNX pads (begins then ends), with auto_pad resolved."""
    nsp = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = list(attrs.get("pads", [0] * (2 * nsp)))
        return pads
    if auto == "VALID":
        return [0] * (2 * nsp)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise UnsupportedError(f"auto_pad={auto!r}")
    begins, ends = [], []
    for i in range(nsp):
        size = in_sp[i]
        if not isinstance(size, int):
            raise UnsupportedError(f"auto_pad={auto} needs static spatial dimensions")
        out = -(-size // strides[i])
        total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilation[i] + 1 - size, 0)
        begin, end = _split_pad(total, auto == "SAME_UPPER")
        begins.append(begin)
        ends.append(end)
    return begins + ends


def _window(imp, inputs, attrs):
    """``(input shape, spatial rank, kernel, strides, dilations)`` of a Conv(Transpose) node."""
    shape, nsp = _spatial(imp, inputs[0])
    kernel = list(attrs.get("kernel_shape", imp.shape(inputs[1])[2:]))
    return shape, nsp, kernel, list(attrs.get("strides", [1] * nsp)), list(attrs.get("dilations", [1] * nsp))


@converter("Conv")
def _conv(imp, node, inputs, attrs):
    shape, nsp, kernel, strides, dilation = _window(imp, inputs, attrs)
    pads = _pads(imp, attrs, shape[2:], kernel, strides, dilation)
    groups = attrs.get("group", 1)
    out = imp.make(f"relax.nn.conv{nsp}d", imp.tensor(inputs[0]), imp.tensor(inputs[1]), strides=strides,
                   padding=pads, dilation=dilation, groups=groups)
    return [_add_channel_bias(imp, out, opt(inputs, 2), nsp)]


def _add_channel_bias(imp, out, bias_name: str, nsp: int):
    if not bias_name:
        return out
    bias = imp.make("relax.reshape", imp.tensor(bias_name), [1, -1] + [1] * nsp)
    return imp.make("relax.add", imp.emit(out), imp.emit(bias))


@converter("ConvTranspose")
def _conv_transpose(imp, node, inputs, attrs):
    shape, nsp, kernel, strides, dilation = _window(imp, inputs, attrs)
    out_pad = list(attrs.get("output_padding", [0] * nsp))
    auto = attrs.get("auto_pad", "NOTSET")
    if "output_shape" in attrs or auto in ("SAME_UPPER", "SAME_LOWER"):
        # the padding that makes the output `target` long: output_shape, or input * stride
        targets = list(attrs["output_shape"])[-nsp:] if "output_shape" in attrs else None
        begins, ends = [], []
        for i in range(nsp):
            size = shape[2 + i]
            if not isinstance(size, int):
                raise UnsupportedError(f"{'output_shape' if targets else 'auto_pad'} needs static spatial dimensions")
            target = targets[i] if targets else size * strides[i]
            total = strides[i] * (size - 1) + out_pad[i] + (kernel[i] - 1) * dilation[i] + 1 - target
            begin, end = _split_pad(total, auto == "SAME_UPPER")
            begins.append(begin)
            ends.append(end)
        pads = begins + ends
    else:
        pads = list(attrs.get("pads", [0] * (2 * nsp)))
    if any(p < 0 for p in pads):
        raise UnsupportedError("negative padding")
    out = imp.make(f"relax.nn.conv{nsp}d_transpose", imp.tensor(inputs[0]), imp.tensor(inputs[1]),
                   strides=strides, padding=pads, output_padding=out_pad, dilation=dilation,
                   groups=attrs.get("group", 1))
    return [_add_channel_bias(imp, out, opt(inputs, 2), nsp)]


@converter("MaxPool", "AveragePool")
def _pool(imp, node, inputs, attrs):
    shape, nsp = _spatial(imp, inputs[0])
    if len(node.output) > 1 and node.output[1]:
        raise UnsupportedError("the Indices output of MaxPool is not supported")
    if attrs.get("storage_order", 0):
        raise UnsupportedError("storage_order=1 is not supported")
    kernel = list(attrs["kernel_shape"])
    strides = list(attrs.get("strides", [1] * nsp))
    dilation = list(attrs.get("dilations", [1] * nsp))
    pads = _pads(imp, attrs, shape[2:], kernel, strides, dilation)
    kind = "max" if node.op_type == "MaxPool" else "avg"
    extra = {}
    if kind == "avg":
        extra["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
    return [imp.make(f"relax.nn.{kind}_pool{nsp}d", imp.tensor(inputs[0]), pool_size=kernel, strides=strides,
                     dilation=dilation, padding=pads, ceil_mode=bool(attrs.get("ceil_mode", 0)), **extra)]


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(imp, node, inputs, attrs):
    rank = imp.rank(inputs[0])
    op = "relax.mean" if node.op_type == "GlobalAveragePool" else "relax.max"
    return [imp.make(op, imp.tensor(inputs[0]), axis=list(range(2, rank)), keepdims=True)]


# --------------------------------------------------------------------------- normalisation
@converter("BatchNormalization")
def _batch_norm(imp, node, inputs, attrs):
    if attrs.get("training_mode", 0) or any(node.output[1:]):
        raise UnsupportedError("training mode (running statistics outputs) is not supported")
    if attrs.get("spatial", 1) == 0:
        raise UnsupportedError("spatial=0 (per-element statistics) is not supported")
    args = [imp.tensor(n) for n in inputs[:5]]
    made = imp.make("relax.nn.batch_norm", *args, axis=1, epsilon=float(attrs.get("epsilon", 1e-5)),
                    training=False)
    return imp.tuple_fields(made)[:1]


@converter("InstanceNormalization")
def _instance_norm(imp, node, inputs, attrs):
    rank = imp.rank(inputs[0])
    return [imp.make("relax.nn.instance_norm", imp.tensor(inputs[0]), imp.tensor(inputs[1]),
                     imp.tensor(inputs[2]), channel_axis=1, axes=list(range(2, rank)),
                     epsilon=float(attrs.get("epsilon", 1e-5)))]


@converter("LayerNormalization")
def _layer_norm(imp, node, inputs, attrs):
    import numpy as np

    from byocc.ops.reference import np_dtype

    if any(node.output[1:]):
        raise UnsupportedError("the Mean and InvStdDev outputs are not supported")
    shape = imp.shape(inputs[0])
    axis = attrs.get("axis", -1)
    axis = axis + len(shape) if axis < 0 else axis
    axes = list(range(axis, len(shape)))
    gamma = imp.tensor(inputs[1])
    if opt(inputs, 2):
        beta = imp.tensor(inputs[2])
    else:
        g_shape = imp.shape(inputs[1])
        if not all(isinstance(d, int) for d in g_shape):
            raise UnsupportedError("LayerNormalization without B needs a static Scale shape")
        beta = imp.constant(np.zeros(g_shape, dtype=np_dtype(imp.dtype(inputs[1]))))
    return [imp.make("relax.nn.layer_norm", imp.tensor(inputs[0]), gamma, beta, axes=axes,
                     epsilon=float(attrs.get("epsilon", 1e-5)))]


@converter("LRN")
def _lrn(imp, node, inputs, attrs):
    """x / (bias + alpha / size * sum of squares over a channel window) ** beta, with the
    window sum as an average pool (count_include_pad) over channels."""
    shape = imp.shape(inputs[0])
    if len(shape) < 3:
        raise UnsupportedError("LRN needs an input of rank 3 or more")
    dtype = imp.dtype(inputs[0])
    size = int(attrs["size"])
    alpha, beta, bias = attrs.get("alpha", 1e-4), attrs.get("beta", 0.75), attrs.get("bias", 1.0)
    x = imp.tensor(inputs[0])
    sq = imp.op("relax.multiply", x, x)
    rows = imp.op("relax.reshape", sq, [shape[0], 1, shape[1], arith.product(shape[2:])])
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    avg = imp.op("relax.nn.avg_pool2d", rows, pool_size=[size, 1], strides=[1, 1], dilation=[1, 1],
                 padding=[lo, 0, hi, 0], count_include_pad=True)
    avg = imp.op("relax.reshape", avg, list(shape))
    scaled = imp.op("relax.add", imp.op("relax.multiply", avg, imp.scalar(alpha, dtype)), imp.scalar(bias, dtype))
    denom = imp.op("relax.power", scaled, imp.scalar(beta, dtype))
    return [imp.make("relax.divide", x, denom)]


# --------------------------------------------------------------------------- softmax
@converter("Softmax", "LogSoftmax")
def _softmax(imp, node, inputs, attrs):
    op = "relax.nn.softmax" if node.op_type == "Softmax" else "relax.nn.log_softmax"
    shape = imp.shape(inputs[0])
    rank = len(shape)
    x = imp.tensor(inputs[0])
    if imp.opset >= 13:
        return [imp.make(op, x, axis=attrs.get("axis", -1))]
    axis = attrs.get("axis", 1)
    axis = axis + rank if axis < 0 else axis
    if axis == rank - 1:
        return [imp.make(op, x, axis=-1)]
    flat = imp.op("relax.reshape", x, [arith.product(shape[:axis]), arith.product(shape[axis:])])
    out = imp.op(op, flat, axis=-1)
    return [imp.make("relax.reshape", out, list(shape))]


# --------------------------------------------------------------------------- activations
@converter("LeakyRelu")
def _leaky(imp, node, inputs, attrs):
    return [imp.make("relax.nn.leakyrelu", imp.tensor(inputs[0]), alpha=float(attrs.get("alpha", 0.01)))]


@converter("Softplus")
def _softplus(imp, node, inputs, attrs):
    return [imp.make("relax.nn.softplus", imp.tensor(inputs[0]))]


@converter("Gelu")
def _gelu(imp, node, inputs, attrs):
    op = "relax.nn.gelu_tanh" if attrs.get("approximate", "none") == "tanh" else "relax.nn.gelu"
    return [imp.make(op, imp.tensor(inputs[0]))]


@converter("Elu", "Selu")
def _elu(imp, node, inputs, attrs):
    x = imp.tensor(inputs[0])
    dtype = imp.dtype(inputs[0])
    default_alpha = 1.0 if node.op_type == "Elu" else 1.67326319217681884765625
    alpha = attrs.get("alpha", default_alpha)
    gamma = attrs.get("gamma", 1.05070102214813232421875) if node.op_type == "Selu" else 1.0
    zero = imp.scalar(0, dtype)
    neg = imp.op("relax.multiply", imp.op("relax.subtract", imp.op("relax.exp", x), imp.scalar(1, dtype)),
                 imp.scalar(alpha, dtype))
    out = imp.make("relax.where", imp.op("relax.greater", x, zero), x, neg)
    if gamma != 1.0:
        out = imp.make("relax.multiply", imp.emit(out), imp.scalar(gamma, dtype))
    return [out]


@converter("HardSigmoid", "HardSwish")
def _hard_sigmoid(imp, node, inputs, attrs):
    x = imp.tensor(inputs[0])
    dtype = imp.dtype(inputs[0])
    if node.op_type == "HardSwish":
        alpha, beta = 1.0 / 6.0, 0.5
    else:
        alpha, beta = attrs.get("alpha", 0.2), attrs.get("beta", 0.5)
    lin = imp.op("relax.add", imp.op("relax.multiply", x, imp.scalar(alpha, dtype)), imp.scalar(beta, dtype))
    hs = imp.make("relax.clip", lin, 0.0, 1.0)
    if node.op_type == "HardSwish":
        return [imp.make("relax.multiply", x, imp.emit(hs))]
    return [hs]


@converter("PRelu")
def _prelu(imp, node, inputs, attrs):
    x = imp.tensor(inputs[0])
    slope = imp.tensor(inputs[1])
    x_shape, s_shape = imp.shape(inputs[0]), imp.shape(inputs[1])
    if imp.opset < 7 and len(s_shape) == 1 and len(x_shape) > 2 and s_shape[0] != 1:
        slope = imp.op("relax.reshape", slope, [s_shape[0]] + [1] * (len(x_shape) - 2))  # per channel
    neg = imp.op("relax.less", x, imp.scalar(0, imp.dtype(inputs[0])))
    return [imp.make("relax.where", neg, imp.op("relax.multiply", x, slope), x)]


@converter("Shrink")
def _shrink(imp, node, inputs, attrs):
    x = imp.tensor(inputs[0])
    dtype = imp.dtype(inputs[0])
    lambd, bias = attrs.get("lambd", 0.5), attrs.get("bias", 0.0)
    low = imp.op("relax.less", x, imp.scalar(-lambd, dtype))
    high = imp.op("relax.greater", x, imp.scalar(lambd, dtype))
    zero = imp.scalar(0, dtype)
    up = imp.op("relax.where", high, imp.op("relax.subtract", x, imp.scalar(bias, dtype)), zero)
    return [imp.make("relax.where", low, imp.op("relax.add", x, imp.scalar(bias, dtype)), up)]


@converter("Softsign")
def _softsign(imp, node, inputs, attrs):
    x = imp.tensor(inputs[0])
    one = imp.scalar(1, imp.dtype(inputs[0]))
    return [imp.make("relax.divide", x, imp.op("relax.add", imp.op("relax.abs", x), one))]


# --------------------------------------------------------------------------- pad
@converter("Pad")
def _pad(imp, node, inputs, attrs):
    import numpy as np

    rank = imp.rank(inputs[0])
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise UnsupportedError(f"mode={mode!r}")
    if imp.opset < 11:
        pads = list(attrs["pads"])
        value = float(attrs.get("value", 0.0))
        axes = list(range(rank))
    else:
        pads = ints(imp.require(inputs[1], "the pads input of Pad"))
        value_arr = imp.require(inputs[2], "the constant_value of Pad") if opt(inputs, 2) else None
        value = float(np.asarray(value_arr).reshape(-1)[0]) if value_arr is not None else 0.0
        if opt(inputs, 3):
            axes = [a + rank if a < 0 else a for a in ints(imp.require(inputs[3], "the axes of Pad"))]
        else:
            axes = list(range(rank))
    n = len(axes)
    if len(pads) != 2 * n:
        raise UnsupportedError(f"Pad expects {2 * n} pad values, got {len(pads)}")
    if any(p < 0 for p in pads):
        raise UnsupportedError("negative pads (cropping) are not supported")
    width = [0] * (2 * rank)
    for i, a in enumerate(axes):
        width[2 * a], width[2 * a + 1] = pads[i], pads[i + n]
    return [imp.make("relax.nn.pad", imp.tensor(inputs[0]), pad_width=width, pad_value=value, pad_mode=mode)]


# --------------------------------------------------------------------------- resize
_RESIZE_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}


@converter("Resize", "Upsample")
def _resize(imp, node, inputs, attrs):
    """4-D NCHW resizing of H and W (``relax.image.resize2d``); N and C must keep their size."""
    import numpy as np

    shape = imp.shape(inputs[0])
    if len(shape) != 4:
        raise UnsupportedError("only 4-D (NCHW) inputs can be resized")
    mode = attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise UnsupportedError(f"mode={mode!r}")
    if attrs.get("antialias", 0) or "axes" in attrs:
        raise UnsupportedError("antialias and axes are not supported")
    if node.op_type == "Upsample":
        scales = attrs.get("scales") if imp.opset < 9 else imp.require(inputs[1], "the scales of Upsample")
        sizes, coord, rounding = None, "asymmetric", "floor"
    else:
        coord = attrs.get("coordinate_transformation_mode", "half_pixel")
        rounding = attrs.get("nearest_mode", "round_prefer_floor")
        if imp.opset < 11:
            scales, sizes, coord = imp.require(inputs[1], "the scales of Resize"), None, "asymmetric"
        else:
            scales = imp.require(inputs[2], "the scales of Resize") if opt(inputs, 2) else None
            sizes = imp.require(inputs[3], "the sizes of Resize") if opt(inputs, 3) else None
            if scales is not None and np.asarray(scales).size == 0:
                scales = None
    if sizes is not None:
        out = [int(v) for v in np.asarray(sizes).reshape(-1)]
    else:
        sc = [float(v) for v in np.asarray(scales).reshape(-1)]
        if any(not isinstance(d, int) for d in shape):
            raise UnsupportedError("scales need static input dimensions")
        out = [int(np.floor(d * s)) for d, s in zip(shape, sc)]
        if any(abs(d * s - o) > 1e-6 for d, s, o in zip(shape, sc, out)):
            # ONNX maps coordinates with the given scale, resize2d with out/in: equal only here
            raise UnsupportedError("scales that do not give whole output sizes")
    if [out[0], out[1]] != [shape[0], shape[1]]:
        raise UnsupportedError("resizing the batch or channel dimension is not supported")
    extra = {}
    if coord == "tf_crop_and_resize":
        roi = imp.require(inputs[1], "the roi of Resize")
        r = [float(v) for v in np.asarray(roi).reshape(-1)]
        extra["roi"] = [r[2], r[3], r[6], r[7]]
    return [imp.make("relax.image.resize2d", imp.tensor(inputs[0]), out[2:], method=_RESIZE_METHODS[mode],
                     coordinate_transformation_mode=coord,
                     rounding_method=rounding if mode == "nearest" else "",
                     extrapolation_value=float(attrs.get("extrapolation_value", 0.0)), **extra)]
