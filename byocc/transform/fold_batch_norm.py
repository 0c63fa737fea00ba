"""FoldBatchNorm: fold inference batch normalisation into the convolution before it.

The chain the ONNX importer emits for ``Conv -> BatchNormalization``::

    c = R.nn.conv2d(x, W, ...)            # W a constant
    y = R.add(c, b)                       # optional, b a constant (either operand order)
    t = R.nn.batch_norm(y, gamma, beta, mean, var, axis=1, ..., training=False)
    z = t[0]

becomes ``c = R.nn.conv2d(x, W * s, ...)`` and ``z = R.add(c, (b - mean) * s + beta)`` with
``s = gamma / sqrt(var + epsilon)`` (``center=False`` drops ``beta``, ``scale=False``
``gamma``). The scale multiplies the kernel's ``O`` axis; the new bias is shaped like the
old one broadcast against the channel axis of the output (``(1, C, 1, 1)`` for NCHW).

Conditions: 1-D to 3-D convolutions (not transposed) with a constant weight; the batch
norm's axis is the convolution's output channel axis; ``training=False``; gamma, beta, mean
and var are constants; every intermediate (``c``, ``y``, ``t``) has exactly one user and is
not a block output; ``t`` is only read as ``t[0]``. Anything else is left alone. Folding is
done in float64 and cast back to the weight / output dtype.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import TensorStructInfo
from byocc.ir import TupleGetItem
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.analysis import collect_var_usage
from byocc.ops import constant_of

from .fold_constant import SKIP_FUNCTION_ATTRS
from .pass_manager import Pass
from .pass_manager import map_functions

if TYPE_CHECKING:
    from typing import TypeGuard

    #: (conv var, new conv, removed vars, bias): what one fold replaces.
    _Fold = tuple[Var, Call, list[Var], Constant]

_CONVS = frozenset(("relax.nn.conv1d", "relax.nn.conv2d", "relax.nn.conv3d"))


def _op_name(value: Expr | None) -> str | None:
    if isinstance(value, Call) and isinstance(value.op, Op):
        return value.op.name
    return None


def _call_of(value: Expr | None, names: Collection[str]) -> Call | None:
    """``value`` if it is a call of one of the operators ``names``, else None."""
    return value if isinstance(value, Call) and _op_name(value) in names else None


def _const(x: Expr) -> TypeGuard[Constant]:
    return isinstance(x, Constant) and x.data is not None


class _Finder:
    def __init__(self, func: Function) -> None:
        usage = collect_var_usage(func)
        self.users = usage.downstream_usage
        self.outputs = set(usage.outputs)
        self.values: dict[Var, Expr] = {}
        for block in func.body.blocks:
            for b in block.bindings:
                if isinstance(b, VarBinding):
                    self.values[b.var] = b.value

    def single_use(self, var: Var, user: Var) -> bool:
        return (isinstance(var, DataflowVar) and var not in self.outputs
                and self.users.get(var) == [user])

    def match(self, z: Var, value: TupleGetItem) -> _Fold | None:
        """The fold for ``z = t[0]``: (conv var, new conv, removed vars, bias) or None."""
        t = value.tuple_value
        if value.index != 0 or not isinstance(t, Var) or not self.single_use(t, z):
            return None
        bn = _call_of(self.values.get(t), ("relax.nn.batch_norm",))
        if bn is None or bn.attrs is None or bn.attrs.get("training") is not False:
            return None
        y = bn.args[0]
        if not isinstance(y, Var) or not self.single_use(y, t) or not all(_const(a) for a in bn.args[1:]):
            return None
        removed = [t]
        bias: Constant | None = None
        conv_var = y
        yv = _call_of(self.values.get(y), ("relax.add",))
        if yv is not None:
            a, b = yv.args
            if isinstance(a, Var) and _const(b):
                conv_var, bias = a, b
            elif isinstance(b, Var) and _const(a):
                conv_var, bias = b, a
            else:
                return None
            if not self.single_use(conv_var, y):
                return None
            removed.append(y)
        conv = _call_of(self.values.get(conv_var), _CONVS)
        if conv is None or not _const(conv.args[1]):
            return None
        out_si = conv.struct_info
        if not isinstance(out_si, TensorStructInfo) or out_si.ndim < 0 or out_si.dtype is None:
            return None
        if bias is not None and yv is not None and (not isinstance(yv.struct_info, TensorStructInfo)
                                 or yv.struct_info.shape != out_si.shape or bias.data.ndim > out_si.ndim):
            return None
        return _fold(conv_var, conv, bn, bias, out_si, removed)


def _fold(conv_var: Var, conv: Call, bn: Call, bias: Constant | None, out_si: TensorStructInfo,
          removed: list[Var]) -> _Fold | None:
    import numpy as np

    a, bn_attrs, w = conv.attrs, bn.attrs, conv.args[1]
    # what match checked: attributes on both calls, a constant weight, constant statistics
    assert a is not None and bn_attrs is not None and isinstance(w, Constant) and out_si.dtype is not None
    stats = [x for x in bn.args[1:] if isinstance(x, Constant)]
    out_layout = a.out_layout or a.data_layout
    kernel_layout = a.kernel_layout
    n = out_si.ndim
    if "C" not in out_layout or "O" not in kernel_layout or len(out_layout) != n:
        return None
    axis = bn_attrs.axis
    axis = axis + n if axis < 0 else axis
    if axis != out_layout.index("C"):
        return None
    weight = w.data
    o_axis = kernel_layout.index("O")
    channels = weight.shape[o_axis]
    gamma, beta, mean, var = (np.asarray(x.data, dtype=np.float64) for x in stats)
    if any(v.shape != (channels,) for v in (gamma, beta, mean, var)):
        return None
    scale = 1.0 / np.sqrt(var + float(bn_attrs.epsilon))
    if bn_attrs.scale:
        scale = scale * gamma
    shift = -mean * scale
    if bn_attrs.center:
        shift = shift + beta
    w_shape = [1] * weight.ndim
    w_shape[o_axis] = channels
    new_w = (weight.astype(np.float64) * scale.reshape(w_shape)).astype(weight.dtype)
    c_shape = [1] * n
    c_shape[axis] = channels
    if bias is None:
        new_b = shift.reshape(c_shape)
    else:
        b = bias.data.astype(np.float64).reshape((1,) * (n - bias.data.ndim) + bias.data.shape)
        new_b = b * scale.reshape(c_shape) + shift.reshape(c_shape)
    from byocc.ops import make_call
    from byocc.ops.reference import np_dtype

    new_conv = make_call(conv.op, [conv.args[0], constant_of(new_w)], conv.attrs, span=conv.span)
    bias_const = constant_of(new_b.astype(np_dtype(out_si.dtype)))
    return conv_var, new_conv, removed, bias_const


def fold_batch_norm_function(func: Function) -> Function:
    """``func`` with every foldable conv + batch_norm chain folded (the same object if none)."""
    if any(k in func.attrs for k in SKIP_FUNCTION_ATTRS) or not isinstance(func.body, SeqExpr):
        return func
    if not any(_op_name(b.value) == "relax.nn.batch_norm" for blk in func.body.blocks for b in blk.bindings):
        return func
    finder = _Finder(func)
    new_values: dict[Var, Expr] = {}  # var -> replacement value
    removed: set[Var] = set()
    for block in func.body.blocks:
        for b in block.bindings:
            if isinstance(b, VarBinding) and isinstance(b.value, TupleGetItem):
                hit = finder.match(b.var, b.value)
                if hit is None:
                    continue
                conv_var, new_conv, gone, bias = hit
                from byocc.ops import make_call

                new_values[conv_var] = new_conv
                new_values[b.var] = make_call("relax.add", [conv_var, bias], span=b.value.span)
                removed.update(gone)
    if not new_values:
        return func
    blocks: list[BindingBlock] = []
    for block in func.body.blocks:
        out: list[Binding] = []
        for b in block.bindings:
            if b.var in removed:
                continue
            if b.var in new_values:
                b = VarBinding(b.var, new_values[b.var], b.span)
            out.append(b)
        blocks.append(type(block)(tuple(out), block.span))
    body = SeqExpr(tuple(blocks), func.body.body, func.body.span)
    return Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)


def fold_batch_norm(mod: IRModule) -> IRModule:
    """Functional form of :class:`FoldBatchNorm`."""
    return map_functions(mod, fold_batch_norm_function)


@dataclass(frozen=True)
class FoldBatchNorm(Pass, name="FoldBatchNorm", transform=fold_batch_norm):
    """Fold inference ``batch_norm`` into the preceding convolution (module docstring)."""


__all__ = ["FoldBatchNorm", "fold_batch_norm", "fold_batch_norm_function"]
