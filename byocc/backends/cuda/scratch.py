"""The scratch layout of one offloaded function, computed once as data.

The caller's scratch buffer holds, in order, the regions of the temporaries of a merged
function (a composite call's result that is not an output), then one region shared by the
steps' own needs: its size is the largest step need. Every region is rounded up to 256 bytes.

Temporaries share space: a temporary lives from the call that writes it to the last call that
reads it (inclusive, so a call's output never overlaps its inputs), and each static-sized one
takes the lowest offset no live temporary covers (first fit, in call order; a ResNet-50 at
batch 32 merged into one function needs 128 MB instead of 653). Temporaries of symbolic size get
a region of their own after the static ones.

One exception, in place: a GEMM or conv2d step whose full-shape residual (or full-shape bias,
the same C operand) is a temporary read for the last time by that call (and by no other
operand of it) writes its result over it (:func:`in_place_residual`). Every kernel of those
steps reads each residual element only to compute the output element at the same index (the
CUTLASS epilogues, the split-K reduction, the generic epilogue, GEMM and convolution), so
nothing reads an element the call has already written. In a ResNet block the block's input
and output need not both be held.

The same :class:`ScratchLayout` is what the wrapper's ``scratch_layout()`` evaluates at run
time (``templates/wrapper.cu.j2``) and what the manifest records (``scratch_bytes`` when every
size is static, else ``scratch_expr``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from ..dtypes import itemsize
from ..program import OffloadedProgram
from ..program import ValueRef
from .step import Size
from .step import Step
from .step import dims_text
from .step import tensor_bytes


@dataclass(frozen=True)
class TempRegion:
    """A temporary's region: ``offset`` from the start of the scratch buffer."""

    temp: int  # the temporary's index (the composite call's result)
    dtype: str
    shape: tuple
    offset: Size
    size: Size

    @property
    def shape_text(self) -> str:
        return dims_text(self.shape)


@dataclass(frozen=True)
class StepNeed:
    """A step's need in the shared step region (steps that need nothing are left out)."""

    index: int
    composite: str
    size: Size


@dataclass(frozen=True)
class ScratchLayout:
    temps: tuple[TempRegion, ...]
    steps: tuple[StepNeed, ...]
    temps_bytes: Size | None = None
    """The temporaries' extent (None: their sizes' sum, every region apart)."""

    @property
    def step_offset(self) -> Size:
        """Where the shared step region starts: the temporaries' extent."""
        if self.temps_bytes is not None:
            return self.temps_bytes
        return reduce(lambda a, b: a + b, (t.size for t in self.temps), Size.zero())

    @property
    def step_bytes(self) -> int | None:
        """The step region's size, None when a step's need is symbolic."""
        values = [s.size.value for s in self.steps]
        return None if None in values else max(values, default=0)

    @property
    def scratch_bytes(self) -> int | None:
        """The whole buffer's size when it is static (the manifest's ``scratch_bytes``)."""
        temps, steps = self.step_offset.value, self.step_bytes
        return None if temps is None or steps is None else temps + steps

    @property
    def scratch_expr(self) -> str | None:
        """The size as a formula of the symbolic dims when it is not static (the manifest's
        ``scratch_expr``): the temporaries, then the largest step need."""
        if self.scratch_bytes is not None:
            return None
        temps = self.step_offset
        parts = [] if temps.is_zero else [temps.text]
        texts = [s.size.text for s in self.steps]
        if texts:
            parts.append(texts[0] if len(texts) == 1 else f"max({', '.join(texts)})")
        return " + ".join(parts) or "0"


def scratch_layout(program: OffloadedProgram, steps: Sequence[Step], ctx) -> ScratchLayout:
    """The layout of ``program``'s scratch for its planned ``steps`` (``ctx``: the
    :class:`~byocc.backends.cuda.wrapper.WrapperContext` of the function)."""
    last_use: dict[int, int] = {}
    for i, call in enumerate(program.calls):
        for ref in call.args:
            if isinstance(ref, ValueRef) and ref.kind == "temp":
                last_use[ref.index] = i
    placed: dict[int, tuple[int, int]] = {}  # static temporary -> (offset, size)
    symbolic: list[tuple[int, Size]] = []
    live: list[tuple[int, int, int]] = []  # (offset, size, last use) of the static temporaries alive
    extent = 0
    for i, call in enumerate(program.calls):
        live = [r for r in live if r[2] >= i]
        over = in_place_residual(program, i, steps[i], last_use)
        for result in call.results:
            if ctx.is_output(ValueRef("temp", result)):
                continue
            sinfo = program.temps[result]
            size = tensor_bytes(sinfo.shape, itemsize(sinfo.dtype), ctx)
            if size.value is None:
                symbolic.append((result, size))
                continue
            if over in placed and placed[over][1] == size.value:
                offset = placed[over][0]  # in place: the residual's region (its last use is this call)
                live = [r for r in live if r[0] != offset]
                over = None
            else:
                offset = _first_fit(live, size.value)
            placed[result] = (offset, size.value)
            live.append((offset, size.value, last_use.get(result, i)))
            extent = max(extent, offset + size.value)

    def region(t: int, offset: Size, size: Size) -> TempRegion:
        return TempRegion(t, program.temps[t].dtype, tuple(program.temps[t].shape), offset, size)

    regions = {t: region(t, Size.constant(off), Size.constant(n)) for t, (off, n) in placed.items()}
    at = Size.constant(extent) if extent else Size.zero()
    for t, size in symbolic:
        regions[t] = region(t, at, size)
        at = at + size
    temps = tuple(regions[t] for call in program.calls for t in call.results if t in regions)
    needs = tuple(StepNeed(i, s.composite, s.scratch) for i, s in enumerate(steps) if not s.scratch.is_zero)
    return ScratchLayout(temps, needs, at)


def in_place_residual(program: OffloadedProgram, index: int, step: Step,
                      last_use: dict[int, int]) -> int | None:
    """The temporary call ``index`` may write its one result over (see the module's text): the
    full-shape residual (or bias) of a GEMM or conv2d step, read for the last time by this
    call and by no other of its operands, of the result's dtype; None otherwise."""
    call = program.calls[index]
    if step.record.get("kind") not in ("gemm", "conv2d") or len(call.results) != 1:
        return None
    residual = [o for o in step.operands if o.role in ("residual", "bias") and o.operand_class == "full"]
    if len(residual) != 1:
        return None
    ref = residual[0].ref
    if not isinstance(ref, ValueRef) or ref.kind != "temp" or last_use.get(ref.index) != index:
        return None
    if sum(1 for o in step.operands if o.ref == ref) != 1:
        return None
    if program.temps[ref.index].dtype != program.temps[call.results[0]].dtype:
        return None
    return ref.index


def _first_fit(live: list[tuple[int, int, int]], size: int) -> int:
    """The lowest offset where ``size`` bytes overlap none of the ``live`` regions."""
    at = 0
    for offset, n, _ in sorted(live):
        if offset - at >= size:
            return at
        at = max(at, offset + n)
    return at


__all__ = ["ScratchLayout", "StepNeed", "TempRegion", "in_place_residual", "scratch_layout"]
