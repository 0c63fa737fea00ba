"""Shared rules of the backend check functions (docs/codegen.md#shared-matching-rules).

Every rule returns a :class:`~byocc.dpl.CheckResult` (falsy on failure, with ``.reason``)
or, for :func:`has_leaking_intermediate_variables`, TVM's plain bool. Shapes are tuples of
dims (``int`` or symbolic); "provably equal" uses :func:`byocc.dpl.can_prove_equal`.

Where TVM compares symbolic dims with Python ``==`` (``_is_bias_like``, the depthwise test)
the result is object identity for a symbolic left side, which :func:`tvm_dim_eq` mirrors;
an ``int == symbolic`` comparison, which raises inside TVM, is simply false here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import zip_longest

from byocc.dpl import ACCEPT
from byocc.dpl import CheckResult
from byocc.dpl import PatternCheckContext
from byocc.dpl import can_prove_equal
from byocc.dpl import fail
from byocc.dpl import product
from byocc.dpl.printing import describe_expr
from byocc.ir import DataflowVar
from byocc.ir import TensorStructInfo
from byocc.ir import Var


# ---------------------------------------------------------------------------- leaks
def leak_reason(context: PatternCheckContext) -> str | None:
    """Why an intermediate of the match is visible outside it, or None (docs/partitioning.md#pattern-entries-and-the-check-context)."""
    matched = context.matched_bindings
    output_var = context.value_to_bound_var.get(context.matched_expr)
    intermediates = [v for v in matched if v is not output_var]
    for v in intermediates:
        if not isinstance(v, DataflowVar):
            return f"intermediate {v.name_hint} is not a dataflow variable (it is visible after the block)"
    usages = context.var_usages
    for v in intermediates:
        for user in usages.get(v, ()):
            if user not in matched:
                return f"intermediate {v.name_hint} is used outside the match (by {user.name_hint})"
    return None


def has_leaking_intermediate_variables(context: PatternCheckContext) -> bool:
    """TVM's rule: an intermediate (non-root) matched variable is a non-dataflow Var, or is
    used by a binding outside the match."""
    return leak_reason(context) is not None


def check_no_leak(context: PatternCheckContext) -> CheckResult:
    reason = leak_reason(context)
    return fail(reason) if reason else ACCEPT


# ---------------------------------------------------------------------------- types
def tensor_info(expr) -> TensorStructInfo | None:
    si = getattr(expr, "struct_info", None)
    return si if isinstance(si, TensorStructInfo) else None


def dtype_of(expr) -> str | None:
    si = tensor_info(expr)
    return si.dtype if si is not None else None


def shape_of(expr) -> tuple | None:
    si = tensor_info(expr)
    return tuple(si.shape) if si is not None and si.shape is not None else None


def ndim_of(expr) -> int:
    si = tensor_info(expr)
    return si.ndim if si is not None else -1


def name_of(expr, context: PatternCheckContext | None = None) -> str:
    """A variable name for messages: the expr's own, or the variable bound to it."""
    if isinstance(expr, Var):
        return expr.name_hint
    if context is not None:
        var = context.value_to_bound_var.get(expr)
        if var is not None:
            return var.name_hint
    return describe_expr(expr)


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype string (``float8_e4m3fn`` -> 1, ``bfloat16`` -> 2)."""
    if dtype == "bool":
        return 1
    m = re.match(r"[a-z]+?(\d+)", dtype)
    bits = int(m.group(1)) if m else 8
    return max(1, bits // 8)


def fmt_shape(shape) -> str:
    return "(" + ", ".join(str(getattr(d, "name", d)) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------------------- dims
def is_static(dim) -> bool:
    return isinstance(dim, int) and not isinstance(dim, bool)


def tvm_dim_eq(a, b) -> bool:
    """Python ``a == b`` on TVM dims as used in a boolean context: constants compare by
    value; a symbolic left side compares by identity (TVM's deferred ``EqualOp``)."""
    if is_static(a) and is_static(b):
        return a == b
    if is_static(a):
        return False
    return a is b


def is_same_shape(shape1: Sequence, shape2: Sequence) -> bool:
    """TVM's ``_is_same_shape``: pairwise provably equal over ``zip`` (extra dims ignored)."""
    return all(can_prove_equal(a, b) for a, b in zip(shape1, shape2))


def is_bias_like(shape: Sequence, out_channel) -> bool:
    """Last dim equals ``out_channel`` and so does the product of all dims."""
    if not shape:
        return tvm_dim_eq(1, out_channel)
    return tvm_dim_eq(shape[-1], out_channel) and tvm_dim_eq(product(shape), out_channel)


def has_dependency(from_var, to_var, var_usages) -> bool:
    """True if ``from_var`` is ``to_var`` or (transitively) uses it: TVM's search of
    ``to_var``'s users for ``from_var``.

    Cost: when ``var_usages`` knows binding positions (:class:`~byocc.dpl.VarUsages`, what
    FuseOpsByPattern hands a check), the search never leaves the bindings between the two
    variables: a user is bound after what it uses, so a variable bound before ``to_var`` (or
    not bound in the block at all) cannot depend on it, and no path to ``from_var`` passes a
    binding after it. For a residual check that is the match itself, not the residual's whole
    ancestry. A plain mapping gets the unbounded search."""
    if from_var is to_var:
        return True
    position = getattr(var_usages, "position", None)
    if position is None:
        return _reaches(to_var, from_var, var_usages)
    limit = position.get(from_var)
    if limit is None or limit <= position.get(to_var, -1):
        return False
    return _reaches(to_var, from_var, var_usages, within=lambda user: position.get(user, limit) < limit)


def _reaches(start, target, var_usages, within=None) -> bool:
    """Whether ``target`` is among the transitive users of ``start``, searching on only through
    the users ``within`` keeps (all of them when it is None)."""
    checked: set = set()
    stack = [start]
    while stack:
        current = stack.pop()
        for user in var_usages.get(current, ()):
            if user is target:
                return True
            if user not in checked and (within is None or within(user)):
                checked.add(user)
                stack.append(user)
    return False


def check_residual(root_call, context: PatternCheckContext) -> CheckResult:
    """cutlass ``_check_residual``: the residual must not depend on the root, and must be
    output-shaped or bias-like."""
    annotated = context.annotated_expr
    if "residual" not in annotated:
        return ACCEPT
    residual = annotated["residual"]
    if not isinstance(residual, Var):
        bound = context.value_to_bound_var.get(residual)
        if bound is None:
            return fail(f"residual {describe_expr(residual)} is not bound to a variable")
        residual = bound
    root_var = context.value_to_bound_var.get(root_call)
    if root_var is None:
        return fail("the root call is not bound to a variable")
    if has_dependency(residual, root_var, context.var_usages):
        return fail(f"residual {residual.name_hint} depends on the root {root_var.name_hint}")
    shape1, shape2 = shape_of(root_var), shape_of(residual)
    if shape1 is None or shape2 is None or not shape1:
        return fail("the residual or root shape is unknown")
    out_channel = shape1[-1]
    if not is_same_shape(shape1, shape2) and not is_bias_like(shape2, out_channel):
        return fail(f"residual shape {fmt_shape(shape2)} is neither the output shape "
                    f"{fmt_shape(shape1)} nor bias-like")
    return ACCEPT


# ---------------------------------------------------------------------------- matmul shapes
def is_shape_valid_for_cutlass_matmul(lhs_shape: Sequence, rhs_shape: Sequence) -> CheckResult:
    """CUTLASS batch rule (docs/codegen.md#shared-matching-rules): K static; one side with batch
    product 1, or right-aligned batch dims (padded with 1) provably equal pairwise."""
    if not lhs_shape or not is_static(lhs_shape[-1]):
        k = lhs_shape[-1] if lhs_shape else "?"
        return fail(f"reduction dim K={getattr(k, 'name', k)} of lhs is not a constant")
    lhs_batches = product(lhs_shape[:-2])
    rhs_batches = product(rhs_shape[:-2])
    if (is_static(lhs_batches) and lhs_batches == 1) or (is_static(rhs_batches) and rhs_batches == 1):
        return ACCEPT
    pairs = zip_longest(list(lhs_shape)[-3::-1], list(rhs_shape)[-3::-1], fillvalue=1)
    if all(can_prove_equal(a, b) for a, b in pairs):
        return ACCEPT
    return fail(f"batch dims {fmt_shape(tuple(lhs_shape[:-2]))} and {fmt_shape(tuple(rhs_shape[:-2]))} "
                "differ (CUTLASS needs equal batch dims or a 2-D operand)")


def int_list(expr) -> list:
    """Integers of a tuple of prim values / a shape literal (TVM ``[int(e.value) for e in t]``)."""
    from byocc.ir import PrimValue
    from byocc.ir import ShapeExpr
    from byocc.ir import Tuple

    if isinstance(expr, Tuple):
        out = []
        for f in expr.fields:
            value = f.value if isinstance(f, PrimValue) else None
            if not is_static(value):
                raise ValueError(f"{describe_expr(f)} is not a constant integer")
            out.append(value)
        return out
    if isinstance(expr, ShapeExpr):
        if not all(is_static(v) for v in expr.values):
            raise ValueError(f"{describe_expr(expr)} has symbolic values")
        return list(expr.values)
    raise ValueError(f"{describe_expr(expr)} is not a tuple of integers")


__all__ = [
    "check_no_leak", "check_residual", "dtype_of", "fmt_shape", "has_dependency",
    "has_leaking_intermediate_variables", "int_list", "is_bias_like", "is_same_shape",
    "is_shape_valid_for_cutlass_matmul", "is_static", "itemsize", "leak_reason", "name_of",
    "ndim_of", "shape_of", "tensor_info", "tvm_dim_eq",
]
