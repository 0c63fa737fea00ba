"""Pattern entries and the check context (docs/partitioning.md#pattern-entries-and-the-check-context).

:class:`FusionPattern` is what FuseOpsByPattern consumes; tuples of 2-5 elements are
accepted wherever TVM accepts them and converted by :func:`as_fusion_pattern`.
:class:`PatternCheckContext` carries TVM's five field names. :class:`CheckResult` is what
byocc's built-in check functions return: it behaves as a bool and says why it failed.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from byocc.ir import PatternError

from .pattern import DFPattern

if TYPE_CHECKING:
    from byocc.ir import Expr
    from byocc.ir import Var


class CheckResult:
    """A check outcome: falsy on rejection, with a human-readable ``reason``."""

    __slots__ = ("ok", "reason")

    def __init__(self, ok: object, reason: str = "") -> None:
        self.ok = bool(ok)
        self.reason = reason

    def __bool__(self) -> bool:
        return self.ok

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CheckResult):
            return self.ok == other.ok
        if isinstance(other, bool):
            return self.ok == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.ok)

    def __repr__(self) -> str:
        return "CheckResult(True)" if self.ok else f"CheckResult(False, {self.reason!r})"


ACCEPT = CheckResult(True)


def fail(reason: str) -> CheckResult:
    """A rejecting :class:`CheckResult`."""
    return CheckResult(False, reason)


def check_reason(result: Any) -> str | None:
    """The reason carried by a check's return value, when it rejected (None if accepted or
    when the check gave no reason)."""
    if result:
        return None
    reason = getattr(result, "reason", None)
    return reason or None


class VarUsages(dict):
    """``var_usages`` of one dataflow block (TVM ``DataflowBlockUseDef``): var -> list of the
    block variables whose binding uses it, a plain dict to a check function.

    ``position`` maps every variable bound in the block to its binding's index: a
    topological order of the use graph (a user is always bound after what it uses), so a
    dependency search can stop at the index of the variable it looks for."""

    __slots__ = ("position",)

    def __init__(self, users: Mapping[Var, list[Var]] | Iterable[tuple[Var, list[Var]]] = (),
                 position: Mapping[Var, int] | None = None) -> None:
        super().__init__(users)
        self.position = dict(position) if position is not None else {}


class PatternCheckContext:
    """What a check function sees (TVM's field names; every map is keyed by object
    identity).

    - ``matched_expr``: the root call (the value of the binding being visited);
    - ``annotated_expr``: ``{key: expr}`` for annotation keys present in the memo;
    - ``matched_bindings``: ``{var: value}`` for memo entries that are call or
      tuple-get-item patterns (root included);
    - ``var_usages``: for the current dataflow block, var -> list of user vars (a
      :class:`VarUsages`, which also knows each block variable's binding index);
    - ``value_to_bound_var``: ``{value: var}`` for bindings visited so far.
    """

    __slots__ = ("matched_expr", "annotated_expr", "matched_bindings", "var_usages", "value_to_bound_var")

    def __init__(self, matched_expr: Expr, annotated_expr: Mapping[str, Expr],
                 matched_bindings: Mapping[Var, Expr], var_usages: Mapping[Var, list[Var]],
                 value_to_bound_var: Mapping[Expr, Var]) -> None:
        self.matched_expr = matched_expr
        self.annotated_expr = annotated_expr
        self.matched_bindings = matched_bindings
        self.var_usages = var_usages
        self.value_to_bound_var = value_to_bound_var

    def __repr__(self) -> str:
        return (f"PatternCheckContext(matched_expr={self.matched_expr!r}, "
                f"annotated={sorted(self.annotated_expr)}, bindings={len(self.matched_bindings)})")


def make_check_context(entry: FusionPattern, call: Expr, memo: Mapping[DFPattern, Expr],
                       value_to_bound_var: Mapping[Expr, Var],
                       var_usages: Mapping[Var, list[Var]]) -> PatternCheckContext:
    """The context FuseOpsByPattern hands to ``entry.check`` for a match of ``call``.

    ``annotated_expr`` follows the entry's annotation order; ``matched_bindings`` the memo
    order, over call and tuple-get-item pattern nodes whose value is bound to a variable.
    """
    from .pattern import CallPattern
    from .pattern import TupleGetItemPattern

    annotated = {key: memo[p] for key, p in entry.annotation_patterns.items() if p in memo}
    matched: dict[Var, Expr] = {}
    for p, value in memo.items():
        if isinstance(p, (CallPattern, TupleGetItemPattern)):
            var = value_to_bound_var.get(value)
            if var is not None:
                matched[var] = value
    return PatternCheckContext(call, annotated, matched, var_usages, value_to_bound_var)


class FusionPattern:
    """A named pattern with annotations, an optional check and an optional attribute getter.

    ``name`` is ``"<backend>.<anything>"`` and becomes the ``Composite`` attribute.
    """

    __slots__ = ("name", "pattern", "annotation_patterns", "check", "attrs_getter")

    def __init__(self, name: str, pattern: DFPattern,
                 annotation_patterns: Mapping[str, DFPattern] | None = None,
                 check: Callable[[PatternCheckContext], Any] | None = None,
                 attrs_getter: Callable[[dict[str, Any]], Mapping[str, Any] | None] | None = None) -> None:
        if not isinstance(name, str):
            raise PatternError(f"a pattern name must be a string, got {type(name).__name__} {name!r}")
        if not isinstance(pattern, DFPattern):
            raise PatternError(f"pattern {name!r}: expected a pattern, got {type(pattern).__name__}")
        if annotation_patterns is None:
            annotation_patterns = {}
        if not isinstance(annotation_patterns, Mapping):
            raise PatternError(f"pattern {name!r}: annotations must be a dict of name -> pattern, "
                               f"got {type(annotation_patterns).__name__}")
        for key, sub in annotation_patterns.items():
            if not isinstance(key, str) or not isinstance(sub, DFPattern):
                raise PatternError(f"pattern {name!r}: annotation {key!r} must map a string to a pattern")
        if check is not None and not callable(check):
            raise PatternError(f"pattern {name!r}: check must be callable, got {type(check).__name__}")
        if attrs_getter is not None and not callable(attrs_getter):
            raise PatternError(f"pattern {name!r}: attrs_getter must be callable")
        self.name = name
        self.pattern = pattern
        self.annotation_patterns = dict(annotation_patterns)
        self.check = check
        self.attrs_getter = attrs_getter

    @property
    def backend(self) -> str | None:
        """The text before the first ``.`` of the name, or None without a dot."""
        return backend_of(self.name)

    def __repr__(self) -> str:
        return f"FusionPattern({self.name!r})"


def backend_of(name: str) -> str | None:
    """``"cutlass.matmul_bias"`` -> ``"cutlass"``; a name without a dot has no backend."""
    if "." not in name:
        return None
    return name.split(".", 1)[0]


def as_fusion_pattern(item: object) -> FusionPattern:
    """A :class:`FusionPattern`, or a tuple of 2-5 elements passed to it positionally."""
    if isinstance(item, FusionPattern):
        return item
    if isinstance(item, (tuple, list)):
        if not 2 <= len(item) <= 5:
            raise PatternError(f"a pattern entry must have 2 to 5 elements (name, pattern, "
                               f"annotations, check, attrs_getter), got {len(item)}")
        return FusionPattern(*item)
    raise PatternError(f"cannot use {type(item).__name__} {item!r} as a pattern entry")


def as_fusion_patterns(items: Sequence[object]) -> list[FusionPattern]:
    return [as_fusion_pattern(item) for item in items]
