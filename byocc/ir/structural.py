"""Structural equality and hashing (TVM ``tvm.ir.structural_equal`` / ``structural_hash``).

Two expressions, functions or modules are structurally equal when they have the same shape
up to a consistent renaming of the variables they define (alpha-equivalence): names and
spans are ignored, operators, attributes, struct info, argument order and literal values
must agree, and tensor constants are equal element-wise (same dtype, shape and bytes).
Symbolic dimension variables (:class:`TirVar`) are renamed consistently as well.
Free variables (used but not defined inside the compared value) are equal only when they
are the same object, unless ``map_free_vars=True``. Global references compare by name. A
tensor's shape (``si.shape``) equals the ``R.shape([...])`` of the same dims, as TVM's
shape is that ShapeExpr.

Implementation: both sides are turned into a *canonical form*, a nested tuple of plain
values in which every defined variable is replaced by its definition index; equality is
tuple equality and the hash is the tuple's hash. One walk per value: linear in its size.
Bindings are walked in a loop; recursion depth is bounded by expression and function
nesting. Used by ``add_function``'s de-duplication (docs/partitioning.md#add_function-de-duplication).
"""

from __future__ import annotations

from typing import Any

from .expr import Attrs
from .expr import Call
from .expr import Constant
from .expr import DataflowBlock
from .expr import DataflowVar
from .expr import DataTypeImm
from .expr import ExternFunc
from .expr import Function
from .expr import GlobalVar
from .expr import If
from .expr import MatchCast
from .expr import Op
from .expr import PrimValue
from .expr import SeqExpr
from .expr import ShapeExpr
from .expr import StringImm
from .expr import Tuple
from .expr import TupleGetItem
from .expr import Var
from .expr import VarBinding
from .module import IRModule
from .prim import PrimBinary
from .prim import PrimMinMax
from .prim import TirVar
from .struct_info import FuncStructInfo
from .struct_info import ObjectStructInfo
from .struct_info import PrimStructInfo
from .struct_info import ShapeStructInfo
from .struct_info import ShapeTuple
from .struct_info import TensorStructInfo
from .struct_info import TupleStructInfo
from .tir import PrimFunc


class _Canon:
    """Builds canonical forms; one instance numbers the definitions of one comparison side."""

    __slots__ = ("free", "map_free_vars", "tirvars", "vars")

    def __init__(self, map_free_vars: bool):
        self.vars: dict[int, tuple[Var, int]] = {}
        self.tirvars: dict[int, tuple[TirVar, int]] = {}
        self.map_free_vars = map_free_vars
        self.free: dict[int, tuple[Any, int]] = {}

    # ------------------------------------------------------------------ variables
    def define(self, var: Var) -> tuple:
        self.vars[id(var)] = (var, len(self.vars))
        kind = "dfv" if isinstance(var, DataflowVar) else "var"
        return (kind, self.sinfo(var.struct_info))

    def use(self, var: Var) -> tuple:
        hit = self.vars.get(id(var))
        if hit is not None and hit[0] is var:
            return ("v", hit[1])
        return ("free",) + self._free(var)

    def _free(self, obj: Any) -> tuple:
        if not self.map_free_vars:
            return (id(obj),)
        hit = self.free.get(id(obj))
        if hit is None or hit[0] is not obj:
            hit = self.free[id(obj)] = (obj, len(self.free))
        return (hit[1],)

    def dim(self, d: Any) -> Any:
        if isinstance(d, bool):
            return ("b", d)
        if isinstance(d, (int, float)):
            return d
        if isinstance(d, TirVar):
            hit = self.tirvars.get(id(d))
            if hit is None or hit[0] is not d:
                hit = self.tirvars[id(d)] = (d, len(self.tirvars))
            return ("t", d.dtype, hit[1])
        if isinstance(d, PrimBinary):
            return ("pb", d.op, self.dim(d.a), self.dim(d.b))
        if isinstance(d, PrimMinMax):
            return ("pm", d.op, self.dim(d.a), self.dim(d.b))
        return ("?", repr(d))

    def dims(self, values: Any) -> Any:
        if values is None:
            return None
        return tuple(self.dim(d) for d in values)

    # ------------------------------------------------------------------ struct info
    def sinfo(self, si: Any) -> Any:
        if si is None:
            return None
        if isinstance(si, TensorStructInfo):
            sv = self.expr(si.shape_var) if si.shape_var is not None else None
            return ("T", self.dims(si.shape), si.dtype, si.ndim, sv)
        if isinstance(si, TupleStructInfo):
            return ("Tu",) + tuple(self.sinfo(f) for f in si.fields)
        if isinstance(si, ShapeStructInfo):
            return ("S", self.dims(si.values), si.ndim)
        if isinstance(si, PrimStructInfo):
            return ("P", si.dtype, None if si.value is None else self.dim(si.value))
        if isinstance(si, FuncStructInfo):
            params = None if si.params is None else tuple(self.sinfo(p) for p in si.params)
            return ("F", params, self.sinfo(si.ret), si.purity)
        if isinstance(si, ObjectStructInfo):
            return ("O",)
        return ("?", repr(si))

    # ------------------------------------------------------------------ values
    def value(self, v: Any) -> Any:
        """Attribute / literal values: bools tagged (``True != 1``), containers recursed."""
        if isinstance(v, bool):
            return ("b", v)
        if v is None or isinstance(v, (int, float, str)):
            return v
        if isinstance(v, (tuple, list)):
            return ("L",) + tuple(self.value(x) for x in v)
        if isinstance(v, dict):
            return ("D",) + tuple((k, self.value(x)) for k, x in sorted(v.items()))
        if isinstance(v, Attrs):
            return ("A",) + tuple((k, self.value(x)) for k, x in v.items_)
        if isinstance(v, (TirVar, PrimBinary, PrimMinMax)):
            return self.dim(v)
        if isinstance(v, (Var, GlobalVar, Constant, Function, Call, Tuple, ShapeExpr, PrimValue,
                          StringImm, DataTypeImm, ExternFunc, Op, TupleGetItem, If, SeqExpr, PrimFunc)):
            return self.expr(v)
        if isinstance(v, (TensorStructInfo, TupleStructInfo, ShapeStructInfo, PrimStructInfo,
                          FuncStructInfo, ObjectStructInfo)):
            return self.sinfo(v)
        return ("?", type(v).__name__, repr(v))

    def constant(self, c: Constant) -> tuple:
        data = c.data
        if data is None:  # value unknown (metadata without sidecar): same reference only
            key = ("idx", c.source_index) if c.source_index is not None else ("obj",) + self._free(c)
            return ("C", self.sinfo(c.struct_info), key)
        return ("C", str(data.dtype), tuple(data.shape), data.tobytes())

    def expr(self, e: Any) -> Any:
        t = type(e)
        if t is Var or t is DataflowVar:
            return self.use(e)
        if t is Call:
            return ("call", self.expr(e.op), tuple(self.expr(a) for a in e.args),
                    self.value(e.attrs) if e.attrs is not None else None,
                    tuple(self.sinfo(s) for s in e.sinfo_args))
        if t is Op:
            return ("op", e.name)
        if t is GlobalVar:
            return ("gv", e.name_hint)
        if t is Constant:
            return self.constant(e)
        if t is Tuple:
            return ("tup",) + tuple(self.expr(f) for f in e.fields)
        if t is TupleGetItem:
            return ("tgi", self.expr(e.tuple_value), e.index)
        if t is ShapeExpr:
            return ("shape", self.dims(e.values))
        if t is PrimValue:
            return ("prim", e.dtype, self.dim(e.value))
        if t is StringImm:
            return ("str", e.value)
        if t is DataTypeImm:
            return ("dtype", e.value)
        if t is ExternFunc:
            return ("extern", e.global_symbol)
        if t is SeqExpr:
            return self.seq(e)
        if t is If:
            return ("if", self.expr(e.cond), self.expr(e.true_branch), self.expr(e.false_branch))
        if t is Function:
            return self.function(e)
        if t is PrimFunc:  # TIR kept as text: equal when written alike (byocc.ir.tir)
            return ("tir", e.key, tuple(sorted(e.attrs.items())))
        return ("?", t.__name__, id(e))

    def seq(self, e: SeqExpr) -> tuple:
        blocks = []
        for block in e.blocks:
            out: list[object] = ["dfb" if isinstance(block, DataflowBlock) else "blk"]
            for b in block.bindings:
                if isinstance(b, VarBinding):
                    if isinstance(b.value, Function):  # a local function may call itself
                        var = self.define(b.var)
                        out.append(("bind", var, self.expr(b.value)))
                    else:
                        value = self.expr(b.value)
                        out.append(("bind", self.define(b.var), value))
                elif isinstance(b, MatchCast):
                    value = self.expr(b.value)
                    si = self.sinfo(b.struct_info)
                    out.append(("cast", self.define(b.var), value, si))
            blocks.append(tuple(out))
        return ("seq", tuple(blocks), self.expr(e.body))

    def function(self, f: Function) -> tuple:
        params = tuple(self.define(p) for p in f.params)
        attrs = tuple((k, self.value(v)) for k, v in sorted(f.attrs.items()))
        body = self.expr(f.body)
        return ("fn", params, self.sinfo(f.ret_struct_info), f.is_pure, attrs, body)

    def module(self, mod: IRModule) -> tuple:
        funcs = tuple((name, self.expr(mod[name])) for name in sorted(mod.names()))
        attrs = tuple((k, self.value(v)) for k, v in sorted(mod.attrs.items()))
        return ("mod", funcs, attrs)


def canonical_form(node: Any, map_free_vars: bool = False) -> Any:
    """The canonical form of an expression, function, struct info or module (see module doc).

    Equal canonical forms <=> structurally equal. Free variables are keyed by object
    identity unless ``map_free_vars``, so only compare forms built in the same process.
    """
    c = _Canon(map_free_vars)
    if isinstance(node, ShapeTuple):  # a tensor's shape: the same as its R.shape([...])
        return ("shape", c.dims(node))
    if isinstance(node, IRModule):
        return c.module(node)
    if isinstance(node, (TensorStructInfo, TupleStructInfo, ShapeStructInfo, PrimStructInfo,
                         FuncStructInfo, ObjectStructInfo)):
        return c.sinfo(node)
    return c.expr(node)


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether ``lhs`` and ``rhs`` are equal up to renaming of defined variables."""
    if lhs is rhs:
        return True
    if type(lhs) is not type(rhs) and not (isinstance(lhs, Var) and isinstance(rhs, Var)) \
            and not {type(lhs), type(rhs)} <= {ShapeTuple, ShapeExpr}:
        return False
    return canonical_form(lhs, map_free_vars) == canonical_form(rhs, map_free_vars)


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal` (equal values hash equal)."""
    return hash(canonical_form(node, map_free_vars))


__all__ = ["canonical_form", "structural_equal", "structural_hash"]
