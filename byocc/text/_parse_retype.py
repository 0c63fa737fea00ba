"""The re-typing TVM's parser applies to a dataflow block when the block ends.

TVM 0.27 reads a dataflow block with every variable a DataflowVar; when the block ends it
replaces the outputs (the names in ``R.output``) by new ``Var`` objects of the same type and
rewrites the block with an expression mutator. A binding whose value *uses* a replaced
variable is rebuilt, and a rebuilt value loses the type it had:

* a rebuilt call has its type inferred again from its (new) arguments, so the annotation it
  was written with (``b: R.Tensor(ndim=2) = R.multiply(a, y)``) is gone;
* a rebuilt tuple, tuple item or variable copy takes the type of its new parts.

When the rebuilt value's type differs (structurally) from its variable's type, the variable
is replaced by a new one of the new type, and the bindings after it that use it are rebuilt
in turn. Bindings that use neither an output nor a re-typed variable are left alone, so a
looser annotation on a call of parameters or of plain dataflow variables stays.

If an *output* gets re-typed this way, TVM's block keeps the old output variable in its
``R.output`` and in the function's return value: the function is ill-formed and TVM rejects
it. byocc reports that as a located error.

:func:`retype_dataflow` reproduces this in one pass over the block's bindings (linear).
"""

from __future__ import annotations

from byocc.ir import Binding
from byocc.ir import Call
from byocc.ir import DataflowVar
from byocc.ir import Dim
from byocc.ir import Expr
from byocc.ir import FuncStructInfo
from byocc.ir import MatchCast
from byocc.ir import ObjectStructInfo
from byocc.ir import Op
from byocc.ir import StructInfo
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import sinfo_of
from byocc.ir import structural_equal
from byocc.ops import infer_struct_info

from ._parse_types import match_sinfo_vars
from ._parse_types import substitute_sinfo

__all__ = ["retype_dataflow"]


def retype_dataflow(bindings: list[Binding]) -> list[Binding]:
    """The bindings of a dataflow block as TVM's parser leaves them (see the module
    docstring); ``bindings`` itself is returned when nothing changes."""
    outputs_seen: set[Var] = set()
    retyped: dict[Var, Var] = {}  # old DataflowVar -> new DataflowVar
    out: list[Binding] | None = None
    for i, b in enumerate(bindings):
        var = b.var
        if outputs_seen or retyped:
            value = b.value
            if _touches(value, outputs_seen, retyped):
                new_value = _rebuild(value, retyped) if retyped else value
                nb = _rebind(b, new_value, retyped)
                if nb is not b:
                    if out is None:
                        out = list(bindings)
                    out[i] = nb
        if type(var) is Var:
            outputs_seen.add(var)
    return bindings if out is None else out


def _rebind(b: Binding, value: Expr, retyped: dict[Var, Var]) -> Binding:
    """``b`` with its rebuilt ``value``; its variable re-typed if the type changed."""
    var = b.var
    if isinstance(b, MatchCast):  # the variable keeps the cast type
        return b if value is b.value else MatchCast(var, value, b.struct_info, b.span)
    new_si = value.struct_info
    if var.struct_info is new_si or structural_equal(var.struct_info, new_si):
        return b if value is b.value else VarBinding(var, value, b.span)
    if type(var) is not DataflowVar:
        raise TypeInferenceError(_output_message(var, new_si), b.span)
    new_var = DataflowVar(var.name_hint, new_si, var.span)
    retyped[var] = new_var
    return VarBinding(new_var, value, b.span)


def _output_message(var: Var, new_si: StructInfo | None) -> str:
    from .printer import print_expr

    name, new = var.name_hint, print_expr(new_si)
    return (f"TVM 0.27 rejects this: when the dataflow block ends, TVM re-infers the type of the "
            f"output '{name}' from the block's outputs as {new} (it was {print_expr(var.struct_info)}), "
            f"which leaves the function ill-formed; annotate '{name}' with {new}, or give the "
            f"variables it is computed from their exact types")


# --------------------------------------------------------------------------- values
def _touches(e: Expr, outputs: set[Var], retyped: dict[Var, Var]) -> bool:
    """Whether the value ``e`` (in normal form: leaves below one call, tuple or item) uses an
    output or a re-typed variable."""
    stack = [e]
    while stack:
        x = stack.pop()
        if type(x) is Var or type(x) is DataflowVar:
            if x in outputs or x in retyped:
                return True
        elif type(x) is Call:
            if not isinstance(x.op, Op):
                stack.append(x.op)
            stack.extend(x.args)
        elif type(x) is Tuple:
            stack.extend(x.fields)
        elif type(x) is TupleGetItem:
            stack.append(x.tuple_value)
    return False


def _rebuild(e: Expr, retyped: dict[Var, Var]) -> Expr:
    """``e`` with re-typed variables replaced and its type derived again (recursing only
    through the leaves of normal form)."""
    if type(e) is DataflowVar:
        return retyped.get(e, e)
    if type(e) is Tuple:
        fields = tuple(_rebuild(f, retyped) for f in e.fields)
        if all(a is b for a, b in zip(fields, e.fields)):
            return e
        return Tuple(fields, TupleStructInfo(tuple(sinfo_of(f) for f in fields)), e.span)
    if type(e) is TupleGetItem:
        base = _rebuild(e.tuple_value, retyped)
        if base is e.tuple_value:
            return e
        si = base.struct_info
        field = si.fields[e.index] if isinstance(si, TupleStructInfo) else ObjectStructInfo()
        return TupleGetItem(base, e.index, field, e.span)
    if type(e) is Call:
        op = e.op if isinstance(e.op, Op) else _rebuild(e.op, retyped)
        args = tuple(_rebuild(a, retyped) for a in e.args)
        if op is e.op and all(a is b for a, b in zip(args, e.args)):
            return e
        call = Call(op, args, e.attrs, e.sinfo_args, None, e.span)
        return Call(op, args, e.attrs, e.sinfo_args, _infer(call), e.span)
    return e


def _infer(call: Call) -> StructInfo:
    """The type of a rebuilt call: the operator's inference, or the callee's return type
    with its symbolic dimensions bound from the arguments (as the parser types calls)."""
    callee = call.op
    fsi = getattr(callee, "struct_info", None)
    if isinstance(callee, Op) or not isinstance(fsi, FuncStructInfo) or fsi.params is None:
        return infer_struct_info(call)
    mapping: dict[TirVar, Dim] = {}
    for p, a in zip(fsi.params, call.args):
        match_sinfo_vars(p, a.struct_info, mapping)
    return substitute_sinfo(fsi.ret, mapping)
