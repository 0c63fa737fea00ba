"""Pattern nodes of the dataflow pattern language and their constructors (TVM's names).

spec/partitioning.md section 3.1. Patterns are plain Python objects with **identity**
equality and hashing: the matcher's memo is keyed by the pattern object, so the same node
used twice must match the same expression. Patterns are never mutated after construction
(except for the recorded, unused "used-by" edges).

Graph-level constraints (``used_by``/``^``, ``only_used_by``/``>>``, ``dup``, ``fork_to``,
``same_shape_as``) are recorded as :class:`PatternSeq` objects; FuseOpsByPattern ignores
them, as TVM does outside a ``PatternContext``.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from byocc.ir import Expr
from byocc.ir import PatternError

if TYPE_CHECKING:
    from byocc.ir import Dim
    from byocc.ir import StructInfo
    from byocc.ir import Var


class DFPattern:
    """Base class of all patterns. Identity equality; ``|``, ``&``, ``~`` and calls build
    new patterns."""

    __slots__ = ("__weakref__", "_uses")

    _uses: list[tuple[DFPattern, int, bool]]  # recorded used-by edges (consumer, index, only)

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
        """True when the pattern matches ``expr`` (spec section 3.2)."""
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
        for v in args:
            self ^ v

    def same_shape_as(self, *args: DFPattern) -> SameShapeConstraint:
        return SameShapeConstraint(self, *args)

    def dup(self) -> DFPattern:
        """A copy made of new pattern objects (shared sub-patterns stay shared in the copy)."""
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
    arguments than the pattern (the extra ones are unchecked).
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
            for i, a in enumerate(self.args):
                a.used_by(self, i)

    def children(self) -> tuple:
        return (self.op,) + self.args


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
        self.pattern = _as_pattern(pattern, "the operand of has_ty")
        self.struct_info = struct_info

    @property
    def ty(self) -> StructInfo:
        return self.struct_info

    def children(self) -> tuple:
        return (self.pattern,)


TypePattern = StructInfoPattern


# ---------------------------------------------------------------------------- graph-level
class PatternSeq:
    """A chain of patterns with used-by constraints (recorded; FuseOpsByPattern ignores it)."""

    __slots__ = ("patterns", "only_use", "edges")

    def __init__(self, patterns: Sequence[DFPattern], only_use: bool = False):
        self.patterns = tuple(patterns)
        self.only_use = only_use
        self.edges: tuple[tuple[DFPattern, DFPattern, int, bool], ...] = ()

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

    def dup(self) -> PatternSeq:
        memo: dict[int, DFPattern] = {}
        return PatternSeq([_dup(p, memo) for p in self.patterns], self.only_use)


class SameShapeConstraint:
    """Recorded ``same_shape_as`` constraint (graph-level; unused by FuseOpsByPattern)."""

    __slots__ = ("args",)

    def __init__(self, *args: DFPattern):
        self.args = tuple(args)


def _used_by(lhs: DFPattern | PatternSeq, rhs: DFPattern | PatternSeq, index: int, only: bool) -> PatternSeq:
    lhs_seq = lhs if isinstance(lhs, PatternSeq) else PatternSeq([lhs])
    rhs_seq = rhs if isinstance(rhs, PatternSeq) else PatternSeq([rhs])
    producer, consumer = lhs_seq.patterns[-1], rhs_seq.patterns[0]
    uses = getattr(producer, "_uses", None)
    if uses is None:
        uses = []
        producer._uses = uses
    uses.append((consumer, index, only))
    seq = PatternSeq(lhs_seq.patterns + rhs_seq.patterns, only)
    seq.edges = lhs_seq.edges + ((producer, consumer, index, only),) + rhs_seq.edges
    return seq


_FIELDS = {
    CallPattern: ("op", "args"),
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
            if slot in ("__weakref__", "_uses") or not hasattr(p, slot):
                continue
            value = getattr(p, slot)
            if slot in fields:
                if isinstance(value, tuple):
                    value = tuple(_dup(v, memo) for v in value)
                else:
                    value = _dup(value, memo)
            object.__setattr__(new, slot, value)
    memo[id(p)] = new
    return new
