"""ONNX operator converters: element-wise, tensor manipulation and reductions.

A converter is ``fn(imp, node, inputs, attrs) -> list`` with one entry per node output:
a Relax expression (a call is bound to a variable named after the output), a numpy array
(a value known at import time) or ``None`` (an output nobody may read). ``inputs`` are the
node's input names (``""`` for an omitted optional input), ``attrs`` its attributes as
Python values. Shape and layout operators are in :mod:`.onnx_shape`, neural-network
operators in :mod:`.onnx_nn`.
"""

from __future__ import annotations

from collections.abc import Callable

from byocc.ir import UnsupportedError

from .onnx_fold import fold_symbolic
from .onnx_fold import is_symbolic

Converter = Callable[..., list]
CONVERTERS: dict[str, Converter] = {}
INT64_MAX = 2 ** 63 - 1


def converter(*names: str):
    def deco(fn: Converter) -> Converter:
        for n in names:
            CONVERTERS[n] = fn
        return fn

    return deco


def supported_op_types() -> list[str]:
    from . import onnx_nn  # noqa: F401  (register their converters)
    from . import onnx_shape  # noqa: F401  (register their converters)

    return sorted(CONVERTERS)


def is_supported(op_type: str) -> bool:
    return op_type in supported_op_types()


def node_attrs(node) -> dict:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [x.decode("utf-8", "replace") for x in v]
        out[a.name] = v
    return out


def import_node(imp, node) -> list:
    """Fold or convert one node; returns its output values."""
    from . import onnx_nn  # noqa: F401  (register their converters)
    from . import onnx_shape  # noqa: F401  (register their converters)

    attrs = node_attrs(node)
    inputs = list(node.input)
    present = [i for i in inputs if i]
    if present and all(imp.foldable(i) for i in present):
        values = [imp.known(i) if i else None for i in inputs]
        if any(is_symbolic(v) for v in values if v is not None):
            folded = fold_symbolic(node, attrs, values)
            if folded is not None:
                return folded
        # known numbers: the converter's calls fold as they are made (Importer.make)
    fn = CONVERTERS.get(node.op_type)
    if fn is None:
        for i in present:  # reading a poisoned input explains the failure better
            imp.known(i)
        raise UnsupportedError("no converter")
    return fn(imp, node, inputs, attrs)


# --------------------------------------------------------------------------- helpers
def opt(inputs: list, i: int) -> str:
    return inputs[i] if i < len(inputs) else ""


def ints(value) -> list[int]:
    import numpy as np

    value = np.asarray(value)
    if value.dtype == object:
        raise UnsupportedError("a value computed from symbolic dimensions is used where byocc "
                               "needs integers")
    return [int(v) for v in value.reshape(-1)]


def dim_list(value) -> list:
    """A 1-D known value as dims: ints, or symbolic expressions from shapes."""
    import numpy as np

    return [v if not isinstance(v, (int, np.integer)) else int(v) for v in np.asarray(value).reshape(-1).tolist()]


def same_dtype(imp, name: str, dtype: str):
    """Input ``name`` as a tensor of ``dtype`` (casting when needed)."""
    expr = imp.tensor(name)
    if imp.dtype(name) != dtype:
        expr = imp.op("relax.astype", expr, dtype=dtype)
    return expr


def axis_list(axes, rank: int) -> list[int]:
    return [a + rank if a < 0 else a for a in axes]


def reduce_axes(imp, node, inputs, attrs, since: int) -> list | None:
    """Axes of a Reduce* node: attribute before ``since``, optional input after."""
    if imp.opset < since:
        axes = attrs.get("axes")
    else:
        name = opt(inputs, 1)
        axes = ints(imp.require(name, "the axes input")) if name else None
    if axes is not None and len(axes) == 0:
        axes = None
    return axes


# --------------------------------------------------------------------------- element-wise
_BINARY = {"Add": "relax.add", "Sub": "relax.subtract", "Mul": "relax.multiply",
           "Div": "relax.divide", "Equal": "relax.equal", "Less": "relax.less",
           "Greater": "relax.greater", "LessOrEqual": "relax.less_equal",
           "GreaterOrEqual": "relax.greater_equal", "And": "relax.logical_and",
           "Or": "relax.logical_or", "Xor": "relax.logical_xor", "BitShift": None}


@converter("Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
           "And", "Or", "Xor")
def _binary(imp, node, inputs, attrs):
    a = imp.tensor(inputs[0])
    b = legacy_broadcast(imp, inputs, attrs, same_dtype(imp, inputs[1], imp.dtype(inputs[0])))
    return [imp.make(_BINARY[node.op_type], a, b)]


@converter("Pow")
def _pow(imp, node, inputs, attrs):
    base = imp.tensor(inputs[0])
    exponent = legacy_broadcast(imp, inputs, attrs, same_dtype(imp, inputs[1], imp.dtype(inputs[0])))
    return [imp.make("relax.power", base, exponent)]


def legacy_broadcast(imp, inputs, attrs, b):
    """Opset < 7 ``broadcast=1, axis=k``: B lines up with A's dims from ``k`` on."""
    if not attrs.get("broadcast") or "axis" not in attrs:
        return b
    rank_a, b_shape = imp.rank(inputs[0]), list(imp.shape(inputs[1]))
    axis = attrs["axis"] + rank_a if attrs["axis"] < 0 else attrs["axis"]
    trailing = rank_a - axis - len(b_shape)
    if trailing <= 0:
        return b
    return imp.op("relax.reshape", b, b_shape + [1] * trailing)


@converter("Mod")
def _mod(imp, node, inputs, attrs):
    op = "relax.mod" if attrs.get("fmod", 0) else "relax.floor_mod"
    return [imp.make(op, imp.tensor(inputs[0]), imp.tensor(inputs[1]))]


@converter("Max", "Min", "Sum", "Mean")
def _variadic(imp, node, inputs, attrs):
    op = {"Max": "relax.maximum", "Min": "relax.minimum", "Sum": "relax.add", "Mean": "relax.add"}[node.op_type]
    acc = imp.tensor(inputs[0])
    for name in inputs[1:]:
        acc = imp.op(op, acc, imp.tensor(name))
    if node.op_type == "Mean" and len(inputs) > 1:
        acc = imp.make("relax.divide", acc, imp.scalar(len(inputs), imp.dtype(inputs[0])))
    return [acc]


_UNARY = {
    "Relu": "relax.nn.relu", "Sigmoid": "relax.sigmoid", "Tanh": "relax.tanh", "Exp": "relax.exp",
    "Log": "relax.log", "Sqrt": "relax.sqrt", "Erf": "relax.erf", "Abs": "relax.abs",
    "Neg": "relax.negative", "Floor": "relax.floor", "Ceil": "relax.ceil", "Round": "relax.round",
    "Sign": "relax.sign", "Sin": "relax.sin", "Cos": "relax.cos", "Tan": "relax.tan",
    "Asin": "relax.asin", "Acos": "relax.acos", "Atan": "relax.atan", "Sinh": "relax.sinh",
    "Cosh": "relax.cosh", "Asinh": "relax.asinh", "Acosh": "relax.acosh", "Atanh": "relax.atanh",
    "Not": "relax.logical_not", "IsNaN": "relax.isnan",
}


@converter(*_UNARY)
def _unary(imp, node, inputs, attrs):
    return [imp.make(_UNARY[node.op_type], imp.tensor(inputs[0]))]


@converter("IsInf")
def _isinf(imp, node, inputs, attrs):
    x = imp.tensor(inputs[0])
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    inf = imp.op("relax.isinf", x)
    if pos and neg:
        return [inf]
    zero = imp.scalar(0, imp.dtype(inputs[0]))
    sign = imp.op("relax.greater" if pos else "relax.less", x, zero)
    if not pos and not neg:
        return [imp.make("relax.logical_and", inf, imp.op("relax.logical_not", inf))]
    return [imp.make("relax.logical_and", inf, sign)]


@converter("Reciprocal")
def _reciprocal(imp, node, inputs, attrs):
    return [imp.make("relax.divide", imp.scalar(1, imp.dtype(inputs[0])), imp.tensor(inputs[0]))]


@converter("Identity")
def _identity(imp, node, inputs, attrs):
    return [imp.tensor(inputs[0])]


@converter("Cast")
def _cast(imp, node, inputs, attrs):
    return [imp.make("relax.astype", imp.tensor(inputs[0]), dtype=onnx_dtype(attrs["to"]))]


@converter("CastLike")
def _cast_like(imp, node, inputs, attrs):
    return [imp.make("relax.astype", imp.tensor(inputs[0]), dtype=imp.dtype(inputs[1]))]


@converter("Where")
def _where(imp, node, inputs, attrs):
    x = imp.tensor(inputs[1])
    y = same_dtype(imp, inputs[2], imp.dtype(inputs[1]))
    return [imp.make("relax.where", imp.tensor(inputs[0]), x, y)]


@converter("Clip")
def _clip(imp, node, inputs, attrs):
    import numpy as np

    x = imp.tensor(inputs[0])
    dtype = imp.dtype(inputs[0])
    if imp.opset < 11:
        lo, hi = attrs.get("min"), attrs.get("max")
        lo_name = hi_name = ""
    else:
        lo_name, hi_name = opt(inputs, 1), opt(inputs, 2)
        lo = imp.known(lo_name) if lo_name else None
        hi = imp.known(hi_name) if hi_name else None
        lo = lo.item() if lo is not None and np.asarray(lo).size == 1 else lo
        hi = hi.item() if hi is not None and np.asarray(hi).size == 1 else hi
    is_int = dtype.startswith(("int", "uint"))
    if lo is not None and hi is not None and not isinstance(lo, np.ndarray) and not isinstance(hi, np.ndarray):
        return [imp.make("relax.clip", x, _prim_bound(lo, is_int), _prim_bound(hi, is_int))]
    out = x
    for bound, name, op in ((lo, lo_name, "relax.maximum"), (hi, hi_name, "relax.minimum")):
        if name and bound is None:
            out = imp.op(op, out, same_dtype(imp, name, dtype))
        elif bound is not None:
            out = imp.op(op, out, imp.scalar(bound, dtype))
    return [out]


def _prim_bound(v, is_int: bool):
    """A clip bound as TVM prints it: ``0`` and ``6`` for integral values (``R.clip(x, 0, 6)``)."""
    import math

    v = float(v)
    if is_int or (math.isfinite(v) and v.is_integer()):
        return int(v)
    return v


def onnx_dtype(code: int) -> str:
    from onnx import helper

    from byocc.ops.reference import dtype_name

    try:
        return dtype_name(helper.tensor_dtype_to_np_dtype(code))
    except Exception:  # noqa: BLE001  (onnx raises KeyError/ValueError/TypeError)
        raise UnsupportedError(f"ONNX element type {code} is not supported") from None


# --------------------------------------------------------------------------- reductions
_REDUCE = {"ReduceMean": "relax.mean", "ReduceSum": "relax.sum", "ReduceMax": "relax.max",
           "ReduceMin": "relax.min", "ReduceProd": "relax.prod"}


@converter("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
           "ReduceL1", "ReduceL2", "ReduceLogSumExp")
def _reduce(imp, node, inputs, attrs):
    since = 13 if node.op_type == "ReduceSum" else 18
    axes = reduce_axes(imp, node, inputs, attrs, since)
    keepdims = bool(attrs.get("keepdims", 1))
    x = imp.tensor(inputs[0])
    if axes is None and attrs.get("noop_with_empty_axes", 0):
        return [x]
    kind = node.op_type
    if kind in _REDUCE:
        return [imp.make(_REDUCE[kind], x, axis=axes, keepdims=keepdims)]
    if kind in ("ReduceSumSquare", "ReduceL2"):
        x = imp.op("relax.multiply", x, x)
    elif kind == "ReduceL1":
        x = imp.op("relax.abs", x)
    elif kind == "ReduceLogSumExp":
        x = imp.op("relax.exp", x)
    s = imp.op("relax.sum", x, axis=axes, keepdims=keepdims)
    if kind == "ReduceL2":
        return [imp.make("relax.sqrt", s)]
    if kind == "ReduceLogSumExp":
        return [imp.make("relax.log", s)]
    return [s]


@converter("ArgMax", "ArgMin")
def _arg(imp, node, inputs, attrs):
    if attrs.get("select_last_index", 0):
        raise UnsupportedError("select_last_index=1 is not supported")
    op = "relax.argmax" if node.op_type == "ArgMax" else "relax.argmin"
    return [imp.make(op, imp.tensor(inputs[0]), axis=attrs.get("axis", 0),
                     keepdims=bool(attrs.get("keepdims", 1)))]


__all__ = ["CONVERTERS", "converter", "import_node", "is_supported", "supported_op_types"]
