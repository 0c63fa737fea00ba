"""The plan of one CUTLASS conv2d step (docs/codegen.md#cutlass-conv2d-family).

:func:`conv_step` reads a composite of the conv2d family *from its body*:
``conv2d(data, weight) -> [add bias] -> [relu|gelu|silu] -> [add|multiply residual] ->
[relu]`` with NHWC data, OHWI weight and an NHWC (or unset) output layout. :func:`plan_conv`
maps it onto the per-group implicit GEMM (M = N*P*Q, N = K/groups, K = R*S*C/groups),
classifies bias and residual (per-channel, full, general) and lists the compiled variants in
run-time order: the sm_90a CUTLASS 3.x unit (groups == 1, f16, C and K 16-byte aligned, C
whole k-tiles, a fused epilogue; run on compute capability 9 only), the sm_80 CUTLASS 2.x unit at the largest alignment tier C and K allow (one
launch per group, channel slices of the full tensors), then byocc's generic direct
convolution, always compiled. A tier whose unit cannot fuse the epilogue writes an fp32
accumulator into scratch and the generic epilogue kernel finishes.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

from byocc.ir import Constant
from byocc.ir import Function
from byocc.ir import TensorStructInfo
from byocc.ir.prim import dim_text

from ..codegen import CodegenError
from ..codegen import Variant
from ..cuda.step import Size
from ..cuda.step import tensor_bytes
from ..cuda.wrapper import WrapperContext
from ..dtypes import itemsize
from ..program import CompositeCall
from ..program import GemmStep
from ..program import composite_bindings
from ..program import composite_operand
from ..program import describe_chain
from ..program import epilogue_chain
from . import tiles
from .backend import OPTIONS
from .config import EpilogueSpec
from .conv_unit import CONV_ALIGNMENTS
from .conv_unit import CONV_SM90_ALIGNMENT
from .conv_unit import ConvKernelConfig
from .conv_unit import ConvSm90Config
from .conv_unit import conv_sm90_supports
from .conv_unit import conv_supports
from .gemm_plan import classify


@dataclass(frozen=True)
class ConvStep:
    """``out = post(bin(act(conv2d(data, weight) + bias), residual))``. Operands are
    composite-parameter indices or Constant nodes (:func:`~byocc.backends.program.resolve`)."""

    data: Any
    weight: Any
    strides: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    dilation: tuple[int, int]
    groups: int
    bias: Any
    act: str | None
    residual_op: str | None
    residual: Any
    post: str | None
    data_sinfo: TensorStructInfo
    weight_sinfo: TensorStructInfo
    conv_sinfo: TensorStructInfo
    out_sinfo: TensorStructInfo
    bias_sinfo: TensorStructInfo | None
    residual_sinfo: TensorStructInfo | None
    layouts: tuple[str, str, str]  # data, kernel, out

    def describe(self) -> str:
        return describe_chain("conv2d(x, w)", self)


def _ints(value, n: int) -> tuple[int, ...]:
    v = (value,) if isinstance(value, int) else tuple(int(x) for x in value)
    return v * n if len(v) == 1 else v


def _padding(value) -> tuple[int, int, int, int]:
    p = _ints(value, 1)
    if len(p) == 1:
        return (p[0],) * 4
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    return tuple(p[:4])  # type: ignore[return-value]


def conv_step(comp: Function) -> ConvStep | None:
    """The conv2d reading of a composite, or None when its body is not of that form."""
    params = {p: i for i, p in enumerate(comp.params)}
    binds = composite_bindings(comp)
    if binds is None or binds[0][1].op.name != "relax.nn.conv2d":
        return None
    conv_var, conv = binds[0]
    data, weight = (composite_operand(a, params) for a in conv.args[:2])
    chain = epilogue_chain(binds[1:], conv_var, params)
    if data is None or weight is None or chain is None:
        return None
    bias, act, residual_op, residual, post = chain
    attrs = conv.attrs or {}

    def sinfo(e):
        return e.struct_info if isinstance(e, Constant) else comp.params[e].struct_info

    layouts = (attrs.get("data_layout") or "NCHW", attrs.get("kernel_layout") or "OIHW",
               attrs.get("out_layout") or attrs.get("data_layout") or "NCHW")
    return ConvStep(
        data=data, weight=weight, strides=_ints(attrs.get("strides", 1), 2),
        padding=_padding(attrs.get("padding", 0)), dilation=_ints(attrs.get("dilation", 1), 2),
        groups=int(attrs.get("groups", 1)), bias=bias, act=act, residual_op=residual_op,
        residual=residual, post=post, data_sinfo=sinfo(data), weight_sinfo=sinfo(weight),
        conv_sinfo=conv.struct_info, out_sinfo=comp.body.body.struct_info,
        bias_sinfo=None if bias is None else sinfo(bias),
        residual_sinfo=None if residual is None else sinfo(residual), layouts=tuple(layouts))


@dataclass(frozen=True)
class PointwiseConvGemm(GemmStep):
    """A 1x1, stride-1, unpadded, ungrouped NHWC x OHWI conv2d read as the GEMM it is:
    ``out[n,h,w,:] = data[n,h,w,:] @ weight[:, 0, 0, :]^T`` (M = N*H*W, N = K, K = C), the
    weight viewed as the (K, C) matrix it already is in memory (the "tn" B layout).
    :attr:`conv` is the conv reading it came from (the step's header and manifest record)."""

    conv: ConvStep | None = None

    def describe(self) -> str:
        return describe_chain("conv2d_1x1(x, w)", self)


def pointwise_gemm(step: ConvStep) -> PointwiseConvGemm | None:
    """The GEMM reading of a pointwise conv2d (docs/codegen.md#cutlass-conv2d-family), or None
    unless the conv is 1x1, stride 1, unpadded, one group, NHWC data, OHWI weight and NHWC
    output of static K and C with one dtype. Its GEMM runs on the GEMM family's persistent
    kernels, which the conv units are not (CUTLASS 4.2 refuses persistent schedules for conv)."""
    if step.layouts != ("NHWC", "OHWI", "NHWC") or step.groups != 1 or step.strides != (1, 1):
        return None
    if any(step.padding):
        return None
    shapes = (step.data_sinfo.shape, step.weight_sinfo.shape, step.out_sinfo.shape)
    if any(s is None or len(s) != 4 for s in shapes):
        return None
    k, r, s, c = step.weight_sinfo.shape
    if (r, s) != (1, 1) or not isinstance(k, int) or not isinstance(c, int) or step.data_sinfo.shape[3] != c:
        return None
    if step.data_sinfo.dtype != step.weight_sinfo.dtype:
        return None
    matrix = TensorStructInfo((k, c), step.weight_sinfo.dtype)
    return PointwiseConvGemm(
        lhs=step.data, rhs=step.weight, transposed=True, perm_axes=(1, 0), bias=step.bias, act=step.act,
        residual_op=step.residual_op, residual=step.residual, post=step.post, lhs_sinfo=step.data_sinfo,
        rhs_sinfo=matrix, out_sinfo=step.out_sinfo, bias_sinfo=step.bias_sinfo,
        residual_sinfo=step.residual_sinfo, matmul_out_dtype=step.conv_sinfo.dtype, conv=step)


@dataclass
class ConvTier:
    """One compiled variant of a conv step."""

    arch: str  # "sm90" | "sm80" | "generic"
    cfg: ConvKernelConfig | ConvSm90Config | None = None
    fused: bool = True  # False: the conv into the fp32 accumulator, then the generic epilogue
    pad_c: int = 0  # > 0: A and B are copied into scratch with C padded (zeros) to pad_c channels
    s2d: int = 0  # > 0: the copies are A and B space-to-depth by this stride (pad_c channels, see s2d_shape)


@dataclass
class ConvPlan:
    step: ConvStep
    call: CompositeCall
    where: str
    N: Any  # the batch (may be symbolic)
    H: int
    W: int
    C: int  # input channels, all groups
    K: int  # output channels, all groups
    R: int
    S: int
    P: int
    Q: int
    groups: int
    bias_class: str | None
    residual_class: str | None
    out_dtype: str
    acc_dtype: str
    tiers: list[ConvTier] = field(default_factory=list)

    @property
    def c_group(self) -> int:
        return self.C // self.groups

    @property
    def k_group(self) -> int:
        return self.K // self.groups

    @property
    def out_shape(self) -> tuple:
        return (self.N, self.P, self.Q, self.K)

    @property
    def needs_acc(self) -> bool:
        return any(not t.fused for t in self.tiers if t.arch != "generic")

    @property
    def pad_c(self) -> int:
        """The most channels a tier copies A and B to in scratch (0: none does)."""
        return max((t.pad_c for t in self.tiers), default=0)

    def s2d_shape(self, s: int) -> tuple[int, int, int, int]:
        """``(H', W', R', S')`` of the problem after a space-to-depth by the stride ``s``: the
        stride-1, unpadded convolution of R' = ceil(R/s) x S' = ceil(S/s) taps over an
        H' = P + R' - 1 by W' = Q + S' - 1 input of s*s*C channels."""
        r2, s2 = -(-self.R // s), -(-self.S // s)
        return self.P + r2 - 1, self.Q + s2 - 1, r2, s2


def _static(d, what: str, where: str) -> int:
    if not isinstance(d, int):
        raise CodegenError(f"{where}: the {what} ({dim_text(d)}) must be static for conv2d code generation")
    return d


def _check_form(step: ConvStep, where: str) -> None:
    if step.layouts != ("NHWC", "OHWI", "NHWC"):
        raise CodegenError(f"{where}: conv2d layouts data={step.layouts[0]} kernel={step.layouts[1]} "
                           f"out={step.layouts[2]}: only NHWC data, OHWI kernel and NHWC output are generated")
    for what, si in (("data", step.data_sinfo), ("weight", step.weight_sinfo), ("output", step.out_sinfo)):
        if si.shape is None or len(si.shape) != 4:
            raise CodegenError(f"{where}: the conv2d {what} must be a rank-4 tensor of known shape")
    if step.data_sinfo.dtype != step.weight_sinfo.dtype:
        raise CodegenError(f"{where}: mixed conv2d dtypes {step.data_sinfo.dtype} x {step.weight_sinfo.dtype}")
    if step.conv_sinfo.dtype != step.out_sinfo.dtype:
        raise CodegenError(f"{where}: the epilogue changes the dtype ({step.conv_sinfo.dtype} -> {step.out_sinfo.dtype})")


def plan_conv(step: ConvStep, call: CompositeCall, where: str, options: dict) -> ConvPlan:
    """Problem, operand classes and the variants to compile (docs/codegen.md#cutlass-conv2d-family)."""
    _check_form(step, where)
    n, h, w, c = step.data_sinfo.shape
    k, r, s, cg = step.weight_sinfo.shape
    h, w, c = (_static(d, "data's " + a, where) for d, a in ((h, "H"), (w, "W"), (c, "C")))
    k, r, s, cg = (_static(d, "weight's " + a, where) for d, a in ((k, "K"), (r, "R"), (s, "S"), (cg, "C")))
    g = step.groups
    if g < 1 or c % g or k % g or cg * g != c:
        raise CodegenError(f"{where}: groups={g} does not divide C={c} and K={k} into weight slices of {cg} channels")
    (sh, sw), (dh, dw) = step.strides, step.dilation
    pt, pl, pb, pr = step.padding
    p = (h + pt + pb - dh * (r - 1) - 1) // sh + 1
    q = (w + pl + pr - dw * (s - 1) - 1) // sw + 1
    out_shape = tuple(step.out_sinfo.shape)
    conv_shape = tuple(step.conv_sinfo.shape)
    for got in (conv_shape, out_shape):
        static = [d for d in got[1:]]
        if static != [p, q, k] or not (got[0] is n or dim_text(got[0]) == dim_text(n)):
            raise CodegenError(f"{where}: the conv2d output shape {tuple(dim_text(d) for d in got)} is not "
                               f"(N, P, Q, K) = ({dim_text(n)}, {p}, {q}, {k}) (an epilogue that broadcasts "
                               "the convolution to a larger output is not generated)")
    bias_cls = None if step.bias is None else _class(step.bias_sinfo, out_shape, k)
    res_cls = None if step.residual is None else _class(step.residual_sinfo, out_shape, k)
    acc = "int32" if step.data_sinfo.dtype in ("int8", "uint8") else "float32"
    plan = ConvPlan(step, call, where, n, h, w, c, k, r, s, p, q, g, bias_cls, res_cls,
                    step.out_sinfo.dtype, acc)
    archs = OPTIONS.resolve(options)["arch"]
    if "sm_90a" in archs:
        plan.tiers.extend(_sm90_tiers(plan))
    if "sm_80" in archs:
        plan.tiers.extend(_cutlass_tiers(plan))
    plan.tiers.append(ConvTier("generic"))
    return plan


def _class(sinfo: TensorStructInfo, out_shape: tuple, k: int) -> str:
    """per_column (one value per output channel), full (the output's shape) or general."""
    cls = classify(tuple(sinfo.shape), out_shape, k)
    return cls if cls in ("full", "per_column") else "general"


def _epilogue_spec(plan: ConvPlan) -> EpilogueSpec | None:
    """The fused EpilogueSpec, or None when the operand classes do not fit the unit's
    operands (bias / C)."""
    st = plan.step
    bias = source = residual = None
    if st.bias is not None:
        if plan.bias_class == "per_column":
            bias = "per_column"
        elif plan.bias_class == "full":
            source = "full"
        else:
            return None
    if st.residual is not None:
        if source is not None or plan.residual_class not in ("full", "per_column"):
            return None
        residual = plan.residual_class
        source = "full" if residual == "full" else None
    try:
        spec = EpilogueSpec(bias=bias, source=source, act=st.act, residual_op=st.residual_op if residual else None,
                            residual=residual, post=st.post if residual else None)
    except ValueError:
        return None
    return spec if residual is None or bias is not None else None


#: Channels of the space-to-depth stem's copies: 16 f16 channels, one 32-byte row and one
#: k-tile of the sm_90a unit a filter tap.
S2D_CHANNELS = 16


def _s2d_stride(plan: ConvPlan) -> int:
    """The stride a strided few-channel stem runs space-to-depth by on sm_90a, 0 when it does
    not (docs/codegen.md#cutlass-conv2d-family): no dilation, equal strides s >= 2 with
    s*s*C <= 16 (ResNet's 7x7/2 over 3 channels: 12), on top of the sm_90a unit's own
    conditions. A and B are copied into scratch space-to-depth by s with their channels padded
    to 16 (:meth:`ConvPlan.s2d_shape`), and the unit runs the stride-1, unpadded problem of
    ceil(R/s) x ceil(S/s) taps.

    Why: the padded 8-channel stem on the 2.x fixed-channels unit spends 392 of 147 useful
    reduction elements a pixel and runs 0.2415 ms at batch 32 on the H200 (cuDNN 0.0860); the
    space-to-depth problem (256 of 147, 16-channel k-tiles) ran 0.0889 ms on the sm_90a unit,
    batch 1 0.0075 ms (cuDNN stem 0.0133; bench/gpu/conv_bench.py cases stem_s2d16_*)."""
    st = plan.step
    sh, sw = st.strides
    if st.dilation != (1, 1) or sh != sw or sh < 2 or plan.C * sh * sh > S2D_CHANNELS:
        return 0
    return sh


def _sm90_tiers(plan: ConvPlan) -> list[ConvTier]:
    """The sm_90a unit when it applies: one group, f16, C and K multiples of 16 bytes, C
    whole k-tiles (the im2col TMA loads one box of channels per filter tap), an epilogue it
    fuses; the tile from :func:`~.tiles.select_conv_sm90`."""
    dt = plan.step.data_sinfo.dtype
    align = CONV_SM90_ALIGNMENT.get(dt)
    spec = _epilogue_spec(plan)
    if align is None or plan.groups != 1 or spec is None or plan.out_dtype != dt or plan.K % align:
        return []
    m = plan.N * plan.P * plan.Q if isinstance(plan.N, int) else None
    tile, cluster, stages = tiles.select_conv_sm90(m, plan.K, plan.C * plan.R * plan.S, plan.C)
    s2d = 0
    if tile[2] == 0:  # C is no k-tile: a strided few-channel stem still runs, space-to-depth
        s2d = _s2d_stride(plan)
        if not s2d:
            return []
        _, _, r2, s2 = plan.s2d_shape(s2d)
        tile, cluster, stages = tiles.select_conv_sm90(m, plan.K, S2D_CHANNELS * r2 * s2, S2D_CHANNELS)
    cfg = ConvSm90Config(dtype_a=dt, dtype_b=dt, dtype_c=plan.out_dtype if spec.source == "full" else None,
                         dtype_d=plan.out_dtype, accumulator="float32", tile=tile, cluster=cluster, stages=stages,
                         epilogue=spec)
    tier = ConvTier("sm90", cfg, pad_c=S2D_CHANNELS if s2d else 0, s2d=s2d)
    return [tier] if conv_sm90_supports(cfg) else []


def _largest(n: int, candidates) -> int:
    return max((a for a in candidates if n % a == 0), default=1)


#: Input channels below this are padded to it in scratch (f16, one group): the stem.
STEM_PAD = 8

#: Grouped convolutions with fewer output channels per group than this get no per-group
#: CUTLASS launches (byocc's direct convolution computes every group in one launch): each
#: launch would fill a few columns of a 64-wide tile. H200, ResNeXt's 3x3 C = K = 128 in 32
#: groups (4 per group), batch 32: 32 launches of the 2.x unit 2.03 ms, cuDNN 0.049 ms
#: (bench/gpu/results/h200_conv_sm90_results.json).
GROUPED_MIN_K = 16


def _stem_tier(plan: ConvPlan) -> ConvTier | None:
    """The C < 8 stem of a CNN (f16, one group, a fused epilogue): A and B padded to 8
    channels in scratch, then the 2.x fixed-channels fprop (each k-tile of 32 spans 4 filter
    taps of 8 channels, 16-byte loads) instead of the alignment-1 unit, whose k-tiles of 32
    channels would hold 3."""
    spec = _epilogue_spec(plan)
    if (plan.step.data_sinfo.dtype != "float16" or plan.step.weight_sinfo.dtype != "float16" or plan.groups != 1
            or plan.C >= STEM_PAD or spec is None or plan.out_dtype != "float16"):
        return None
    tile, stages = tiles.SM80_MENU["tiny"] if plan.K <= 64 else tiles.SM80_MENU["medium"]
    align_d = _largest(plan.K, (8, 4, 2, 1))
    try:
        cfg = ConvKernelConfig(dtype_a="float16", dtype_b="float16", dtype_c="float16" if spec.has_c else None,
                               dtype_d="float16", accumulator="float32", align_a=STEM_PAD, align_b=STEM_PAD,
                               align_c=align_d if spec.has_c else 0, align_d=align_d, tile=tile, stages=stages,
                               iterator="fixed_channels", epilogue=spec)
    except ValueError:
        return None
    return ConvTier("sm80", cfg, True, pad_c=STEM_PAD) if conv_supports(cfg) else None


def _cutlass_tiers(plan: ConvPlan) -> list[ConvTier]:
    """The sm_80 unit at the alignment tier C/groups and K/groups allow, fused when it can be
    (else into the accumulator), none for dtypes without a unit; the padded stem unit
    (:func:`_stem_tier`) for a C < 8 stem; none for a grouped conv with fewer than
    :data:`GROUPED_MIN_K` output channels per group."""
    dt = plan.step.data_sinfo.dtype
    aligns = CONV_ALIGNMENTS.get(dt)
    if aligns is None or plan.acc_dtype != "float32":
        return []
    stem = _stem_tier(plan)
    if stem is not None:
        return [stem]
    if plan.groups > 1 and plan.k_group < GROUPED_MIN_K:
        return []
    align_ab = _largest(plan.c_group, aligns)
    if plan.c_group % align_ab:
        return []
    m = plan.N * plan.P * plan.Q if isinstance(plan.N, int) else None
    tile, stages = tiles.sm80_tile(m, plan.k_group, plan.R * plan.S * plan.c_group, 1, dt)
    if align_ab == 1:
        stages = 2
    iterator = "optimized" if plan.R <= 32 and plan.S <= 32 else "analytic"
    spec = _epilogue_spec(plan)
    for fused in (True, False):
        if fused and spec is None:
            continue
        d_dt = plan.out_dtype if fused else plan.acc_dtype
        if d_dt not in ("float16", "float32"):
            continue
        ep = spec if fused else EpilogueSpec()
        align_d = _largest(plan.k_group, tuple(a for a in (8, 4, 2, 1) if a * itemsize(d_dt) <= 16))
        try:
            cfg = ConvKernelConfig(dtype_a=dt, dtype_b=dt, dtype_c=d_dt if ep.has_c else None, dtype_d=d_dt,
                                   accumulator="float32", align_a=align_ab, align_b=align_ab,
                                   align_c=align_d if ep.has_c else 0, align_d=align_d, tile=tile,
                                   stages=stages, iterator=iterator, epilogue=ep)
        except ValueError:
            continue
        if conv_supports(cfg):
            return [ConvTier("sm80", cfg, fused)]
    return []


# --------------------------------------------------------------------------- manifest, scratch
def impl_name(tier: ConvTier) -> str:
    return {"sm90": "cutlass3x_implicit_gemm", "sm80": "cutlass2x_implicit_gemm"}.get(tier.arch, "generic_direct_conv")


def variant(tier: ConvTier) -> Variant:
    """The manifest record of one tier."""
    if tier.arch == "generic":
        return Variant("sm_80", impl_name(tier), {"align": 1, "epilogue": "generic (fused)"})
    cfg = tier.cfg
    if isinstance(cfg, ConvSm90Config):
        return Variant("sm_90a", impl_name(tier), {
            "tile": list(cfg.tile), "cluster": list(cfg.cluster), "stages": cfg.stages or "auto", "align": cfg.align,
            "kernel": cfg.path,
            "epilogue": "fused",
            **({"space_to_depth": tier.s2d, "pad_channels": tier.pad_c} if tier.s2d else {})})
    assert isinstance(cfg, ConvKernelConfig)
    return Variant("sm_80", impl_name(tier), {
        "tile": list(cfg.tile), "stages": cfg.stages, "align": min(cfg.align_a, cfg.align_d),
        "alignments": {"a": cfg.align_a, "b": cfg.align_b, "d": cfg.align_d}, "iterator": cfg.iterator,
        "kernel": cfg.path, "epilogue": "fused" if tier.fused else "generic kernel",
        **({"pad_channels": tier.pad_c} if tier.pad_c else {})})


def step_scratch(plan: ConvPlan, ctx: WrapperContext) -> Size:
    """The step's scratch need: the fp32 accumulator when a tier does not fuse the epilogue,
    and the channel-padded (or space-to-depth) copies of A and B (:func:`pad_regions`)."""
    acc = tensor_bytes(plan.out_shape, itemsize(plan.acc_dtype), ctx) if plan.needs_acc else Size.zero()
    pad_a, pad_b = pad_regions(plan, ctx)
    return acc + pad_a + pad_b


def tier_copies(plan: ConvPlan, tier: ConvTier) -> tuple[tuple, tuple] | None:
    """The shapes of the copies of A and B a tier runs on (None: it reads them in place):
    ``(N, H, W, pad_c)`` and ``(K, R, S, pad_c)`` channel-padded, or the space-to-depth
    problem's ``(N, H', W', pad_c)`` and ``(K, R', S', pad_c)``."""
    if tier.s2d:
        h2, w2, r2, s2 = plan.s2d_shape(tier.s2d)
        return (plan.N, h2, w2, tier.pad_c), (plan.K, r2, s2, tier.pad_c)
    if tier.pad_c:
        return (plan.N, plan.H, plan.W, tier.pad_c), (plan.K, plan.R, plan.S, tier.pad_c)
    return None


def pad_regions(plan: ConvPlan, ctx: WrapperContext) -> tuple[Size, Size]:
    """The scratch regions of the copies of A and B: the largest any tier makes (only one
    tier runs a call), zero when none copies."""
    size = itemsize(plan.step.data_sinfo.dtype)
    a = b = Size.zero()
    for tier in plan.tiers:
        shapes = tier_copies(plan, tier)
        if shapes is not None:
            a, b = a.max(tensor_bytes(shapes[0], size, ctx)), b.max(tensor_bytes(shapes[1], size, ctx))
    return a, b


__all__ = ["GROUPED_MIN_K", "S2D_CHANNELS", "STEM_PAD", "ConvPlan", "ConvStep", "ConvTier", "PointwiseConvGemm", "conv_step", "impl_name", "pad_regions", "plan_conv", "pointwise_gemm",
           "step_scratch", "tier_copies", "variant"]
