"""Visitor and mutator bases with TVM's method names.

Dispatch goes through a ``type -> method`` table built per subclass. Bindings of a block
are walked in a loop, never by recursion, so a 100 000-binding function is fine; recursion
depth is bounded by expression nesting (shallow in normal form) and function nesting.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any
from typing import cast

from .expr import Binding
from .expr import BindingBlock
from .expr import Call
from .expr import Constant
from .expr import DataflowBlock
from .expr import DataflowVar
from .expr import DataTypeImm
from .expr import Expr
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

EXPR_METHODS: dict[type[Expr], str] = {
    Var: "visit_var_",
    DataflowVar: "visit_dataflow_var_",
    GlobalVar: "visit_global_var_",
    Constant: "visit_constant_",
    ShapeExpr: "visit_shape_expr_",
    PrimValue: "visit_prim_value_",
    StringImm: "visit_string_imm_",
    DataTypeImm: "visit_data_type_imm_",
    ExternFunc: "visit_extern_func_",
    Op: "visit_op_",
    Tuple: "visit_tuple_",
    TupleGetItem: "visit_tuple_getitem_",
    Call: "visit_call_",
    If: "visit_if_",
    SeqExpr: "visit_seq_expr_",
    Function: "visit_function_",
}


class _Dispatch:
    _table: dict[type[Expr], Callable[[Any, Any], Any]]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._table = {t: getattr(cls, name) for t, name in EXPR_METHODS.items()}


class ExprVisitor(_Dispatch):
    """Walks an expression tree; override ``visit_<node>_`` methods."""

    def visit_expr(self, expr: Expr) -> None:
        return self._table[type(expr)](self, expr)

    def visit_binding_block(self, block: BindingBlock) -> None:
        if isinstance(block, DataflowBlock):
            self.visit_dataflow_block_(block)
        else:
            self.visit_binding_block_(block)

    def visit_binding_block_(self, block: BindingBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    def visit_binding(self, binding: Binding) -> None:
        if isinstance(binding, MatchCast):
            self.visit_match_cast_(binding)
        else:  # the one other kind
            self.visit_var_binding_(cast(VarBinding, binding))

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_var_def(self, var: Var) -> None:
        pass

    # leaves
    def visit_var_(self, e: Var) -> None: pass
    def visit_dataflow_var_(self, e: DataflowVar) -> None: return self.visit_var_(e)
    def visit_global_var_(self, e: GlobalVar) -> None: pass
    def visit_constant_(self, e: Constant) -> None: pass
    def visit_shape_expr_(self, e: ShapeExpr) -> None: pass
    def visit_prim_value_(self, e: PrimValue) -> None: pass
    def visit_string_imm_(self, e: StringImm) -> None: pass
    def visit_data_type_imm_(self, e: DataTypeImm) -> None: pass
    def visit_extern_func_(self, e: ExternFunc) -> None: pass
    def visit_op_(self, e: Op) -> None: pass

    def visit_tuple_(self, e: Tuple) -> None:
        for f in e.fields:
            self.visit_expr(f)

    def visit_tuple_getitem_(self, e: TupleGetItem) -> None:
        self.visit_expr(e.tuple_value)

    def visit_call_(self, e: Call) -> None:
        self.visit_expr(e.op)
        for a in e.args:
            self.visit_expr(a)

    def visit_if_(self, e: If) -> None:
        self.visit_expr(e.cond)
        self.visit_expr(e.true_branch)
        self.visit_expr(e.false_branch)

    def visit_seq_expr_(self, e: SeqExpr) -> None:
        for block in e.blocks:
            self.visit_binding_block(block)
        self.visit_expr(e.body)

    def visit_function_(self, e: Function) -> None:
        for p in e.params:
            self.visit_var_def(p)
        self.visit_expr(e.body)


ExprVisitor.__init_subclass__()


class ExprMutator(_Dispatch):
    """Post-order rewriting. Returns the same object when nothing changed (``new is old``).
    ``var_remap`` maps old variables to replacement expressions."""

    def __init__(self) -> None:
        self.var_remap: dict[Var, Expr] = {}
        self._memo: dict[int, tuple[Expr, Expr]] = {}

    def visit_expr(self, expr: Expr) -> Expr:
        key = id(expr)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is expr:
            return hit[1]
        out: Expr = self._table[type(expr)](self, expr)
        self._memo[key] = (expr, out)
        return out

    # leaves
    def visit_var_(self, e: Var) -> Expr:
        return self.var_remap.get(e, e)

    def visit_dataflow_var_(self, e: DataflowVar) -> Expr:
        return self.visit_var_(e)

    def visit_global_var_(self, e: GlobalVar) -> Expr: return e
    def visit_constant_(self, e: Constant) -> Expr: return e
    def visit_shape_expr_(self, e: ShapeExpr) -> Expr: return e
    def visit_prim_value_(self, e: PrimValue) -> Expr: return e
    def visit_string_imm_(self, e: StringImm) -> Expr: return e
    def visit_data_type_imm_(self, e: DataTypeImm) -> Expr: return e
    def visit_extern_func_(self, e: ExternFunc) -> Expr: return e
    def visit_op_(self, e: Op) -> Expr: return e

    def visit_tuple_(self, e: Tuple) -> Expr:
        fields = tuple(self.visit_expr(f) for f in e.fields)
        if all(a is b for a, b in zip(fields, e.fields)):
            return e
        return Tuple(fields, e.struct_info, e.span)

    def visit_tuple_getitem_(self, e: TupleGetItem) -> Expr:
        t = self.visit_expr(e.tuple_value)
        if t is e.tuple_value:
            return e
        return TupleGetItem(t, e.index, e.struct_info, e.span)

    def visit_call_(self, e: Call) -> Expr:
        op = self.visit_expr(e.op)
        args = tuple(self.visit_expr(a) for a in e.args)
        if op is e.op and all(a is b for a, b in zip(args, e.args)):
            return e
        return Call(op, args, e.attrs, e.sinfo_args, e.struct_info, e.span)

    def visit_if_(self, e: If) -> Expr:
        c, t, f = self.visit_expr(e.cond), self.visit_expr(e.true_branch), self.visit_expr(e.false_branch)
        if c is e.cond and t is e.true_branch and f is e.false_branch:
            return e
        return If(c, t, f, e.struct_info, e.span)

    def visit_var_def(self, var: Var) -> Var:
        return var

    def visit_binding(self, binding: Binding) -> list[Binding]:
        """Returns the list of bindings replacing ``binding`` (usually one)."""
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if value is not binding.value and not isinstance(binding, MatchCast):
            var = retype_rebound_var(var, value, self.var_remap, binding.var)
        return [rebound(binding, var, value)]

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        out: list[Binding] = []
        changed = False
        for b in block.bindings:
            new = self.visit_binding(b)
            if len(new) != 1 or new[0] is not b:
                changed = True
            out.extend(new)
        if not changed:
            return block
        return type(block)(tuple(out), block.span)

    def visit_seq_expr_(self, e: SeqExpr) -> SeqExpr:
        blocks = [self.visit_binding_block(b) for b in e.blocks]
        body = self.visit_expr(e.body)
        blocks2 = [b for b in blocks if b.bindings]
        if body is e.body and len(blocks2) == len(e.blocks) and all(a is b for a, b in zip(blocks2, e.blocks)):
            return e
        return SeqExpr(tuple(blocks2), body, e.span)

    def visit_function_(self, e: Function) -> Function:
        params = tuple(self.visit_var_def(p) for p in e.params)
        body = self.visit_expr(e.body)
        if body is e.body and all(a is b for a, b in zip(params, e.params)):
            return e
        # visit_seq_expr_ maps a sequence to a sequence; an override must as well
        return Function(params, cast(SeqExpr, body), e.ret_struct_info, e.is_pure, dict(e.attrs), e.span)


ExprMutator.__init_subclass__()


def operands(e: Expr) -> tuple[Expr, ...]:
    """The operand expressions of a Call (its arguments), Tuple or TupleGetItem; () else."""
    if type(e) is Call:
        return e.args
    if type(e) is Tuple:
        return e.fields
    if type(e) is TupleGetItem:
        return (e.tuple_value,)
    return ()


def map_operands(e: Expr, fn: Callable[[Expr], Expr], callee_kinds: tuple[type[Expr], ...] = ()) -> Expr:
    """A Call, Tuple or TupleGetItem with ``fn`` applied to each operand (and to a Call's
    callee when it is one of ``callee_kinds``); ``e`` itself when nothing changed. Struct
    info is kept: callers that need it re-derived do so."""
    if type(e) is Call:
        op = fn(e.op) if isinstance(e.op, callee_kinds) else e.op
        args = tuple(fn(a) for a in e.args)
        if op is e.op and all(a is b for a, b in zip(args, e.args)):
            return e
        return Call(op, args, e.attrs, e.sinfo_args, e.struct_info, e.span)
    if type(e) is Tuple:
        fields = tuple(fn(f) for f in e.fields)
        if all(a is b for a, b in zip(fields, e.fields)):
            return e
        return Tuple(fields, e.struct_info, e.span)
    if type(e) is TupleGetItem:
        tv = fn(e.tuple_value)
        return e if tv is e.tuple_value else TupleGetItem(tv, e.index, e.struct_info, e.span)
    return e


def rebuild_seq(seq: SeqExpr, old_blocks: Iterable[BindingBlock], new_blocks: Iterable[BindingBlock],
                body: Expr) -> SeqExpr:
    """``seq`` with ``new_blocks`` (pairwise replacing ``old_blocks``; empty ones dropped) and
    ``body``: the same object when no block and not the body changed."""
    blocks: list[BindingBlock] = []
    changed = body is not seq.body
    for old, new in zip(old_blocks, new_blocks):
        changed |= new is not old
        if new.bindings:
            blocks.append(new)
        else:
            changed = True
    if not changed:
        return seq
    return SeqExpr(tuple(blocks), body, seq.span)


def rebound(binding: Binding, var: Var, value: Expr) -> Binding:
    """A binding of the same kind (a MatchCast keeps its cast type) binding ``var`` to
    ``value``; ``binding`` itself when both are its own."""
    if value is binding.value and var is binding.var:
        return binding
    if isinstance(binding, MatchCast):
        return MatchCast(var, value, binding.struct_info, binding.span)
    return VarBinding(var, value, binding.span)


def with_value(binding: Binding, value: Expr) -> Binding:
    """``binding`` (same variable and kind) binding ``value``; itself when ``value`` is its own."""
    return rebound(binding, binding.var, value)


def map_values(seq: SeqExpr, fn: Callable[[Expr], Expr]) -> SeqExpr:
    """``seq`` with ``fn`` applied to every binding's value and to its body (blocks walked in
    loops); the same object when ``fn`` changed nothing, unchanged blocks kept."""
    blocks: list[BindingBlock] = []
    changed = False
    for block in seq.blocks:
        out = [with_value(b, fn(b.value)) for b in block.bindings]
        if all(a is b for a, b in zip(out, block.bindings)):
            blocks.append(block)
        else:
            changed = True
            blocks.append(type(block)(tuple(out), block.span))
    body = fn(seq.body)
    if not changed and body is seq.body:
        return seq
    return SeqExpr(tuple(blocks), body, seq.span)


def retype_rebound_var(var: Var, value: Expr, var_remap: dict[Var, Expr], old: Var | None = None) -> Var:
    """TVM's ReEmitBinding: a binding whose value changed gets a variable of the new value's
    type (same name and kind) when the types differ; ``var_remap`` maps the old variable
    (``old``, default ``var``) to it so later uses follow."""
    si = value.struct_info
    if si is None or si == var.struct_info:
        return var
    new_var = type(var)(var.name_hint, si, var.span)
    var_remap[var if old is None else old] = new_var
    return new_var


def post_order_bindings(func: Function) -> Iterator[Binding]:
    """Yield every binding of ``func`` (blocks in order), without recursing into locals."""
    body = func.body
    if isinstance(body, SeqExpr):
        for block in body.blocks:
            yield from block.bindings
