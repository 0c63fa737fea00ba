"""The evaluation at an index behind the index-mapped elementwise kernels
(:mod:`.elementwise_map`, docs/codegen.md#data-movement-and-several-outputs).

:class:`Planner` emits the C++ statements that compute one value of a composite at an index:
an :class:`Index` (a shape and the C expressions of its coordinates or its linear index,
whichever is known; the other is derived once, when asked). Elementwise ops ask for their
operands at the broadcast-reduced index, data-movement ops at the source index they map to,
inputs are loaded at their linear index. Results are memoised per (value, index) in a stack
of scopes (a ``concat`` branch is one), so a value asked for twice at one index is computed
once. The planner recurses along the composite's chain of values: :data:`MAX_DEPTH` and
:data:`MAX_STATEMENTS` bound it (a CodegenError beyond them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import Function
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import ShapeExpr
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.prim import PrimBinary
from byocc.ir.prim import PrimMinMax
from byocc.ir.prim import TirVar
from byocc.ir.prim import dim_text

from ..codegen import CodegenError
from .common import fixed_constant
from .elementwise_ops import SUPPORTED_OPS
from .elementwise_ops import Unsupported
from .elementwise_ops import compute_type
from .elementwise_ops import literal
from .generic import ctype

HEADER_PATH = "src/byocc_ewmap.h"
_HEADER = "cuda/byocc_ewmap.h"
MAX_INPUTS = fixed_constant(_HEADER, "kMapMaxInputs")
MAX_OUTPUTS = fixed_constant(_HEADER, "kMapMaxOutputs")
MAX_DIMS = fixed_constant(_HEADER, "kMapMaxDims")
#: The include of the argument block, in the wrapper of a function with such a step.
INCLUDE = '#include "byocc_ewmap.h"'
#: Deepest chain of values the planner follows, and most statements one kernel may have (a
#: composite beyond either is refused: the planner recurses along the chain, and a value asked
#: for at several indices is computed at each).
MAX_DEPTH = 200
MAX_STATEMENTS = 20000

#: Data-movement ops: the index of the source element is computed, nothing is copied.
MOVE_OPS = frozenset({
    "relax.permute_dims", "relax.reshape", "relax.flatten", "relax.concat", "relax.strided_slice",
    "relax.split", "relax.broadcast_to", "relax.expand_dims", "relax.squeeze",
})


def body_values(comp: Function) -> dict[Var, object]:
    values: dict[Var, object] = {}
    for block in comp.body.blocks:
        for b in block.bindings:
            if not isinstance(b, VarBinding):
                return {}
            values[b.var] = b.value
    return values


def result_fields(comp: Function) -> list | None:
    """The composite's returned values (one, or the fields of a returned tuple)."""
    result = comp.body.body
    values = body_values(comp)
    if isinstance(result, Var) and isinstance(values.get(result), Tuple):
        result = values[result]
    if isinstance(result, Tuple):
        return list(result.fields)
    return [result]


def needs_map(comp: Function) -> bool:
    """The composite moves data or returns a tuple (so the plain fused kernel cannot run it)."""
    if len(result_fields(comp) or ()) != 1 or isinstance(comp.body.body, Tuple):
        return True
    for value in body_values(comp).values():
        if isinstance(value, (Tuple, TupleGetItem)):
            return True
        if isinstance(value, Call) and isinstance(value.op, Op) and value.op.name in MOVE_OPS:
            return True
    return False


def is_mapped_elementwise(comp: Function) -> bool:
    """Every binding is an elementwise op, a data-movement op, a tuple or a tuple item (or an
    alias), and the body needs the index-mapped kernel."""
    values = body_values(comp)
    if not values and comp.body.blocks:
        return False
    for value in values.values():
        if isinstance(value, (Var, Tuple, TupleGetItem)):
            continue
        if not isinstance(value, Call) or not isinstance(value.op, Op):
            return False
        if value.op.name not in SUPPORTED_OPS and value.op.name not in MOVE_OPS:
            return False
    return needs_map(comp)


@dataclass(frozen=True)
class MapInput:
    """A kernel input: composite parameter ``param`` or a bound constant."""

    param: int | None
    constant: Constant | None
    sinfo: TensorStructInfo


@dataclass(frozen=True)
class _Lit:
    value: object
    dtype: str


@dataclass
class Index:
    """Where a value is asked for: its shape, and its coordinates or linear index (C int64
    expressions), whichever is known; the other is computed (once) when asked."""

    shape: tuple
    coords: tuple | None = None
    linear: str | None = None
    key: tuple = field(default=())


def same_dim(a, b) -> bool:
    return (isinstance(a, int) and isinstance(b, int) and a == b) or (
        not isinstance(a, int) and not isinstance(b, int) and dim_text(a) == dim_text(b))


def _static(d) -> bool:
    return isinstance(d, int) and not isinstance(d, bool)


class Planner:
    def __init__(self, comp: Function, where: str):
        self.where = where
        self.values = body_values(comp)
        self.params = {p: i for i, p in enumerate(comp.params)}
        self.inputs: list[MapInput] = []
        self.input_of: dict[int, int] = {}
        self.dims: list = []
        self.dim_index: dict[str, int] = {}
        self.lines: list[str] = []
        self.indent = 1
        self.memo: list[dict] = [{}]
        self.count = 0
        self.depth = 0
        self.formula: list[str] = []
        self.described: set[int] = set()

    def fail(self, what: str) -> CodegenError:
        return CodegenError(f"{self.where}: {what}")

    def emit(self, line: str) -> None:
        if len(self.lines) >= MAX_STATEMENTS:
            raise self.fail(f"the index-mapped kernel would exceed {MAX_STATEMENTS} statements (values asked for "
                            "at too many indices, e.g. nested concats of one value)")
        self.lines.append("  " * self.indent + line)

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    # ---- dims
    def dim(self, d) -> str:
        if isinstance(d, bool):
            raise self.fail("a boolean dim")
        if isinstance(d, int):
            return f"int64_t({d})"
        if isinstance(d, TirVar):
            if d.name not in self.dim_index:
                if len(self.dims) >= MAX_DIMS:
                    raise self.fail(f"more than {MAX_DIMS} symbolic dims in one elementwise kernel")
                self.dim_index[d.name] = len(self.dims)
                self.dims.append(d)
            return f"a.dims[{self.dim_index[d.name]}]"
        if isinstance(d, PrimBinary):
            a, b = self.dim(d.a), self.dim(d.b)
            if d.op == "//":
                return f"byocc_floordiv({a}, {b})"
            if d.op == "%":
                return f"byocc_floormod({a}, {b})"
            return f"({a} {d.op} {b})"
        if isinstance(d, PrimMinMax):
            a, b = self.dim(d.a), self.dim(d.b)
            return f"({a} {'>' if d.op == 'max' else '<'} {b} ? {a} : {b})"
        raise self.fail(f"unsupported dim {d!r}")

    def numel(self, shape) -> str:
        return " * ".join(self.dim(d) for d in shape) if shape else "int64_t(1)"

    # ---- indices
    def index(self, shape, coords=None, linear=None) -> Index:
        key = ("c", tuple(coords)) if coords is not None else ("l", linear)
        return Index(tuple(shape), None if coords is None else tuple(coords), linear, key)

    def coords(self, ix: Index) -> tuple:
        """The coordinates of ``ix`` (from its linear index: one division per axis but the
        first; an axis of static extent 1 has coordinate 0)."""
        if ix.coords is None:
            rank = len(ix.shape)
            names = ["int64_t(0)"] * rank
            live = [a for a in range(rank) if not (_static(ix.shape[a]) and ix.shape[a] == 1)]
            if live:
                r = self.fresh("r")
                self.emit(f"int64_t {r} = {ix.linear};")
                for a in reversed(live):
                    c = self.fresh("c")
                    if a == live[0]:
                        self.emit(f"const int64_t {c} = {r};")
                    else:
                        d = self.dim(ix.shape[a])
                        self.emit(f"const int64_t {c} = {r} % {d};")
                        self.emit(f"{r} /= {d};")
                    names[a] = c
            ix.coords = tuple(names)
        return ix.coords

    def linear(self, ix: Index) -> str:
        """The row-major linear index of ``ix`` in its shape (from its coordinates: Horner's
        rule, bound to a name when it is not one already)."""
        if ix.linear is None:
            expr = "int64_t(0)"
            for a, c in enumerate(ix.coords or ()):
                d = ix.shape[a]
                if _static(d) and d == 1:
                    continue  # coordinate 0
                expr = c if expr == "int64_t(0)" else f"({expr} * {self.dim(d)} + {c})"
            if expr.startswith("("):
                name = self.fresh("l")
                self.emit(f"const int64_t {name} = {expr};")
                expr = name
            ix.linear = expr
        return ix.linear

    def broadcast(self, ix: Index, shape) -> Index:
        """The index of an operand of ``shape`` broadcast to ``ix``'s shape."""
        shape = tuple(shape)
        if len(shape) == len(ix.shape) and all(same_dim(a, b) for a, b in zip(shape, ix.shape)):
            return ix
        lead = len(ix.shape) - len(shape)
        if lead < 0:
            raise self.fail(f"an operand of rank {len(shape)} under a result of rank {len(ix.shape)}")
        coords = self.coords(ix)
        out = []
        for j, d in enumerate(shape):
            od = ix.shape[lead + j]
            if _static(d) and d == 1:
                out.append("int64_t(0)")
            elif same_dim(d, od):
                out.append(coords[lead + j])
            else:
                raise self.fail(f"cannot tell how dim {dim_text(d)} broadcasts to {dim_text(od)}")
        return self.index(shape, coords=out)

    # ---- values
    def shape_of(self, e) -> tuple:
        si = e.struct_info
        if not isinstance(si, TensorStructInfo) or si.shape is None or not si.dtype:
            raise self.fail(f"a value of unknown shape or dtype ({si!s})")
        return tuple(si.shape)

    def load(self, key: int, make, sinfo: TensorStructInfo, ix: Index) -> tuple[str, str]:
        if key not in self.input_of:
            if len(self.inputs) >= MAX_INPUTS:
                raise self.fail(f"more than {MAX_INPUTS} inputs in one elementwise kernel")
            self.input_of[key] = len(self.inputs)
            self.inputs.append(make())
        k = self.input_of[key]
        memo_key = ("in", k, ix.key)
        found = self.lookup(memo_key)
        if found is not None:
            return found
        st, dt = ctype(sinfo.dtype), sinfo.dtype
        name = self.fresh("x")
        self.emit(f"const {compute_type(dt)} {name} = Num<{st}>::load(static_cast<const {st}*>(a.in[{k}])"
                  f"[{self.linear(ix)}]);")
        self.remember(memo_key, (name, dt))
        return name, dt

    def lookup(self, key):
        for layer in reversed(self.memo):
            if key in layer:
                return layer[key]
        return None

    def remember(self, key, value) -> None:
        self.memo[-1][key] = value

    def leaf(self, e, ix: Index):
        """A literal, or the C name and dtype of ``e`` evaluated at ``ix``."""
        if isinstance(e, PrimValue):
            if not isinstance(e.value, (bool, int, float)):
                raise self.fail("a symbolic PrimValue operand is not supported in an elementwise kernel")
            return _Lit(e.value, e.dtype)
        if isinstance(e, Constant):
            si = e.struct_info
            if not isinstance(si, TensorStructInfo) or si.shape is None:
                raise self.fail("a constant of unknown shape")
            if all(_static(d) for d in si.shape) and _prod(si.shape) == 1 and e.data is not None:
                import numpy as np

                return _Lit(np.asarray(e.data).reshape(()).item(), si.dtype)
            return self.load(id(e), lambda: MapInput(None, e, si), si, ix)
        if isinstance(e, Var) and e in self.params:
            si = e.struct_info
            if not isinstance(si, TensorStructInfo) or si.shape is None:
                raise self.fail(f"parameter {e.name_hint} must be a tensor of known shape")
            return self.load(id(e), lambda: MapInput(self.params[e], None, si), si, ix)
        if isinstance(e, Var) and e in self.values:
            return self.value(e, ix)
        raise self.fail(f"unsupported operand {type(e).__name__} in an elementwise composite")

    def tensor(self, e, ix: Index) -> tuple[str, str]:
        got = self.leaf(e, ix)
        if isinstance(got, _Lit):
            return literal(got.value, got.dtype), got.dtype
        return got

    def value(self, var: Var, ix: Index) -> tuple[str, str]:
        key = ("v", id(var), ix.key)
        found = self.lookup(key)
        if found is not None:
            return found
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"the composite is deeper than {MAX_DEPTH} ops: too deep for one elementwise kernel")
        try:
            got = self._compute(var, self.values[var], ix)
        finally:
            self.depth -= 1
        self.remember(key, got)
        return got

    def _compute(self, var: Var, value, ix: Index) -> tuple[str, str]:
        if isinstance(value, Var):
            return self.tensor(value, ix)
        if isinstance(value, TupleGetItem):
            return self._tuple_item(value.tuple_value, value.index, ix)
        if not isinstance(value, Call) or not isinstance(value.op, Op):
            raise self.fail(f"unsupported binding {type(value).__name__}; the first unsupported op is not "
                            "an operator call")
        op = value.op.name
        attrs = value.attrs if value.attrs is not None else {}
        if op in MOVE_OPS:
            self.describe(var, op, value)
            return self._move(op, value, attrs, ix)
        if op not in SUPPORTED_OPS:
            raise self.fail(f"cannot generate code: the first unsupported op is {op}")
        out_dtype = value.struct_info.dtype
        compute_type(out_dtype)
        got = []
        for arg in value.args:
            if isinstance(arg, (PrimValue,)) or (isinstance(arg, Constant) and self._is_scalar_constant(arg)):
                got.append(self.leaf(arg, ix))
            else:
                got.append(self.leaf(arg, self.broadcast(ix, self.shape_of(arg))))
        tensor_dts = [g[1] for g in got if not isinstance(g, _Lit)]
        lit_dtype = tensor_dts[0] if tensor_dts else out_dtype
        args = [literal(g.value, lit_dtype) if isinstance(g, _Lit) else g[0] for g in got]
        dts = [lit_dtype if isinstance(g, _Lit) else g[1] for g in got]
        try:
            expr = SUPPORTED_OPS[op](args, dts, out_dtype, attrs)
        except Unsupported as exc:
            raise self.fail(f"cannot generate code: the first unsupported op is {op} ({exc})") from None
        name = self.fresh("v")
        self.emit(f"const {compute_type(out_dtype)} {name} = {expr};")
        if id(var) not in self.described:
            self.described.add(id(var))
            self.formula.append(f"{var.name_hint} = {op.removeprefix('relax.')} : {out_dtype}")
        return name, out_dtype

    def describe(self, var: Var, op: str, call: Call) -> None:
        if id(var) in self.described:
            return
        self.described.add(id(var))
        shape = getattr(call.struct_info, "shape", None)
        text = "(" + ", ".join(dim_text(d) for d in shape) + ")" if shape is not None else "tuple"
        self.formula.append(f"{var.name_hint} = {op.removeprefix('relax.')} -> {text}")

    @staticmethod
    def _is_scalar_constant(c: Constant) -> bool:
        si = c.struct_info
        return (isinstance(si, TensorStructInfo) and si.shape is not None and all(_static(d) for d in si.shape)
                and _prod(si.shape) == 1 and c.data is not None)

    # ---- data movement
    def _move(self, op: str, call: Call, attrs, ix: Index) -> tuple[str, str]:
        out_shape = ix.shape
        if op == "relax.concat":
            return self._concat(call, attrs, ix)
        if op == "relax.split":
            raise self.fail("split is supported only through its tuple items")
        x = call.args[0]
        xs = self.shape_of(x)
        if op in ("relax.reshape", "relax.flatten"):
            return self.tensor(x, self.index(xs, linear=self.linear(ix)))
        if op == "relax.broadcast_to":
            return self.tensor(x, self.broadcast(ix, xs))
        coords = self.coords(ix)
        n = len(xs)
        if op == "relax.permute_dims":
            axes = attrs.get("axes")
            axes = list(range(n - 1, -1, -1)) if axes is None else [int(a) % n for a in axes]
            src: list = [None] * n
            for j, a in enumerate(axes):
                src[a] = coords[j]
            return self.tensor(x, self.index(xs, coords=src))
        if op == "relax.expand_dims":
            axis = attrs.get("axis")
            axis = [axis] if isinstance(axis, int) else list(axis)
            new = {int(a) % len(out_shape) for a in axis}
            return self.tensor(x, self.index(xs, coords=[c for j, c in enumerate(coords) if j not in new]))
        if op == "relax.squeeze":
            axis = attrs.get("axis")
            if axis is None:
                gone = {j for j, d in enumerate(xs) if _static(d) and d == 1}
            else:
                gone = {int(a) % n for a in ([axis] if isinstance(axis, int) else axis)}
            it = iter(coords)
            return self.tensor(x, self.index(xs, coords=["int64_t(0)" if j in gone else next(it) for j in range(n)]))
        if op == "relax.strided_slice":
            return self._strided_slice(call, attrs, xs, coords)
        raise self.fail(f"cannot generate code: the first unsupported op is {op}")

    def _strided_slice(self, call: Call, attrs, xs: tuple, coords: tuple) -> tuple[str, str]:
        n = len(xs)
        parts = [_prim_values(a) for a in call.args[1:]]
        if len(parts) < 4:
            parts.append(None if parts[0] is None else [1] * len(parts[0]))
        axes, begin, end, strides = parts
        if None in (axes, begin, end, strides) or not all(_static(v) for v in [*axes, *begin, *strides]):
            raise self.fail("strided_slice with symbolic axes, begin or strides is not supported")
        src = list(coords)
        for a, b, s in zip(axes, begin, strides):
            a = int(a) % n
            d = xs[a]
            if s == 0:
                raise self.fail("strided_slice with a zero stride")
            if _static(d):
                start = slice(int(b), None, int(s)).indices(d)[0]
                base = f"int64_t({start})"
            elif b >= 0 and s > 0:
                base = f"int64_t({int(b)})"
            elif b < 0:
                base = f"({self.dim(d)} - {-int(b)})"
            else:
                raise self.fail("strided_slice with a negative stride over a symbolic dim is not supported")
            c = coords[a]
            src[a] = f"({base} + {c})" if s == 1 else f"({base} + int64_t({int(s)}) * {c})"
        return self.tensor(call.args[0], self.index(xs, coords=src))

    def _fields(self, e) -> list:
        if isinstance(e, Var) and isinstance(self.values.get(e), Tuple):
            e = self.values[e]
        if not isinstance(e, Tuple):
            raise self.fail("concat of a tuple the composite does not build")
        return list(e.fields)

    def _concat(self, call: Call, attrs, ix: Index) -> tuple[str, str]:
        fields = self._fields(call.args[0])
        rank = len(ix.shape)
        if attrs.get("axis", 0) is None:
            raise self.fail("concat with axis=None (of the flattened inputs) is not supported")
        axis = int(attrs.get("axis", 0)) % rank
        coords = self.coords(ix)
        out_dtype = call.struct_info.dtype
        ct = compute_type(out_dtype)
        name = self.fresh("v")
        self.emit(f"{ct} {name};")
        offset = "int64_t(0)"
        offset_static: int | None = 0
        for k, f in enumerate(fields):
            fs = self.shape_of(f)
            size = fs[axis]
            if offset_static is not None and _static(size):
                end_static: int | None = offset_static + size
                end = f"int64_t({end_static})"
            else:
                end_static = None
                end = self.dim(size) if offset_static == 0 else f"({offset} + {self.dim(size)})"
            last = k == len(fields) - 1
            cond = "" if last else f"if ({coords[axis]} < {end}) "
            self.emit(("} else " if k else "") + cond + "{")
            self.indent += 1
            self.memo.append({})
            src = list(coords)
            if offset != "int64_t(0)":
                src[axis] = f"({coords[axis]} - {offset})"
            got, _ = self.tensor(f, self.index(fs, coords=src))
            self.emit(f"{name} = {got};")
            self.memo.pop()
            self.indent -= 1
            offset, offset_static = end, end_static
        self.emit("}")
        return name, out_dtype

    def _tuple_item(self, tup, k: int, ix: Index) -> tuple[str, str]:
        value = self.values.get(tup) if isinstance(tup, Var) else tup
        if isinstance(value, Tuple):
            return self.tensor(value.fields[k], ix)
        if isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == "relax.split":
            si = value.struct_info
            if not isinstance(si, TupleStructInfo):
                raise self.fail("split of unknown result type")
            x = value.args[0]
            xs = self.shape_of(x)
            axis = int(value.attrs.get("axis", 0)) % len(xs)
            self.describe(tup, "relax.split", value)
            start = "int64_t(0)"
            for f in si.fields[:k]:
                if not isinstance(f, TensorStructInfo) or f.shape is None:
                    raise self.fail("split of unknown field shapes")
                d = f.shape[axis]
                if start == "int64_t(0)":
                    start = self.dim(d)
                elif _static(d) and start.startswith("int64_t(") and start[8:-1].isdigit():
                    start = f"int64_t({int(start[8:-1]) + d})"
                else:
                    start = f"({start} + {self.dim(d)})"
            coords = list(self.coords(ix))
            if start != "int64_t(0)":
                coords[axis] = f"({coords[axis]} + {start})"
            return self.tensor(x, self.index(xs, coords=coords))
        raise self.fail("a tuple item of a value the composite does not build")


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _prim_values(e) -> list | None:
    if isinstance(e, ShapeExpr):
        return list(e.values)
    if isinstance(e, Tuple):
        out = []
        for f in e.fields:
            if not isinstance(f, PrimValue):
                return None
            out.append(f.value)
        return out
    return None


_INDEX_DECL = re.compile(r"^\s*(?:const )?int64_t ([rcl]\d+) = .*;$")
_INDEX_STEP = re.compile(r"^\s*([rcl]\d+) /= .*;$")


def drop_unused_indices(lines: list[str]) -> list[str]:
    """The body without index variables nothing reads (a coordinate an op drops, a
    remainder after its last coordinate): ``-Werror all-warnings`` builds stay clean."""
    lines = list(lines)
    while True:
        uses: dict[str, int] = {}
        for line in lines:
            for name in re.findall(r"\b[rcl]\d+\b", line):
                uses[name] = uses.get(name, 0) + 1
        dead = set()
        for line in lines:
            m = _INDEX_DECL.match(line)
            if m is not None:
                name = m.group(1)
                steps = sum(1 for x in lines if (s := _INDEX_STEP.match(x)) is not None and s.group(1) == name)
                if uses.get(name, 0) == 1 + steps:  # only its declaration and its own updates
                    dead.add(name)
        if not dead:
            return lines
        lines = [x for x in lines if not ((m := _INDEX_DECL.match(x)) and m.group(1) in dead)
                 and not ((m := _INDEX_STEP.match(x)) and m.group(1) in dead)]


__all__ = ["HEADER_PATH", "INCLUDE", "MAX_DEPTH", "MAX_DIMS", "MAX_INPUTS", "MAX_OUTPUTS", "MAX_STATEMENTS", "MOVE_OPS",
           "Index", "MapInput", "Planner", "body_values", "drop_unused_indices", "is_mapped_elementwise", "needs_map",
           "result_fields", "same_dim"]
