"""Random Relax modules for the property tests, built with byocc's IR constructors and
:func:`byocc.ops.make_call` (so every call is typed exactly as the op table infers it).

Two generators share one function builder:

* :func:`random_module`: printer/parser coverage. Several functions (public and private),
  dataflow and plain blocks, tuple outputs, symbolic leading dims, local functions, calls
  between members, scalar ``R.const`` operands and awkward name hints (``R``, ``cls``,
  ``x_1``, ``a.b``, empty...).
* :func:`random_partition_module`: graphs the cutlass and cublas tables can match, in the
  form TVM prints: matmul chains (float16/float32/int8, transposed weights, bias, relu/gelu/
  silu, residual add/multiply), NHWC/OHWI conv2d with bias, layer_norm, attention on
  (B, S, N, H), host ops between them, constants, values used several times and several
  outputs. ``tensor_constants=False`` keeps to scalar constants (TVM cannot read the
  ``metadata[...]`` references that tensor constants print as).

Every decision comes from a :class:`Chooser`: :class:`RandomChooser` for plain seeds,
:class:`DrawChooser` for hypothesis (whose draws then shrink a failing graph). Shrinking moves
every integer toward its lower bound, so a "no" is the lower bound of each yes/no question.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from collections.abc import Sequence

import numpy as np

from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import FuncStructInfo
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ops import make_call


# ----------------------------------------------------------------------------- choices
class Chooser:
    """Where the random decisions come from."""

    def integer(self, lo: int, hi: int) -> int:  # inclusive bounds
        raise NotImplementedError

    def choice(self, items: Sequence):
        return items[self.integer(0, len(items) - 1)]

    def flag(self, percent: int) -> bool:
        """True with probability ``percent``/100; shrinks to False."""
        return self.integer(0, 99) >= 100 - percent

    def subset(self, items: Sequence, lo: int, hi: int) -> list:
        pool = list(items)
        out = []
        for _ in range(min(self.integer(lo, hi), len(pool))):
            out.append(pool.pop(self.integer(0, len(pool) - 1)))
        return out


class RandomChooser(Chooser):
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class DrawChooser(Chooser):
    """Decisions drawn from hypothesis (``draw`` of an ``st.composite`` or ``data.draw``)."""

    def __init__(self, draw: Callable):
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return lo if lo == hi else self.draw(self.st.integers(lo, hi))


def strategy(generator: Callable[..., IRModule], **options):
    """A hypothesis strategy of ``generator(chooser, **options)`` modules."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        return generator(DrawChooser(draw), **options)

    return build()


# ----------------------------------------------------------------------------- building
TRICKY_HINTS = ["x", "x_1", "lv", "gv", "I", "T", "R", "cls", "Module", "main", "metadata",
                "TypeVar", "tvm", "n", "local_func", "param_0", "a.b", "", "output", "café"]
_SCALARS = {"float16": [0.5, 1.5, -2.0, 0.125], "float32": [0.5, 1.5, -2.0, 0.1, 3.14159, 1e-05],
            "int8": [1, 2, -3], "int32": [1, 7, -5]}


def scalar_constant(dtype: str, value) -> Constant:
    return Constant(np.array(value, dtype=dtype), TensorStructInfo((), dtype))


def tensor_constant(shape: tuple, dtype: str, seed: int) -> Constant:
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        data = rng.integers(-2, 3, size=shape).astype(dtype)
    else:
        data = (rng.standard_normal(shape) * 0.5).astype(dtype)
    return Constant(data, TensorStructInfo(tuple(shape), dtype))


def shape_of(v) -> tuple:
    return tuple(v.struct_info.shape)


def dtype_of(v) -> str:
    return v.struct_info.dtype


def is_static(shape) -> bool:
    return all(isinstance(d, int) for d in shape)


class FunctionBuilder:
    """One function under construction: parameters (added on demand), blocks of bindings
    and the pool of tensor values usable at the current point."""

    def __init__(self, ch: Chooser, tricky_names: int = 0, hints: Sequence[str] = TRICKY_HINTS):
        self.ch = ch
        self.tricky = tricky_names
        self.hints = hints
        self.params: list[Var] = []
        self.blocks: list = []
        self.bindings: list = []
        self.dataflow = False
        self.pool: list[Var] = []
        self.count = 0

    # names -------------------------------------------------------------------------
    def hint(self, default: str) -> str:
        if self.tricky and self.ch.flag(self.tricky):
            return self.ch.choice(self.hints)
        return default

    # values ------------------------------------------------------------------------
    def param(self, sinfo: TensorStructInfo, hint: str) -> Var:
        var = Var(self.hint(hint), sinfo)
        self.params.append(var)
        self.pool.append(var)
        return var

    def pick(self, ok: Callable[[Var], bool] = lambda v: True, computed: bool = False) -> Var | None:
        """A pool value satisfying ``ok``; the most recent half the time."""
        cands = [v for v in self.pool if ok(v) and not (computed and v in self.params)]
        if not cands:
            return None
        if self.ch.flag(50):
            return cands[-1]
        return self.ch.choice(cands)

    def operand(self, sinfo: TensorStructInfo, hint: str, const_percent: int = 0,
                pool_percent: int = 30) -> Var | Constant:
        """A value of exactly ``sinfo``: from the pool, a tensor constant, or a new parameter."""
        if pool_percent and self.ch.flag(pool_percent):
            found = self.pick(lambda v: v.struct_info == sinfo)
            if found is not None:
                return found
        if const_percent and is_static(sinfo.shape) and self.ch.flag(const_percent):
            return tensor_constant(tuple(sinfo.shape), sinfo.dtype, self.ch.integer(0, 10**6))
        return self.param(sinfo, hint)

    # bindings ----------------------------------------------------------------------
    def begin_block(self, dataflow: bool) -> None:
        self.end_block()
        self.dataflow = dataflow

    def end_block(self) -> None:
        if self.bindings:
            if self.dataflow and isinstance(self.bindings[-1].var, DataflowVar):
                # the last value of a dataflow block is always one of its outputs
                last = self.bindings[-1]
                var = Var(last.var.name_hint, last.var.struct_info)
                self.bindings[-1] = VarBinding(var, last.value)
                self.pool = [var if v is last.var else v for v in self.pool]
            block = DataflowBlock if self.dataflow else BindingBlock
            self.blocks.append(block(tuple(self.bindings)))
        self.bindings = []
        self.pool = [v for v in self.pool if not isinstance(v, DataflowVar)]

    def emit(self, value, hint: str = "lv", output: bool = False) -> Var:
        sinfo = value.struct_info
        if self.dataflow and not output and not self.ch.flag(25):
            var = DataflowVar(self.hint(hint), sinfo)
        else:
            var = Var(self.hint(hint), sinfo)
        self.bindings.append(VarBinding(var, value))
        self.count += 1
        if isinstance(sinfo, TensorStructInfo):
            self.pool.append(var)
        return var

    def call(self, op: str, args, attrs=None, hint: str | None = None, output: bool = False) -> Var:
        return self.emit(make_call(op, args, attrs), hint or op.rsplit(".", 1)[-1], output)

    def finish(self, outputs: Sequence[Var], attrs: dict, as_tuple: bool = False) -> Function:
        self.end_block()
        if len(outputs) == 1 and not as_tuple:
            body = outputs[0]
        else:
            body = Tuple(tuple(outputs), TupleStructInfo(tuple(o.struct_info for o in outputs)))
        seq = SeqExpr(tuple(self.blocks), body)
        return Function(tuple(self.params), seq, body.struct_info, True, dict(attrs))

    def outputs(self, most: int) -> list[Var]:
        """1..most distinct values to return: computed ones, the latest first. Closes the
        current block (its dataflow-local values are out of scope for the return)."""
        self.end_block()
        live = [v for v in self.pool if v not in self.params] or list(self.pool)
        chosen = [live[-1]]
        for _ in range(self.ch.integer(0, most - 1)):
            v = self.ch.choice(live)
            if v not in chosen:
                chosen.append(v)
        return chosen


def call_member(fb: FunctionBuilder, gv: GlobalVar, func: Function, hint: str = "gv") -> Var:
    """``gv(args)`` with arguments of exactly the callee's parameter types."""
    args = [fb.operand(p.struct_info, "arg", pool_percent=70) for p in func.params]
    return fb.emit(Call(gv, tuple(args), None, (), func.ret_struct_info), hint)


def global_var(name: str, func: Function) -> GlobalVar:
    return GlobalVar(name, FuncStructInfo(tuple(p.struct_info for p in func.params),
                                          func.ret_struct_info, func.is_pure))


# ----------------------------------------------------------------------------- ops
def _float(v) -> bool:
    return isinstance(v.struct_info, TensorStructInfo) and str(v.struct_info.dtype).startswith("float")


def op_unary(fb: FunctionBuilder):
    x = fb.pick(_float)
    if x is None:
        return None
    op = fb.ch.choice(["relax.nn.relu", "relax.nn.gelu", "relax.nn.silu", "relax.sigmoid",
                       "relax.exp", "relax.tanh", "relax.negative", "relax.abs"])
    return fb.call(op, (x,))


def op_binary(fb: FunctionBuilder, const_percent: int = 0):
    x = fb.pick()
    if x is None:
        return None
    op = fb.ch.choice(["relax.add", "relax.subtract", "relax.multiply", "relax.divide",
                       "relax.maximum", "relax.minimum"])
    if op == "relax.divide" and not _float(x):
        op = "relax.add"
    kind = fb.ch.integer(0, 3)
    dtype = dtype_of(x)
    if kind == 0 and dtype in _SCALARS:
        y = scalar_constant(dtype, fb.ch.choice(_SCALARS[dtype]))
    elif kind == 1 and x.struct_info.ndim >= 1:
        tail = shape_of(x)[-fb.ch.integer(1, x.struct_info.ndim):]
        y = fb.operand(TensorStructInfo(tail, dtype), "b", const_percent=const_percent)
    else:
        y = fb.operand(x.struct_info, "y", const_percent=const_percent, pool_percent=80)
    if fb.ch.flag(25):
        x, y = y, x
    return fb.call(op, (x, y))


def op_matmul(fb: FunctionBuilder):
    x = fb.pick(lambda v: v.struct_info.ndim >= 2 and isinstance(shape_of(v)[-1], int))
    if x is None:
        return None
    k = shape_of(x)[-1]
    n = fb.ch.choice([2, 4, 8])
    w = fb.operand(TensorStructInfo((k, n), dtype_of(x)), "w")
    out_dtype = "float32" if dtype_of(x) == "float16" and fb.ch.flag(15) else None
    return fb.call("relax.matmul", (x, w), {"out_dtype": out_dtype})


def op_permute(fb: FunctionBuilder):
    x = fb.pick(lambda v: v.struct_info.ndim >= 2)
    if x is None:
        return None
    axes = None if fb.ch.flag(30) else tuple(fb.ch.subset(range(x.struct_info.ndim), x.struct_info.ndim,
                                                           x.struct_info.ndim))
    return fb.call("relax.permute_dims", (x,), {"axes": axes})


def op_reshape(fb: FunctionBuilder):
    x = fb.pick(lambda v: v.struct_info.ndim >= 2 and is_static(shape_of(v)[1:]))
    if x is None:
        return None
    shape = list(shape_of(x))
    # only static dims are multiplied: TVM folds ``n * 1`` when the IR is built in Python,
    # and prints an unfolded product as ``T.Mul(n, 1)``, which neither parser reads back
    mergeable = isinstance(shape[-2], int)
    if mergeable and (shape[-1] % 2 or (len(shape) >= 3 and fb.ch.flag(50))):
        shape[-2:] = [shape[-2] * shape[-1]]
    elif shape[-1] % 2 == 0:
        shape[-1:] = [shape[-1] // 2, 2]
    else:
        return None
    return fb.call("relax.reshape", (x, ShapeExpr(tuple(shape))))


def op_softmax(fb: FunctionBuilder):
    x = fb.pick(_float)
    if x is None:
        return None
    ndim = x.struct_info.ndim
    return fb.call("relax.nn.softmax", (x,), {"axis": fb.ch.integer(-ndim, ndim - 1)})


def op_layer_norm(fb: FunctionBuilder, const_percent: int = 0):
    x = fb.pick(lambda v: _float(v) and isinstance(shape_of(v)[-1], int))
    if x is None:
        return None
    si = TensorStructInfo((shape_of(x)[-1],), dtype_of(x))
    gamma = fb.operand(si, "gamma", const_percent=const_percent, pool_percent=0)
    beta = fb.operand(si, "beta", const_percent=const_percent, pool_percent=0)
    attrs = {"axes": (-1,), "epsilon": fb.ch.choice([1e-05, 1e-06, 0.001]),
             "center": not fb.ch.flag(10), "scale": not fb.ch.flag(10)}
    return fb.call("relax.nn.layer_norm", (x, gamma, beta), attrs)


def op_concat(fb: FunctionBuilder):
    x = fb.pick()
    if x is None:
        return None
    axis = fb.ch.integer(0, x.struct_info.ndim - 1) if x.struct_info.ndim else None
    if axis is None:
        return None
    others = [v for v in fb.pool if v.struct_info == x.struct_info]
    parts = [x] + [fb.ch.choice(others) for _ in range(fb.ch.integer(1, 2))]
    tup = Tuple(tuple(parts), TupleStructInfo(tuple(p.struct_info for p in parts)))
    return fb.call("relax.concat", (tup,), {"axis": axis})


def op_split(fb: FunctionBuilder):
    def ok(v):
        return any(isinstance(d, int) and d % 2 == 0 for d in shape_of(v))

    x = fb.pick(ok)
    if x is None:
        return None
    axes = [i for i, d in enumerate(shape_of(x)) if isinstance(d, int) and d % 2 == 0]
    axis = fb.ch.choice(axes)
    dim = shape_of(x)[axis]
    sections = fb.ch.choice([2, 3]) if dim % 6 == 0 else 2
    if fb.ch.flag(30) and dim >= 3:
        sections = (1,) if dim < 4 else (1, dim // 2)
    tup = fb.call("relax.split", (x,), {"indices_or_sections": sections, "axis": axis}, hint="split")
    fields = tup.struct_info.fields
    last = None
    for i in fb.ch.subset(range(len(fields)), 1, len(fields)):
        last = fb.emit(TupleGetItem(tup, i, fields[i]), "lv")
    return last


def op_astype(fb: FunctionBuilder, dtypes=("float16", "float32")):
    x = fb.pick()
    if x is None:
        return None
    target = fb.ch.choice([d for d in dtypes if d != dtype_of(x)] or list(dtypes))
    return fb.call("relax.astype", (x,), {"dtype": target})


def op_tuple(fb: FunctionBuilder):
    parts = [fb.pick() for _ in range(fb.ch.integer(1, 3))]
    if None in parts:
        return None
    tup = fb.emit(Tuple(tuple(parts), TupleStructInfo(tuple(p.struct_info for p in parts))), "tup")
    i = fb.ch.integer(0, len(parts) - 1)
    return fb.emit(TupleGetItem(tup, i, parts[i].struct_info), "item")


def _weighted(ch: Chooser, table: Sequence[tuple]):
    total = sum(w for _, w in table)
    pick = ch.integer(0, total - 1)
    for item, w in table:
        if pick < w:
            return item
        pick -= w
    return table[-1][0]


# ----------------------------------------------------------------------------- printer/parser modules
GENERIC_OPS = [(op_unary, 3), (op_binary, 3), (op_matmul, 2), (op_permute, 1), (op_reshape, 1),
               (op_softmax, 1), (op_layer_norm, 1), (op_concat, 1), (op_split, 1), (op_astype, 1),
               (op_tuple, 1)]


def random_function(ch: Chooser, callees: Sequence[tuple] = (), local: bool = True,
                    symbolic: bool = True, max_bindings: int = 12, tricky: int = 15) -> Function:
    """A function without attributes. ``callees``: (GlobalVar, Function) it may call."""
    fb = FunctionBuilder(ch, tricky)
    sym = TirVar(ch.choice(["n", "m", "batch", "x"])) if symbolic and ch.flag(30) else None
    dtype = ch.choice(["float32", "float16"])
    for i in range(ch.integer(1, 3)):
        shape = [ch.choice([2, 4, 6]) for _ in range(ch.integer(2, 3))]
        if sym is not None and (i == 0 or ch.flag(50)):
            shape[0] = sym
        fb.param(TensorStructInfo(tuple(shape), dtype), "x")
    target = ch.integer(1, max_bindings)
    fb.begin_block(ch.flag(60))
    while fb.count < target:
        if fb.bindings and ch.flag(15):  # the parser merges adjacent blocks of one kind
            fb.begin_block(not fb.dataflow)
        if callees and ch.flag(10):
            gv, func = ch.choice(callees)
            call_member(fb, gv, func)
        elif local and not fb.dataflow and ch.flag(8):
            sub = random_function(ch, (), local=False, symbolic=False, max_bindings=4, tricky=tricky)
            lf = fb.emit(sub, "local_func")
            args = [fb.operand(p.struct_info, "arg", pool_percent=70) for p in sub.params]
            fb.emit(Call(lf, tuple(args), None, (), sub.ret_struct_info), "out")
        else:
            _weighted(ch, GENERIC_OPS)(fb)
    return fb.finish(fb.outputs(3), {}, as_tuple=ch.flag(10))


def random_module(ch: Chooser) -> IRModule:
    """1-3 functions, public or private, later ones calling earlier static ones."""
    count = ch.integer(1, 3)
    names = ch.subset(["main", "helper", "f", "layer", "prep_1", "fused"], count, count)
    functions: dict = {}
    callees: list = []
    for i, name in enumerate(names):
        func = random_function(ch, callees)
        public = i == count - 1 or ch.flag(60)
        func = func.with_attrs(global_symbol=name if public else None)
        gv = global_var(name, func)
        functions[gv] = func
        if not any(isinstance(d, TirVar) for p in func.params for d in shape_of(p)):
            callees.append((gv, func))
    return IRModule(functions)


# ----------------------------------------------------------------------------- partitionable graphs
def _bias(fb: FunctionBuilder, y: Var, const_percent: int) -> Var:
    n = shape_of(y)[-1]
    shape = fb.ch.choice([(n,), (1, n), shape_of(y)]) if is_static(shape_of(y)) else fb.ch.choice([(n,), (1, n)])
    b = fb.operand(TensorStructInfo(shape, dtype_of(y)), "bias", const_percent, pool_percent=20)
    return fb.call("relax.add", (b, y) if fb.ch.flag(20) else (y, b), hint="add")


def _residual(fb: FunctionBuilder, y: Var) -> Var:
    r = fb.operand(y.struct_info, "residual", pool_percent=60)
    op = fb.ch.choice(["relax.add", "relax.multiply"])
    y = fb.call(op, (r, y) if fb.ch.flag(30) else (y, r))
    if fb.ch.flag(40):
        y = fb.call("relax.nn.relu", (y,))
    return y


def _activation(fb: FunctionBuilder, y: Var, choices: Sequence[str]) -> Var:
    if not _float(y):
        choices = ["relax.nn.relu"]
    return fb.call(fb.ch.choice(choices), (y,))


def motif_matmul(fb: FunctionBuilder, dtype: str, const_percent: int, sym):
    def ok(v):
        return dtype_of(v) == dtype and v.struct_info.ndim in (2, 3) and isinstance(shape_of(v)[-1], int)

    x = fb.pick(ok)
    if x is None or fb.ch.flag(15):
        lead = sym if sym is not None and fb.ch.flag(50) else fb.ch.choice([4, 8])
        shape = (lead, fb.ch.choice([8, 16])) if fb.ch.flag(60) else (fb.ch.choice([1, 2]), lead, 16)
        x = fb.param(TensorStructInfo(shape, dtype), "x")
    k = shape_of(x)[-1]
    n = fb.ch.choice([8, 16, 32])
    if fb.ch.flag(40):
        wt = fb.operand(TensorStructInfo((n, k), dtype), "w", const_percent)
        w = fb.call("relax.permute_dims", (wt,), {"axes": (1, 0)})
    else:
        w = fb.operand(TensorStructInfo((k, n), dtype), "w", const_percent)
    out_dtype = None
    if dtype == "int8" and fb.ch.flag(50):
        out_dtype = "int32"
    elif dtype == "float16" and fb.ch.flag(10):
        out_dtype = "float32"
    y = fb.call("relax.matmul", (x, w), {"out_dtype": out_dtype})
    if fb.ch.flag(60):
        y = _bias(fb, y, const_percent)
    if fb.ch.flag(50):
        y = _activation(fb, y, ["relax.nn.relu", "relax.nn.gelu", "relax.nn.silu", "relax.nn.gelu_tanh"])
    if fb.ch.flag(30):
        y = _residual(fb, y)
    return y


def motif_conv2d(fb: FunctionBuilder, dtype: str, const_percent: int, sym):
    def ok(v):
        return dtype_of(v) == dtype and v.struct_info.ndim == 4 and is_static(shape_of(v))

    x = fb.pick(ok)
    if x is None or fb.ch.flag(20):
        hw = fb.ch.choice([4, 6, 8])
        x = fb.param(TensorStructInfo((fb.ch.choice([1, 2]), hw, hw, fb.ch.choice([4, 8, 16])), dtype), "data")
    c = shape_of(x)[3]
    kh = fb.ch.choice([1, 3])
    stride = fb.ch.choice([1, 1, 2])
    pad = kh // 2 if fb.ch.flag(70) or shape_of(x)[1] < kh or shape_of(x)[2] < kh else 0
    if fb.ch.flag(15):
        groups, o = c, c
    else:
        groups, o = 1, fb.ch.choice([8, 16])
    w = fb.operand(TensorStructInfo((o, kh, kh, c // groups), dtype), "weight", const_percent)
    attrs = {"strides": (stride, stride), "padding": (pad, pad, pad, pad), "dilation": (1, 1),
             "groups": groups, "data_layout": "NHWC", "kernel_layout": "OHWI", "out_layout": "NHWC",
             "out_dtype": None}
    y = fb.call("relax.nn.conv2d", (x, w), attrs, hint="conv")
    if fb.ch.flag(70):
        b = fb.operand(TensorStructInfo((1, 1, 1, o), dtype), "bias", const_percent, pool_percent=20)
        y = fb.call("relax.add", (y, b) if not fb.ch.flag(20) else (b, y))
    if fb.ch.flag(50):
        y = _activation(fb, y, ["relax.nn.relu", "relax.nn.silu"])
    if fb.ch.flag(30):
        y = _residual(fb, y)
    return y


def motif_layer_norm(fb: FunctionBuilder, dtype: str, const_percent: int, sym):
    if not dtype.startswith("float"):
        return None
    return op_layer_norm(fb, const_percent)


def motif_attention(fb: FunctionBuilder, dtype: str, const_percent: int, sym):
    if not dtype.startswith("float"):
        return None
    src = fb.pick(lambda v: dtype_of(v) == dtype and v.struct_info.ndim == 3 and is_static(shape_of(v))
                  and shape_of(v)[-1] % 2 == 0 and shape_of(v)[-1] >= 4)
    if src is not None and fb.ch.flag(60):
        b, s, d = shape_of(src)
        q = fb.call("relax.reshape", (src, ShapeExpr((b, s, 2, d // 2))), hint="q")
    else:
        q = fb.param(TensorStructInfo((fb.ch.choice([1, 2]), fb.ch.choice([4, 8]), fb.ch.choice([1, 2]),
                                       fb.ch.choice([8, 16])), dtype), "q")
    b, s, heads, h = shape_of(q)
    k = fb.operand(q.struct_info, "k", pool_percent=40)
    v = fb.operand(q.struct_info, "v", pool_percent=40)
    args = [q, k, v]
    if fb.ch.flag(30):
        args.append(fb.operand(TensorStructInfo((b, heads, s, s), dtype), "bias", const_percent))
    attrs = {"scale": fb.ch.choice([None, 0.125]), "causal_mask": fb.ch.choice([None, None, "TopLeft", "BottomRight"]),
             "window_size": None}
    y = fb.call("relax.nn.attention", tuple(args), attrs, hint="attn")
    if fb.ch.flag(40):
        y = fb.call("relax.reshape", (y, ShapeExpr((b, s, heads * h))))
    return y


def motif_host(fb: FunctionBuilder, dtype: str, const_percent: int, sym):
    ops = [(op_unary, 3), (lambda f: op_binary(f, const_percent), 3), (op_softmax, 1), (op_reshape, 1),
           (op_split, 1), (op_concat, 1), (op_permute, 1), (op_tuple, 1)]
    if dtype.startswith("float"):
        ops.append((op_astype, 1))
    return _weighted(fb.ch, ops)(fb)


# host ops first: a shrinking graph fills its minimum size with the simplest bindings
MOTIFS = [(motif_host, 4), (motif_matmul, 5), (motif_conv2d, 2), (motif_layer_norm, 1), (motif_attention, 1)]


def partition_function(ch: Chooser, dtype: str, tensor_constants: bool, max_bindings: int = 25,
                       helper: tuple | None = None) -> Function:
    """A function of motifs: at most ``max_bindings`` bindings (motifs have at most 7)."""
    # a variable called ``metadata`` hides the table of tensor constants (in TVM too)
    fb = FunctionBuilder(ch, tricky_names=5, hints=[h for h in TRICKY_HINTS if h != "metadata"])
    sym = TirVar("n") if ch.flag(20) else None
    const_percent = 20 if tensor_constants else 0
    fb.begin_block(ch.flag(75))
    if helper is not None:
        call_member(fb, *helper, hint="prep")
    target = ch.integer(3, max(3, max_bindings - 7))
    while fb.count < target:
        if fb.bindings and ch.flag(8):
            fb.begin_block(not fb.dataflow)
        _weighted(ch, MOTIFS)(fb, dtype, const_percent, sym)
    if not any(v not in fb.params for v in fb.pool):  # ended with a tuple: one more value
        op_unary(fb) or op_binary(fb)
    return fb.finish(fb.outputs(3), {})


def _helper(ch: Chooser, dtype: str) -> Function:
    fb = FunctionBuilder(ch)
    fb.param(TensorStructInfo((fb.ch.choice([4, 8]), 16), dtype), "x")
    fb.begin_block(ch.flag(70))
    for _ in range(ch.integer(1, 3)):
        op_unary(fb) if dtype.startswith("float") and ch.flag(50) else op_binary(fb)
    return fb.finish(fb.outputs(1), {})


def random_partition_module(ch: Chooser, tensor_constants: bool = True, max_bindings: int = 25) -> IRModule:
    """``main`` (and sometimes a second public function and a private helper) built from
    motifs the cutlass/cublas tables match, in one dtype (float16, float32 or int8)."""
    dtype = ch.choice(["float16", "float16", "float32", "int8"])
    functions: dict = {}
    helper = None
    if ch.flag(10):
        func = _helper(ch, dtype)
        gv = global_var("prep", func)
        functions[gv] = func
        helper = (gv, func)
    main = partition_function(ch, dtype, tensor_constants, max_bindings, helper)
    functions[global_var("main", main)] = main.with_attrs(global_symbol="main")
    if ch.flag(10):
        other = partition_function(ch, dtype, tensor_constants, max_bindings // 2)
        functions[global_var("encoder", other)] = other.with_attrs(global_symbol="encoder")
    return IRModule(functions)


def count_bindings(mod: IRModule) -> int:
    return sum(len(b.bindings) for f in mod.functions.values() if isinstance(f, Function) for b in f.body.blocks)




def print_with_constants(mod: IRModule) -> tuple[str, dict]:
    """The module's text and the values of its ``metadata[...]`` constants (sidecar keys)."""
    from byocc.cli.import_ import print_with_constants as printer

    return printer(mod)


def through_text(mod: IRModule) -> IRModule:
    """``mod`` printed and parsed back with its constants: what a user's file would give
    (unique parameter names, as the printer de-duplicates them)."""
    from byocc.text import parse_module

    text, arrays = print_with_constants(mod)
    return parse_module(text, constants=arrays)


__all__ = [
    "Chooser", "DrawChooser", "FunctionBuilder", "RandomChooser", "count_bindings", "print_with_constants",
    "random_function", "random_module", "random_partition_module", "strategy", "through_text",
]
