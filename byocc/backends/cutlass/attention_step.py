"""The attention step of the CUTLASS backend: ``cutlass.attention``, ``cutlass.attention_bias``
and both ``cutlass.stacked_attention`` forms (docs/codegen.md#attention).

:func:`attention_plan` reads the composite's body (not its name): one ``R.nn.attention`` or
``R.nn.attention_bias`` call whose q, k and v are composite parameters (BSNH tensors) or
``reshape``s of slices of one stacked ``(B, S, D)`` parameter cut on its last axis by ``split``
or ``strided_slice``. Each of q, k, v becomes a view: the parameter, an element offset along
the last axis and the strides ``(S*D, D, H)`` of the ``(B, S, N, H)`` view, so every layout
and grouped-query heads run the same kernel. The bias is read through broadcast strides
(0 for a dim of size 1). The scale (default ``1/sqrt(H)``), the causal mask and the window
are the call's attributes; a window without a causal mask counts from the top-left diagonal,
as the reference does.

:func:`attention_step` renders ``templates/attention_step.cu.j2`` (the argument block of
``byocc::attention::Params``, run-time checks, the launch) and names the kernel unit
``src/kernels/attention_<dtype>_h<bucket>.cu`` (``cuda/attention_unit.cu.j2``, one per dtype
and head-dim bucket 32/64/128/256, shared by every function), which instantiates the fused
kernel of ``csrc/byocc_attention.cuh``: FlashAttention-2-style online softmax, SIMT fp32 (the
"v1" kernel, which runs every call). An IR ``workspace`` parameter (AllocateWorkspace) is
accepted and unused. Head dims past 256, symbolic head dims, other dtypes and stacked inputs of
another form are CodegenErrors naming the function and composite.

The fast path (:meth:`AttentionPlan.fused_kernels`, :func:`fused_reason`): when the ``arch``
option has sm_90a and the call can take it (f16/bf16, head dim == value head dim, a multiple of
8 in bucket 64, 128 or 256, no bias, no window, a positive scale, a static seq_q that is a
multiple of 8), the step also names ``src/kernels/attention_sm90_<dtype>_h<bucket>_<mask>.cu``
(an sm90 unit of ``cuda/attention_sm90_unit.cu.j2``, one per dtype, bucket and mask, shared by
every function) and, unmasked in buckets 64 and 128 without a static tail, its ``_pingpong``
twin: CUTLASS's Hopper FMHA (``examples/88_hopper_fmha``) with byocc's mask fusion and launch
(``csrc/byocc_attention_sm90.cuh``). At run time the wrapper calls them in order on a
compute-capability-9 device; each launches only where its run-time checks pass (alignment,
strides, BottomRight with seq_kv >= seq_q, no tail for ping-pong, ...) and otherwise reports
"not applicable"; the v1 kernel runs when none launched. They write their fp32 softmax
statistics (batch * heads * seq_q) into the step's scratch region; the manifest step lists
every variant in order, or says why there is no fused one (``fused_refused``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import Function
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import TupleGetItem
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import arith

from ..codegen import CodegenError
from ..codegen import SourceFile
from ..codegen import Variant
from ..cuda.step import Operand
from ..cuda.step import Size
from ..cuda.step import Step
from ..cuda.step import tensor_bytes
from ..cuda.templates import fixed_source
from ..cuda.templates import render
from ..cuda.wrapper import WrapperContext
from ..cuda.wrapper import shape_text
from ..dtypes import dtype as dtype_row
from ..program import CompositeCall
from ..program import resolve
from ..utils import int_list
from .backend import OPTIONS

ATTENTION_OPS = ("relax.nn.attention", "relax.nn.attention_bias")
DTYPES = ("float16", "bfloat16", "float32")
#: Compile-time head-dim buckets of the kernel (any H, Hv up to the bucket).
BUCKETS = (32, 64, 128, 256)
MASKS = {None: "kNoMask", "TopLeft": "kTopLeft", "BottomRight": "kBottomRight"}
HEADERS = (("src/byocc_attention.h", "cuda/byocc_attention.h"),
           ("src/byocc_attention.cuh", "cuda/byocc_attention.cuh"))
#: The header of the sm_90a fused units (added when a function uses one).
SM90_HEADER = ("src/byocc_attention_sm90.cuh", "cuda/byocc_attention_sm90.cuh")
#: What the sm_90a fused kernel (CUTLASS's Hopper FMHA) takes: dtypes and head-dim buckets,
#: with each bucket's (query rows, keys, head dim) tile and schedule (csrc: Tiles<kD>).
FUSED_DTYPES = ("float16", "bfloat16")
FUSED_TILES = {64: (128, 128, 64), 128: (128, 128, 128), 256: (128, 64, 256)}
FUSED_SCHEDULE = "tma_warpspecialized_cooperative"
#: The ping-pong kernels (no mask, shapes without query or key tails), tried before the
#: cooperative one: faster on the H200 (bench/gpu/results/h200_attn_probe.md, h200_attn_probe2.md).
PINGPONG_TILES = {64: (128, 128, 64), 128: (128, 128, 128)}
PINGPONG_SCHEDULE = "tma_warpspecialized_pingpong"
#: Unit-name tag of each mask (after causal-mask resolution: a window implies TopLeft).
MASK_TAGS = {None: "none", "TopLeft": "top_left", "BottomRight": "bottom_right"}


@dataclass(frozen=True)
class View:
    """q, k or v: composite parameter ``param`` seen as ``shape`` (B, S, N, H) with the
    stored tensor's last dim ``row`` (D when stacked, else N*H) and an element ``offset``."""

    param: int
    shape: tuple
    row: Any
    offset: Any
    stacked: bool


@dataclass(frozen=True)
class AttentionPlan:
    call: CompositeCall
    where: str
    q: View
    k: View
    v: View
    bias: Any
    """The bias operand's program-level reference (a parameter or a bound constant), or None."""
    bias_shape: tuple | None
    workspace: int | None
    dtype: str
    scale: float
    scale_given: bool
    mask: str | None
    window: int | None
    bucket: int
    bias_as_mask: bool = False
    """The composite's bias is a constant causal mask, run as :attr:`mask` (:func:`causal_bias`)."""
    fused_refused: str | None = "not planned"
    """Why the step has no sm_90a fused variant (:func:`fused_reason`); None: it has one."""

    @property
    def fused(self) -> bool:
        return self.fused_refused is None

    @property
    def head_dim(self) -> int:
        return self.q.shape[3]

    @property
    def head_dim_v(self) -> int:
        return self.v.shape[3]

    @property
    def unit_name(self) -> str:
        return f"attention_{dtype_row(self.dtype).short}_h{self.bucket}"

    @property
    def fused_unit_name(self) -> str:
        """The sm_90a fused unit's name (meaningful when :attr:`fused`)."""
        return f"attention_sm90_{dtype_row(self.dtype).short}_h{self.bucket}_{MASK_TAGS[self.mask]}"

    @property
    def pingpong(self) -> bool:
        """Whether the step also has the ping-pong unit: no mask, bucket 64 or 128, and no
        static query or key length with a tail (which it could never run)."""
        if not self.fused or self.mask is not None or self.bucket not in PINGPONG_TILES:
            return False
        rows, keys, _ = PINGPONG_TILES[self.bucket]
        seq_q, seq_kv = self.q.shape[1], self.k.shape[1]
        return not ((isinstance(seq_q, int) and seq_q % rows) or (isinstance(seq_kv, int) and seq_kv % keys))

    def fused_kernels(self) -> list[dict]:
        """The sm_90a units in run-time order: name, schedule, tile, the C++ entry."""
        out = []
        if self.pingpong:
            out.append({"name": f"{self.fused_unit_name}_pingpong", "schedule": PINGPONG_SCHEDULE,
                        "tile": PINGPONG_TILES[self.bucket], "entry": "run_pingpong",
                        "applies": f"seq_q % {PINGPONG_TILES[self.bucket][0]} == 0 and "
                                   f"seq_kv % {PINGPONG_TILES[self.bucket][1]} == 0"})
        if self.fused:
            out.append({"name": self.fused_unit_name, "schedule": FUSED_SCHEDULE, "tile": FUSED_TILES[self.bucket],
                        "entry": "run", "applies": None})
        return out

    def describe(self) -> str:
        parts = ["softmax(q k^T * scale" + (" + bias" if self.bias is not None else "") + ")"]
        if self.mask or self.window:
            parts.append(f"mask {self.mask or 'TopLeft'}" + (f" window {self.window}" if self.window else ""))
        return ", ".join(parts) + " v"


def _defs(comp: Function) -> dict:
    return {b.var: b.value for block in comp.body.blocks for b in block.bindings if isinstance(b, VarBinding)}


def _attention_call(comp: Function, defs: dict) -> Call | None:
    calls = [v for v in defs.values() if isinstance(v, Call) and isinstance(v.op, Op) and v.op.name in ATTENTION_OPS]
    return calls[0] if len(calls) == 1 else None


def _int(x) -> int:
    return int(x.value if isinstance(x, PrimValue) else x)


def _slice_offset(value, defs: dict, where: str) -> tuple[Var, Any]:
    """(stacked variable, element offset) of one split output or strided slice on axis 2."""
    if isinstance(value, TupleGetItem):
        split = defs.get(value.tuple_value)
        if not (isinstance(split, Call) and isinstance(split.op, Op) and split.op.name == "relax.split"):
            raise CodegenError(f"{where}: stacked attention operand is not a split output")
        width = split.args[0].struct_info.shape[2]
        sections = split.attrs.get("indices_or_sections")
        if isinstance(sections, (list, tuple)):
            starts = [0, *(_int(s) for s in sections)]
            return split.args[0], starts[value.index]
        return split.args[0], arith.mul(arith.floordiv(width, _int(sections)), value.index)
    if isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == "relax.strided_slice":
        return value.args[0], int_list(value.args[2])[0]
    raise CodegenError(f"{where}: stacked attention operand is neither a split output nor a strided slice")


def _view(arg, params: dict, defs: dict, where: str, what: str) -> View:
    shape = tuple(arg.struct_info.shape)
    if arg in params:
        if len(shape) != 4:
            raise CodegenError(f"{where}: {what} must be 4-D (B, S, N, H)")
        return View(params[arg], shape, arith.mul(shape[2], shape[3]), 0, False)
    reshape = defs.get(arg)
    if not (isinstance(reshape, Call) and isinstance(reshape.op, Op) and reshape.op.name == "relax.reshape"):
        raise CodegenError(f"{where}: {what} is neither a parameter nor a reshaped slice of the stacked qkv")
    src = reshape.args[0]
    stacked, offset = _slice_offset(defs.get(src), defs, where)
    base = tuple(stacked.struct_info.shape)
    src_shape = tuple(src.struct_info.shape)
    if (stacked not in params or len(base) != 3 or len(shape) != 4
            or not all(arith.provably_equal(a, b) for a, b in zip(shape[:2], src_shape[:2]))
            or not arith.provably_equal(arith.mul(shape[2], shape[3]), src_shape[2])):
        raise CodegenError(f"{where}: stacked {what} is not a (B, S, N, H) view of a (B, S, D) parameter "
                           "cut on its last axis")
    return View(params[stacked], shape, base[2], offset, True)


def _bucket(plan_dims: tuple, where: str) -> int:
    if not all(isinstance(d, int) for d in plan_dims):
        raise CodegenError(f"{where}: the attention kernel needs static head dims (got {plan_dims})")
    need = max(plan_dims)
    for b in BUCKETS:
        if need <= b:
            return b
    raise CodegenError(f"{where}: head dim {need} exceeds the attention kernel's maximum of {BUCKETS[-1]}")


def _dtype(call: Call, where: str) -> str:
    dts = {a.struct_info.dtype for a in call.args} | {call.struct_info.dtype}
    if len(dts) != 1 or next(iter(dts)) not in DTYPES:
        raise CodegenError(f"{where}: attention needs q, k, v, bias and output of one dtype among "
                           f"{', '.join(DTYPES)} (got {', '.join(sorted(map(str, dts)))})")
    return next(iter(dts))


def fused_reason(plan: AttentionPlan, archs) -> str | None:
    """Why the step gets no sm_90a fused variant (None: it gets one). What only the run time
    knows (alignment, strides, a symbolic seq_q, seq_kv >= seq_q for BottomRight) is checked
    by the unit itself (``csrc/byocc_attention_sm90.cuh``)."""
    seq_q, seq_kv = plan.q.shape[1], plan.k.shape[1]
    reasons = [
        ("sm_90a" not in archs, "the arch option has no sm_90a"),
        (plan.dtype not in FUSED_DTYPES, f"dtype {plan.dtype} (fused: {', '.join(FUSED_DTYPES)})"),
        (plan.head_dim != plan.head_dim_v, "head dim differs from the value head dim"),
        (plan.bucket not in FUSED_TILES or plan.head_dim % 8 != 0,
         f"head dim {plan.head_dim} (fused: multiples of 8 in buckets {', '.join(map(str, FUSED_TILES))})"),
        (plan.bias is not None, "a bias"),
        (plan.window is not None, "a window"),
        (not (math.isfinite(plan.scale) and plan.scale > 0), f"scale {plan.scale!r} (fused: positive)"),
        (isinstance(seq_q, int) and seq_q % 8 != 0, f"seq_q {seq_q} (fused: a multiple of 8)"),
        (plan.mask == "BottomRight" and isinstance(seq_q, int) and isinstance(seq_kv, int) and seq_kv < seq_q,
         "a BottomRight mask with seq_kv < seq_q (rows that see no key)"),
    ]
    return next((why for bad, why in reasons if bad), None)


def causal_bias(data, seq_q, seq_kv) -> str | None:
    """The causal mask a constant attention bias spells, or None: ``TopLeft`` (or
    ``BottomRight``, when seq_kv > seq_q) where ``data`` broadcasts to (B, N, seq_q, seq_kv)
    with every (b, n) slice alike, 0 where key ``j`` may be seen (``j <= i``, resp.
    ``j <= i + seq_kv - seq_q``) and at most :data:`MASKED_BIAS` elsewhere (the additive mask
    exporters write: ``-inf``, or the dtype's most negative value). Such a bias changes nothing
    the mask does not: a masked score's exp underflows to exactly 0 in float32 unless the
    score exceeds its row's maximum by more than 29 900."""
    import numpy as np

    if data is None or not isinstance(seq_q, int) or not isinstance(seq_kv, int) or seq_kv < seq_q:
        return None
    arr = np.asarray(data)
    if arr.ndim != 4 or tuple(arr.shape[2:]) != (seq_q, seq_kv):
        return None
    first = arr[:1, :1]
    if arr.shape[:2] != (1, 1) and not np.array_equal(arr, np.broadcast_to(first, arr.shape)):
        return None
    plane = first[0, 0].astype(np.float64)
    seen = np.arange(seq_kv)[None, :] <= np.arange(seq_q)[:, None] + (seq_kv - seq_q)
    if not (np.all(plane[seen] == 0) and np.all(plane[~seen] <= MASKED_BIAS)):
        return None
    return "TopLeft" if seq_kv == seq_q else "BottomRight"


#: The largest bias value :func:`causal_bias` reads as "masked" (float16's lowest is -65504).
MASKED_BIAS = -30000.0


def attention_plan(call: CompositeCall, where: str, options: dict | None = None,
                   program: Any = None) -> AttentionPlan | None:
    """The attention reading of composite call ``call``, or None when its body has no
    attention op; CodegenError when it has one the kernel cannot run. ``options``: the
    CUTLASS codegen options (their ``arch`` decides the fused variant; default: all).
    ``program``: the :class:`~byocc.backends.program.OffloadedProgram` whose bound constants
    a bias may be; a constant causal bias (:func:`causal_bias`) with no mask or window of its
    own becomes the mask, so the fused kernel takes it (the Llama export's additive mask)."""
    comp = call.func
    defs = _defs(comp)
    att = _attention_call(comp, defs)
    if att is None:
        return None
    params = {p: i for i, p in enumerate(comp.params)}
    q, k, v = (_view(a, params, defs, where, n) for a, n in zip(att.args[:3], ("query", "key", "value")))
    bias = att.args[3] if len(att.args) > 3 else None
    if bias is not None and ((bias not in params and not isinstance(bias, Constant))
                             or len(bias.struct_info.shape) != 4):
        raise CodegenError(f"{where}: the attention bias must be a 4-D parameter or constant")
    dtype = _dtype(att, where)
    bucket = _bucket((q.shape[3], v.shape[3]), where)
    used = {q.param, k.param, v.param} | ({params[bias]} if bias in params else set())
    spare = [i for i, p in enumerate(comp.params) if i not in used]
    workspace = next((i for i in spare if comp.params[i].struct_info.dtype == "uint8"), None)
    attrs = att.attrs
    scale_attr = attrs.get("scale")
    scale = 1.0 / math.sqrt(q.shape[3]) if scale_attr is None else float(_int_or_float(scale_attr))
    mask = attrs.get("causal_mask")
    if mask not in MASKS:
        raise CodegenError(f"{where}: unknown causal_mask {mask!r}")
    window = attrs.get("window_size")
    window = None if window is None else _int(window)
    if window is not None and window <= 0:
        raise CodegenError(f"{where}: window_size {window} must be positive")
    bias_ref = None if bias is None else resolve(call, params.get(bias, bias))
    bias_mask = None
    if bias_ref is not None and mask is None and window is None:
        bias_mask = causal_bias(_constant_value(bias, bias_ref, program), q.shape[1], k.shape[1])
    if bias_mask is not None:
        bias, bias_ref, mask = None, None, bias_mask
    plan = AttentionPlan(call, where, q, k, v, bias_ref,
                         None if bias is None else tuple(bias.struct_info.shape), workspace, dtype,
                         scale, scale_attr is not None, mask, window, bucket, bias_as_mask=bias_mask is not None)
    archs = OPTIONS.resolve(options or {})["arch"]
    return dataclasses.replace(plan, fused_refused=fused_reason(plan, archs))


def _constant_value(operand, ref, program):
    """The array of a composite operand that is a constant (in the body, or a parameter bound
    to one of ``program``'s constants), else None."""
    if isinstance(operand, Constant):
        return operand.data
    if program is not None and ref.kind == "const":
        return program.constants[ref.index][1].data
    return None


def _int_or_float(x):
    return x.value if isinstance(x, PrimValue) else x


# --------------------------------------------------------------------------- rendering
def _strides(shape, ctx: WrapperContext) -> list[str]:
    """Compact row-major strides of ``shape`` as C expressions."""
    out, acc = [], "int64_t(1)"
    for d in reversed(shape):
        out.append(acc)
        acc = f"{acc} * {ctx.dim(d)}" if acc != "int64_t(1)" else ctx.dim(d)
    return list(reversed(out))


def _view_context(view: View, call: CompositeCall, ctx: WrapperContext) -> dict:
    b, s = ctx.dim(view.shape[0]), ctx.dim(view.shape[1])
    row = ctx.dim(view.row)
    return {"ptr": ctx.ptr(call.args[view.param]), "offset": ctx.dim(view.offset),
            "strides": [f"{s} * {row}", row, ctx.dim(view.shape[3])], "b": b}


def _bias_context(plan: AttentionPlan, ctx: WrapperContext) -> dict | None:
    if plan.bias is None:
        return None
    shape = plan.bias_shape
    strides = _strides(shape, ctx)
    dims = [ctx.dim(d) for d in shape]
    return {"ptr": ctx.ptr(plan.bias),
            "strides": [f"({d} == 1 ? int64_t(0) : {st})" for d, st in zip(dims[:3], strides[:3])] + [strides[3]]}


def unit_declaration(plan: AttentionPlan) -> str:
    return (f"namespace byocc {{ namespace attention {{ int {plan.unit_name}_run(const Params& p, "
            "cudaStream_t stream); } }")


def fused_declaration(name: str) -> str:
    return (f"namespace byocc {{ namespace attention {{ int {name}_run(const Params& p, "
            "void* lse, uint64_t lse_bytes, cudaStream_t stream); } }")


def attention_unit(plan: AttentionPlan) -> SourceFile:
    text = render("cuda/attention_unit.cu.j2", name=plan.unit_name, dtype=plan.dtype,
                  ctype=dtype_row(plan.dtype).ctype, bucket=plan.bucket)
    return SourceFile(f"src/kernels/{plan.unit_name}.cu", text, "light")


#: The CUTLASS element type of each fused dtype.
_CUTLASS_ELEMENT = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t"}


def fused_units(plan: AttentionPlan) -> tuple[SourceFile, ...]:
    """The sm_90a fused units of ``plan`` (sm90 units: built for sm_90a only), in run-time order."""
    out = []
    for k in plan.fused_kernels():
        pingpong = k["entry"] == "run_pingpong"
        entry = (f"run_pingpong<{_CUTLASS_ELEMENT[plan.dtype]}, {plan.bucket}>" if pingpong
                 else f"run<{_CUTLASS_ELEMENT[plan.dtype]}, {plan.bucket}, {MASKS[plan.mask]}>")
        text = render("cuda/attention_sm90_unit.cu.j2", name=k["name"], dtype=plan.dtype, bucket=plan.bucket,
                      mask_name=plan.mask or "none", tile=k["tile"], schedule=k["schedule"], entry=entry,
                      applies=k["applies"])
        out.append(SourceFile(f"src/kernels/{k['name']}.cu", text, "sm90"))
    return tuple(out)


def header_sources(fused: bool = False) -> tuple[SourceFile, ...]:
    """The attention headers (``fused``: with the sm_90a units' header)."""
    pairs = (*HEADERS, SM90_HEADER) if fused else HEADERS
    return tuple(SourceFile(path, fixed_source(name), "header") for path, name in pairs)


def lse_scratch(plan: AttentionPlan, ctx: WrapperContext) -> Size:
    """The fused kernel's softmax statistics: fp32, batch * heads * seq_q."""
    return tensor_bytes((plan.q.shape[0], plan.q.shape[2], plan.q.shape[1]), 4, ctx)


def step_code(plan: AttentionPlan, ctx: WrapperContext) -> str:
    call = plan.call
    out_shape = call.sinfo.shape
    return render(
        "cutlass/attention_step.cu.j2", symbol=ctx.program.symbol, name=plan.unit_name,
        q=_view_context(plan.q, call, ctx), k=_view_context(plan.k, call, ctx), v=_view_context(plan.v, call, ctx),
        bias=_bias_context(plan, ctx), out_ptr=ctx.ptr(_result_ref(call)),
        out_strides=_strides(out_shape, ctx)[:3],
        batch=ctx.dim(plan.q.shape[0]), seq_q=ctx.dim(plan.q.shape[1]), seq_kv=ctx.dim(plan.k.shape[1]),
        heads=ctx.dim(plan.q.shape[2]), kv_heads=ctx.dim(plan.k.shape[2]), v_heads=ctx.dim(plan.v.shape[2]),
        head_dim=plan.head_dim, head_dim_v=plan.head_dim_v, scale=_float_literal(plan.scale),
        mask=MASKS[plan.mask if plan.mask or not plan.window else "TopLeft"], window=plan.window or 0,
        bucket=plan.bucket, describe=plan.describe(), elem_bytes=dtype_row(plan.dtype).itemsize,
        fused=[{"name": k["name"], "tile": "x".join(map(str, k["tile"])), "schedule": k["schedule"].rsplit("_", 1)[1]}
               for k in plan.fused_kernels()],
    ).removesuffix("\n")


def _result_ref(call: CompositeCall):
    from ..program import ValueRef

    return ValueRef("temp", call.result)


def _float_literal(x: float) -> str:
    """An exact C float literal of ``x`` (rounded to float32 by the compiler, as the IR's
    float32 scale)."""
    return f"{float(x)!r}f" if math.isfinite(x) else ("INFINITY" if x > 0 else "-INFINITY")


def _operands(plan: AttentionPlan) -> tuple[Operand, ...]:
    args = plan.call.args
    if plan.q.stacked:
        items = [("qkv", plan.q.param)]
    else:
        items = [("query", plan.q.param), ("key", plan.k.param), ("value", plan.v.param)]
    out = [Operand(args[i], role) for role, i in items]
    if plan.bias is not None:
        out.append(Operand(plan.bias, "bias"))
    if plan.workspace is not None:
        out.append(Operand(args[plan.workspace], "workspace"))
    return tuple(out)


def fused_variants(plan: AttentionPlan) -> tuple[Variant, ...]:
    rules = ("compute capability 9.0; q, k, v, out 16-byte aligned, strides multiples of 8 elements "
             "below 2^31; seq_q % 8 == 0; BottomRight: seq_kv >= seq_q")
    return tuple(Variant("sm_90a", "fused_attention_sm90", {
        "kernel": f"src/kernels/{k['name']}.cu", "head_dim_bucket": plan.bucket, "tile": list(k["tile"]),
        "schedule": k["schedule"], "mask": plan.mask,
        "source": "CUTLASS examples/88_hopper_fmha (FmhaBuilder) + byocc_attention_sm90.cuh",
        "applies": rules + (f"; {k['applies']}" if k["applies"] else "")}) for k in plan.fused_kernels())


def attention_step(plan: AttentionPlan, ctx: WrapperContext) -> Step:
    """The :class:`~byocc.backends.cuda.step.Step` of one attention composite call: the
    sm_90a fused variants first where the plan has them, then the v1 kernel."""
    unit = attention_unit(plan)
    simt = Variant("sm_80", "fused_attention_simt", {"kernel": unit.path, "head_dim_bucket": plan.bucket})
    variants = (*fused_variants(plan), simt)
    units = (*fused_units(plan), unit)
    declarations = ('#include "byocc_attention.h"', *(fused_declaration(k["name"]) for k in plan.fused_kernels()),
                    unit_declaration(plan))
    layout = "stacked" if plan.q.stacked else "bsnh"
    record = {"composite": plan.call.composite, "kind": "attention", "formula": plan.describe(),
              "layout": layout, "dtype": plan.dtype, "head_dim": plan.head_dim, "head_dim_v": plan.head_dim_v,
              "scale": plan.scale, "scale_source": "attribute" if plan.scale_given else "1/sqrt(head_dim)",
              "causal_mask": plan.mask, "window_size": plan.window,
              "bias": ("constant causal mask, run as the " + str(plan.mask) + " mask" if plan.bias_as_mask
                       else None if plan.bias is None else "broadcast_strides"),
              "accumulator": "float32", "workspace": "accepted, unused" if plan.workspace is not None else None,
              "kernel": "sm90_fmha_then_simt" if plan.fused else "simt",
              "variants": [v.to_json() for v in variants]}
    if not plan.fused:
        record["fused_refused"] = plan.fused_refused
    fused_lines = tuple(f"variant fused_attention_sm90 (sm_90a, CUTLASS Hopper FMHA, tile "
                        f"{'x'.join(map(str, k['tile']))}, {k['schedule']}) where its run-time checks pass"
                        for k in plan.fused_kernels()) or (f"no sm_90a fused variant: {plan.fused_refused}",)
    header = (f"attention {plan.describe()}: {layout} q {shape_text(plan.call.func.params[plan.q.param].struct_info)}, "
              f"H {plan.head_dim} Hv {plan.head_dim_v}, scale {plan.scale!r}",
              *((f"the bias operand is a constant causal mask (0 where a key is seen, <= {MASKED_BIAS:g} "
                 f"elsewhere): run as the {plan.mask} mask, the bias is not read",) if plan.bias_as_mask else ()),
              *fused_lines,
              f"variant fused_attention_simt (online softmax, fp32), head-dim bucket {plan.bucket}"
              + ("; IR workspace unused" if plan.workspace is not None else ""))
    return Step(plan.call.composite, step_code(plan, ctx), units=units,
                scratch=lse_scratch(plan, ctx) if plan.fused else Size.zero(),
                declarations=declarations, header=header, record=record, variants=variants,
                operands=_operands(plan),
                attrs={"causal_mask": plan.mask, "window_size": plan.window, "scale": plan.scale,
                       "accumulator": "float32"})


__all__ = ["MASKED_BIAS", "AttentionPlan", "View", "attention_plan", "attention_step", "attention_unit", "causal_bias",
           "fused_reason", "fused_units", "header_sources"]
