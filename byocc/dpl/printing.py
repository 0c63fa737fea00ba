"""Short human-readable descriptions of patterns and expressions (for ``repr`` and
``--explain`` messages). Not TVM text: these never appear in printed IR."""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var


def op_display_name(name: str) -> str:
    """``relax.nn.relu`` -> ``R.nn.relu`` (how the printer spells the operator)."""
    return "R." + name[len("relax."):] if name.startswith("relax.") else name


def describe_expr(expr: object, depth: int = 0) -> str:
    """A one-line description: variable names, ``R.matmul(x, w)``, ``a constant``..."""
    if isinstance(expr, DataflowVar) or isinstance(expr, Var):
        return expr.name_hint
    if isinstance(expr, Op):
        return op_display_name(expr.name)
    if isinstance(expr, GlobalVar):
        return f"cls.{expr.name_hint}"
    if isinstance(expr, Constant):
        si = expr.struct_info
        dtype = getattr(si, "dtype", None)
        shape = getattr(si, "shape", None)
        if shape is not None and len(shape) == 0:
            return f"a scalar {dtype} constant" if dtype else "a scalar constant"
        return f"a {dtype} constant" if dtype else "a constant"
    if isinstance(expr, ShapeExpr):
        return "R.shape([" + ", ".join(str(v) for v in expr.values) + "])"
    if isinstance(expr, PrimValue):
        return str(expr.value)
    if isinstance(expr, StringImm):
        return repr(expr.value)
    if isinstance(expr, ExternFunc):
        return f"R.ExternFunc({expr.global_symbol!r})"
    if isinstance(expr, Function):
        return "a function"
    if isinstance(expr, Tuple):
        if depth > 1:
            return "(...)"
        return "(" + ", ".join(describe_expr(f, depth + 1) for f in expr.fields) + ")"
    if isinstance(expr, TupleGetItem):
        return f"{describe_expr(expr.tuple_value, depth + 1)}[{expr.index}]"
    if isinstance(expr, Call):
        callee = describe_expr(expr.op, depth + 1)
        if depth > 1:
            return f"{callee}(...)"
        return f"{callee}(" + ", ".join(describe_expr(a, depth + 1) for a in expr.args) + ")"
    return type(expr).__name__


def pattern_repr(p: object, depth: int = 0) -> str:
    """A compact rendering of a pattern in the constructor language."""
    from . import pattern as P

    if depth > 6:
        return "..."
    d = depth + 1
    if isinstance(p, P.WildcardPattern):
        return "wildcard()"
    if isinstance(p, P.ExprPattern):
        if isinstance(p.expr, Op):
            return f'is_op("{p.expr.name}")'
        return f"is_expr({describe_expr(p.expr)})"
    if isinstance(p, P.DataflowVarPattern):
        return f'is_dfv("{p.name}")' if p.name else "is_dfv()"
    if isinstance(p, P.VarPattern):
        return f'is_var("{p.name}")' if p.name else "is_var()"
    if isinstance(p, P.GlobalVarPattern):
        return f'is_gv("{p.name}")' if p.name else "is_gv()"
    if isinstance(p, P.ExternFuncPattern):
        return f'ExternFuncPattern("{p.global_symbol}")'
    if isinstance(p, P.ConstantPattern):
        return "is_const()"
    if isinstance(p, P.PrimArrPattern):
        return f"is_shape({list(p.fields)})"
    if isinstance(p, P.CallPattern):
        args = ", ".join(pattern_repr(a, d) for a in p.args)
        if p.varg_default_wildcard:
            args += ", ..." if args else "..."
        return f"{pattern_repr(p.op, d)}({args})"
    if isinstance(p, P.FunctionPattern):
        params = "None" if p.params is None else "[" + ", ".join(pattern_repr(a, d) for a in p.params) + "]"
        return f"FunctionPattern({params}, {pattern_repr(p.body, d)})"
    if isinstance(p, P.TuplePattern):
        return "is_tuple([" + ", ".join(pattern_repr(f, d) for f in p.fields) + "])"
    if isinstance(p, P.UnorderedTuplePattern):
        return "is_tuple([" + ", ".join(pattern_repr(f, d) for f in p.fields) + "], unordered=True)"
    if isinstance(p, P.TupleGetItemPattern):
        idx = "None" if p.index == -1 else str(p.index)
        return f"is_tuple_get_item({pattern_repr(p.tuple, d)}, {idx})"
    if isinstance(p, P.OrPattern):
        return f"({pattern_repr(p.left, d)} | {pattern_repr(p.right, d)})"
    if isinstance(p, P.AndPattern):
        return f"({pattern_repr(p.left, d)} & {pattern_repr(p.right, d)})"
    if isinstance(p, P.NotPattern):
        return f"~{pattern_repr(p.reject, d)}"
    if isinstance(p, P.AttrPattern):
        return f"{pattern_repr(p.pattern, d)}.has_attr({p.attrs!r})"
    if isinstance(p, P.DataTypePattern):
        return f'{pattern_repr(p.pattern, d)}.has_dtype("{p.dtype}")'
    if isinstance(p, P.ShapePattern):
        return f"{pattern_repr(p.pattern, d)}.has_shape({list(p.shape)})"
    if isinstance(p, P.StructInfoPattern):
        return f"{pattern_repr(p.pattern, d)}.has_ty({p.struct_info!r})"
    return type(p).__name__


def describe_pattern(p: object) -> str:
    """What a pattern expects, in words, for failure messages."""
    from . import pattern as P

    if isinstance(p, P.CallPattern) and isinstance(p.op, P.ExprPattern) and isinstance(p.op.expr, Op):
        return f"a call to {op_display_name(p.op.expr.name)}"
    return pattern_repr(p, 4)
