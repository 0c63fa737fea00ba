"""RecomposeOps: the decomposed forms exporters write, back into the fused ops the pattern
tables match.

An ONNX exporter (torch's TorchScript exporter at opset 17, hand-written models) spells
several operators as arithmetic. Every rewrite keeps the value computed (up to rounding):

=================  ==========================================================  ==================
fused op           decomposed form (any operand order of ``*`` and ``+``)      note
=================  ==========================================================  ==================
``nn.gelu``        ``x * 0.5 * (1 + erf(x / sqrt(2)))`` (or ``x * 0.70710678``)  torch ``GELU()``
``nn.gelu_tanh``   ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))``  ``x**3``: power or x*x*x
``nn.silu``        ``x * sigmoid(x)``
``nn.layer_norm``  ``d = x - mean(x); d / sqrt(mean(d**2) + eps) [* g] [+ b]``    ``d**2``: power or d*d;
                                                                                  ``* rsqrt(...)`` too
``nn.rms_norm``    ``x * rsqrt(mean(x**2) + eps) * w`` (``/ sqrt``, ``* (1/sqrt)``   ``x`` may be
                   too), with ``astype`` to fp32 around the statistics             ``astype(x, f32)``
attention core     ``softmax(matmul(q, k^T) / c [+ bias]) @ v`` on 4-D (B, N, S, H)  see below
=================  ==========================================================  ==================

Conditions: every intermediate is a dataflow variable used only inside the chain (not a
block output); constants match their exact values to a relative 1e-4 (``0.5``, ``sqrt 2``,
``0.044715``, ``sqrt(2/pi)``, the power 2 or 3); the means reduce the trailing axes with
``keepdims=True``; a norm's weight and bias have the normalised dims' shape (a constant of a
broadcastable shape is reshaped at compile time; missing ones become ones/zeros); the
result has the chain's dtype and shape. Anything else is left as it is.

Attention. The exporter's chain on 4-D (B, N, S, H) heads is rewritten into the 3-D
(B*N, S, H) core that the cutlass backend's attention rewrites (TVM's
``partition_for_cutlass`` patterns, :mod:`byocc.backends.cutlass.rewrites`) recognise:
``reshape`` of the heads, ``K`` transposed back to (B, N, S, H) (composed with the
exporter's own transposes where they are a ``permute_dims``), the division by a constant a
multiplication by its inverse, a 4-D bias reshaped or broadcast to (B*N, S, S_kv) / (1, S,
S_kv), and the result reshaped back to (B, N, S, H). The 3-D form computes the same values;
the backend's rewrites (run after this pass by ``byocc partition``) turn it into
``R.nn.attention``. Static B and N only.

The chains are found from their last binding, visiting bindings in reverse, so the
largest form wins (a layer norm with its affine rather than without) and a variable taken
into a chain is not the root of another. Linear in the number of bindings.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from typing import ClassVar

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import TensorStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import Var
from byocc.ir import VarBinding

from .dead_code_elimination import remove_all_unused
from .pass_manager import Pass
from .pass_manager import map_functions

_SKIP_ATTRS = ("Composite", "Codegen", "Primitive")
_SQRT2 = math.sqrt(2.0)
_TANH_C = math.sqrt(2.0 / math.pi)


def _make(op: str, args: list, attrs: Any = None) -> Call:
    from byocc.ops import make_call

    return make_call(op, args, attrs)


def _opname(call: Expr) -> str | None:
    """The operator name of a call of an Op (None for anything else)."""
    op = getattr(call, "op", None)
    return op.name if isinstance(op, Op) else None


def _si(x: Expr) -> TensorStructInfo | None:
    si = getattr(x, "struct_info", None)
    return si if isinstance(si, TensorStructInfo) else None


def _shape(x: Expr) -> tuple | None:
    si = _si(x)
    return tuple(si.shape) if si is not None and si.shape is not None else None


def _static(shape: tuple | None) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def _close(value: float | None, want: float, rel: float = 1e-4) -> bool:
    return value is not None and abs(value - want) <= rel * abs(want)


class _Chain:
    """Use-def facts of one function and the chain being matched (its interior vars)."""

    def __init__(self, func: Function) -> None:
        assert isinstance(func.body, SeqExpr)
        self.values: dict[Var, Expr] = {}
        self.block_of: dict[Var, int] = {}
        self.refs: dict[Var, int] = {}
        for i, block in enumerate(func.body.blocks):
            for b in block.bindings:
                if isinstance(b, VarBinding):
                    self.values[b.var] = b.value
                    self.block_of[b.var] = i
                for v in _all_refs(b.value):
                    self.refs[v] = self.refs.get(v, 0) + 1
        for v in _all_refs(func.body.body):
            self.refs[v] = self.refs.get(v, 0) + 1
        self.taken: list[Var] = []
        self.block = -1

    def call(self, x: Expr, *names: str, refs: int = 1) -> Call | None:
        """``x``'s value when ``x`` is an interior of the chain: a dataflow var of this block,
        read ``refs`` times in all, bound to a call of one of ``names``; noted as taken."""
        if not isinstance(x, DataflowVar) or self.refs.get(x, 0) != refs or self.block_of.get(x) != self.block:
            return None
        v = self.values.get(x)
        if not (isinstance(v, Call) and isinstance(v.op, Op) and v.op.name in names):
            return None
        self.taken.append(x)
        return v

    def peek(self, x: Expr, *names: str) -> Call | None:
        """``x``'s value when it is a call of one of ``names`` (any number of uses; not taken)."""
        v = self.values.get(x) if isinstance(x, Var) else None
        return v if isinstance(v, Call) and isinstance(v.op, Op) and v.op.name in names else None

    def product(self, x: Expr, depth: int = 3) -> list[Expr]:
        """The factors of ``x`` through interior multiplies (at most ``depth`` levels)."""
        out: list[Expr] = []
        stack = [(x, 0)]
        while stack:
            e, d = stack.pop()
            m = self.call(e, "relax.multiply") if d < depth and d > 0 else None
            if m is None and d == 0:
                v = self.values.get(e) if isinstance(e, Var) else None
                m = v if isinstance(v, Call) and getattr(v.op, "name", None) == "relax.multiply" else None
            if m is None:
                out.append(e)
            else:
                stack += [(m.args[1], d + 1), (m.args[0], d + 1)]
        return out


def _all_refs(expr: Expr) -> list[Var]:
    """Every variable occurrence in ``expr`` (with repeats), an explicit stack."""
    from byocc.ir import If
    from byocc.ir import Tuple
    from byocc.ir import TupleGetItem

    out: list[Var] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out.append(e)
        elif isinstance(e, Call):
            stack += list(e.args)
        elif isinstance(e, Tuple):
            stack += list(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, If):
            stack += [e.cond, e.true_branch, e.false_branch]
        elif isinstance(e, SeqExpr):
            stack += [b.value for block in e.blocks for b in block.bindings] + [e.body]
        elif isinstance(e, Function):
            stack.append(e.body)
    return out


def _scalar(x: Expr) -> float | None:
    """The value of a constant holding one number (any shape of ones), else None."""
    if isinstance(x, Constant) and x.data is not None and x.data.size == 1:
        return float(x.data.reshape(()))
    return None


def _one_of(args: tuple, pred: Callable[[Expr], Any]) -> tuple[Any, Expr] | None:
    """``(pred(a), other)`` for the operand ``a`` of a binary call where ``pred`` holds."""
    for i in (0, 1):
        got = pred(args[i])
        if got is not None and got is not False:
            return got, args[1 - i]
    return None


# --------------------------------------------------------------------------- GELU, SiLU
def _match_gelu(g: _Chain, root: Var, call: Call) -> Expr | None:
    factors = g.product(root)
    if len(factors) != 3:
        return None
    halves = [f for f in factors if _close(_scalar(f), 0.5)]
    if len(halves) != 1:
        return None
    rest = [f for f in factors if f is not halves[0]]
    for x, a in (rest, rest[::-1]):
        got = _attempt(g, _gelu_tail, g, x, a)
        if got is not None:
            return got
    return None


def _gelu_tail(g: _Chain, x: Expr, a: Expr) -> Expr | None:
    """``gelu(x)`` when ``a`` is ``1 + erf(x / sqrt 2)`` (``gelu_tanh`` for the tanh form)."""
    add = g.call(a, "relax.add")
    hit = _one_of(add.args, lambda e: _close(_scalar(e), 1.0) or None) if add is not None else None
    if hit is None:
        return None
    erf = g.call(hit[1], "relax.erf")
    if erf is not None:
        return _make("relax.nn.gelu", [x]) if _is_scaled(g, erf.args[0], x, 1 / _SQRT2) else None
    tanh = g.call(hit[1], "relax.tanh")
    if tanh is not None and _is_tanh_arg(g, tanh.args[0], x):
        return _make("relax.nn.gelu_tanh", [x])
    return None


def _is_scaled(g: _Chain, u: Expr, x: Expr, factor: float) -> bool:
    """``u`` is ``x * factor`` (or ``x / (1/factor)``)."""
    d = g.call(u, "relax.divide")
    if d is not None:
        return d.args[0] is x and _close(_scalar(d.args[1]), 1 / factor)
    m = g.call(u, "relax.multiply")
    if m is None:
        return False
    hit = _one_of(m.args, lambda e: _close(_scalar(e), factor) or None)
    return hit is not None and hit[1] is x


def _is_cube(g: _Chain, p: Expr, x: Expr) -> bool:
    pw = g.call(p, "relax.power")
    if pw is not None:
        return pw.args[0] is x and _close(_scalar(pw.args[1]), 3.0)
    m = g.call(p, "relax.multiply")
    if m is None:
        return False
    factors = [m.args[0], m.args[1]]
    for i in (0, 1):
        sq = g.call(factors[i], "relax.multiply", refs=1)
        if sq is not None and factors[1 - i] is x and sq.args[0] is x and sq.args[1] is x:
            return True
    return False


def _is_tanh_arg(g: _Chain, w: Expr, x: Expr) -> bool:
    """``w`` is ``sqrt(2/pi) * (x + 0.044715 * x**3)``."""
    m = g.call(w, "relax.multiply")
    if m is None:
        return False
    hit = _one_of(m.args, lambda e: _close(_scalar(e), _TANH_C) or None)
    if hit is None:
        return False
    s = g.call(hit[1], "relax.add")
    if s is None:
        return False
    for i in (0, 1):
        if s.args[i] is not x:
            continue
        c = g.call(s.args[1 - i], "relax.multiply")
        if c is None:
            return False
        k = _one_of(c.args, lambda e: _close(_scalar(e), 0.044715) or None)
        return k is not None and _is_cube(g, k[1], x)
    return False


def _match_silu(g: _Chain, root: Var, call: Call) -> Expr | None:
    for i in (0, 1):
        sig = g.call(call.args[i], "relax.sigmoid")
        if sig is not None and sig.args[0] is call.args[1 - i]:
            return _make("relax.nn.silu", [call.args[1 - i]])
        g.taken.clear()  # only the sigmoid could have been taken
    return None


# --------------------------------------------------------------------------- norms
def _trailing_axes(call: Call, ndim: int) -> tuple[int, ...] | None:
    """The axes of a keepdims mean when they are the trailing ones, negative-numbered."""
    attrs = call.attrs
    if attrs is None or not attrs.get("keepdims") or attrs.get("axis") is None:
        return None
    axes = sorted(a + ndim if a < 0 else a for a in attrs.get("axis"))
    if not axes or axes != list(range(ndim - len(axes), ndim)):
        return None
    return tuple(a - ndim for a in axes)


def _is_square(g: _Chain, p: Expr, x: Expr) -> bool:
    pw = g.call(p, "relax.power")
    if pw is not None:
        return pw.args[0] is x and _close(_scalar(pw.args[1]), 2.0)
    m = g.call(p, "relax.multiply")
    return m is not None and m.args[0] is x and m.args[1] is x


def _inv_std(g: _Chain, e: Expr, mode: str) -> tuple[Expr, float] | None:
    """``(variance expression, eps)`` for ``rsqrt(v + eps)`` (mode ``mul``: the factor a
    multiply takes, also ``1 / sqrt(v + eps)``) or ``sqrt(v + eps)`` (mode ``div``)."""
    if mode == "mul":
        r = g.call(e, "relax.rsqrt")
        if r is None:
            d = g.call(e, "relax.divide")
            if d is None or not _close(_scalar(d.args[0]), 1.0):
                return None
            r = g.call(d.args[1], "relax.sqrt")
            if r is None:
                return None
    else:
        r = g.call(e, "relax.sqrt")
        if r is None:
            return None
    add = g.call(r.args[0], "relax.add")
    if add is None:
        return None
    hit = _one_of(add.args, _scalar)
    if hit is None or not 0 < hit[0] < 1:
        return None
    return hit[1], hit[0]


def _normalised_call(g: _Chain, c: Call) -> tuple[Expr, Expr, float] | None:
    """``(x, variance expression, eps)`` when ``c`` is ``x * rsqrt(v + eps)`` or
    ``x / sqrt(v + eps)``."""
    if _opname(c) == "relax.divide":
        got = _inv_std(g, c.args[1], "div")
        return (c.args[0], got[0], got[1]) if got is not None else None
    if _opname(c) != "relax.multiply":
        return None
    for i in (0, 1):
        got = _attempt(g, _inv_std, g, c.args[i], "mul")
        if got is not None:
            return c.args[1 - i], got[0], got[1]
    return None


def _normalised(g: _Chain, n: Expr) -> tuple[Expr, Expr, float] | None:
    c = g.call(n, "relax.divide", "relax.multiply")
    return _normalised_call(g, c) if c is not None else None


def _attempt(g: _Chain, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, forgetting the interiors it took when it fails."""
    mark = len(g.taken)
    got = fn(*args)
    if got is None or got is False:
        del g.taken[mark:]
    return got


def _param(x: Expr, dims: tuple, dtype: str) -> Expr | None:
    """A norm weight/bias of shape ``dims`` from ``x``: ``x`` itself, or a constant of a
    broadcastable shape (leading ones) reshaped at compile time."""
    si = _si(x)
    if si is None or si.dtype != dtype:
        return None
    shape = _shape(x)
    if shape == dims:
        return x
    k = len(dims)
    if isinstance(x, Constant) and x.data is not None and shape is not None and len(shape) >= k:
        if all(d == 1 for d in shape[:-k]) and tuple(shape[-k:]) == dims:
            from byocc.ops import constant_of

            return constant_of(x.data.reshape(dims))
    return None


def _filled(dims: tuple, dtype: str, value: float) -> Expr:
    import numpy as np

    from byocc.ops import constant_of
    from byocc.ops.reference import np_dtype

    return constant_of(np.full(dims, value, dtype=np_dtype(dtype)))


def _centred_call(g: _Chain, c: Call) -> tuple[Expr, tuple, float] | None:
    """``(x, axes, eps)`` when ``c`` is ``d / sqrt(mean(d**2) + eps)`` (or ``d * rsqrt``)
    with ``d = x - mean(x)`` over the same trailing axes."""
    got = _normalised_call(g, c)
    if got is None:
        return None
    d, var, eps = got
    sub = g.peek(d, "relax.subtract")
    mv = g.call(var, "relax.mean")
    if sub is None or mv is None:
        return None
    uses = 3 if g.peek(mv.args[0], "relax.multiply") is not None else 2
    if not _is_square(g, mv.args[0], d) or g.call(d, "relax.subtract", refs=uses) is None:
        return None
    x, m = sub.args
    mean = g.call(m, "relax.mean")
    xs = _si(x)
    if mean is None or mean.args[0] is not x or xs is None:
        return None
    axes = _trailing_axes(mean, xs.ndim)
    if axes is None or _trailing_axes(mv, xs.ndim) != axes:
        return None
    return x, axes, eps


def _centred(g: _Chain, n: Expr) -> tuple[Expr, tuple, float] | None:
    c = g.call(n, "relax.divide", "relax.multiply")
    return _centred_call(g, c) if c is not None else None


def _with_gamma(g: _Chain, c: Call) -> tuple[tuple[Expr, tuple, float], Expr] | None:
    """``(centred norm, gamma)`` when ``c`` is ``norm * gamma`` (either order)."""
    if _opname(c) != "relax.multiply":
        return None
    for i in (0, 1):
        got = _attempt(g, _centred, g, c.args[i])
        if got is not None:
            return got, c.args[1 - i]
    return None


def _match_layer_norm(g: _Chain, root: Var, call: Call) -> Expr | None:
    out = _si(root)
    if out is None or out.dtype is None or out.shape is None:
        return None
    beta = gamma = None
    hit = None
    if _opname(call) == "relax.add":
        for i in (0, 1):
            mark = len(g.taken)
            inner = g.call(call.args[i], "relax.multiply", "relax.divide")
            if inner is not None:
                got = _attempt(g, _with_gamma, g, inner)
                if got is not None:
                    hit, gamma = got
                else:
                    hit = _attempt(g, _centred_call, g, inner)
            if hit is not None:
                beta = call.args[1 - i]
                break
            del g.taken[mark:]
    else:
        got = _attempt(g, _with_gamma, g, call)
        if got is not None:
            hit, gamma = got
        else:
            hit = _attempt(g, _centred_call, g, call)
    if hit is None:
        return None
    x, axes, eps = hit
    xs = _si(x)
    dims = tuple(out.shape[len(out.shape) + a] for a in axes)
    if not _static(dims) or xs is None or _shape(x) != tuple(out.shape) or xs.dtype != out.dtype:
        return None
    g_ = _param(gamma, dims, out.dtype) if gamma is not None else _filled(dims, out.dtype, 1.0)
    b_ = _param(beta, dims, out.dtype) if beta is not None else _filled(dims, out.dtype, 0.0)
    if g_ is None or b_ is None:
        return None
    return _make("relax.nn.layer_norm", [x, g_, b_], {"axes": list(axes), "epsilon": eps})


def _strip_cast(g: _Chain, x: Expr) -> Expr:
    """``y`` when ``x = astype(y, float32)`` (any number of uses), else ``x``."""
    c = g.peek(x, "relax.astype")
    return c.args[0] if c is not None else x


def _match_rms_norm(g: _Chain, root: Var, call: Call) -> Expr | None:
    out = _si(root)
    if out is None or out.dtype is None or out.shape is None:
        return None
    for i in (0, 1):
        mark = len(g.taken)
        n = call.args[i]
        w = call.args[1 - i]
        cast = g.call(n, "relax.astype")
        if cast is not None:
            n = cast.args[0]
        got = _normalised(g, n)
        if got is not None:
            x32, var, eps = got
            mean = g.call(var, "relax.mean")
            if mean is not None and _is_square(g, mean.args[0], x32):
                x = _strip_cast(g, x32)
                if _si(x) is None or _si(x).dtype != out.dtype:  # type: ignore[union-attr]
                    x = x32  # the cast is not the norm's input dtype: the norm of the cast value
                xs = _si(x)
                ndim = xs.ndim if xs is not None else -1
                axes = _trailing_axes(mean, ndim)
                if axes is not None and xs is not None and xs.dtype == out.dtype and _shape(x) == tuple(out.shape):
                    dims = tuple(out.shape[len(out.shape) + a] for a in axes)
                    weight = _param(w, dims, out.dtype) if _static(dims) else None
                    if weight is not None:
                        return _make("relax.nn.rms_norm", [x, weight], {"axes": list(axes), "epsilon": eps})
        del g.taken[mark:]
    return None


# --------------------------------------------------------------------------- attention
def _match_attention(g: _Chain, root: Var, call: Call) -> list[tuple[DataflowVar, Expr]] | None:
    """The 3-D core of a 4-D attention chain ending at ``root = matmul(p, v)``: the new
    bindings, the last one ``root``'s replacement."""
    p, v4 = call.args
    sm = g.call(p, "relax.nn.softmax")
    if sm is None or sm.attrs is None or sm.attrs.get("axis") not in (-1, 3):
        return None
    s = sm.args[0]
    bias = None
    add = g.call(s, "relax.add")
    if add is not None:
        for i in (0, 1):
            mark = len(g.taken)
            if g.call(add.args[i], "relax.multiply", "relax.divide") is not None:
                g.taken.pop()
                s, bias = add.args[i], add.args[1 - i]
                break
            del g.taken[mark:]
        if bias is None:
            return None
    scaled = g.call(s, "relax.multiply", "relax.divide")
    if scaled is None:
        return None
    scale: float | None = None
    scores: Expr | None = None
    if _opname(scaled) == "relax.divide":
        c = _scalar(scaled.args[1])
        scores = scaled.args[0]
        scale = None if c is None or c == 0 else 1.0 / c
    else:
        hit = _one_of(scaled.args, _scalar)
        if hit is not None:
            scale, scores = hit
    if scale is None or scores is None:
        return None
    mm = g.call(scores, "relax.matmul")
    if mm is None:
        return None
    q4, kt4 = mm.args
    qs, ks, vs, os_ = _shape(q4), _shape(kt4), _shape(v4), _shape(root)
    if not all(sh is not None and len(sh) == 4 for sh in (qs, ks, vs, os_)):
        return None
    assert qs is not None and ks is not None and vs is not None and os_ is not None
    b, n, sq, h = qs
    if not (isinstance(b, int) and isinstance(n, int)):
        return None
    if not (ks[0] == b and ks[1] == n and ks[2] == h and vs[0] == b and vs[1] == n and vs[2] == ks[3]):
        return None
    skv = ks[3]
    q_si = _si(q4)
    if q_si is None or q_si.dtype is None:
        return None
    dtype = q_si.dtype
    new: list[tuple[DataflowVar, Expr]] = []

    def emit(value: Expr) -> DataflowVar:
        var = DataflowVar("lv", value.struct_info)
        new.append((var, value))
        return var

    import numpy as np

    from byocc.ops import constant_of
    from byocc.ops.reference import np_dtype

    try:
        k4 = _heads(g, _untranspose(g, kt4, emit), emit)
        v4 = _heads(g, v4, emit)
        q3 = emit(_make("relax.reshape", [q4, [b * n, sq, h]]))
        k3 = emit(_make("relax.reshape", [k4, [b * n, skv, h]]))
        kt3 = emit(_make("relax.permute_dims", [k3], {"axes": [0, 2, 1]}))
        v3 = emit(_make("relax.reshape", [v4, [b * n, skv, vs[3]]]))
        s3 = emit(_make("relax.matmul", [q3, kt3]))
        m3 = emit(_make("relax.multiply", [s3, constant_of(np.asarray(scale, dtype=np_dtype(dtype)))]))
        if bias is not None:
            b3 = _bias_3d(bias, b, n, sq, skv, emit)
            if b3 is None:
                return None
            m3 = emit(_make("relax.add", [m3, b3]))
        p3 = emit(_make("relax.nn.softmax", [m3], {"axis": -1}))
        o3 = emit(_make("relax.matmul", [p3, v3]))
        out = _make("relax.reshape", [o3, list(os_)])
    except TypeInferenceError:
        return None
    if _si(out) is None or _shape(out) != os_ or _si(out).dtype != _si(root).dtype:  # type: ignore[union-attr]
        return None
    new.append((root, out))  # type: ignore[arg-type]
    return new


def _untranspose(g: _Chain, kt4: Expr, emit: Callable[[Expr], DataflowVar]) -> Expr:
    """``kt4`` with its last two axes swapped back, composed with kt4's own permute_dims."""
    p = g.peek(kt4, "relax.permute_dims")
    if p is not None and p.attrs is not None and p.attrs.get("axes") is not None:
        axes = [int(a) % 4 for a in p.attrs.get("axes")]
        composed = [axes[i] for i in (0, 1, 3, 2)]
        src = p.args[0]
        if composed == [0, 1, 2, 3]:
            return src
        return emit(_make("relax.permute_dims", [src], {"axes": composed}))
    return emit(_make("relax.permute_dims", [kt4], {"axes": [0, 1, 3, 2]}))


def _heads(g: _Chain, x4: Expr, emit: Callable[[Expr], DataflowVar]) -> Expr:
    """``x4`` (B, N, S, H); where it is grouped heads repeated the way Llama code writes it
    (``reshape(broadcast_to(expand_dims(permute_dims(y, [0, 2, 1, 3]), 2), ...))``, y of
    shape (B, S, N_kv, H)), the same value as ``permute_dims(repeat(y, N / N_kv, axis=2),
    [0, 2, 1, 3])``, the form the attention rewrites read as BSNH."""
    r = g.peek(x4, "relax.reshape")
    bc = g.peek(r.args[0], "relax.broadcast_to") if r is not None else None
    ex = g.peek(bc.args[0], "relax.expand_dims") if bc is not None else None
    pt = g.peek(ex.args[0], "relax.permute_dims") if ex is not None else None
    if pt is None or ex is None or bc is None or ex.attrs is None or pt.attrs is None:
        return x4
    if list(ex.attrs.get("axis") or ()) not in ([2], [-3]):
        return x4
    if [int(a) for a in (pt.attrs.get("axes") or ())] != [0, 2, 1, 3]:
        return x4
    y, wide, out = pt.args[0], _shape(bc), _shape(x4)
    ys = _shape(y)
    if ys is None or wide is None or out is None or len(wide) != 5 or len(ys) != 4:
        return x4
    b, kv, rep, s, h = wide
    if not (isinstance(rep, int) and isinstance(kv, int)) or tuple(ys) != (b, s, kv, h) or tuple(out) != (b, kv * rep, s, h):
        return x4
    rep_y = emit(_make("relax.repeat", [y], {"repeats": rep, "axis": 2}))
    return emit(_make("relax.permute_dims", [rep_y], {"axes": [0, 2, 1, 3]}))


def _bias_3d(bias: Expr, b: int, n: int, s: Any, skv: Any, emit: Callable[[Expr], DataflowVar]) -> Expr | None:
    shape = _shape(bias)
    if shape is None or len(shape) > 4:
        return None
    full = (1,) * (4 - len(shape)) + tuple(shape)
    if full[0] == 1 and full[1] == 1:
        return emit(_make("relax.reshape", [bias, [1, full[2], full[3]]]))
    if not _static(full[:2]):
        return None
    wide = emit(_make("relax.broadcast_to", [bias, [b, n, s, skv]]))
    return emit(_make("relax.reshape", [wide, [b * n, s, skv]]))


# --------------------------------------------------------------------------- the pass
_ROOTS: dict[str, tuple[Callable[..., Any], ...]] = {
    "relax.multiply": (_match_gelu, _match_layer_norm, _match_rms_norm, _match_silu),
    "relax.add": (_match_layer_norm,),
    "relax.divide": (_match_layer_norm,),
    "relax.matmul": (_match_attention,),
}

#: The names of what RecomposeOps makes, for its statistics.
KINDS = {"relax.nn.gelu": "gelu", "relax.nn.gelu_tanh": "gelu_tanh", "relax.nn.silu": "silu",
         "relax.nn.layer_norm": "layer_norm", "relax.nn.rms_norm": "rms_norm"}


def recompose_function(func: Function, stats: dict[str, int] | None = None) -> Function:
    """``func`` with every recognised chain fused (the same object when none is)."""
    if any(k in func.attrs for k in _SKIP_ATTRS) or not isinstance(func.body, SeqExpr):
        return func
    func = _drop_noop_casts(func)
    g = _Chain(func)
    replace: dict[Var, Expr] = {}
    extra: dict[Var, list[tuple[DataflowVar, Expr]]] = {}
    dropped: set[Var] = set()
    for bi, block in enumerate(func.body.blocks):
        if not isinstance(block, DataflowBlock):
            continue
        g.block = bi
        for b in reversed(block.bindings):
            if not isinstance(b, VarBinding) or b.var in dropped or not isinstance(b.value, Call):
                continue
            op = b.value.op
            for match in _ROOTS.get(op.name, ()) if isinstance(op, Op) else ():
                g.taken = []
                try:
                    got = match(g, b.var, b.value)
                except TypeInferenceError:
                    got = None
                if got is None:
                    continue
                if isinstance(got, list):  # attention: new bindings, the last one for the root
                    extra[b.var] = got[:-1]
                    replace[b.var] = got[-1][1]
                    kind = "attention"
                else:
                    replace[b.var] = got
                    kind = KINDS.get(_opname(got) or "", "other")
                dropped.update(g.taken)
                if stats is not None:
                    stats[kind] = stats.get(kind, 0) + 1
                break
    if not replace:
        return func
    blocks: list[BindingBlock] = []
    for block in func.body.blocks:
        out: list[Binding] = []
        for b in block.bindings:
            if b.var in dropped:
                continue
            if b.var in replace:
                out += [VarBinding(v, e, None) for v, e in extra.get(b.var, ())]
                b = VarBinding(b.var, replace[b.var], b.span)
            out.append(b)
        blocks.append(type(block)(tuple(out), block.span))
    body = SeqExpr(tuple(blocks), func.body.body, func.body.span)
    new = Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)
    return remove_all_unused(new)  # what fed only the chains (an astype to fp32, a mean)


def _drop_noop_casts(func: Function) -> Function:
    """``func`` without the dataflow ``astype`` bindings that cast a tensor to its own dtype
    (exporters write them for ``x.to(torch.float32)`` on an fp32 model); their uses read the
    tensor itself."""
    from byocc.ir import ExprMutator

    assert isinstance(func.body, SeqExpr)
    remap: dict[Var, Expr] = {}
    for block in func.body.blocks:
        if not isinstance(block, DataflowBlock):
            continue
        for b in block.bindings:
            v = b.value
            if (isinstance(b, VarBinding) and isinstance(b.var, DataflowVar) and isinstance(v, Call)
                    and getattr(v.op, "name", None) == "relax.astype" and _si(v.args[0]) is not None
                    and _si(v.args[0]).dtype == _si(b.var).dtype  # type: ignore[union-attr]
                    and _shape(v.args[0]) == _shape(b.var)):
                src = v.args[0]
                remap[b.var] = remap.get(src, src) if isinstance(src, Var) else src
    if not remap:
        return func
    mut = ExprMutator()
    mut.var_remap = remap
    blocks: list[BindingBlock] = []
    for block in func.body.blocks:
        out: list[Binding] = []
        for b in block.bindings:
            if b.var in remap:
                continue
            value = mut.visit_expr(b.value)
            if value is b.value:
                out.append(b)
            elif isinstance(b, MatchCast):
                out.append(MatchCast(b.var, value, b.struct_info, b.span))
            else:
                out.append(VarBinding(b.var, value, b.span))
        blocks.append(type(block)(tuple(out), block.span))
    return Function(func.params, SeqExpr(tuple(blocks), func.body.body, func.body.span), func.ret_struct_info,
                    func.is_pure, dict(func.attrs), func.span)


def _head_repeat(x: Expr, defs: dict[Var, Expr]) -> tuple[Expr, int] | None:
    """``(y, r)`` when ``x = repeat(y, r, axis=2)`` of a 4-D ``y``, ``r`` one int > 1."""
    c = defs.get(x) if isinstance(x, Var) else None
    if not isinstance(c, Call) or _opname(c) != "relax.repeat" or c.attrs is None:
        return None
    y, axis, reps = c.args[0], c.attrs.get("axis"), c.attrs.get("repeats")
    ys = _shape(y)
    if ys is None or len(ys) != 4 or not isinstance(axis, int) or axis % 4 != 2:
        return None
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 2:
        return None
    return y, reps


def group_kv_heads(func: Function) -> Function:
    """``func`` with ``R.nn.attention(q, repeat(k, r, axis=2), repeat(v, r, axis=2) [, bias])``
    (BSNH; the same ``r`` on K and V) taking ``k`` and ``v`` themselves: the attention's
    grouped-query heads (query head ``i`` reads key/value head ``i // (N / N_kv)``) give the
    same values as the repeated heads (repeated head ``j`` is head ``j // r``), so the
    repeats are exact to drop. The form RecomposeOps' grouped heads take after the cutlass
    rewrites (``byocc partition --recompose`` only: TVM's rewrites drop repeats on their
    cast form alone). The same object when nothing changes."""
    if any(k in func.attrs for k in _SKIP_ATTRS) or not isinstance(func.body, SeqExpr):
        return func
    defs: dict[Var, Expr] = {}
    changed = False
    blocks: list[BindingBlock] = []
    for block in func.body.blocks:
        out: list[Binding] = []
        for b in block.bindings:
            v = b.value
            if isinstance(b, VarBinding):
                defs[b.var] = v
                if isinstance(v, Call) and _opname(v) in ("relax.nn.attention", "relax.nn.attention_bias"):
                    rk, rv = _head_repeat(v.args[1], defs), _head_repeat(v.args[2], defs)
                    if rk is not None and rv is not None and rk[1] == rv[1]:
                        try:
                            new = _make(str(_opname(v)), [v.args[0], rk[0], rv[0], *v.args[3:]], v.attrs)
                        except TypeInferenceError:
                            new = None
                        if new is not None and _shape(new) == _shape(b.var) and _si(new).dtype == _si(b.var).dtype:  # type: ignore[union-attr]
                            b = VarBinding(b.var, new, b.span)
                            changed = True
            out.append(b)
        blocks.append(type(block)(tuple(out), block.span))
    if not changed:
        return func
    body = SeqExpr(tuple(blocks), func.body.body, func.body.span)
    new_func = Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)
    return remove_all_unused(new_func)  # the repeats nothing else reads


def recompose_ops(mod: IRModule, stats: dict[str, int] | None = None) -> IRModule:
    """Functional form of :class:`RecomposeOps`; ``stats`` (if given) counts each kind made."""
    return map_functions(mod, lambda f: recompose_function(f, stats))


@dataclass(frozen=True)
class RecomposeOps(Pass):
    """Fuse the decomposed GELU / SiLU / LayerNorm / RMSNorm / attention forms exporters
    write (module docstring)."""

    name: ClassVar[str] = "RecomposeOps"
    opt_level: ClassVar[int] = 0

    def run(self, mod: IRModule) -> IRModule:
        return recompose_ops(mod)


__all__ = ["KINDS", "RecomposeOps", "group_kv_heads", "recompose_function", "recompose_ops"]
