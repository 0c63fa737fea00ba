"""The device allocation plan of one run (docs/runtime.md#allocation-plan).

Before a device run the entry function's bindings are planned once:

1. **Liveness.** Each tensor a binding produces lives from that binding to the last binding
   that uses it, or to the end when the function returns it. A value that may share memory
   with its operands (an operator left on the host may return a view: ``reshape``,
   ``permute_dims``, ... and, unless it is known to allocate, any other) joins their *alias
   group*: a buffer is free only after the last use of every value in its group.
2. **Placement.** The buffers of the native calls' outputs are placed in one arena, in
   program order: at each binding the buffers whose group died before it are returned to a
   free list (adjacent blocks merge), and each output takes the best-fitting free block or
   grows the arena. Offsets are aligned to :data:`ALIGN` bytes.

The result (:class:`MemoryPlan`) gives every planned output its ``(offset, nbytes)`` and the
arena's size, beside ``live_peak`` (the most bytes of planned values alive at once, a lower
bound of any placement) and ``unplanned_bytes`` (the sum of all planned buffers, what a run
without reuse would hold). Cost: linear in the bindings plus, per allocation, a scan of the
free list (as long as the set of live buffers, not the program).

:func:`plan_buffers` is the placement on plain intervals (what the tests drive);
:func:`plan_function` derives the intervals from a Relax function with static shapes.
"""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

#: Offsets in the arena are multiples of this (cudaMalloc's own alignment).
ALIGN = 256

#: Host operators whose reference always returns a new array (never a view of an operand);
#: every other host operator's result is taken to alias its operands.
FRESH_OPS = frozenset({
    "relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.maximum", "relax.minimum",
    "relax.power", "relax.exp", "relax.log", "relax.sqrt", "relax.rsqrt", "relax.tanh", "relax.sigmoid",
    "relax.erf", "relax.clip", "relax.mean", "relax.sum", "relax.max", "relax.min", "relax.variance",
    "relax.concat", "relax.nn.relu", "relax.nn.gelu", "relax.nn.gelu_tanh", "relax.nn.silu",
    "relax.nn.softmax", "relax.nn.log_softmax", "relax.nn.layer_norm", "relax.nn.rms_norm",
    "relax.nn.pad", "relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.nn.adaptive_avg_pool2d",
    "relax.nn.conv2d", "relax.matmul", "relax.broadcast_to", "relax.strided_slice", "relax.take",
    "relax.where", "relax.zeros", "relax.ones", "relax.full",
})


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass(frozen=True)
class Interval:
    """One buffer: ``key``, ``nbytes``, defined at binding ``first``, free after ``last``."""

    key: Hashable
    nbytes: int
    first: int
    last: int


@dataclass
class MemoryPlan:
    """Offsets of the planned buffers in one arena."""

    offsets: dict = field(default_factory=dict)  # key -> (offset, nbytes)
    arena_bytes: int = 0
    live_peak: int = 0
    unplanned_bytes: int = 0
    intervals: tuple = ()
    aliases: int = 0  # values whose buffer another value's lifetime extended

    def slot(self, key: Hashable) -> tuple[int, int] | None:
        return self.offsets.get(key)

    def as_dict(self) -> dict:
        scratch = sum(1 for k in self.offsets if isinstance(k, tuple) and len(k) == 2 and k[1] == "scratch")
        return {"buffers": len(self.offsets) - scratch, "scratch_buffers": scratch,
                "arena_bytes": self.arena_bytes, "live_peak_bytes": self.live_peak,
                "unplanned_bytes": self.unplanned_bytes, "reuse_saves_bytes": self.unplanned_bytes - self.arena_bytes}


class _FreeList:
    """Free blocks ``[offset, size]`` sorted by offset; adjacent blocks merge."""

    def __init__(self) -> None:
        self.blocks: list[list[int]] = []
        self.top = 0  # arena high-water mark

    def take(self, size: int) -> int:
        best = -1
        for i, (_, n) in enumerate(self.blocks):
            if n >= size and (best < 0 or n < self.blocks[best][1]):
                best = i
        if best >= 0:
            off, n = self.blocks[best]
            if n == size:
                del self.blocks[best]
            else:
                self.blocks[best] = [off + size, n - size]
            return off
        if self.blocks and self.blocks[-1][0] + self.blocks[-1][1] == self.top:
            off = self.blocks.pop()[0]  # the last free block grows into new space
        else:
            off = self.top
        self.top = off + size
        return off

    def give(self, off: int, size: int) -> None:
        import bisect

        i = bisect.bisect_left(self.blocks, [off, size])
        self.blocks.insert(i, [off, size])
        if i + 1 < len(self.blocks) and off + size == self.blocks[i + 1][0]:
            self.blocks[i][1] += self.blocks.pop(i + 1)[1]
        if i > 0 and self.blocks[i - 1][0] + self.blocks[i - 1][1] == off:
            self.blocks[i - 1][1] += self.blocks.pop(i)[1]


def plan_buffers(intervals: Iterable[Interval]) -> MemoryPlan:
    """Place ``intervals`` in one arena, reusing a buffer after its ``last`` binding: two
    buffers whose intervals overlap (``first <= other.last`` both ways) never overlap."""
    items = sorted(intervals, key=lambda iv: (iv.first, -iv.nbytes))
    for iv in items:
        if iv.last < iv.first or iv.nbytes < 0:
            raise ValueError(f"bad interval {iv}")
    free = _FreeList()
    plan = MemoryPlan(intervals=tuple(items))
    by_end: dict[int, list[Interval]] = {}
    live = 0
    ends = sorted({iv.last for iv in items})
    end_pos = 0
    for iv in items:
        # release every buffer whose last use is before this binding
        while end_pos < len(ends) and ends[end_pos] < iv.first:
            for dead in by_end.pop(ends[end_pos], ()):
                off, n = plan.offsets[dead.key]
                free.give(off, _align(n))
                live -= _align(n)
            end_pos += 1
        size = _align(max(iv.nbytes, 1))
        off = free.take(size)
        plan.offsets[iv.key] = (off, iv.nbytes)
        by_end.setdefault(iv.last, []).append(iv)
        live += size
        plan.live_peak = max(plan.live_peak, live)
        plan.unplanned_bytes += size
    plan.arena_bytes = free.top
    return plan


def _nbytes(sinfo) -> int | None:
    from byocc.ir import TensorStructInfo
    from byocc.ops.reference import np_dtype

    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or sinfo.dtype is None:
        return None
    size = 1
    for d in sinfo.shape:
        if not isinstance(d, int):
            return None
        size *= d
    return size * np_dtype(sinfo.dtype).itemsize


def output_sizes(sinfo) -> list[int] | None:
    """Bytes of each output of a call of this type (a tuple flattened), or None when a
    shape is not static."""
    from byocc.ir import TupleStructInfo

    if isinstance(sinfo, TupleStructInfo):
        out: list[int] = []
        for f in sinfo.fields:
            sub = output_sizes(f)
            if sub is None:
                return None
            out += sub
        return out
    n = _nbytes(sinfo)
    return None if n is None else [n]


def plan_function(func, cache: dict | None = None, scratch_bytes: dict | None = None) -> MemoryPlan:
    """The plan of ``func``'s top-level bindings: one buffer per output of each
    ``R.call_dps_packed`` with a static type, keyed ``(var, field)``. Host operators extend
    the lifetime of the buffers they may alias (see :data:`FRESH_OPS`). ``scratch_bytes``
    (callee symbol -> the manifest's static ``scratch_bytes``): each such call's scratch is
    a buffer too, keyed ``(var, "scratch")``, alive during that call only, so it reuses the
    space of values already dead (a ResNet-50's stem output under the next function's
    scratch)."""
    from byocc.ir import Call
    from byocc.ir import Op

    from .plan import plan_of
    from .plan import uses

    plan = plan_of(func.body, {} if cache is None else cache)
    bindings: Sequence = plan.bindings
    end = len(bindings)
    # alias groups: union-find over variables
    parent: dict = {}

    def find(v):
        root = v
        while parent.get(root, root) is not root:
            root = parent[root]
        while parent.get(v, v) is not root:  # path compression
            parent[v], v = root, parent[v]
        return root

    last: dict = {}
    native: list = []  # (var, index, sizes)
    scratch: list = []  # Interval of each native call's scratch
    aliased = 0
    for i, b in enumerate(bindings):
        value = b.value
        operands = list(uses(value))
        for v in operands:
            last[v] = i
        if isinstance(value, Call) and isinstance(value.op, Op):
            if value.op.name == "relax.call_dps_packed":
                sizes = output_sizes(b.var.struct_info)
                if sizes is not None:
                    native.append((b.var, i, sizes))
                sym = getattr(value.args[0], "global_symbol", None) if value.args else None
                need = (scratch_bytes or {}).get(sym)
                if need:
                    scratch.append(Interval((b.var, "scratch"), int(need), i, i))
                continue
            if value.op.name in FRESH_OPS:
                continue
        for v in operands:  # may be a view of its operands (or hold them, as a tuple)
            ra, rb = find(b.var), find(v)
            if ra is not rb:
                parent[rb] = ra
                aliased += 1
    for v in uses(plan.body):
        last[v] = end
    group_last: dict = {}
    for v, i in last.items():
        r = find(v)
        group_last[r] = max(group_last.get(r, -1), i)
    intervals = []
    for var, i, sizes in native:
        stop = max(group_last.get(find(var), i), last.get(var, i), i)
        for k, n in enumerate(sizes):
            intervals.append(Interval((var, k), n, i, stop))
    result = plan_buffers(intervals + scratch)
    result.aliases = aliased
    return result


__all__ = ["ALIGN", "FRESH_OPS", "Interval", "MemoryPlan", "output_sizes", "plan_buffers", "plan_function"]
