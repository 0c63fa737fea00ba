"""The CUTLASS backend's codegen: ``codegen(functions, options, constant_names)`` (spec/backends.md
sections 6, 7, 16 and 17.1).

For every offloaded function: one :class:`~byocc.backends.codegen.EntryPoint`, its light
wrapper ``src/funcs/<symbol>.cu`` (:func:`~byocc.backends.cuda.wrapper.emit_wrapper`) and
the kernel units its steps need, de-duplicated by path across functions (a CUTLASS unit is
named by its configuration hash, a generic unit by its dtypes, an elementwise unit by the
hash of its text). All functions of one call share one GeneratedModule.

Steps per composite call:

1. **GEMM family** (read from the body by :func:`~byocc.backends.program.gemm_step`): the
   Relax matmul is mapped to :c:struct:`byocc::GemmArgs` (spec 7.1: batch flattened into M
   when the rhs has batch product 1, a zero A batch stride when the lhs has, packed
   otherwise); a permute that swaps the last two axes is the "tn" layout, any other permute
   is materialised into scratch by the generic strided copy. Bias and residual are
   classified (per-column vector, batched row vector, full, per-row, general). Variants, in
   run-time order: the sm_90a TMA kernel (``dev.major == 9``, 16-byte tier), the sm_80 2.x
   kernel at the largest alignment tier the static dims allow (all tiers when N is
   symbolic), then byocc's generic SIMT GEMM, which is always compiled. A tier whose unit
   cannot fuse the epilogue computes the GEMM into an fp32 (int32) accumulator in scratch
   (or straight into an fp32/int32 output) and runs the generic epilogue kernel
   ``post(bin(act(acc + bias), residual))`` with arbitrary broadcast strides.
2. **Elementwise composites** (:mod:`byocc.backends.cuda.elementwise`): one fused kernel.
3. Anything else is a :class:`~byocc.backends.codegen.CodegenError` naming the function, the
   composite and the first unsupported op.

Scratch: the wrapper's temporaries plus, per step, ``round_up(materialised B) +
round_up(accumulator) + CUTLASS workspace``. The workspace of a stream-K sm_90a unit is a
bound computed here from CUTLASS 4.2's stream-K formula (every output tile split, tiles
rounded up to the cluster, Hopper's at most 132 SMs: partial tiles in fp32 plus 2 x 32-bit
barriers per tile, each rounded to 256 bytes); other units need none. At run time a tier
whose unit asks for more workspace than reserved (``workspace_bytes``) is skipped, and so is a
tier whose run returns BYOCC_E_CUTLASS / BYOCC_E_UNSUPPORTED (CUTLASS's ``initialize``
refused before anything ran; e.g. a TMA descriptor for a zero batch stride): the next variant
runs and the error buffer is cleared. Launch errors (BYOCC_E_CUDA) are returned.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from byocc.ir import Call
from byocc.ir import Function
from byocc.ir import Op
from byocc.ir import TensorStructInfo
from byocc.ir.prim import dim_text
from byocc.ir.prim import dims_equal

from ..codegen import CodegenError
from ..codegen import GeneratedModule
from ..codegen import SourceFile
from ..codegen import Variant
from ..cuda import generic
from ..cuda.cxx import c_comment
from ..cuda.cxx import c_string
from ..cuda.elementwise import elementwise_plan
from ..cuda.elementwise import elementwise_step
from ..cuda.elementwise import first_unsupported_op
from ..cuda.elementwise import is_elementwise
from ..cuda.elementwise import shape_array
from ..cuda.function import FunctionCodegen
from ..cuda.function import generate_function
from ..cuda.step import Operand
from ..cuda.step import Size
from ..cuda.step import Step
from ..cuda.step import round_up as _round_up
from ..cuda.step import tensor_bytes as _tensor_bytes
from ..cuda.wrapper import WrapperContext
from ..cuda.wrapper import shape_text
from ..dtypes import itemsize
from ..program import CompositeCall
from ..program import GemmStep
from ..program import OffloadedProgram
from ..program import ValueRef
from ..program import gemm_step
from ..program import resolve
from ..program import static_numel

BACKEND = "cutlass"
GEMM_DTYPES = ("float16", "float32", "int8", "uint8", "bfloat16")
_SIZES = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 1, "uint8": 1, "int32": 4}
#: Most SMs of a compute-capability-9.0 device (H100 SXM / H200 / GH200): bounds stream-K workspace.
MAX_SM90_SMS = 132


def _kernels():
    from . import kernels
    from . import tiles

    return kernels, tiles


def _same(a, b) -> bool:
    """Two IR dims are equal (identity, value, or the same symbolic variable by name)."""
    if dims_equal(a, b):
        return True
    if isinstance(a, int) or isinstance(b, int):
        return False
    return dim_text(a) == dim_text(b)


def _static(d) -> int | None:
    return d if isinstance(d, int) else None




def _is_one(dims) -> bool:
    return static_numel(dims) == 1


# --------------------------------------------------------------------------- operand classes
def classify(shape, out_shape, n_dim) -> str:
    """The operand class of a bias or residual of shape ``shape`` against the output
    ``out_shape`` with GEMM N ``n_dim`` (spec 7.1): full, per_column, batched_row, per_row,
    general."""
    s = list(shape)
    rank = len(out_shape)
    while len(s) > rank and s[0] == 1:
        s.pop(0)
    if len(s) > rank:
        return "general"
    pad = [1] * (rank - len(s)) + s
    if all(_same(p, o) for p, o in zip(pad, out_shape)):
        return "full"
    if rank >= 1 and _same(pad[-1], n_dim) and all(p == 1 for p in pad[:-1]):
        return "per_column"
    if (rank >= 3 and _same(pad[-1], n_dim) and pad[-2] == 1
            and all(_same(p, o) for p, o in zip(pad[:-2], out_shape[:-2]))):
        return "batched_row"
    if rank >= 2 and pad[-1] == 1 and _same(pad[-2], out_shape[-2]) and all(p == 1 for p in pad[:-2]):
        return "per_row"
    return "general"


# --------------------------------------------------------------------------- GEMM plan
@dataclass
class Tier:
    """One compiled GEMM variant of a step."""

    arch: str  # "sm90" | "sm80" | "generic"
    cfg: Any = None  # GemmKernelConfig (CUTLASS tiers)
    fused: bool = True  # False: GEMM into the accumulator, then the generic epilogue
    width: int = 16  # alignment tier in bytes (CUTLASS tiers)


@dataclass
class GemmPlan:
    step: GemmStep
    call: CompositeCall
    where: str
    lhs_shape: tuple
    rhs_shape: tuple  # logical (..., K, N) after the permute
    stored_rhs_shape: tuple  # as passed
    out_shape: tuple
    mm_shape: tuple  # the matmul's own output shape
    M: Any
    N: Any
    K: Any
    case: str  # "flatten" | "broadcast_a" | "packed"
    lhs_batch: tuple
    rhs_batch: tuple
    layout: str  # "nn" | "tn" of the B the tiers read
    materialize_axes: tuple | None  # permute of the stored rhs into scratch (None: read it as is)
    cutlass_transpose_b: bool  # CUTLASS tiers need B "tn" materialised (8-bit or TF32 nn)
    bias_class: str | None
    residual_class: str | None
    acc_dtype: str
    out_dtype: str
    grows: bool  # the epilogue broadcasts the matmul result to a larger output
    tiers: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def has_transposed_b(self) -> bool:
        """A CUTLASS tier transposes B into scratch first (8-bit or TF32 "nn")."""
        return self.cutlass_transpose_b and any(t.arch != "generic" for t in self.tiers)

    @property
    def needs_acc(self) -> bool:
        """Some tier writes the accumulator into scratch."""
        if self.grows:
            return True
        if self.out_dtype == self.acc_dtype:
            return False
        return any(not t.fused for t in self.tiers if t.arch != "generic")


def _matmul_sinfo(comp: Function) -> TensorStructInfo:
    for block in comp.body.blocks:
        for b in block.bindings:
            v = getattr(b, "value", None)
            if isinstance(v, Call) and isinstance(v.op, Op) and v.op.name == "relax.matmul":
                return v.struct_info
    raise CodegenError("no matmul in the GEMM composite")


def _permuted(shape, axes) -> tuple:
    nd = len(shape)
    if axes is None:
        axes = tuple(reversed(range(nd)))
    return tuple(shape[int(a) % nd] for a in axes)


def _norm_axes(axes, nd) -> tuple:
    if axes is None:
        return tuple(reversed(range(nd)))
    return tuple(int(a) % nd for a in axes)


def plan_gemm(step: GemmStep, call: CompositeCall, where: str, options: dict) -> GemmPlan:
    """Problem mapping, operand classes and the variants to compile (spec 7.1, 7.3)."""
    lhs_dt, rhs_dt = step.lhs_sinfo.dtype, step.rhs_sinfo.dtype
    out_dt = step.out_sinfo.dtype
    for what, si in (("lhs", step.lhs_sinfo), ("rhs", step.rhs_sinfo), ("output", step.out_sinfo)):
        if si.shape is None:
            raise CodegenError(f"{where}: the {what} shape must be known")
    if lhs_dt not in GEMM_DTYPES or rhs_dt not in GEMM_DTYPES:
        raise CodegenError(f"{where}: matmul of {lhs_dt} x {rhs_dt} is not supported by the CUTLASS backend")
    is_int = lhs_dt in ("int8", "uint8")
    if is_int != (rhs_dt in ("int8", "uint8")) or (not is_int and lhs_dt != rhs_dt):
        raise CodegenError(f"{where}: mixed matmul dtypes {lhs_dt} x {rhs_dt}")
    if step.matmul_out_dtype != out_dt:
        raise CodegenError(f"{where}: the epilogue changes the dtype ({step.matmul_out_dtype} -> {out_dt})")
    lhs_shape = tuple(step.lhs_sinfo.shape)
    stored = tuple(step.rhs_sinfo.shape)
    materialize = None
    layout = "nn"
    if step.transposed and len(stored) >= 2:
        rhs_shape = _permuted(stored, step.perm_axes)
        if step.last_two_swapped:
            layout = "tn"
        else:
            materialize = _norm_axes(step.perm_axes, len(stored))
    else:
        rhs_shape = stored
    out_shape = tuple(step.out_sinfo.shape)
    mm_shape = tuple(_matmul_sinfo(call.func).shape)
    if len(lhs_shape) >= 2:
        M, K = lhs_shape[-2], lhs_shape[-1]
        lb = lhs_shape[:-2]
    else:
        M, K, lb = 1, lhs_shape[0], ()
    if len(rhs_shape) >= 2:
        N = rhs_shape[-1]
        rb = rhs_shape[:-2]
        if not _same(rhs_shape[-2], K):
            raise CodegenError(f"{where}: reduction dims differ ({dim_text(K)} vs {dim_text(rhs_shape[-2])})")
    else:
        N, rb = 1, ()
    if _is_one(rb):
        case = "flatten"
    elif _is_one(lb):
        case = "broadcast_a"
    else:
        case = "packed"
        a, b = list(lb), list(rb)
        width = max(len(a), len(b))
        a = [1] * (width - len(a)) + a
        b = [1] * (width - len(b)) + b
        for x, y in zip(a, b):
            if isinstance(x, int) and isinstance(y, int) and x != y:
                raise CodegenError(f"{where}: batch dims {shape_text_of(lb)} and {shape_text_of(rb)} "
                                   "neither match nor broadcast from batch product 1")
    acc_dt = "int32" if is_int else "float32"
    grows = len(mm_shape) != len(out_shape) or not all(_same(a, b) for a, b in zip(mm_shape, out_shape))
    bias_cls = None if step.bias is None else classify(tuple(step.bias_sinfo.shape), out_shape, N)
    res_cls = None if step.residual is None else classify(tuple(step.residual_sinfo.shape), out_shape, N)
    plan = GemmPlan(step, call, where, lhs_shape, rhs_shape, stored, out_shape, mm_shape, M, N, K, case,
                    lb, rb, layout, materialize, False, bias_cls, res_cls, acc_dt, out_dt, grows)
    if materialize is not None and is_int:
        # materialise straight into the K-major ("tn") layout the 8-bit tensor-op paths need
        axes = list(materialize)
        axes[-1], axes[-2] = axes[-2], axes[-1]
        plan.materialize_axes = tuple(axes)
        plan.layout = "tn"
    elif materialize is not None:
        plan.layout = "nn"
    cutlass_ok = len(lhs_shape) >= 2 and len(rhs_shape) >= 2
    if (is_int or lhs_dt == "float32") and plan.layout == "nn":
        # 8-bit and TF32 GMMA read B K-major: the CUTLASS tiers get B transposed into scratch
        # (the sm_90a TF32 "nn" unit computed non-finite values on the H200, bench/gpu run 3)
        plan.cutlass_transpose_b = True
    if cutlass_ok:
        plan.tiers.extend(_cutlass_tiers(plan, options))
    plan.tiers.append(Tier("generic"))
    return plan


def shape_text_of(shape) -> str:
    return "(" + ", ".join(dim_text(d) for d in shape) + ")"


def _epilogue_spec(plan: GemmPlan):
    """The fused EpilogueSpec of the step, or None when the operand classes do not fit the
    kernel's operands (bias / C)."""
    kernels, _ = _kernels()
    step = plan.step
    if plan.grows:
        return None
    bias = source = residual = None
    if step.bias is not None:
        if plan.bias_class == "per_column" or (plan.bias_class == "batched_row" and plan.case != "flatten"):
            bias = "per_column"
        elif plan.bias_class == "full":
            source = "full"
        else:
            return None
    if step.residual is not None:
        if source is not None:
            return None  # C already carries the bias
        if plan.residual_class == "full":
            source, residual = "full", "full"
        elif plan.residual_class == "per_column" or (plan.residual_class == "batched_row" and plan.case != "flatten"):
            residual = "per_column"
        else:
            return None
    try:
        return kernels.EpilogueSpec(bias=bias, source=source, act=step.act,
                                    residual_op=step.residual_op if residual else None,
                                    residual=residual, post=step.post if residual else None)
    except ValueError:
        return None


def _ld_static(plan: GemmPlan) -> dict:
    """Leading dims deciding alignment: A (K), B (K for tn, N for nn), D/C (N)."""
    return {"a": _static(plan.K), "b": _static(plan.K if plan.layout == "tn" else plan.N),
            "d": _static(plan.N)}


def _config(plan: GemmPlan, arch: str, width: int, spec, fused: bool, tile, cluster, schedule, stages, stream_k,
            swizzle=1):
    kernels, _ = _kernels()
    step = plan.step
    a_dt, b_dt = step.lhs_sinfo.dtype, step.rhs_sinfo.dtype
    d_dt = plan.out_dtype if fused else plan.acc_dtype
    if d_dt not in _SIZES:
        return None
    align_a = max(1, width // _SIZES[a_dt])
    align_b = max(1, width // _SIZES[b_dt])
    align_d = max(1, width // _SIZES[d_dt])
    ep = spec if fused else kernels.EpilogueSpec()
    dtype_c = d_dt if ep.has_c else None
    try:
        cfg = kernels.GemmKernelConfig(
            arch=arch, dtype_a=a_dt, dtype_b=b_dt, dtype_c=dtype_c, dtype_d=d_dt,
            accumulator=plan.acc_dtype, b_layout=_b_layout(plan),
            align_a=align_a, align_b=align_b, align_c=align_d if dtype_c else 0, align_d=align_d, tile=tile,
            cluster=cluster, schedule=schedule, stages=stages, stream_k=stream_k, swizzle=swizzle,
            epilogue=ep)
    except ValueError:
        return None
    supported = kernels.sm90_supports(cfg) if arch == "sm90" else kernels.sm80_supports(cfg)
    return cfg if supported else None


def _b_layout(plan: GemmPlan) -> str:
    """The B layout the CUTLASS tiers read ("tn" also after the 8-bit transposition)."""
    return "tn" if (plan.cutlass_transpose_b or plan.layout == "tn") else "nn"


def _static_sm80(plan: GemmPlan, spec, dims) -> list:
    """With static K and N: kernels.sm80_config's per-operand largest alignments (spec 7.3),
    fused when the unit supports the epilogue, else the GEMM into the accumulator; the
    alignment-1 Sm75 path is left to the generic SIMT GEMM."""
    kernels, _ = _kernels()
    for fused in (True, False):
        if fused and spec is None:
            continue
        d_dt = plan.out_dtype if fused else plan.acc_dtype
        if d_dt not in _SIZES:
            continue
        try:
            cfg = kernels.sm80_config(*dims, dtype=plan.step.lhs_sinfo.dtype, dtype_d=d_dt,
                                      b_layout=_b_layout(plan),
                                      epilogue=spec if fused else kernels.EpilogueSpec())
        except (ValueError, KeyError):
            continue
        if cfg.dtype_a in ("float16", "bfloat16") and 1 in (cfg.align_a, cfg.align_b):
            continue
        lds = _ld_static(plan)
        ld_b = _static(plan.K) if plan.cutlass_transpose_b else lds["b"]
        if (lds["a"] % cfg.align_a or ld_b % cfg.align_b or lds["d"] % cfg.align_d
                or not kernels.sm80_supports(cfg)):
            continue
        return [Tier("sm80", cfg, fused, cfg.align_a * _SIZES[cfg.dtype_a])]
    return []


def _width_holds(plan: GemmPlan, width: int, d_dtype: str) -> bool | None:
    """Whether the static leading dims allow the alignment tier (None: some dim is symbolic)."""
    lds = _ld_static(plan)
    a_dt, b_dt = plan.step.lhs_sinfo.dtype, plan.step.rhs_sinfo.dtype
    unknown = False
    for key, dt in (("a", a_dt), ("b", b_dt), ("d", d_dtype)):
        ld = lds[key]
        if key == "b" and plan.cutlass_transpose_b:
            ld = _static(plan.K)
        align = max(1, width // _SIZES[dt])
        if ld is None:
            unknown = True
        elif ld % align:
            return False
    return None if unknown else True


def _cutlass_tiers(plan: GemmPlan, options: dict) -> list:
    """sm_90a then sm_80 tiers (spec 7.3): only the applicable alignments when the deciding
    dims are static, every tier when one is symbolic."""
    kernels, tiles = _kernels()
    archs = options.get("arch") or options.get("archs")
    if isinstance(archs, str):
        archs = [archs]
    want90 = archs is None or any(str(a).startswith("sm_90") or str(a) == "sm90" for a in archs)
    want80 = archs is None or any(str(a) in ("sm_80", "sm80") for a in archs)
    spec = _epilogue_spec(plan)
    a_dt = plan.step.lhs_sinfo.dtype
    m_eff = plan.M
    if plan.case == "flatten" and plan.lhs_batch:
        m_eff = static_numel(tuple(plan.lhs_batch) + (plan.M,))
    L = 1 if plan.case == "flatten" else static_numel(plan.lhs_batch if plan.case == "packed" else plan.rhs_batch)
    dims = (_static(m_eff) if m_eff is not None else None, _static(plan.N), _static(plan.K), L)
    out: list = []

    def pick(arch, width, fused, **shape):
        if fused and spec is None:
            return None
        cfg = _config(plan, arch, width, spec, fused, **shape)
        d_dt = plan.out_dtype if fused else plan.acc_dtype
        if cfg is None:
            return None
        holds = _width_holds(plan, width, d_dt)
        if holds is False:
            return None
        return Tier(arch, cfg, fused, width), holds

    def best(arch, widths, **shape):
        """Fused tiers first (the largest width that holds statically; every width when a
        deciding dim is symbolic), the GEMM + generic epilogue only where no fused one fits."""
        for fused in (True, False):
            found = []
            for width in widths:
                got = pick(arch, width, fused, **shape)
                if got is None:
                    continue
                found.append(got[0])
                if got[1]:
                    break
            if found:
                return found
        return []

    if want90:
        tile, cluster, schedule, stream_k, swizzle = tiles.select_sm90(*dims, a_dt)
        out.extend(best("sm90", (16,), tile=tile, cluster=cluster, schedule=schedule, stages=None,
                        stream_k=stream_k, swizzle=swizzle))
    if want80:
        lds = _ld_static(plan)
        same_dtypes = plan.step.lhs_sinfo.dtype == plan.step.rhs_sinfo.dtype
        if same_dtypes and None not in lds.values():
            out.extend(_static_sm80(plan, spec, dims))
        else:
            tile, stages = tiles.sm80_tile(*dims, a_dt)
            out.extend(best("sm80", (16, 8, 4), tile=tile, cluster=(1, 1, 1), schedule=None, stages=stages,
                            stream_k=False))
    return out


def _stream_k_bound(cfg, plan: GemmPlan) -> int | None:
    """Upper bound of a stream-K unit's workspace (CUTLASS 4.2: barrier + reduction
    workspace for every output tile, tiles rounded up to the cluster)."""
    m = static_numel((plan.M,) + (tuple(plan.lhs_batch) if plan.case == "flatten" else ()))
    n = _static(plan.N)
    L = 1 if plan.case == "flatten" else static_numel(plan.lhs_batch if plan.case == "packed" else plan.rhs_batch)
    if m is None or n is None or L is None:
        return None
    tm, tn, _ = cfg.tile
    cm, cn, _ = cfg.cluster
    tiles_m = math.ceil(math.ceil(m / tm) / cm) * cm
    tiles_n = math.ceil(math.ceil(n / tn) / cn) * cn
    tiles = max(tiles_m * tiles_n * L, MAX_SM90_SMS)
    reduction = _round_up(tiles * tm * tn * 4)
    barrier = _round_up(tiles * 2 * 4)
    return reduction + barrier + 256


# --------------------------------------------------------------------------- GEMM wrapper code
def _impl_name(tier: Tier) -> str:
    if tier.arch == "sm90":
        return f"cutlass3x_tma_ws_{tier.cfg.schedule}"
    if tier.arch == "sm80":
        return "cutlass2x_tensorop"
    return "generic_simt"


def _variant(tier: Tier, plan: GemmPlan) -> Variant:
    if tier.arch == "generic":
        return Variant("sm_80", "generic_simt", {"align": 1, "epilogue": "generic (fused)"})
    cfg = tier.cfg
    params: dict[str, Any] = {"tile": list(cfg.tile), "align": min(cfg.align_a, cfg.align_b, cfg.align_d),
                              "alignments": {"a": cfg.align_a, "b": cfg.align_b, "d": cfg.align_d},
                              "kernel": cfg.path}
    if tier.arch == "sm90":
        params["cluster"] = list(cfg.cluster)
        if cfg.stream_k:
            params["stream_k"] = True
        if cfg.swizzle != 1:
            params["swizzle"] = cfg.swizzle
    else:
        params["stages"] = cfg.stages
    params["epilogue"] = "fused" if tier.fused else "generic kernel"
    return Variant("sm_90a" if tier.arch == "sm90" else "sm_80", _impl_name(tier), params)


def _ws_size(plan: GemmPlan, ctx: WrapperContext) -> tuple[Size, Size, Size]:
    """(materialised B, accumulator, CUTLASS workspace) regions of the step."""
    b_size = Size.zero()
    if plan.materialize_axes is not None or plan.has_transposed_b:
        b_size = _tensor_bytes(plan.stored_rhs_shape, itemsize(plan.step.rhs_sinfo.dtype), ctx)
    acc_size = Size.zero()
    if plan.needs_acc:
        acc_size = _tensor_bytes(plan.mm_shape, itemsize(plan.acc_dtype), ctx)
    ws = 0
    symbolic_ws = False
    for tier in plan.tiers:
        if tier.arch == "sm90" and tier.cfg.stream_k:
            bound = _stream_k_bound(tier.cfg, plan)
            if bound is None:
                symbolic_ws = True
            else:
                ws = max(ws, bound)
    if symbolic_ws:
        raise CodegenError(f"{plan.where}: stream-K with symbolic dims")
    ws_size = Size(f"uint64_t({ws})", str(ws), ws) if ws else Size.zero()
    return b_size, acc_size, ws_size


def gemm_step_scratch(plan: GemmPlan, ctx: WrapperContext) -> Size:
    b, acc, ws = _ws_size(plan, ctx)
    return b + acc + ws


def _operand_setup(name: str, ref: ValueRef, sinfo: TensorStructInfo, ctx: WrapperContext, target: str) -> list:
    """broadcast_operand(&target, ...) of a bias / residual over the output index space."""
    return [shape_array(f"{name}_shape", sinfo.shape, ctx),
            f"byocc::generic::broadcast_operand(&{target}, {ctx.ptr(ref)}, e.rank, e.shape, "
            f"{len(sinfo.shape)}, {name}_shape);"]


def _align_checks(tier: Tier, plan: GemmPlan, ptrs: dict) -> str:
    cfg = tier.cfg
    st = plan.step
    conds = []
    a_sz, b_sz = _SIZES[st.lhs_sinfo.dtype], _SIZES[st.rhs_sinfo.dtype]
    d_sz = _SIZES[cfg.dtype_d]
    conds.append(f"byocc::aligned_to(g.A, {cfg.align_a * a_sz})")
    conds.append(f"g.lda % {cfg.align_a} == 0")
    conds.append(f"g.batch_stride_a % {cfg.align_a} == 0")
    conds.append(f"byocc::aligned_to(g.B, {cfg.align_b * b_sz})")
    conds.append(f"g.ldb % {cfg.align_b} == 0")
    conds.append(f"g.batch_stride_b % {cfg.align_b} == 0")
    conds.append(f"byocc::aligned_to(g.D, {cfg.align_d * d_sz})")
    conds.append(f"g.ldd % {cfg.align_d} == 0")
    conds.append(f"g.batch_stride_d % {cfg.align_d} == 0")
    ep = cfg.epilogue
    if ep.bias:
        conds.append(f"byocc::aligned_to(g.bias, {16 if tier.arch == 'sm90' else cfg.align_d * d_sz})")
        conds.append(f"g.batch_stride_bias % {cfg.align_d} == 0")
    if ep.has_c:
        conds.append(f"byocc::aligned_to(g.C, {16 if tier.arch == 'sm90' else cfg.align_c * d_sz})")
        conds.append(f"g.ldc % {cfg.align_c} == 0")
        conds.append(f"g.batch_stride_c % {cfg.align_c} == 0")
    return " &&\n    ".join(conds)


def gemm_step_code(plan: GemmPlan, index: int, ctx: WrapperContext) -> str:
    """The wrapper code of one GEMM step: problem, tiers in order, generic fallback."""
    st = plan.step
    call = plan.call
    out_ref = ValueRef("temp", call.result)
    lhs_ref, rhs_ref = resolve(call, st.lhs), resolve(call, st.rhs)
    bias_ref = resolve(call, st.bias) if st.bias is not None else None
    res_ref = resolve(call, st.residual) if st.residual is not None else None
    a_dt, b_dt = st.lhs_sinfo.dtype, st.rhs_sinfo.dtype
    b_size, acc_size, ws_size = _ws_size(plan, ctx)
    L: list[str] = []
    out = L.append
    out(f"// {c_comment(st.describe())}; {c_comment(plan.case)} batch, B {plan.layout}")
    M = ctx.dim(plan.M)
    K = ctx.dim(plan.K)
    N = ctx.dim(plan.N)
    if plan.case == "flatten":
        mexpr = ctx.numel(tuple(plan.lhs_batch) + (plan.M,)) if plan.lhs_batch else M
        out(f"const int64_t gm = {mexpr};")
        out("const int64_t gl = 1;")
    elif plan.case == "broadcast_a":
        out(f"const int64_t gm = {M};")
        out(f"const int64_t gl = {ctx.numel(plan.rhs_batch)};")
    else:
        out(f"const int64_t gm = {M};")
        out(f"const int64_t gl = {ctx.numel(plan.lhs_batch)};")
        out(f"if (gl != int64_t({ctx.numel(plan.rhs_batch)})) {{")
        out(f"  return byocc::fail(BYOCC_E_SHAPE, \"%s: lhs and rhs batch counts differ (%lld vs %lld)\", "
            f"{c_string(ctx.program.symbol)}, static_cast<long long>(gl), "
            f"static_cast<long long>({ctx.numel(plan.rhs_batch)}));")
        out("}")
    out(f"const int64_t gn = {N};")
    out(f"const int64_t gk = {K};")
    out("char* ws_base = static_cast<char*>(step_scratch);")
    out("const uint64_t off_b = 0;")
    out(f"const uint64_t off_acc = off_b + {b_size.c};")
    out(f"const uint64_t off_ws = off_acc + {acc_size.c};")
    out("(void)off_acc; (void)off_ws; (void)ws_base;")
    out("void* const cutlass_ws = ws_base + off_ws;")
    out("const uint64_t cutlass_ws_bytes = step_scratch_bytes > off_ws ? step_scratch_bytes - off_ws : 0;")
    out("(void)cutlass_ws; (void)cutlass_ws_bytes;")
    a_ptr = ctx.ptr(lhs_ref)
    b_ptr = ctx.ptr(rhs_ref)
    rhs_rank = len(plan.stored_rhs_shape)
    # materialised B: permute into scratch
    b_src = b_ptr
    if plan.materialize_axes is not None:
        perm_shape = _permuted(plan.stored_rhs_shape, plan.materialize_axes)
        out("{  // B = permute_dims(rhs) materialised into scratch (not a last-two-axes swap)")
        out("  " + shape_array("w_shape", plan.stored_rhs_shape, ctx))
        out(f"  const int w_axes[{rhs_rank}] = {{{', '.join(str(a) for a in plan.materialize_axes)}}};")
        out("  byocc::generic::Operand src;")
        out(f"  byocc::generic::permute_operand(&src, {b_ptr}, {rhs_rank}, w_shape, w_axes);")
        out("  byocc::generic::Epilogue e{};")
        out(f"  e.rank = {rhs_rank};")
        for a, d in enumerate(perm_shape):
            out(f"  e.shape[{a}] = {ctx.dim(d)};")
        out(f"  const int trc = byocc::generic::{generic.epilogue_name(b_dt, b_dt)}_run(src, e, ws_base + off_b, "
            "dev.sm_count, stream);")
        out("  if (trc != BYOCC_OK) return trc;")
        out("}")
        b_src = "static_cast<void*>(ws_base + off_b)"
    generic_ldb = "gk" if plan.layout == "tn" else "gn"
    bsa = "int64_t(0)" if plan.case in ("flatten", "broadcast_a") else "gm * gk"
    bsb = "int64_t(0)" if plan.case == "flatten" else "gk * gn"
    bsd = "gm * gn"
    # the generic epilogue's description of the output
    out("byocc::generic::Epilogue e{};")
    out(f"e.rank = {len(plan.out_shape)};")
    for a, d in enumerate(plan.out_shape):
        out(f"e.shape[{a}] = {ctx.dim(d)};")
    out(f"e.act = {generic.ACT_CODES[st.act]};")
    out(f"e.bin = {generic.BIN_CODES[st.residual_op]};")
    out(f"e.post = {generic.POST_CODES[st.post]};")
    if bias_ref is not None:
        L.extend(_operand_setup("bias", bias_ref, st.bias_sinfo, ctx, "e.bias"))
    if res_ref is not None:
        L.extend(_operand_setup("res", res_ref, st.residual_sinfo, ctx, "e.residual"))
    out_ptr = ctx.ptr(out_ref)
    acc_ptr = out_ptr if (plan.acc_dtype == plan.out_dtype and not plan.grows) else "static_cast<void*>(ws_base + off_acc)"
    out("bool done = false;")
    out("(void)done;")
    b_ready = "b_tn_ready"
    if plan.has_transposed_b:
        out(f"bool {b_ready} = false;")
    for tier in plan.tiers:
        if tier.arch == "generic":
            continue
        cfg = tier.cfg
        guard = "BYOCC_NO_SM90" if tier.arch == "sm90" else "BYOCC_NO_SM80"
        cond = "dev.major == 9" if tier.arch == "sm90" else "true"
        out(f"#ifndef {guard}")
        out(f"if (!done && {cond}) {{  // {_impl_name(tier)} {c_comment(cfg.path)}: {c_comment(cfg.epilogue.formula)}"
            + ("" if tier.fused else " (then the generic epilogue)"))
        out("  byocc::GemmArgs g{};")
        out("  g.M = gm; g.N = gn; g.K = gk; g.L = gl;")
        out(f"  g.A = {a_ptr}; g.lda = gk; g.batch_stride_a = {bsa};")
        if plan.cutlass_transpose_b:
            out("  g.B = ws_base + off_b; g.ldb = gk;" f" g.batch_stride_b = {bsb};")
        else:
            out(f"  g.B = {b_src}; g.ldb = {generic_ldb}; g.batch_stride_b = {bsb};")
        if tier.fused:
            out(f"  g.D = {out_ptr}; g.ldd = gn; g.batch_stride_d = {bsd};")
            ep = cfg.epilogue
            if ep.bias:
                batched = plan.bias_class == "batched_row"
                out(f"  g.bias = {ctx.ptr(bias_ref)}; g.batch_stride_bias = {'gn' if batched else 'int64_t(0)'};")
            if ep.source == "full" and ep.residual != "full":
                out(f"  g.C = {ctx.ptr(bias_ref)}; g.ldc = gn; g.batch_stride_c = {bsd};")
            if ep.residual == "full":
                out(f"  g.C = {ctx.ptr(res_ref)}; g.ldc = gn; g.batch_stride_c = {bsd};")
            elif ep.residual == "per_column":
                batched = plan.residual_class == "batched_row"
                out(f"  g.C = {ctx.ptr(res_ref)}; g.ldc = 0; g.batch_stride_c = {'gn' if batched else 'int64_t(0)'};")
        else:
            out(f"  g.D = {acc_ptr}; g.ldd = gn; g.batch_stride_d = {bsd};")
        out("  g.device = device; g.sm_count = dev.sm_count;")
        out(f"  if ({_align_checks(tier, plan, {})} &&")
        out(f"      byocc::{cfg.prefix}_can_implement(g) &&")
        out(f"      byocc::{cfg.prefix}_workspace_bytes(g) <= cutlass_ws_bytes) {{")
        if plan.cutlass_transpose_b:
            out(f"    if (!{b_ready}) {{  // 8-bit and TF32 tensor-core paths read K-major B: transpose into scratch")
            out("      " + shape_array("w_shape", plan.stored_rhs_shape, ctx))
            axes = list(range(rhs_rank))
            axes[-1], axes[-2] = axes[-2], axes[-1]
            out(f"      const int w_axes[{rhs_rank}] = {{{', '.join(map(str, axes))}}};")
            out("      byocc::generic::Operand src;")
            out(f"      byocc::generic::permute_operand(&src, {b_src}, {rhs_rank}, w_shape, w_axes);")
            out("      byocc::generic::Epilogue te{};")
            out(f"      te.rank = {rhs_rank};")
            tshape = _permuted(plan.stored_rhs_shape, tuple(axes))
            for a, d in enumerate(tshape):
                out(f"      te.shape[{a}] = {ctx.dim(d)};")
            out(f"      const int trc = byocc::generic::{generic.epilogue_name(b_dt, b_dt)}_run(src, te, ws_base + off_b, "
                "dev.sm_count, stream);")
            out("      if (trc != BYOCC_OK) return trc;")
            out(f"      {b_ready} = true;")
            out("    }")
        out(f"    const int grc = byocc::{cfg.prefix}_run(g, cutlass_ws, cutlass_ws_bytes, stream);")
        out("    if (grc == BYOCC_OK) {")
        if not tier.fused:
            out(_post_epilogue(plan, acc_ptr, out_ptr, ctx, "      "))
        out("      done = true;")
        out("    } else if (grc == BYOCC_E_CUTLASS || grc == BYOCC_E_UNSUPPORTED) {")
        out("      byocc::clear_error();  // initialize refused (nothing ran): try the next variant")
        out("    } else {")
        out("      return grc;")
        out("    }")
        out("  }")
        out("}")
        out(f"#endif  // {guard}")
    # generic SIMT GEMM
    out("if (!done) {  // byocc generic SIMT GEMM (any shape and alignment)")
    out("  byocc::GemmArgs g{};")
    out("  g.M = gm; g.N = gn; g.K = gk; g.L = gl;")
    out(f"  g.A = {a_ptr}; g.lda = gk; g.batch_stride_a = {bsa};")
    out(f"  g.B = {b_src}; g.ldb = {generic_ldb}; g.batch_stride_b = {bsb};")
    sbk, sbn = ("int64_t(1)", "g.ldb") if plan.layout == "tn" else ("g.ldb", "int64_t(1)")
    out("  g.device = device; g.sm_count = dev.sm_count;")
    if plan.grows:
        out(f"  g.D = {acc_ptr}; g.ldd = gn; g.batch_stride_d = {bsd};")
        out("  byocc::generic::Epilogue id{};")
        out(f"  id.rank = {len(plan.mm_shape)};")
        for a, d in enumerate(plan.mm_shape):
            out(f"  id.shape[{a}] = {ctx.dim(d)};")
        out(f"  const int grc = byocc::generic::{generic.gemm_name(a_dt, b_dt, plan.acc_dtype)}_run(g, {sbk}, {sbn}, id, stream);")
        out("  if (grc != BYOCC_OK) return grc;")
        out(_post_epilogue(plan, acc_ptr, out_ptr, ctx, "  "))
    else:
        out(f"  g.D = {out_ptr}; g.ldd = gn; g.batch_stride_d = {bsd};")
        out(f"  const int grc = byocc::generic::{generic.gemm_name(a_dt, b_dt, plan.out_dtype)}_run(g, {sbk}, {sbn}, e, stream);")
        out("  if (grc != BYOCC_OK) return grc;")
    out("}")
    return "\n".join(L)


def _post_epilogue(plan: GemmPlan, acc_ptr: str, out_ptr: str, ctx: WrapperContext, pad: str) -> str:
    """The generic epilogue after a GEMM into the accumulator (matmul shape, contiguous)."""
    lines = ["{  // generic epilogue: out = post(bin(act(acc + bias), residual)), broadcast strides",
             "  byocc::generic::Operand src;"]
    if plan.grows:
        lines.append("  " + shape_array("acc_shape", plan.mm_shape, ctx))
        lines.append(f"  byocc::generic::broadcast_operand(&src, {acc_ptr}, e.rank, e.shape, "
                     f"{len(plan.mm_shape)}, acc_shape);")
    else:
        lines.append(f"  byocc::generic::contiguous_operand(&src, {acc_ptr});")
    lines.append(f"  const int erc = byocc::generic::{generic.epilogue_name(plan.acc_dtype, plan.out_dtype)}_run("
                 f"src, e, {out_ptr}, dev.sm_count, stream);")
    lines.append("  if (erc != BYOCC_OK) return erc;")
    lines.append("}")
    return "\n".join(pad + line for line in lines)


def gemm_units(plan: GemmPlan) -> list[SourceFile]:
    """Kernel units (CUTLASS and generic) a GEMM step needs."""
    kernels, _ = _kernels()
    st = plan.step
    a_dt, b_dt = st.lhs_sinfo.dtype, st.rhs_sinfo.dtype
    units: list[SourceFile] = []
    for tier in plan.tiers:
        if tier.arch != "generic":
            units.append(kernels.emit_kernel(tier.cfg))
    units.append(generic.gemm_unit(a_dt, b_dt, plan.acc_dtype if plan.grows else plan.out_dtype))
    if plan.needs_acc or plan.grows:
        units.append(generic.epilogue_unit(plan.acc_dtype, plan.out_dtype))
    if plan.materialize_axes is not None or plan.has_transposed_b:
        units.append(generic.epilogue_unit(b_dt, b_dt))
    return units


def gemm_declarations(plan: GemmPlan) -> list[str]:
    kernels, _ = _kernels()
    st = plan.step
    a_dt, b_dt = st.lhs_sinfo.dtype, st.rhs_sinfo.dtype
    decls = []
    for tier in plan.tiers:
        if tier.arch == "generic":
            continue
        guard = "BYOCC_NO_SM90" if tier.arch == "sm90" else "BYOCC_NO_SM80"
        decls.append(f"#ifndef {guard}\n{kernels.kernel_declarations(tier.cfg).rstrip()}\n#endif")
    decls.append(generic.gemm_declaration(a_dt, b_dt, plan.acc_dtype if plan.grows else plan.out_dtype))
    if plan.needs_acc or plan.grows:
        decls.append(generic.epilogue_declaration(plan.acc_dtype, plan.out_dtype))
    if plan.materialize_axes is not None or plan.has_transposed_b:
        decls.append(generic.epilogue_declaration(b_dt, b_dt))
    return decls


# --------------------------------------------------------------------------- per function
def _plan_call(program: OffloadedProgram, call: CompositeCall, options: dict):
    where = f"function {program.symbol}, composite {call.composite}"
    step = gemm_step(call.func)
    if step is not None:
        return plan_gemm(step, call, where, options)
    if is_elementwise(call.func):
        return elementwise_plan(call.func, where)
    op = first_unsupported_op(call.func) or "no supported operator"
    raise CodegenError(f"{where}: the cutlass backend cannot generate code for this composite "
                       f"(first unsupported op: {op})")


def _gemm_header(plan: GemmPlan) -> list[str]:
    st = plan.step
    lines = [f"out = {st.describe()}",
             f"GEMM M={dim_text(plan.M)} N={dim_text(plan.N)} K={dim_text(plan.K)} batch={plan.case}, "
             f"B {plan.layout}, {st.lhs_sinfo.dtype} x {st.rhs_sinfo.dtype} -> {plan.out_dtype} "
             f"(accumulate {plan.acc_dtype})"]
    if st.bias is not None:
        lines.append(f"bias {shape_text(st.bias_sinfo)}: {plan.bias_class}")
    if st.residual is not None:
        lines.append(f"residual {shape_text(st.residual_sinfo)}: {plan.residual_class}")
    for tier in plan.tiers:
        if tier.arch == "generic":
            lines.append("variant generic_simt (fp32/int32 accumulation, generic epilogue fused)")
        else:
            c = tier.cfg
            lines.append(f"variant {_impl_name(tier)} {c.path} align A {c.align_a} B {c.align_b} D {c.align_d}"
                         f"{'' if tier.fused else ' + generic epilogue'}")
    return lines


def _gemm_operands(plan: GemmPlan) -> tuple[Operand, ...]:
    st, call = plan.step, plan.call
    rhs_layout = ("col_major_nk" if st.transposed and plan.layout == "tn" and plan.materialize_axes is None
                  else "row_major")
    items = [("lhs", st.lhs, None, "row_major"), ("rhs", st.rhs, None, rhs_layout),
             ("bias", st.bias, plan.bias_class, "row_major"),
             ("residual", st.residual, plan.residual_class, "row_major")]
    return tuple(Operand(resolve(call, operand), role, cls, layout)
                 for role, operand, cls, layout in items if operand is not None)


def _gemm_step(plan: GemmPlan, index: int, ctx: WrapperContext) -> Step:
    st = plan.step
    variants = tuple(_variant(t, plan) for t in plan.tiers)
    record = {"composite": plan.call.composite, "kind": "gemm", "formula": st.describe(),
              "batch": plan.case, "b_layout": plan.layout,
              "bias_class": plan.bias_class, "residual_class": plan.residual_class,
              "accumulator": plan.acc_dtype, "variants": [v.to_json() for v in variants]}
    attrs = {"activation": st.act, "transposed_rhs": st.transposed, "accumulator": plan.acc_dtype,
             "gelu": "erf" if st.act == "gelu" else None, "residual_op": st.residual_op, "post": st.post}
    return Step(plan.call.composite, gemm_step_code(plan, index, ctx), scratch=gemm_step_scratch(plan, ctx),
                units=tuple(gemm_units(plan)), declarations=tuple(gemm_declarations(plan)),
                header=tuple(_gemm_header(plan)), record=record, variants=variants,
                operands=_gemm_operands(plan), attrs=attrs)


def _step(options: dict, program: OffloadedProgram, index: int, call: CompositeCall, ctx: WrapperContext) -> Step:
    """Composite call ``index`` as a GEMM or an elementwise step, its header lines under
    ``step <index>: ...``."""
    plan = _plan_call(program, call, options)
    if isinstance(plan, GemmPlan):
        step = _gemm_step(plan, index, ctx)
    else:
        step = elementwise_step(plan, call, ctx)
    header = (f"  step {index}: {call.composite} -> {call.sinfo.dtype} {shape_text(call.sinfo)}",
              *(f"    {line}" for line in step.header))
    return dataclasses.replace(step, header=header)


def _title(n: int) -> str:
    return f"Composites ({n} call{'s' if n != 1 else ''}, in order):"


def function_codegen(options: dict | None = None) -> FunctionCodegen:
    """The CUTLASS backend's part of every function (:func:`~byocc.backends.cuda.function.generate_function`)."""
    # The kernels' prototypes are declared by the steps, after these includes (outside the
    # wrapper's anonymous namespace, so that they keep external linkage).
    return FunctionCodegen(
        BACKEND, functools.partial(_step, dict(options or {})), _title,
        includes=(f'#include "{generic.HEADER_PATH.removeprefix("src/")}"', '#include "byocc_gemm.h"'))


def codegen(functions, options, constant_names) -> list[GeneratedModule]:
    """The CUTLASS codegen (RunCodegen's contract, :mod:`byocc.backends.codegen`): one
    GeneratedModule with an entry per function; CodegenError on the first composite that
    cannot be generated (nothing is returned then)."""
    skeleton = function_codegen(options)
    units: dict[str, SourceFile] = {}
    entries = []
    for symbol, func in functions:
        fn = generate_function(skeleton, symbol, func, constant_names)
        units.update((u.path, u) for u in fn.units)
        units[fn.source.path] = fn.source
        entries.append(fn.entry)
    units[generic.HEADER_PATH] = generic.header_source()
    sources = tuple(units[p] for p in sorted(units))
    needs_cutlass = any(s.unit in ("sm90", "sm80") for s in sources)
    return [GeneratedModule(BACKEND, tuple(entries), sources, needs_cutlass=needs_cutlass)]


__all__ = ["GemmPlan", "Tier", "classify", "codegen", "function_codegen", "plan_gemm"]
