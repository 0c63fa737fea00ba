"""Constructor functions of the pattern language (TVM's ``relax/dpl/pattern.py`` names):
``wildcard``, ``is_op``, ``is_const``, ... docs/partitioning.md#pattern-language."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from byocc.ir import Expr
from byocc.ir import Op
from byocc.ir import PatternError

from .pattern import AttrPattern
from .pattern import CallPattern
from .pattern import ConstantPattern
from .pattern import DataflowVarPattern
from .pattern import DataTypePattern
from .pattern import DFPattern
from .pattern import ExprPattern
from .pattern import ExternFuncPattern
from .pattern import GlobalVarPattern
from .pattern import NotPattern
from .pattern import PrimArrPattern
from .pattern import ShapePattern
from .pattern import TupleGetItemPattern
from .pattern import TuplePattern
from .pattern import UnorderedTuplePattern
from .pattern import VarPattern
from .pattern import WildcardPattern


def wildcard() -> WildcardPattern:
    return WildcardPattern()


def is_op(op_name: str) -> ExprPattern:
    """The operator ``op_name`` as a callee pattern (``is_op("relax.add")(a, b)``).

    An unregistered name raises, as TVM's ``Op.get`` does (a misspelt name would match
    nothing, silently); the message names the closest registered operators."""
    if not isinstance(op_name, str):
        raise PatternError(f"is_op takes an operator name, got {op_name!r}")
    import byocc.ops  # noqa: F401  (registers every operator)

    try:
        return ExprPattern(Op.get(op_name))
    except KeyError:
        pass
    import difflib

    known = Op.registered()
    close = difflib.get_close_matches(op_name, known, n=3, cutoff=0.6)
    if not close and "." not in op_name:
        close = difflib.get_close_matches("relax." + op_name, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise PatternError(f"is_op: operator {op_name!r} is not registered{hint}")


def is_expr(expr: Expr) -> ExprPattern:
    return ExprPattern(expr)


def is_const() -> ConstantPattern:
    return ConstantPattern()


def is_var(name: str = "") -> VarPattern:
    return VarPattern(name)


def is_dfv(name: str = "") -> DataflowVarPattern:
    return DataflowVarPattern(name)


def is_gv(name: str = "") -> GlobalVarPattern:
    return GlobalVarPattern(name)


def is_tuple(fields: Sequence[DFPattern], unordered: bool = False) -> TuplePattern | UnorderedTuplePattern:
    if not isinstance(fields, (list, tuple)):
        raise PatternError("fields must be a list or tuple")
    if unordered:
        return UnorderedTuplePattern(fields)
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_value, index)


def is_shape(shape: Sequence) -> PrimArrPattern:
    if not isinstance(shape, (list, tuple)):
        raise PatternError("is_shape takes a list or tuple as input")
    return PrimArrPattern(shape)


def reject(pattern: DFPattern) -> NotPattern:
    return NotPattern(pattern)


def has_attr(attrs: Mapping[str, Any], pattern: DFPattern | None = None) -> AttrPattern:
    return (pattern if pattern is not None else wildcard()).has_attr(attrs)


def has_dtype(dtype: str, pattern: DFPattern | None = None) -> DataTypePattern:
    return DataTypePattern(pattern if pattern is not None else wildcard(), dtype)


def has_shape(shape: Sequence, pattern: DFPattern | None = None) -> ShapePattern:
    return (pattern if pattern is not None else wildcard()).has_shape(shape)


def is_call_tir(func_name: str, args: Any = None) -> CallPattern:
    """``R.call_tir(cls.<name containing func_name>, args)``; ``args``: None (any argument),
    a pattern, or a list/tuple of patterns."""
    if args is None:
        args = wildcard()
    elif isinstance(args, (list, tuple)):
        args = TuplePattern(args)
    return is_op("relax.call_tir")(GlobalVarPattern(func_name), args, add_constraint=False)


def is_call_dps_packed(func_name: str, args: Any = None) -> CallPattern:
    if args is None:
        args = wildcard()
    elif isinstance(args, (list, tuple)):
        args = TuplePattern(args)
    return is_op("relax.call_dps_packed")(ExternFuncPattern(func_name), args, add_constraint=False)


def is_call_packed(func_name: str, args: Sequence[DFPattern] | None = None) -> CallPattern:
    if args is None:
        return ExternFuncPattern(func_name)(varg_default_wildcard=True, add_constraint=False)
    return ExternFuncPattern(func_name)(*args)


class PatternWithAnnotations(CallPattern):
    """A call pattern that also reads as the pair ``(pattern, annotations)``.

    TVM has two ``make_fused_bias_activation_pattern``: the DPL one returns a pattern, the
    backend one a ``(pattern, annotations)`` pair, and pattern files use both spellings
    (``("p", make_...(...))`` and ``("p", *make_...(...))``). byocc has one function; its
    result is this object, which works as either.
    """

    __slots__ = ("annotations",)

    def __init__(self, op: DFPattern, args: Sequence[DFPattern] = (),
                 varg_default_wildcard: bool = False, add_constraint: bool = True) -> None:
        super().__init__(op, args, varg_default_wildcard, add_constraint)
        self.annotations: dict[str, DFPattern] = {}

    def __iter__(self) -> Iterator[PatternWithAnnotations | dict[str, DFPattern]]:
        return iter((self, self.annotations))


def append_bias_activation(out: DFPattern, annotations: dict[str, DFPattern], with_bias: bool = False,
                           activation: str | None = None, allow_reshape: bool = False,
                           call: type[CallPattern] = CallPattern) -> DFPattern:
    """``out`` [``+ bias``] [``activation(...)``]; a bias wildcard is recorded as
    ``annotations["bias"]``. With ``allow_reshape`` the bias may come through
    ``relax.reshape``. The outermost call added is built as ``call`` (a ``CallPattern``
    subclass); ``out`` itself when nothing is added."""
    layers: list[tuple[str, tuple[DFPattern, ...], bool]] = []
    if with_bias:
        bias: DFPattern
        annotations["bias"] = bias = wildcard()
        if allow_reshape:
            bias = is_op("relax.reshape")(bias, wildcard(), varg_default_wildcard=True)
        layers.append(("relax.add", (bias,), allow_reshape))
    if activation:
        layers.append((activation, (), False))
    for i, (op_name, extra, varg) in enumerate(layers):
        make = call if i == len(layers) - 1 else CallPattern
        out = make(is_op(op_name), (out, *extra), varg)
    return out


def make_fused_bias_activation_pattern(op_name: str, with_bias: bool = False,
                                       activation: str | None = None,
                                       allow_reshape: bool = False) -> PatternWithAnnotations:
    """``op(lhs, rhs)`` [``relax.add(that, bias)``] [``activation(that)``].

    The one definition behind TVM's two spellings: the result is a pattern, and unpacks as
    ``(pattern, annotations)`` with annotations ``lhs``, ``rhs``, ``root`` (the ``op``
    call) and ``bias`` when ``with_bias``.
    """
    lhs, rhs = wildcard(), wildcard()
    plain = not with_bias and not activation
    root = (PatternWithAnnotations if plain else CallPattern)(is_op(op_name), (lhs, rhs))
    annotations: dict[str, DFPattern] = {"lhs": lhs, "rhs": rhs, "root": root}
    out = append_bias_activation(root, annotations, with_bias, activation, allow_reshape,
                                 call=PatternWithAnnotations)
    assert isinstance(out, PatternWithAnnotations)
    out.annotations = annotations
    return out
