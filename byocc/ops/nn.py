"""Neural-network operators: activations, softmax, normalisations, dropout, pad,
attention (TVM's nn/nn and nn/attention). Convolution and pooling are in ``conv``."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo
from byocc.ir import arith

from .common import check_num_args
from .common import fail
from .common import normalize_axes
from .common import normalize_axis
from .common import require_float
from .common import shape_values
from .common import tensor_arg
from .common import tensor_args
from .registry import AttrField
from .registry import define
from .unary import unary_infer

# --------------------------------------------------------------------------- activations
define("relax.nn.relu", args=("data",), infer=unary_infer(False))
for _n in ("gelu", "gelu_tanh", "selu", "silu"):
    define(f"relax.nn.{_n}", args=("data",), infer=unary_infer(True))
define("relax.nn.leakyrelu", args=("data",), attrs=(AttrField("alpha", 0.01, "float"),),
       infer=unary_infer(True))
define("relax.nn.softplus", args=("data",),
       attrs=(AttrField("beta", 1.0, "float"), AttrField("threshold", 20.0, "float")),
       infer=unary_infer(True))


def infer_prelu(call: Call):
    check_num_args(call, 2)
    si = tensor_arg(call, 0, "data")
    tensor_arg(call, 1, "alpha")
    if si.ndim == -1:
        return si
    if si.dtype is not None and not si.dtype.startswith("float"):
        fail(call, f"requires the input tensor to have a float dtype, but its dtype is {si.dtype}")
    normalize_axis(call, si.ndim, call.attrs.axis)
    return si


define("relax.nn.prelu", args=("data", "alpha"), attrs=(AttrField("axis", 1, "int"),), infer=infer_prelu)


def infer_softmax(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "data")
    if si.ndim == -1:
        return si
    require_float(call, si)
    normalize_axis(call, si.ndim, call.attrs.axis)
    return si


for _n in ("softmax", "log_softmax"):
    define(f"relax.nn.{_n}", args=("data",), attrs=(AttrField("axis", -1, "int"),), infer=infer_softmax)


# --------------------------------------------------------------------------- normalisation
def _norm_check(call: Call, tys: list, names: tuple, axes) -> bool:
    """TVM's NormCheckDtypeAndShape; returns True when the shape cannot be confirmed."""
    data = tys[0]
    axes_nn = normalize_axes(call, data.ndim, axes) if data.ndim != -1 else []
    require_float(call, data, "the input data")
    # Unknown (a constant without its sidecar value) is compatible with anything.
    for i in range(1, len(tys)):
        if None not in (tys[i].dtype, data.dtype) and tys[i].dtype != data.dtype:
            fail(call, f"requires all input tensors to have the same dtype, but {names[i]} has dtype "
                       f"{tys[i].dtype} while the data has dtype {data.dtype}")
        if tys[i].ndim != -1 and tys[i].ndim != len(axes):
            fail(call, f"requires {names[i]} to have as many dimensions as there are axes ({len(axes)}), "
                       f"but it has ndim {tys[i].ndim}")
    lengths = []
    if data.shape is not None:
        lengths.append([data.shape[a] for a in axes_nn])
    for t in tys[1:]:
        if t.shape is not None:
            lengths.append(list(t.shape))
    for other in lengths[1:]:
        for d in range(len(axes)):
            if arith.provably_different(lengths[0][d], other[d]):
                fail(call, "requires gamma, beta, etc. to have the sizes of the data on the given axes, "
                           f"but {_dims(lengths[0])} and {_dims(other)} differ")
            if not arith.provably_equal(lengths[0][d], other[d]):
                return True
    return False


def _dims(values) -> str:
    from byocc.ir.prim import dim_text

    return "[" + ", ".join(dim_text(v) for v in values) + "]"


def infer_layer_norm(call: Call):
    names = ("data", "gamma", "beta")
    tys = tensor_args(call, names)
    unknown = _norm_check(call, tys, names, call.attrs.axes)
    return TensorStructInfo(None, tys[0].dtype, tys[0].ndim) if unknown else tys[0]


def infer_rms_norm(call: Call):
    names = ("data", "weight")
    tys = tensor_args(call, names)
    unknown = _norm_check(call, tys, names, call.attrs.axes)
    return TensorStructInfo(None, tys[0].dtype, tys[0].ndim) if unknown else tys[0]


def infer_batch_norm(call: Call):
    names = ("data", "gamma", "beta", "moving_mean", "moving_var")
    tys = tensor_args(call, names)
    unknown = _norm_check(call, tys, names, (call.attrs.axis,))
    dtype = tys[0].dtype
    if unknown:
        return TupleStructInfo((TensorStructInfo(None, dtype, tys[0].ndim),
                                TensorStructInfo(None, dtype, 1), TensorStructInfo(None, dtype, 1)))
    return TupleStructInfo((tys[0], tys[3], tys[4]))


def _channel_norm(call: Call, names: tuple, group: bool):
    tys = tensor_args(call, names)
    data = tys[0]
    a = call.attrs
    channel_axis = -1
    if data.ndim != -1:
        channel_axis = normalize_axis(call, data.ndim, a.channel_axis)
        if channel_axis in normalize_axes(call, data.ndim, a.axes):
            fail(call, f"expects channel_axis not to be in axes, but got channel_axis {channel_axis}, axes {list(a.axes)}")
    if group and data.dtype is not None and not data.dtype.startswith("float"):
        fail(call, f"expects the data to be float, but got {data.dtype}")
    if group and data.shape is not None and channel_axis != -1:
        c = arith.as_int(data.shape[channel_axis])
        if c is not None and c % a.num_groups != 0:
            fail(call, f"expects the channel size to be divisible by {a.num_groups}, but got {c}")
    for i in range(1, len(tys)):  # unknown dtype or rank (no sidecar value) fits anything
        if None not in (tys[i].dtype, data.dtype) and tys[i].dtype != data.dtype:
            fail(call, f"expects all inputs to have the same dtype, but got {tys[i].dtype} and {data.dtype}")
        if tys[i].ndim not in (-1, 1):
            fail(call, f"expects {names[i]} to have ndim=1, but got {tys[i].ndim}")
        if channel_axis != -1 and tys[i].shape is not None and data.shape is not None:
            if arith.provably_different(data.shape[channel_axis], tys[i].shape[0]):
                fail(call, f"expects {names[i]} to have the channel size {data.shape[channel_axis]}, "
                           f"but got {tys[i].shape[0]}")
    return data


define("relax.nn.batch_norm", args=("data", "gamma", "beta", "moving_mean", "moving_var"),
       attrs=(AttrField("axis", kind="int"),
              AttrField("epsilon", 1e-5, "float"), AttrField("center", True, "bool"),
              AttrField("scale", True, "bool"), AttrField("momentum", 0.1, "float"),
              AttrField("training", True, "bool")),
       infer=infer_batch_norm)
define("relax.nn.layer_norm", args=("data", "gamma", "beta"),
       attrs=(AttrField("axes", kind="ints"), AttrField("epsilon", 1e-5, "float"),
              AttrField("center", True, "bool"), AttrField("scale", True, "bool")),
       infer=infer_layer_norm)
define("relax.nn.group_norm", args=("data", "gamma", "beta"),
       attrs=(AttrField("num_groups", kind="int"), AttrField("channel_axis", kind="int"),
              AttrField("axes", kind="ints"), AttrField("epsilon", 1e-5, "float"),
              AttrField("center", True, "bool"), AttrField("scale", True, "bool")),
       infer=lambda call: _channel_norm(call, ("data", "gamma", "beta"), True))
define("relax.nn.instance_norm", args=("data", "gamma", "beta"),
       attrs=(AttrField("channel_axis", kind="int"), AttrField("axes", kind="ints"),
              AttrField("epsilon", 1e-5, "float"), AttrField("center", True, "bool"),
              AttrField("scale", True, "bool")),
       infer=lambda call: _channel_norm(call, ("data", "gamma", "beta"), False))
define("relax.nn.rms_norm", args=("data", "weight"),
       attrs=(AttrField("axes", (-1,), "ints"), AttrField("epsilon", 1e-5, "float")),
       infer=infer_rms_norm)


# --------------------------------------------------------------------------- dropout, pad
def infer_dropout(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "data")
    return TupleStructInfo((si, si))


define("relax.nn.dropout", args=("data",), attrs=(AttrField("rate", 0.5, "float"),), infer=infer_dropout)


def infer_pad(call: Call):
    check_num_args(call, 1)
    si = tensor_arg(call, 0, "data")
    pw = call.attrs.pad_width
    if si.ndim == -1:
        return TensorStructInfo(None, si.dtype, -1)
    if len(pw) != 2 * si.ndim:
        fail(call, f"expects pad_width to have 2 * ndim = {2 * si.ndim} values, but got {len(pw)}")
    shape = shape_values(si)
    if shape is None:
        return TensorStructInfo(None, si.dtype, si.ndim)
    return TensorStructInfo(tuple(arith.add(d, pw[2 * i] + pw[2 * i + 1]) for i, d in enumerate(shape)), si.dtype)


define("relax.nn.pad", args=("data",), params=("data", "pad_width", "pad_mode", "pad_value"),
       attrs=(AttrField("pad_width", kind="ints"), AttrField("pad_value", 0.0, "float"),
              AttrField("pad_mode", "constant", "str")),
       infer=infer_pad)


# --------------------------------------------------------------------------- attention
def infer_attention(call: Call):
    n = len(call.args)
    names = {3: ("query", "key", "value"), 4: ("query", "key", "value", "bias"),
             7: ("query", "key", "value", "seqstart_q", "seqstart_k", "max_seqlen_q", "max_seqlen_k")}
    expected = {"relax.nn.attention": 3, "relax.nn.attention_bias": 4, "relax.nn.attention_var_len": 7}
    check_num_args(call, expected.get(call.op.name, n))
    tys = tensor_args(call, names[n])
    q, k, v = tys[:3]
    for t, name in ((q, "query"), (k, "key"), (v, "value")):
        if t.ndim not in (-1, 4):  # -1: unknown rank (a constant without its value) may be 4
            fail(call, f"the {name} should have 4 dimensions, namely "
                       "[batch size, sequence length, number of heads, dimension of heads]")
    qs, ks, vs = q.shape, k.shape, v.shape
    if qs is None or ks is None or vs is None:
        return TensorStructInfo(None, q.dtype, 4)

    def same(a, b, m1, m2, what):
        if arith.provably_different(a, b):
            fail(call, f"the {m1} {what} and the {m2} {what} should be the same, "
                       f"but the {what} of {m1} is {a} while the {what} of {m2} is {b}")

    def multiple(a, b, m1, m2, what):
        ia, ib = arith.as_int(a), arith.as_int(b)
        if ia is not None and ib is not None and ib != 0 and ia % ib != 0:
            fail(call, f"the {m1} {what} should be a multiple of the {m2} {what}, "
                       f"but the {what} of {m1} is {a} while the {what} of {m2} is {b}")

    same(qs[0], ks[0], "query", "key", "batch size")
    same(qs[0], vs[0], "query", "value", "batch size")
    multiple(qs[2], ks[2], "query", "key", "number of heads")
    multiple(qs[2], vs[2], "query", "value", "number of heads")
    same(ks[1], vs[1], "key", "value", "sequence length")
    same(qs[3], ks[3], "query", "key", "dimension of heads")
    if n == 4:
        b = tys[3]
        if b.ndim not in (-1, 4):
            fail(call, f"the bias should have 4 dimensions, but it has {b.ndim}")
        bs = b.shape
        if bs is not None:
            for qd, bd, what in ((qs[0], bs[0], "batch size"), (qs[2], bs[1], "number of heads"),
                                 (qs[1], bs[2], "sequence length")):
                if arith.provably_different(qd, bd) and not (arith.is_static(bd) and bd == 1):
                    fail(call, f"the query {what} and the bias {what} should be the same or broadcastable, "
                               f"but they are {qd} and {bd}")
            same(ks[1], bs[3], "key", "bias", "sequence length")
    return TensorStructInfo((qs[0], qs[1], qs[2], vs[3]), q.dtype)


ATTENTION_ATTRS = (AttrField("scale", None, "float32_imm"), AttrField("causal_mask", None, "opt_str"),
                   AttrField("window_size", None, "opt_int"))

define("relax.nn.attention", args=("query", "key", "value", "bias"),
       params=("query", "key", "value", "bias", "scale", "causal_mask", "window_size"),
       attrs=ATTENTION_ATTRS, arg_defaults={"bias": None}, infer=infer_attention)
define("relax.nn.attention_bias", args=("query", "key", "value", "bias"),
       params=("query", "key", "value", "bias", "scale", "causal_mask", "window_size"),
       attrs=ATTENTION_ATTRS, infer=infer_attention)
define("relax.nn.attention_var_len",
       args=("queries", "keys", "values", "seqstart_q", "seqstart_k", "max_seqlen_q", "max_seqlen_k"),
       # positional order = the call's operand order (TVM's Python signature puts max_seqlen_q
       # before seqstart_k, which would swap operands when reading printed text back)
       attrs=ATTENTION_ATTRS, infer=infer_attention)

