"""The plan of one CUTLASS GEMM step: the problem mapping, the operand classes, the compiled
variants (tiers) in run-time order, and the step's scratch need.

The Relax matmul maps to :c:struct:`byocc::GemmArgs`: batch flattened into M when the rhs
has batch product 1, a zero A batch stride when the lhs has, packed otherwise; a permute that
swaps the last two axes is the "tn" layout, any other permute is materialised into scratch by
the generic strided copy. Bias and residual are classified (per-column vector, batched row
vector, full, per-row, general). Tiers, in run-time order: the sm_90a TMA kernel (16-byte
alignment tier), the sm_80 2.x kernel at the largest alignment tier the static dims allow (all
tiers when a deciding dim is symbolic), then byocc's generic SIMT GEMM, always compiled. A
tier whose unit cannot fuse the epilogue computes the GEMM into an fp32 (int32) accumulator
and runs the generic epilogue kernel.

Scratch per step: ``round_up(materialised B) + round_up(accumulator) + CUTLASS workspace``.
The workspace of a stream-K sm_90a unit is a bound from CUTLASS 4.2's stream-K formula (every
output tile split, tiles rounded up to the cluster, at most 132 SMs: partial tiles in fp32
plus 2 x 32-bit barriers per tile, each rounded to 256 bytes); other units need none.
"""

from __future__ import annotations

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
from ..cuda.step import Size
from ..cuda.step import round_up
from ..cuda.step import tensor_bytes
from ..cuda.wrapper import WrapperContext
from ..dtypes import DTYPES
from ..dtypes import GEMM_INPUT_DTYPES
from ..dtypes import itemsize
from ..program import CompositeCall
from ..program import GemmStep
from ..program import static_numel
from . import kernels
from . import tiles
from .backend import OPTIONS
from .config import EpilogueSpec
from .config import GemmKernelConfig
from .gemm_records import epilogue_header
from .gemm_records import impl_name
from .gemm_records import variant

#: Most SMs of a compute-capability-9.0 device (H100 SXM / H200 / GH200): bounds stream-K workspace.
MAX_SM90_SMS = 132


def _element_bytes(dtype: str) -> int | None:
    """Bytes of a CUTLASS element of ``dtype``; None when CUTLASS has no type for it."""
    row = DTYPES.get(dtype)
    return None if row is None or row.cutlass is None else row.itemsize


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
    ``out_shape`` with GEMM N ``n_dim`` (docs/codegen.md#problem-mapping): full, per_column, batched_row, per_row,
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
    cfg: GemmKernelConfig | None = None  # CUTLASS tiers
    fused: bool = True  # False: GEMM into the accumulator, then the generic epilogue
    width: int = 16  # alignment tier in bytes (CUTLASS tiers)
    splits: int = 1  # > 1: split-K into fp32 partials in scratch, then the split-K reduction
    pad_k: int | None = None  # K padded with zeros to this (A and B copied into scratch first)
    m_range: tuple[int, int | None] | None = None  # run-time bucket [lo, hi] of bucket_dim (hi None: open)
    bucket_dim: str = "m"  # the symbolic dim the bucket bounds: "m", or "n"/"k" when M is static

    @property
    def reads_acc(self) -> bool:
        """The tier writes the GEMM into the accumulator region (then the generic epilogue)."""
        return self.arch != "generic" and not self.fused and self.splits == 1


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
    tiers: list[Tier] = field(default_factory=list)

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
        return any(t.reads_acc for t in self.tiers)


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


def _batch_case(lb: tuple, rb: tuple, where: str) -> str:
    """How the batch dims map onto GemmArgs: "flatten" (rhs batch product 1: into M),
    "broadcast_a" (lhs batch product 1: a zero A batch stride) or "packed"."""
    if _is_one(rb):
        return "flatten"
    if _is_one(lb):
        return "broadcast_a"
    a, b = list(lb), list(rb)
    width = max(len(a), len(b))
    a = [1] * (width - len(a)) + a
    b = [1] * (width - len(b)) + b
    for x, y in zip(a, b):
        if isinstance(x, int) and isinstance(y, int) and x != y:
            raise CodegenError(f"{where}: batch dims {shape_text_of(lb)} and {shape_text_of(rb)} "
                               "neither match nor broadcast from batch product 1")
    return "packed"


def plan_gemm(step: GemmStep, call: CompositeCall, where: str, options: dict, mm_shape: tuple | None = None) -> GemmPlan:
    """Problem mapping, operand classes and the variants to compile (docs/codegen.md#problem-mapping, #alignment-tiers).
    ``mm_shape``: the GEMM's own output shape when the composite's body has no matmul (a
    pointwise conv2d read as a GEMM); else the matmul's."""
    lhs_dt, rhs_dt = step.lhs_sinfo.dtype, step.rhs_sinfo.dtype
    out_dt = step.out_sinfo.dtype
    for what, si in (("lhs", step.lhs_sinfo), ("rhs", step.rhs_sinfo), ("output", step.out_sinfo)):
        if si.shape is None:
            raise CodegenError(f"{where}: the {what} shape must be known")
    if lhs_dt not in GEMM_INPUT_DTYPES or rhs_dt not in GEMM_INPUT_DTYPES:
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
    mm_shape = tuple(mm_shape) if mm_shape is not None else tuple(_matmul_sinfo(call.func).shape)
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
    case = _batch_case(lb, rb, where)
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
        return EpilogueSpec(bias=bias, source=source, act=step.act,
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
    step = plan.step
    a_dt, b_dt = step.lhs_sinfo.dtype, step.rhs_sinfo.dtype
    d_dt = plan.out_dtype if fused else plan.acc_dtype
    if _element_bytes(d_dt) is None:
        return None
    align_a = max(1, width // itemsize(a_dt))
    align_b = max(1, width // itemsize(b_dt))
    align_d = max(1, width // itemsize(d_dt))
    ep = spec if fused else EpilogueSpec()
    dtype_c = d_dt if ep.has_c else None
    try:
        cfg = GemmKernelConfig(
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
    """With static K and N: kernels.sm80_config's per-operand largest alignments (docs/codegen.md#alignment-tiers),
    fused when the unit supports the epilogue, else the GEMM into the accumulator; the
    alignment-1 Sm75 path is left to the generic SIMT GEMM."""
    for fused in (True, False):
        if fused and spec is None:
            continue
        d_dt = plan.out_dtype if fused else plan.acc_dtype
        if _element_bytes(d_dt) is None:
            continue
        try:
            cfg = kernels.sm80_config(*dims, dtype=plan.step.lhs_sinfo.dtype, dtype_d=d_dt,
                                      b_layout=_b_layout(plan),
                                      epilogue=spec if fused else EpilogueSpec())
        except (ValueError, KeyError):
            continue
        if cfg.dtype_a in ("float16", "bfloat16") and 1 in (cfg.align_a, cfg.align_b):
            continue
        lds = _ld_static(plan)
        ld_b = _static(plan.K) if plan.cutlass_transpose_b else lds["b"]
        if (lds["a"] % cfg.align_a or ld_b % cfg.align_b or lds["d"] % cfg.align_d
                or not kernels.sm80_supports(cfg)):
            continue
        return [Tier("sm80", cfg, fused, cfg.align_a * itemsize(cfg.dtype_a))]
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
        align = max(1, width // itemsize(dt))
        if ld is None:
            unknown = True
        elif ld % align:
            return False
    return None if unknown else True


def _cutlass_tiers(plan: GemmPlan, options: dict) -> list:
    """sm_90a then sm_80 tiers (docs/codegen.md#alignment-tiers): only the applicable alignments when the deciding
    dims are static, every tier when one is symbolic."""
    archs = OPTIONS.resolve(options)["arch"]
    want90, want80 = "sm_90a" in archs, "sm_80" in archs
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
        out.extend(_sm90_tiers(plan, dims, a_dt, best))
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


def _pad_k(plan: GemmPlan) -> int | None:
    """K rounded up to 8 when only K breaks the 16-byte tier of a 16-bit GEMM (static K not
    a multiple of 8, static N a multiple of 8, B read as stored): the sm_90a tier then copies
    A and B into scratch with K zero-padded (docs/codegen.md#unaligned-k). None otherwise."""
    k, n = _static(plan.K), _static(plan.N)
    if k is None or n is None or k % 8 == 0 or n % 8:
        return None
    if plan.materialize_axes is not None or plan.cutlass_transpose_b or plan.grows:
        return None
    st = plan.step
    if st.lhs_sinfo.dtype not in ("float16", "bfloat16") or st.rhs_sinfo.dtype != st.lhs_sinfo.dtype:
        return None
    return (k + 7) // 8 * 8


def _sm90_tiers(plan: GemmPlan, dims: tuple, a_dt: str, best) -> list:
    """The sm_90a tiers: one per run-time M bucket when M is symbolic and N, K, L static
    (tiles.sm90_buckets), else one; split-K or C8 tiers for decode shapes (tiles.select_sm90_decode);
    a K-padded tier when only K breaks the 16-byte alignment (:func:`_pad_k`)."""
    m, n, k, l = dims
    pad_k = _pad_k(plan)
    k_eff = pad_k if pad_k is not None else k
    bucket_dim = "m"
    if m is None and n is not None and k is not None and l is not None and plan.case == "flatten":
        buckets = [(lo, hi, choice) for lo, hi, choice in tiles.sm90_buckets(n, k_eff, l, a_dt)]
    elif m is not None and l is not None and (n is None) != (k is None):
        # the one symbolic dim is N or K: buckets of it (docs/codegen.md#m-buckets)
        bucket_dim = "n" if n is None else "k"
        buckets = tiles.sm90_dim_buckets(bucket_dim, m, n, k_eff, l, a_dt)
    else:
        decode = tiles.select_sm90_decode(m, n, k_eff, l, a_dt) if m is not None else None
        choice = decode or ("tile", *tiles.select_sm90(m, n, k_eff, l, a_dt))
        buckets = [(None, None, choice)]
    split_ok = (plan.case == "flatten" and not plan.grows and plan.out_dtype in ("float16", "bfloat16")
                and plan.materialize_axes is None and not plan.cutlass_transpose_b)
    out: list = []
    for lo, hi, choice in buckets:
        m_range = None if lo is None else (lo, hi)
        if choice[0] == "split" and split_ok and (pad_k is not None or _width_holds(plan, 16, "float32")):
            _, tile, cluster, schedule, splits = choice
            cfg = _config(plan, "sm90", 16, None, False, tile, cluster, schedule, None, False)
            if cfg is None:
                continue
            out.append(Tier("sm90", cfg, False, 16, splits=splits, pad_k=pad_k, m_range=m_range))
            continue
        if choice[0] == "split":
            tile, cluster, schedule, stream_k, swizzle = tiles.select_sm90(m, n, k_eff, l, a_dt)
        else:
            _, tile, cluster, schedule, stream_k, swizzle = choice
        shape = dict(tile=tile, cluster=cluster, schedule=schedule, stages=None, stream_k=stream_k,
                     swizzle=swizzle)
        if pad_k is None:
            found = best("sm90", (16,), **shape)
        else:
            spec = _epilogue_spec(plan)
            fused = spec is not None
            cfg = _config(plan, "sm90", 16, spec, fused, **shape)
            found = [] if cfg is None else [Tier("sm90", cfg, fused, 16)]
        for tier in found:
            tier.pad_k, tier.m_range, tier.bucket_dim = pad_k, m_range, bucket_dim
        out.extend(found)
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
    reduction = round_up(tiles * tm * tn * 4)
    barrier = round_up(tiles * 2 * 4)
    return reduction + barrier + 256


# --------------------------------------------------------------------------- scratch
def scratch_regions(plan: GemmPlan, ctx: WrapperContext) -> tuple[Size, Size, Size]:
    """(materialised B, accumulator, CUTLASS workspace) regions of the step."""
    b_size = Size.zero()
    if plan.materialize_axes is not None or plan.has_transposed_b:
        b_size = tensor_bytes(plan.stored_rhs_shape, itemsize(plan.step.rhs_sinfo.dtype), ctx)
    acc_size = Size.zero()
    if plan.needs_acc:
        acc_size = tensor_bytes(plan.mm_shape, itemsize(plan.acc_dtype), ctx)
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


def split_k_bytes(plan: GemmPlan) -> int:
    """The fp32 partials of the step's split-K tiers: ``splits x M x N x 4`` bytes, M bounded
    by the tier's bucket (at most 64), the largest over the tiers; 0 without split-K."""
    n = _static(plan.N)
    need = 0
    for tier in plan.tiers:
        if tier.splits > 1 and n is not None:
            m = (tier.m_range[1] if tier.m_range and tier.bucket_dim == "m"
                 else static_numel(tuple(plan.lhs_batch) + (plan.M,)))
            need = max(need, round_up(tier.splits * int(m) * n * 4))
    return need


def pad_regions(plan: GemmPlan, ctx: WrapperContext) -> tuple[Size, Size]:
    """(padded A, padded B) of a K-padded tier (:func:`_pad_k`): A as ``(..., M, Kp)``, B as
    stored with K padded (``(..., N, Kp)`` "tn", ``(..., Kp, N)`` "nn"); zero without one."""
    pad_k = next((t.pad_k for t in plan.tiers if t.pad_k), None)
    if pad_k is None:
        return Size.zero(), Size.zero()
    a = tensor_bytes(tuple(plan.lhs_shape[:-1]) + (pad_k,), itemsize(plan.step.lhs_sinfo.dtype), ctx)
    stored = tuple(plan.stored_rhs_shape)
    b_shape = stored[:-1] + (pad_k,) if plan.layout == "tn" else stored[:-2] + (pad_k, stored[-1])
    return a, tensor_bytes(b_shape, itemsize(plan.step.rhs_sinfo.dtype), ctx)


def step_scratch(plan: GemmPlan, ctx: WrapperContext) -> Size:
    """The step's scratch need: the sum of its :func:`scratch_regions`, the split-K partials
    and the padded operands."""
    b, acc, ws = scratch_regions(plan, ctx)
    split = split_k_bytes(plan)
    pad_a, pad_b = pad_regions(plan, ctx)
    return b + acc + (Size.constant(split) if split else Size.zero()) + pad_a + pad_b + ws


__all__ = [
    "GemmPlan", "MAX_SM90_SMS", "Size", "Tier", "classify", "epilogue_header", "impl_name", "pad_regions", "plan_gemm",
    "round_up", "scratch_regions", "shape_text_of", "split_k_bytes", "step_scratch", "variant",
]
