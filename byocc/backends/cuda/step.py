"""The step skeleton: what a backend says about one composite call of an offloaded function.

A backend plans every composite call into a :class:`Step`: its scratch need, the kernel units
it uses and their C declarations, its C++ code inside the wrapper, its header comment lines,
its manifest record and variants, and the roles of the values it reads. Everything else of
the function - the wrapper (argument checks, dims, scratch layout, arch check, constants, the
steps in order), the scratch layout and the manifest entry - is written by shared code from
these objects (:mod:`byocc.backends.cuda.function`).

Byte counts are :class:`Size` values: the C expression the wrapper evaluates, the text the
manifest's ``scratch_expr`` shows, and the exact number when every dim it depends on is static.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from byocc.ir.prim import dim_text

from ..codegen import SourceFile
from ..codegen import Variant
from ..program import ValueRef
from ..program import static_numel

#: Alignment of every scratch region (bytes); ``byocc::round_up`` in the generated C++.
SCRATCH_ALIGN = 256


def dims_text(shape) -> str:
    """A shape as the header comments and messages show it: ``(n, 128)``."""
    return "(" + ", ".join(dim_text(d) for d in shape) + ")"


def round_up(n: int) -> int:
    """``n`` rounded up to the scratch alignment (as ``byocc::round_up``)."""
    return (n + SCRATCH_ALIGN - 1) // SCRATCH_ALIGN * SCRATCH_ALIGN


@dataclass(frozen=True)
class Size:
    """A byte count three ways: C expression, readable text, exact int (None when symbolic)."""

    c: str
    text: str
    value: int | None

    @staticmethod
    def zero() -> Size:
        return Size("uint64_t(0)", "0", 0)

    @staticmethod
    def constant(n: int, c: str | None = None) -> Size:
        """A static count; ``c`` names it in C (a named constant) instead of the number."""
        return Size(c or f"uint64_t({n})", str(n), n)

    @property
    def is_zero(self) -> bool:
        return self.value == 0

    def __add__(self, other: Size) -> Size:
        if self.value == 0:
            return other
        if other.value == 0:
            return self
        value = None if self.value is None or other.value is None else self.value + other.value
        return Size(f"({self.c} + {other.c})", f"{self.text} + {other.text}", value)


    def max(self, other: Size) -> Size:
        """The larger of two counts (regions of variants that never run together)."""
        if self.value is not None and other.value is not None:
            return self if self.value >= other.value else other
        if self.value == 0:
            return other
        if other.value == 0:
            return self
        return Size(f"({self.c} > {other.c} ? {self.c} : {other.c})", f"max({self.text}, {other.text})", None)


def tensor_bytes(shape, itemsize: int, ctx) -> Size:
    """``round_up(numel * itemsize)`` of a compact tensor of ``shape`` (``ctx``: the
    :class:`~byocc.backends.cuda.wrapper.WrapperContext` giving the dims' C expressions)."""
    n = static_numel(shape)
    c = f"byocc::round_up(uint64_t({ctx.numel(shape)}) * {itemsize}u)"
    text = "round_up(" + " * ".join([dim_text(d) for d in shape] + [str(itemsize)]) + ")"
    return Size(c, text, None if n is None else round_up(n * itemsize))


@dataclass(frozen=True)
class Operand:
    """A value a step reads, as the manifest describes a parameter bound to it."""

    ref: ValueRef
    role: str  # a manifest role (lhs, rhs, bias, residual, input, ...)
    operand_class: str | None = None  # full | per_column | batched_row | per_row | general
    layout: str = "row_major"


@dataclass(frozen=True)
class Step:
    """One composite call, planned and rendered by its backend."""

    composite: str
    code: str
    """C++ statements run inside the wrapper's exported function (in their own block). They
    may use ``args``, ``d`` (dims), ``off`` (offsets), ``step_scratch``/``step_scratch_bytes``
    (the steps' shared region), ``device``, ``dev``, ``rc`` and ``stream``."""
    scratch: Size = field(default_factory=Size.zero)
    """Bytes the step needs in the steps' shared scratch region."""
    units: tuple[SourceFile, ...] = ()
    """Kernel units the step's code calls (the entry's ``kernel_sources``)."""
    declarations: tuple[str, ...] = ()
    """C declarations of what the code calls in those units (placed after the includes)."""
    includes: tuple[str, ...] = ()
    """``#include`` lines the declarations need besides the backend's own (added once, after
    them)."""
    header: tuple[str, ...] = ()
    """Comment lines describing the step at the top of the wrapper."""
    record: Mapping[str, Any] = field(default_factory=dict)
    """The manifest's ``steps[]`` entry."""
    variants: tuple[Variant, ...] = ()
    """The compiled implementations the step may run (the entry's ``variants``)."""
    operands: tuple[Operand, ...] = ()
    """The values it reads, in order of their roles (the first role of a parameter wins)."""
    attrs: Mapping[str, Any] = field(default_factory=dict)
    """The entry's ``attrs`` when this is the function's only step."""
    results: int = 1
    """How many results of its composite call the code writes (a composite returning a tuple
    needs a step that writes every field)."""


__all__ = ["Operand", "SCRATCH_ALIGN", "Size", "Step", "dims_text", "round_up", "tensor_bytes"]
