"""The attention rewrites of ``partition_for_cutlass`` (docs/codegen.md#partition_for_cutlass, step 1).

A hand-written attention chain::

    s = matmul(Q, permute_dims(K)) * scale_const [+ bias]      (astype around the scale
    p = softmax(s)                                              and the softmax in the
    o = matmul(p, V)                                            "cast" variants)

becomes ``R.nn.attention(q, k, v[, bias], scale=...)`` plus reshapes. Seventeen patterns,
as TVM 0.27's ``make_attention_rewrite_pattern``: the multi-query one (BSNH in and out, no
bias, casts, ``R.repeat`` on K and V) and the 16 combinations of q/k/v layout {BSNH, BSH},
output layout {BSNH, BSH}, bias {yes, no}, cast {yes, no}, tried in that order, each through
:func:`byocc.transform.rewrite_call.rewrite_call`.

Layouts. BSNH inputs arrive as ``reshape(permute_dims(x, [0, 2, 1, 3]), (B*N, S, H))`` of a
4-D ``x`` (K additionally ``permute_dims(., [0, 2, 1])``), and ``x`` itself is the attention
operand. A BSH input is a 3-D ``x`` (K through ``permute_dims(., [0, 2, 1])``), reshaped to
``(B, S, 1, H)``. A BSNH output is ``permute_dims(reshape(o, (B, N, S, Hv)), [0, 2, 1, 3])``
and becomes the attention itself; a BSH output becomes ``reshape(attention, o's shape)``.
The bias is reshaped to 4-D from the forms listed in the spec; the scale is the constant's
value in the constant's dtype.

Differences from TVM 0.27 (TVM defects, not copied; tests named after them):

* Where TVM's rewriter unpacks ``None`` (a q/k/v sub-check failing: wrong permutation, wrong
  rank, a reshape that does not keep the last two dims) TVM raises ``TypeError`` and
  ``partition_for_cutlass`` fails. byocc treats it as any other failed check: this pattern
  does not apply (a later one may, e.g. the BSH form on the 3-D core of the chain).
* Every BSH-output rewrite raises ``TypeError`` in TVM (``R.reshape`` given an FFI array).
  byocc performs it, correctly: a BSH (one head) attention is reshaped back to the chain's
  3-D output; a BSNH attention (heads in axis 2) is first permuted to ``(B, N, S, Hv)``, as
  the chain's ``(B*N, S, Hv)`` output is laid out (TVM's intended plain reshape would mix
  heads and positions).
* A replacement whose shape is not the replaced value's shape is not made (TVM would bind
  an ill-typed value: BSH inputs whose batch is really ``B*N`` under a BSNH output).
* The multi-query rewrite drops ``R.repeat`` from K and V. byocc makes it only where the
  result is the same: repeats along the head axis (2), which attention's grouped heads
  undo, or the same repeat along the sequence axis (1) on both K and V, which the softmax
  cancels. TVM drops any repeat.
* Where a bias-shape comparison meets a symbolic dim against a constant, TVM's Python ``==``
  raises ``ValueError: Cannot use and / or / not operator to Expr``; byocc counts the dims
  as different and goes on to the next form.
* An attention whose operands do not type-check (TVM's normaliser would raise) is not made.
"""

from __future__ import annotations

from byocc.dpl.constructors import is_const
from byocc.dpl.constructors import is_op
from byocc.dpl.constructors import wildcard
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import InputError
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import TensorStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir.struct_info import ShapeStructInfo
from byocc.ir.structural import structural_equal
from byocc.ops.registry import make_call
from byocc.transform.rewrite_call import rewrite_call

_LAYOUTS = ("BSNH", "BSH")


class _Reject(Exception):
    """A check failed: the chain stays as it is."""


def _ndim(expr) -> int:
    si = expr.struct_info
    return si.ndim if isinstance(si, TensorStructInfo) else -1


def _shape(expr) -> tuple:
    si = expr.struct_info
    if not isinstance(si, TensorStructInfo) or si.shape is None:
        raise _Reject
    return tuple(si.shape)


def _shape_values(expr) -> tuple:
    """Values of a shape operand (a ``R.shape`` literal or a shape-typed variable)."""
    si = expr.struct_info
    if not isinstance(si, ShapeStructInfo) or si.values is None:
        raise _Reject
    return tuple(si.values)


def _axes(call) -> list:
    axes = call.attrs.get("axes") if call.attrs is not None else None
    if axes is None:
        raise _Reject
    return list(axes)


def _same(a, b) -> bool:
    """TVM's Python ``==`` on dims: integers by value, anything symbolic by identity."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return a is b


def _same_dims(a, b) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))


def _mul(a, b):
    """``a * b`` as TVM folds it: constants multiply, a factor 1 vanishes; anything else is
    a new product equal to no existing dim."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    return object()


def _reshape(x, dims):
    return make_call("relax.reshape", [x, list(dims)])


class _Input:
    """The pattern for one of q/k/v and the check that turns a match into an operand."""

    def __init__(self, layout: str, transpose: bool, repeat: bool):
        self.raw = wildcard()
        self.tensor = is_op("relax.repeat")(self.raw) if repeat else self.raw
        self.layout = layout
        self.transpose = transpose
        if layout == "BSNH":
            self.permuted = is_op("relax.permute_dims")(self.tensor)
            self.shape = wildcard()
            self.reshaped = is_op("relax.reshape")(self.permuted, self.shape)
            top = self.reshaped
        else:
            top = self.tensor
        if transpose:
            self.transposed = is_op("relax.permute_dims")(top)
            top = self.transposed
        self.pattern = top

    def operand(self, m: dict):
        """(attention operand, its 4-D shape); raises _Reject."""
        x = m[self.raw]
        if self.layout == "BSNH":
            if _ndim(m[self.tensor]) != 4:
                raise _Reject
            if _axes(m[self.permuted]) != [0, 2, 1, 3]:
                raise _Reject
            before = _shape(m[self.permuted])
            after = _shape_values(m[self.shape])
            if not (len(before) == 4 and len(after) == 3 and _same_dims(before[-2:], after[-2:])):
                raise _Reject
            if self.transpose and _axes(m[self.transposed]) != [0, 2, 1]:
                raise _Reject
            return x, _shape(x)
        if _ndim(m[self.tensor]) != 3:
            raise _Reject
        if self.transpose and _axes(m[self.transposed]) != [0, 2, 1]:
            raise _Reject
        b, s, h = _shape(x)
        dims = (b, s, 1, h)
        return _reshape(x, dims), dims


def make_attention_rewrite(qkv_layout: str, out_layout: str, with_bias: bool, with_cast: bool,
                           with_kv_repeat: bool = False):
    """``(pattern, rewriter)`` for one chain form (TVM's ``make_attention_rewrite_pattern``)."""
    if qkv_layout not in _LAYOUTS or out_layout not in _LAYOUTS:
        raise ValueError(f"layouts are BSNH or BSH, not {qkv_layout!r} / {out_layout!r}")
    q = _Input(qkv_layout, False, False)
    k = _Input(qkv_layout, True, with_kv_repeat)
    v = _Input(qkv_layout, False, with_kv_repeat)
    matmul_1 = is_op("relax.matmul")(q.pattern, k.pattern)
    scale = is_const()
    scale_operand = is_op("relax.astype")(scale) if with_cast else scale
    multiply = is_op("relax.multiply")(matmul_1, scale_operand)
    bias_raw = wildcard() if with_bias else None
    softmax_input = is_op("relax.add")(multiply, bias_raw) if with_bias else multiply
    if with_cast:
        softmax_input = is_op("relax.astype")(softmax_input)
    softmax = is_op("relax.nn.softmax")(softmax_input)
    softmax_output = is_op("relax.astype")(softmax) if with_cast else softmax
    matmul_2 = is_op("relax.matmul")(softmax_output, v.pattern)
    if out_layout == "BSNH":
        out_shape = wildcard()
        out_permuted = is_op("relax.permute_dims")(is_op("relax.reshape")(matmul_2, out_shape))
        pattern = out_permuted
    else:
        pattern = matmul_2

    def output(m: dict, attention):
        if _ndim(m[matmul_2]) != 3:
            raise _Reject
        before = _shape(m[matmul_2])
        if out_layout == "BSNH":
            after = _shape_values(m[out_shape])
            if not (len(before) == 3 and len(after) == 4 and _same_dims(before[-2:], after[-2:])):
                raise _Reject
            if _axes(m[out_permuted]) != [0, 2, 1, 3]:
                raise _Reject
            return attention
        if qkv_layout == "BSNH":
            attention = make_call("relax.permute_dims", [attention], {"axes": [0, 2, 1, 3]})
        return _reshape(attention, before)

    def rewriter(original, m: dict):
        try:
            if with_kv_repeat:
                _check_repeats(m[k.tensor], m[v.tensor])
            query, (b, s, n, _) = q.operand(m)
            key, (_, s_kv, _, _) = k.operand(m)
            value, _ = v.operand(m)
            if not _softmax_over_last_axis(m[softmax]):
                return original
            operands = [query, key, value]
            if with_bias:
                operands.append(_bias_operand(m[bias_raw], b, s, n, s_kv))
            try:
                attention = make_call("relax.nn.attention", operands, {"scale": _scale(m[scale])})
            except TypeInferenceError:
                raise _Reject from None
            new = output(m, attention)
            if not _same_type(new, original):
                return original
            return new
        except _Reject:
            return original

    return pattern, rewriter


def _softmax_over_last_axis(softmax) -> bool:
    axis = softmax.attrs.get("axis")
    rank = len(_shape(softmax))
    if axis == -1:
        axis += rank
    return axis == rank - 1


def _bias_operand(bias, b, s, n, s_kv):
    """The chain's bias reshaped to the 4-d form ``relax.nn.attention`` takes ((B, N, S, S_kv)
    or one that broadcasts to it), for each bias shape the rewrite accepts; _Reject otherwise."""
    shape = _shape(bias)
    bn = _mul(b, n)
    forms = (((bn, s, s_kv), (b, n, s, s_kv)), ((bn, 1, s_kv), (b, n, 1, s_kv)),
             ((b, s, s_kv), (b, 1, s, s_kv)), ((b, 1, s_kv), (b, 1, 1, s_kv)),
             ((1, s, s_kv), (1, 1, s, s_kv)), ((s, s_kv), (1, 1, s, s_kv)),
             ((1, 1, s_kv), (1, 1, 1, s_kv)), ((1, s_kv), (1, 1, 1, s_kv)), ((s_kv,), (1, 1, 1, s_kv)))
    for have, want in forms:
        if _same_dims(shape, have):
            return _reshape(bias, want)
    raise _Reject


def _check_repeats(rk, rv) -> None:
    """K's and V's ``R.repeat`` may be dropped: both along the head axis, or the same repeat
    along the sequence axis (duplicated key/value pairs cancel in the softmax)."""
    axes = []
    for r in (rk, rv):
        axis = r.attrs.get("axis") if r.attrs is not None else None
        if axis is None:
            raise _Reject
        axes.append(axis % 4)
    if axes == [2, 2]:
        return
    if axes == [1, 1] and rk.attrs.get("repeats") == rv.attrs.get("repeats"):
        return
    raise _Reject


def _same_type(new, old) -> bool:
    a, b = new.struct_info, old.struct_info
    return (isinstance(a, TensorStructInfo) and isinstance(b, TensorStructInfo) and a.shape is not None
            and b.shape is not None and structural_equal(a, b))


def _scale(const: Constant) -> PrimValue:
    if const.data is None:
        raise InputError("partition_for_cutlass: the attention scale is a metadata constant "
                         "whose value is unknown (no .npz sidecar); its value goes into the "
                         "rewritten R.nn.attention", const.span)
    if const.data.size != 1:
        raise _Reject
    return PrimValue(float(const.data.reshape(())), str(const.data.dtype))


def attention_rewrites(use_flash_mqa: bool = True) -> list:
    """The ``(pattern, rewriter)`` pairs partition_for_cutlass applies, in its order."""
    out = []
    if use_flash_mqa:
        out.append(make_attention_rewrite("BSNH", "BSNH", with_bias=False, with_cast=True, with_kv_repeat=True))
    for qkv in _LAYOUTS:
        for o in _LAYOUTS:
            for bias in (True, False):
                for cast in (True, False):
                    out.append(make_attention_rewrite(qkv, o, bias, cast))
    return out


def rewrite_attention(func, use_flash_mqa: bool = True):
    """``func`` with every recognised attention chain replaced (all 17 rewrites in order).

    Every pattern needs a softmax; without one only ``rewrite_call``'s clean-up can change
    the function, and a single call reproduces that (it is idempotent)."""
    rewrites = attention_rewrites(use_flash_mqa)
    if not _has_softmax(func):
        pattern, rewriter = rewrites[0]
        return rewrite_call(pattern, rewriter, func)
    for pattern, rewriter in rewrites:
        func = rewrite_call(pattern, rewriter, func)
    return func


def _has_softmax(func) -> bool:
    """Whether a softmax call is bound anywhere in ``func`` (local functions and ``if``
    branches included); an explicit stack, no recursion."""
    stack = [func.body]
    while stack:
        seq = stack.pop()
        if not isinstance(seq, SeqExpr):
            continue
        for block in seq.blocks:
            for b in block.bindings:
                v = b.value
                if isinstance(v, Call) and getattr(v.op, "name", None) == "relax.nn.softmax":
                    return True
                if isinstance(v, Function):
                    stack.append(v.body)
                elif isinstance(v, If):
                    stack += [v.true_branch, v.false_branch]
    return False


__all__ = ["attention_rewrites", "make_attention_rewrite", "rewrite_attention"]
