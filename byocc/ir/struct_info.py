"""Struct info ("type" in TVM 0.27): value-equal, frozen descriptions of a value.

Printed forms are in docs/textual-ir.md#type-annotations. ``dtype`` is ``None`` when unknown
(TVM's ``void``); ``ndim`` is ``-1`` when the rank is unknown.
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .prim import Dim
from .prim import TirVar
from .prim import dim_vars

if TYPE_CHECKING:
    from .expr import Var


class StructInfo:
    __slots__ = ()

    def __str__(self) -> str:  # TVMScript text, ``R.Tensor((2, 3), dtype="float32")``
        from byocc.text.printer import print_expr  # docs/architecture.md#the-one-upward-import

        return print_expr(self)


@dataclass(frozen=True, slots=True)
class ObjectStructInfo(StructInfo):
    """``R.Any`` (``R.Object`` on input)."""


@dataclass(frozen=True, slots=True)
class PrimStructInfo(StructInfo):
    """A primitive scalar: ``T.int64``, ``T.float32``... ``value`` is a known value, if any."""

    dtype: str
    value: Dim | float | None = None


@dataclass(frozen=True, slots=True)
class ShapeStructInfo(StructInfo):
    """``R.Shape([2, 3])`` / ``R.Shape(ndim=2)`` / ``R.Shape(ndim=-1)``."""

    values: tuple[Dim, ...] | None = None  # known dims
    ndim: int = -1

    def __post_init__(self) -> None:
        if self.values is not None and self.ndim != len(self.values):
            object.__setattr__(self, "ndim", len(self.values))


class ShapeTuple(tuple[Dim, ...]):
    """A tensor shape: a plain tuple of dims that also answers TVM's ``shape.values``
    (check functions written for TVM read ``x.ty.shape.values``)."""

    __slots__ = ()

    @property
    def values(self) -> tuple[Dim, ...]:
        return tuple(self)


@dataclass(frozen=True, slots=True)
class TensorStructInfo(StructInfo):
    """A tensor. ``shape`` is a tuple of dims when known; else ``ndim`` may still be known.

    ``shape_var`` is set instead of ``shape`` for ``R.Tensor(s, dtype=...)`` (shaped by a
    shape-typed variable ``s``).
    """

    shape: tuple[Dim, ...] | None = None  # a ShapeTuple once built
    dtype: str | None = None
    ndim: int = -1
    shape_var: Var | None = None  # a Var of Shape type, rare

    def __post_init__(self) -> None:
        if self.shape is not None:
            if type(self.shape) is not ShapeTuple:
                object.__setattr__(self, "shape", ShapeTuple(self.shape))
            if self.ndim != len(self.shape):
                object.__setattr__(self, "ndim", len(self.shape))

    # TVM-flavoured accessors used by pattern check functions
    @property
    def is_unknown_ndim(self) -> bool:
        return self.ndim == -1


@dataclass(frozen=True, slots=True)
class TupleStructInfo(StructInfo):
    fields: tuple[StructInfo, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))


@dataclass(frozen=True, slots=True)
class FuncStructInfo(StructInfo):
    """``R.Callable((P1, P2), RET, purity)``; ``params is None`` for an opaque callable."""

    params: tuple[StructInfo, ...] | None = None
    ret: StructInfo = ObjectStructInfo()
    purity: bool = True


def struct_info_vars(si: StructInfo | None, out: list[TirVar] | None = None) -> list[TirVar]:
    """Free symbolic dims (TirVars) of a struct info, first-occurrence order (none for None)."""
    if out is None:
        out = []
    stack = [si]
    while stack:
        s = stack.pop()
        if isinstance(s, TensorStructInfo) and s.shape is not None:
            for d in s.shape:
                dim_vars(d, out)
        elif isinstance(s, ShapeStructInfo) and s.values is not None:
            for d in s.values:
                dim_vars(d, out)
        elif isinstance(s, TupleStructInfo):
            stack.extend(reversed(s.fields))
        elif isinstance(s, FuncStructInfo):
            stack.append(s.ret)
            if s.params:
                stack.extend(reversed(s.params))
    return out


def tensor(shape: Iterable[Dim], dtype: str | None) -> TensorStructInfo:
    """Shorthand: ``tensor((4, 4), "float32")``."""
    return TensorStructInfo(tuple(shape), dtype)


EMPTY_TUPLE = TupleStructInfo(())
Dims = tuple[Dim, ...]


def is_base_of(base: StructInfo, derived: StructInfo) -> bool:
    """True if every value described by ``derived`` is also described by ``base`` (TVM's
    ``IsBaseOf`` for the statically decidable cases; symbolic dims compare by identity)."""
    if base == derived:
        return True
    if isinstance(base, ObjectStructInfo):
        return True
    if isinstance(base, TensorStructInfo) and isinstance(derived, TensorStructInfo):
        if base.dtype is not None and base.dtype != derived.dtype:
            return False
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        if base.shape is not None:
            return derived.shape is not None and tuple(base.shape) == tuple(derived.shape)
        return base.shape_var is None
    if isinstance(base, TupleStructInfo) and isinstance(derived, TupleStructInfo):
        return len(base.fields) == len(derived.fields) and all(
            is_base_of(b, d) for b, d in zip(base.fields, derived.fields))
    if isinstance(base, ShapeStructInfo) and isinstance(derived, ShapeStructInfo):
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        return base.values is None or base.values == derived.values
    if isinstance(base, PrimStructInfo) and isinstance(derived, PrimStructInfo):
        return base.dtype == derived.dtype and (base.value is None or base.value == derived.value)
    return False


def erase_to_well_defined(si: StructInfo, defined_vars: Collection[TirVar]) -> StructInfo:
    """``si`` without the symbolic dims that are not in ``defined_vars`` (a tensor whose
    shape uses one keeps only its rank and dtype), as TVM's EraseToWellDefined."""
    if isinstance(si, TensorStructInfo) and si.shape is not None:
        if all(v in defined_vars for v in struct_info_vars(si)):
            return si
        return TensorStructInfo(None, si.dtype, si.ndim)
    if isinstance(si, ShapeStructInfo) and si.values is not None:
        if all(v in defined_vars for v in struct_info_vars(si)):
            return si
        return ShapeStructInfo(None, si.ndim)
    if isinstance(si, TupleStructInfo):
        fields = tuple(erase_to_well_defined(f, defined_vars) for f in si.fields)
        return si if all(a is b for a, b in zip(fields, si.fields)) else TupleStructInfo(fields)
    return si
