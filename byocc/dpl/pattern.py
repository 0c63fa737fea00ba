"""Pattern nodes of the dataflow pattern language and their constructors (TVM's names).

docs/partitioning.md#pattern-language. Patterns are plain Python objects with **identity**
equality and hashing: the matcher's memo is keyed by the pattern object, so the same node
used twice must match the same expression. Patterns are never mutated after construction.

Graph-level constraints (``used_by``/``^``, ``only_used_by``/``>>``, ``fork_to``,
``same_shape_as``, and the argument edges of a call pattern built with ``add_constraint``)
go to the innermost open :class:`~byocc.dpl.context.PatternContext` (``with
PatternContext():``), which ``match_dfb`` solves; outside one they only build the
:class:`PatternSeq` value, as in TVM, and FuseOpsByPattern never sees them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from byocc.ir import Expr
from byocc.ir import PatternError

if TYPE_CHECKING:
    from byocc.ir import Dim
    from byocc.ir import StructInfo
    from byocc.ir import Var


class GraphConstraints(Protocol):
    """What a pattern context records (:class:`~byocc.dpl.context.PatternContext`)."""

    def add_edge(self, producer: DFPattern, consumer: DFPattern, only: bool, index: int) -> None: ...

    def add_constraint(self, constraint: SameShapeConstraint) -> None: ...


class _ContextStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[GraphConstraints] = []


#: The open pattern contexts of this thread, innermost last (TVM's stack is thread-local too).
CONTEXTS = _ContextStack()


def current_graph() -> GraphConstraints | None:
    """The innermost open pattern context, or None."""
    stack = CONTEXTS.stack
    return stack[-1] if stack else None


class DFPattern:
    """Base class of all patterns. Identity equality; ``|``, ``&``, ``~`` and calls build
    new patterns."""

    __slots__ = ("__weakref__",)

    # ------------------------------------------------------------------ sugar
    def __call__(self, *args: DFPattern, varg_default_wildcard: bool = False,
                 add_constraint: bool = True) -> CallPattern:
        return CallPattern(self, args, varg_default_wildcard, add_constraint)

    def __or__(self, other: DFPattern) -> OrPattern:
        return OrPattern(self, other)

    def __and__(self, other: DFPattern) -> AndPattern:
        return AndPattern(self, other)

    def __invert__(self) -> NotPattern:
        return NotPattern(self)

    def has_attr(self, attrs: Mapping[str, Any]) -> AttrPattern:
        return AttrPattern(self, attrs)

    def has_ty(self, ty: StructInfo) -> StructInfoPattern:
        return StructInfoPattern(self, ty)

    has_struct_info = has_ty
    has_type = has_ty

    def has_dtype(self, dtype: str) -> DataTypePattern:
        return DataTypePattern(self, dtype)

    def has_shape(self, shape: Sequence[Dim]) -> ShapePattern:
        if not isinstance(shape, (list, tuple)):
            raise PatternError("has_shape takes a list or tuple as input")
        return ShapePattern(self, shape)

    # ------------------------------------------------------------------ matching
    def match(self, expr: Expr, var2val: Mapping[Var, Expr] | None = None) -> bool:
        """True when the pattern matches ``expr`` (docs/partitioning.md#matching-algorithm)."""
        from .matcher import match_expr

        return match_expr(self, expr, var2val) is not None

    def extract_matched_expr(self, expr: Expr, var2val: Mapping[Var, Expr] | None = None
                             ) -> dict[DFPattern, Expr] | None:
        """The memo (pattern node -> matched, unwrapped expression), or None."""
        from .matcher import match_expr

        return match_expr(self, expr, var2val)

    # ------------------------------------------------------------------ graph constraints
    def used_by(self, other: DFPattern | PatternSeq, index: int = -1) -> PatternSeq:
        return _used_by(self, other, index, only=False)

    def __xor__(self, other: DFPattern | PatternSeq) -> PatternSeq:
        return self.used_by(other, -1)

    def only_used_by(self, other: DFPattern | PatternSeq, index: int = -1) -> PatternSeq:
        return _used_by(self, other, index, only=True)

    def __rshift__(self, other: DFPattern | PatternSeq) -> PatternSeq:
        return self.only_used_by(other, -1)

    def fork_to(self, *args: DFPattern | PatternSeq) -> None:
        """``self ^ v`` for each ``v``: one producer, several consumers."""
        for v in args:
            self ^ v

    def same_shape_as(self, *args: DFPattern) -> SameShapeConstraint:
        return SameShapeConstraint(self, *args)

    def dup(self) -> DFPattern:
        """A copy made of new pattern objects (shared sub-patterns stay shared in the copy);
        no graph constraint is copied."""
        return _dup(self, {})

    # ------------------------------------------------------------------ misc
    def children(self) -> tuple[DFPattern, ...]:
        """Sub-patterns, in matching order."""
        return ()

    def __repr__(self) -> str:
        from .printing import pattern_repr

        return pattern_repr(self)


def _as_pattern(p: object, what: str) -> DFPattern:
    if isinstance(p, DFPattern):
        return p
    raise PatternError(f"{what} must be a pattern, got {type(p).__name__} {p!r}")


# ---------------------------------------------------------------------------- leaves
class WildcardPattern(DFPattern):
    """Matches anything."""

    __slots__ = ()


class ExprPattern(DFPattern):
    """Matches an expression structurally equal to ``expr`` (an operator: itself)."""

    __slots__ = ("expr",)

    def __init__(self, expr: Expr):
        self.expr = expr


class _NamedPattern(DFPattern):
    """A pattern of a named reference: ``name`` (also ``name_hint``, TVM's field), "" for any."""

    __slots__ = ("name",)

    def __init__(self, name_hint: str = ""):
        self.name = name_hint

    @property
    def name_hint(self) -> str:
        return self.name


class VarPattern(_NamedPattern):
    """Matches a variable with no known binding; ``name_hint`` "" means any name."""

    __slots__ = ()


class DataflowVarPattern(VarPattern):
    """Like :class:`VarPattern`, only for DataflowVars."""

    __slots__ = ()


class GlobalVarPattern(_NamedPattern):
    """Matches a global function reference whose name *contains* ``name_hint``."""

    __slots__ = ()


class ExternFuncPattern(DFPattern):
    """Matches ``R.ExternFunc(symbol)``; "" means any symbol."""

    __slots__ = ("global_symbol",)

    def __init__(self, global_symbol: str = ""):
        self.global_symbol = global_symbol


class ConstantPattern(DFPattern):
    """Matches a relax constant (also through a variable bound to one)."""

    __slots__ = ()


class PrimArrPattern(DFPattern):
    """Matches a shape literal (``R.shape([...])``) with provably equal values."""

    __slots__ = ("fields",)

    def __init__(self, shape: Sequence[Dim]) -> None:
        self.fields = tuple(shape)

    def __getitem__(self, index: int) -> Dim:
        return self.fields[index]

    def __len__(self) -> int:
        return len(self.fields)


# ---------------------------------------------------------------------------- compound
class CallPattern(DFPattern):
    """A call whose callee matches ``op`` and whose arguments match ``args``.

    Argument counts must be equal; with ``varg_default_wildcard`` the call may have more
    arguments than the pattern (the extra ones are unchecked). With ``add_constraint``
    (the default), inside a pattern context each argument pattern is recorded as used by
    this call at its position (``arg.used_by(call, i)``).
    """

    __slots__ = ("op", "args", "varg_default_wildcard")

    def __init__(self, op: DFPattern, args: Sequence[DFPattern] = (),
                 varg_default_wildcard: bool = False, add_constraint: bool = True):
        self.op = _as_pattern(op, "the callee of a call pattern")
        if args is None:
            args = ()
        if not isinstance(args, (list, tuple)):
            raise PatternError(f"call pattern arguments must be a list or tuple, got {type(args).__name__}")
        self.args = tuple(_as_pattern(a, f"argument {i} of a call pattern") for i, a in enumerate(args))
        self.varg_default_wildcard = bool(varg_default_wildcard)
        if add_constraint:
            graph = current_graph()
            if graph is not None:
                for i, a in enumerate(self.args):
                    graph.add_edge(a, self, False, i)

    def children(self) -> tuple:
        return (self.op,) + self.args


class FunctionPattern(DFPattern):
    """A function whose parameters match ``params`` (in order, as many; ``None``: any
    parameters) and whose body matches ``body``."""

    __slots__ = ("params", "body")

    def __init__(self, params: Sequence[DFPattern] | None, body: DFPattern) -> None:
        if params is not None:
            if not isinstance(params, (list, tuple)):
                raise PatternError(f"FunctionPattern parameters must be a list or tuple, got {type(params).__name__}")
            params = tuple(_as_pattern(p, f"parameter {i} of a function pattern") for i, p in enumerate(params))
        self.params: tuple[DFPattern, ...] | None = params
        self.body = _as_pattern(body, "the body of a function pattern")

    def children(self) -> tuple:
        return (self.params or ()) + (self.body,)


class TuplePattern(DFPattern):
    """A tuple literal with the same number of fields, matched in order."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[DFPattern]):
        if not isinstance(fields, (list, tuple)):
            raise PatternError("fields must be a list or tuple")
        self.fields = tuple(_as_pattern(f, f"field {i} of a tuple pattern") for i, f in enumerate(fields))

    def __getitem__(self, index: int | None) -> TupleGetItemPattern:
        if index is not None:
            if index < 0:
                index += len(self)
            if index >= len(self) or index < 0:
                raise IndexError("TuplePattern index out of range")
        return TupleGetItemPattern(self, index)

    def __len__(self) -> int:
        return len(self.fields)

    def children(self) -> tuple:
        return self.fields


class UnorderedTuplePattern(DFPattern):
    """A tuple literal whose fields match the patterns in some order."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[DFPattern]):
        self.fields = tuple(_as_pattern(f, f"field {i} of a tuple pattern") for i, f in enumerate(fields))

    def __len__(self) -> int:
        return len(self.fields)

    def children(self) -> tuple:
        return self.fields


class TupleGetItemPattern(DFPattern):
    """``t[index]`` with ``t`` matching ``tuple``; index ``None`` (stored as -1) = any."""

    __slots__ = ("tuple", "index")

    def __init__(self, tuple_value: DFPattern, index: int | None = None):
        self.tuple = _as_pattern(tuple_value, "the tuple of a tuple-get-item pattern")
        self.index = -1 if index is None else int(index)

    @property
    def tuple_value(self) -> DFPattern:
        return self.tuple

    def children(self) -> tuple:
        return (self.tuple,)


class OrPattern(DFPattern):
    """``left``, else ``right`` (the first alternative that matches wins)."""

    __slots__ = ("left", "right")

    def __init__(self, left: DFPattern, right: DFPattern):
        self.left = _as_pattern(left, "the left side of '|'")
        self.right = _as_pattern(right, "the right side of '|'")

    def children(self) -> tuple:
        return (self.left, self.right)


class AndPattern(DFPattern):
    """Both ``left`` and ``right``."""

    __slots__ = ("left", "right")

    def __init__(self, left: DFPattern, right: DFPattern):
        self.left = _as_pattern(left, "the left side of '&'")
        self.right = _as_pattern(right, "the right side of '&'")

    def children(self) -> tuple:
        return (self.left, self.right)


class NotPattern(DFPattern):
    """Anything ``reject`` does not match."""

    __slots__ = ("reject",)

    def __init__(self, to_reject: DFPattern):
        self.reject = _as_pattern(to_reject, "the operand of '~'")

    def children(self) -> tuple:
        return (self.reject,)


# ---------------------------------------------------------------------------- predicates
class AttrPattern(DFPattern):
    """``pattern``, and the matched call's (or function's) attributes have these values."""

    __slots__ = ("pattern", "attrs")

    def __init__(self, pattern: DFPattern, attrs: Mapping[str, Any]):
        self.pattern = _as_pattern(pattern, "the operand of has_attr")
        if not isinstance(attrs, Mapping):
            raise PatternError("has_attr takes a dict of attribute values")
        self.attrs = dict(attrs)

    def children(self) -> tuple:
        return (self.pattern,)


# TVM parses a bare type name with its default width (``DataType("float")`` is float32).
_DTYPE_ALIASES = {"float": "float32", "int": "int32", "uint": "uint32"}


class DataTypePattern(DFPattern):
    """``pattern``, and the value is a tensor of dtype ``dtype``."""

    __slots__ = ("pattern", "dtype")

    def __init__(self, pattern: DFPattern, dtype: str):
        self.pattern = _as_pattern(pattern, "the operand of has_dtype")
        self.dtype = _DTYPE_ALIASES.get(str(dtype), str(dtype))

    def children(self) -> tuple:
        return (self.pattern,)


class ShapePattern(DFPattern):
    """``pattern``, and the value's tensor shape is provably equal to ``shape``."""

    __slots__ = ("pattern", "shape")

    def __init__(self, pattern: DFPattern, shape: Sequence):
        self.pattern = _as_pattern(pattern, "the operand of has_shape")
        self.shape = tuple(shape)

    def children(self) -> tuple:
        return (self.pattern,)


class StructInfoPattern(DFPattern):
    """``pattern``, and the value's struct info is compatible with ``struct_info``
    (TVM 0.27 calls this ``TypePattern``/``has_ty``)."""

    __slots__ = ("pattern", "struct_info")

    def __init__(self, pattern: DFPattern, struct_info: StructInfo) -> None:
        from byocc.ir.struct_info import StructInfo

        self.pattern = _as_pattern(pattern, "the operand of has_ty")
        if not isinstance(struct_info, StructInfo):
            raise PatternError(f"has_ty/has_struct_info takes struct info (e.g. relax.TensorStructInfo"
                               f"([2, 3], 'float32')), got {type(struct_info).__name__} {struct_info!r}")
        self.struct_info = struct_info

    @property
    def ty(self) -> StructInfo:
        return self.struct_info

    def children(self) -> tuple:
        return (self.pattern,)


TypePattern = StructInfoPattern


# ---------------------------------------------------------------------------- graph-level
class PatternSeq:
    """A chain of patterns, each pair joined by a used-by (``^``) or only-used-by (``>>``)
    constraint: ``pair_constraints[i]`` is ``(only, index)`` between ``patterns[i]`` and
    ``patterns[i + 1]``. Built by ``^``/``>>``/``used_by``/``only_used_by``, which also record
    the edge in the open :class:`~byocc.dpl.context.PatternContext`; the constructor only
    builds the value."""

    __slots__ = ("patterns", "pair_constraints")

    def __init__(self, patterns: Sequence[DFPattern], only_use: bool = False):
        if not patterns:
            raise PatternError("PatternSeq needs at least one pattern")
        self.patterns = tuple(_as_pattern(p, f"pattern {i} of a PatternSeq") for i, p in enumerate(patterns))
        self.pair_constraints: tuple[tuple[bool, int], ...] = ((bool(only_use), -1),) * (len(self.patterns) - 1)

    @property
    def only_use(self) -> bool:
        """True when every pair is joined by only-used-by."""
        return all(only for only, _ in self.pair_constraints)

    def used_by(self, other: DFPattern | PatternSeq, index: int = -1) -> PatternSeq:
        return _used_by(self, other, index, only=False)

    def only_used_by(self, other: DFPattern | PatternSeq, index: int = -1) -> PatternSeq:
        return _used_by(self, other, index, only=True)

    def __xor__(self, other: DFPattern | PatternSeq) -> PatternSeq:
        return self.used_by(other, -1)

    def __rshift__(self, other: DFPattern | PatternSeq) -> PatternSeq:
        return self.only_used_by(other, -1)

    def __getitem__(self, index: int) -> DFPattern:
        return self.patterns[index]

    def __len__(self) -> int:
        return len(self.patterns)

    def dup(self) -> PatternSeq:
        """A copy made of new patterns, its pair constraints recorded again in the open
        pattern context (so ``a >> b`` duplicated is a second, independent chain)."""
        memo: dict[int, DFPattern] = {}
        new = PatternSeq([_dup(p, memo) for p in self.patterns])
        new.pair_constraints = self.pair_constraints
        graph = current_graph()
        if graph is not None:
            for i, (only, index) in enumerate(self.pair_constraints):
                graph.add_edge(new.patterns[i], new.patterns[i + 1], only, index)
        return new

    def __repr__(self) -> str:
        from .printing import pattern_repr

        parts = [pattern_repr(self.patterns[0])]
        for (only, _), p in zip(self.pair_constraints, self.patterns[1:]):
            parts.append((" >> " if only else " ^ ") + pattern_repr(p))
        return "[" + "".join(parts) + "]"


class SameShapeConstraint:
    """All ``args`` match values of one shape (a graph-level check: made inside a
    :class:`~byocc.dpl.context.PatternContext`, ``match_dfb`` enforces it; elsewhere it is
    only a value)."""

    __slots__ = ("args",)

    def __init__(self, *args: DFPattern):
        self.args = tuple(_as_pattern(a, f"argument {i} of same_shape_as") for i, a in enumerate(args))
        graph = current_graph()
        if graph is not None:
            graph.add_constraint(self)


def _used_by(lhs: DFPattern | PatternSeq, rhs: DFPattern | PatternSeq, index: int, only: bool) -> PatternSeq:
    lhs_seq = lhs if isinstance(lhs, PatternSeq) else PatternSeq([_as_pattern(lhs, "the producer of used_by")])
    rhs_seq = rhs if isinstance(rhs, PatternSeq) else PatternSeq([_as_pattern(rhs, "the consumer of used_by")])
    if not isinstance(index, int) or isinstance(index, bool):
        raise PatternError(f"used_by: the argument index must be an int, got {index!r}")
    graph = current_graph()
    if graph is not None:
        graph.add_edge(lhs_seq.patterns[-1], rhs_seq.patterns[0], only, index)
    seq = PatternSeq(lhs_seq.patterns + rhs_seq.patterns)
    seq.pair_constraints = lhs_seq.pair_constraints + ((only, index),) + rhs_seq.pair_constraints
    return seq


_FIELDS = {
    CallPattern: ("op", "args"),
    FunctionPattern: ("params", "body"),
    TuplePattern: ("fields",),
    UnorderedTuplePattern: ("fields",),
    TupleGetItemPattern: ("tuple",),
    OrPattern: ("left", "right"),
    AndPattern: ("left", "right"),
    NotPattern: ("reject",),
    AttrPattern: ("pattern",),
    DataTypePattern: ("pattern",),
    ShapePattern: ("pattern",),
    StructInfoPattern: ("pattern",),
}


def _dup(p: DFPattern, memo: dict[int, DFPattern]) -> DFPattern:
    hit = memo.get(id(p))
    if hit is not None:
        return hit
    cls = type(p)
    fields = next((_FIELDS[k] for k in cls.__mro__ if k in _FIELDS), ())
    new = cls.__new__(cls)
    for klass in cls.__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if slot == "__weakref__" or not hasattr(p, slot):
                continue
            value = getattr(p, slot)
            if slot in fields and value is not None:
                if isinstance(value, tuple):
                    value = tuple(_dup(v, memo) for v in value)
                else:
                    value = _dup(value, memo)
            object.__setattr__(new, slot, value)
    memo[id(p)] = new
    return new
