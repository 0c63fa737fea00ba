"""FoldConstant (TVM ``relax.transform.FoldConstant``): evaluate what is known at compile time.

In every Relax function (except ``Composite``/``Codegen``/``Primitive`` ones), bindings are
visited in order:

* a use of a variable bound to a :class:`~byocc.ir.Constant` becomes that constant, and a
  variable bound to a constant ``R.shape([...])`` is replaced by it in call arguments;
* inside dataflow blocks, a call of an operator whose operands are all known (constants with
  values, shapes of integers, concrete primitive values, tuples of constants) is evaluated
  with the operator's numpy reference (:func:`byocc.ops.fold_call`) and replaced by a
  Constant (a tuple of Constants for a tuple-valued op); ``t[i]`` of such a tuple becomes
  its field. As in TVM, a creation op without tensor operands (``zeros``, ``full``...) is not
  folded when its result has more than 1024 elements.

Bindings left unused stay (DeadCodeElimination removes them), as in TVM. A reference that
fails, or a result whose shape or dtype disagrees with the binding's struct info, leaves the
call as it is. Linear in the number of bindings (plus the numpy work).
"""

from __future__ import annotations

from dataclasses import dataclass

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataTypeImm
from byocc.ir import Expr
from byocc.ir import ExprMutator
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.analysis import free_vars
from byocc.ir.analysis import is_impure_call
from byocc.ir.functor import with_value
from byocc.ops import fold_call

from .pass_manager import Pass
from .pass_manager import map_functions

SKIP_FUNCTION_ATTRS = ("Composite", "Codegen", "Primitive")
MAX_CREATED_ELEMENTS = 1024  # TVM's kMaxFoldElements for creation ops
_LEAVES = (Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm)


def used_vars(value: Expr) -> list:
    """The variables ``value`` refers to (fast for calls on leaves, the normal form)."""
    if isinstance(value, Var):
        return [value]
    if isinstance(value, TupleGetItem) and isinstance(value.tuple_value, Var):
        return [value.tuple_value]
    if isinstance(value, (Call, Tuple)):
        if isinstance(value, Call) and not isinstance(value.op, (Op, GlobalVar, ExternFunc)):
            return free_vars(value)
        out = []
        for a in (value.args if isinstance(value, Call) else value.fields):
            if isinstance(a, Var):
                out.append(a)
            elif isinstance(a, Tuple) and all(isinstance(f, (Var,) + _LEAVES) for f in a.fields):
                out.extend(f for f in a.fields if isinstance(f, Var))
            elif not isinstance(a, _LEAVES):
                return free_vars(value)
        return out
    return free_vars(value)


class _Subst(ExprMutator):
    """Replaces variables by known constants; shape-bound variables only as call operands."""

    def __init__(self, consts: dict, shapes: dict):
        super().__init__()
        self.var_remap = consts
        self.shapes = shapes

    def visit_call_(self, e: Call) -> Expr:
        op = self.visit_expr(e.op)
        args = tuple(self.shapes[a] if isinstance(a, Var) and a in self.shapes else self.visit_expr(a)
                     for a in e.args)
        if op is e.op and all(a is b for a, b in zip(args, e.args)):
            return e
        return Call(op, args, e.attrs, e.sinfo_args, e.struct_info, e.span)


# --------------------------------------------------------------------------- evaluation
def _contains_tensor(a: Expr) -> bool:
    if isinstance(a, Tuple):
        return any(_contains_tensor(f) for f in a.fields)
    return isinstance(getattr(a, "struct_info", None), TensorStructInfo)


def _should_fold(call: Call) -> bool:
    si = call.struct_info
    if not isinstance(si, TensorStructInfo) or si.shape is None:
        return True
    count = 1
    for d in si.shape:
        if not isinstance(d, int) or d <= 0:
            return True
        count *= d
    if count <= MAX_CREATED_ELEMENTS:
        return True
    return any(_contains_tensor(a) for a in call.args)


def fold_constant_call(call: Call) -> Expr | None:
    """``call`` evaluated by :func:`byocc.ops.fold_call` (a Constant, a Tuple of Constants),
    or None when it cannot or, by FoldConstant's rules, should not be folded (an impure
    call; a creation op without tensor operands making more than 1024 elements)."""
    op = call.op
    if not isinstance(op, Op) or is_impure_call(call) or not _should_fold(call):
        return None
    return fold_call(call)


# --------------------------------------------------------------------------- the pass
def fold_constant_function(func: Function) -> Function:
    """``func`` with its constant computations folded (the same object if nothing folds)."""
    if any(k in func.attrs for k in SKIP_FUNCTION_ATTRS) or not isinstance(func.body, SeqExpr):
        return func
    consts: dict = {}  # var -> Constant
    shapes: dict = {}  # var -> ShapeExpr of ints
    tuples: dict = {}  # var -> Tuple of Constants
    subst: _Subst | None = None
    changed = False
    blocks = []
    for block in func.body.blocks:
        dataflow = isinstance(block, DataflowBlock)
        out = []
        for b in block.bindings:
            value = b.value
            if (consts or shapes) and any(v in consts or v in shapes for v in used_vars(value)):
                if subst is None:
                    subst = _Subst(consts, shapes)
                value = subst.visit_expr(value)
            if isinstance(b, VarBinding):
                if dataflow and isinstance(value, Call):
                    folded = fold_constant_call(value)
                    if folded is not None:
                        value = folded
                elif isinstance(value, TupleGetItem) and value.tuple_value in tuples:
                    value = tuples[value.tuple_value].fields[value.index]
            if isinstance(value, Constant) and value.data is not None and isinstance(b, VarBinding):
                consts[b.var] = value
            elif isinstance(value, ShapeExpr) and all(isinstance(d, int) for d in value.values):
                shapes[b.var] = value
            elif isinstance(value, Tuple) and value.fields and all(isinstance(f, Constant) for f in value.fields):
                tuples[b.var] = value
            if value is not b.value:
                changed = True
                b = with_value(b, value)
            out.append(b)
        blocks.append(type(block)(tuple(out), block.span) if changed else block)
    body = func.body.body
    if consts and any(v in consts for v in used_vars(body)):
        body = (subst or _Subst(consts, shapes)).visit_expr(body)
        changed = True
    if not changed:
        return func
    seq = SeqExpr(tuple(blocks), body, func.body.span)
    return Function(func.params, seq, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)


def fold_constant(mod: IRModule) -> IRModule:
    """Functional form of :class:`FoldConstant`."""
    return map_functions(mod, fold_constant_function)


@dataclass(frozen=True)
class FoldConstant(Pass, name="FoldConstant", transform=fold_constant):
    """Fold computations on constants (module docstring)."""


__all__ = ["FoldConstant", "fold_constant", "fold_constant_call", "fold_constant_function", "used_vars"]
