"""One CUTLASS conv2d step: its wrapper code (``templates/conv_step.cu.j2``), the kernel units
it uses with their declarations, its header lines, manifest record and variants
(:func:`conv_step_of` builds the :class:`~byocc.backends.cuda.step.Step`).

At run time the sm_90a tier (compute capability 9 only) and then the sm_80 tier run when its alignment checks, ``can_implement`` and its
workspace need pass for group 0 (every group's slice has the same alignment), once per group;
a refusal before anything ran hands over to byocc's generic direct convolution.
"""

from __future__ import annotations

from byocc.ir.prim import dim_text

from ..cuda import generic
from ..cuda.step import Operand
from ..cuda.step import Size
from ..cuda.step import Step
from ..cuda.step import tensor_bytes
from ..cuda.templates import render
from ..cuda.wrapper import WrapperContext
from ..dtypes import itemsize
from ..program import ValueRef
from ..program import resolve
from . import conv_plan
from .conv_plan import ConvPlan
from .conv_unit import conv_declarations
from .conv_unit import emit_conv
from .gemm_plan import epilogue_header
from .gemm_step import CONDITIONS
from .gemm_step import GUARDS
from .gemm_step import StepKernel

#: The declaration that brings ``byocc::ConvArgs`` into a wrapper (first of a conv step's).
CONV_INCLUDE = '#include "byocc_conv.h"'


def _operand(ref: ValueRef, sinfo, ctx: WrapperContext) -> dict:
    shape = [ctx.dim(d) for d in sinfo.shape] or ["int64_t(1)"]
    return {"ptr": ctx.ptr(ref), "array": shape, "rank": len(sinfo.shape)}


def _context(plan: ConvPlan, ctx: WrapperContext) -> dict:
    st, call = plan.step, plan.call
    dt = st.data_sinfo.dtype
    out_ptr = ctx.ptr(ValueRef("temp", call.result))
    acc = tensor_bytes(plan.out_shape, itemsize(plan.acc_dtype), ctx) if plan.needs_acc else Size.zero()
    pad_a, pad_b = conv_plan.pad_regions(plan, ctx)
    return {
        "describe": st.describe(), "groups": plan.groups, "N": ctx.dim(plan.N), "H": plan.H, "W": plan.W,
        "C": plan.C, "K": plan.K, "c_group": plan.c_group, "k_group": plan.k_group, "R": plan.R, "S": plan.S,
        "P": plan.P, "Q": plan.Q, "pad": st.padding, "stride": st.strides, "dilation": st.dilation,
        "a_ptr": ctx.ptr(resolve(call, st.data)), "b_ptr": ctx.ptr(resolve(call, st.weight)),
        "out_ptr": out_ptr, "acc_region": acc.c,
        "padded": {"c": plan.pad_c, "a_region": pad_a.c, "b_region": pad_b.c,
                "a_rows": ctx.numel((plan.N, plan.H, plan.W)), "b_rows": plan.K * plan.R * plan.S} if plan.pad_c else None, "out_shape": [ctx.dim(d) for d in plan.out_shape],
        "act_code": generic.ACT_CODES[st.act], "bin_code": generic.BIN_CODES[st.residual_op],
        "post_code": generic.POST_CODES[st.post],
        "bias": None if st.bias is None else _operand(resolve(call, st.bias), st.bias_sinfo, ctx),
        "residual": None if st.residual is None else _operand(resolve(call, st.residual), st.residual_sinfo, ctx),
        "tiers": [{"cfg": t.cfg, "fused": t.fused, "guard": GUARDS[t.arch], "impl": conv_plan.impl_name(t),
                   "condition": CONDITIONS[t.arch] if t.arch == "sm90" else None, "pad_c": t.pad_c,
                   "s2d": dict(zip(("stride", "h", "w", "r", "s"), (t.s2d, *plan.s2d_shape(t.s2d)))) if t.s2d else None,
                   "d_bytes": itemsize(t.cfg.dtype_d)} for t in plan.tiers if t.arch != "generic"],
        "a_bytes": itemsize(dt), "epilogue_kernel": generic.epilogue_name(plan.acc_dtype, plan.out_dtype),
        "generic_conv": generic.conv_name(dt, st.weight_sinfo.dtype, plan.out_dtype),
        "C_in": plan.C,
    }


def step_kernels(plan: ConvPlan) -> list[StepKernel]:
    """The kernel units (CUTLASS and generic) a conv step needs, with their declarations."""
    st = plan.step
    a_dt, b_dt = st.data_sinfo.dtype, st.weight_sinfo.dtype
    used = [StepKernel(emit_conv(t.cfg), conv_declarations(t.cfg, GUARDS[t.arch]))
            for t in plan.tiers if t.arch != "generic"]
    declaration = generic.conv_declaration(a_dt, b_dt, plan.out_dtype)
    if plan.pad_c:
        declaration += "\n" + generic.conv_pad_declaration(a_dt, b_dt, plan.out_dtype)
    used.append(StepKernel(generic.conv_unit(a_dt, b_dt, plan.out_dtype), declaration))
    if plan.needs_acc:
        used.append(StepKernel(generic.epilogue_unit(plan.acc_dtype, plan.out_dtype),
                               generic.epilogue_declaration(plan.acc_dtype, plan.out_dtype)))
    return used


def _header(plan: ConvPlan) -> list[str]:
    st = plan.step
    (sh, sw), (dh, dw) = st.strides, st.dilation
    lines = [f"out = {st.describe()}",
             f"conv2d N={dim_text(plan.N)} H={plan.H} W={plan.W} "
             f"C={plan.C} K={plan.K} R={plan.R} S={plan.S} -> P={plan.P} Q={plan.Q}, "
             f"pad {'/'.join(map(str, st.padding))}, stride {sh}x{sw}, dilation {dh}x{dw}, groups {plan.groups}, "
             f"{st.data_sinfo.dtype} -> {plan.out_dtype} (accumulate {plan.acc_dtype})"]

    def tier_text(tier) -> str:
        c = tier.cfg
        if tier.arch == "sm90":
            stages = f"{c.stages} stages" if c.stages else "auto stages"
            s2d = ""
            if tier.s2d:
                h2, w2, r2, s2 = plan.s2d_shape(tier.s2d)
                s2d = (f", on A and B space-to-depth by {tier.s2d} in scratch ({h2}x{w2} input, {r2}x{s2} taps of "
                       f"{tier.pad_c} channels, stride 1, no padding)")
            return (f"variant {conv_plan.impl_name(tier)} {c.path} tile {'x'.join(map(str, c.tile))} cluster "
                    f"{'x'.join(map(str, c.cluster))}, {stages}, align {c.align}, on compute capability 9{s2d}")
        pad = f", A and B padded to {tier.pad_c} channels in scratch" if tier.pad_c else ""
        return (f"variant {conv_plan.impl_name(tier)} {c.path} align A {c.align_a} B {c.align_b} "
                f"D {c.align_d}, {c.iterator}{pad}")

    return lines + epilogue_header(st, plan, "generic_direct_conv", tier_text)


def conv_step_of(plan: ConvPlan, ctx: WrapperContext) -> Step:
    """The :class:`~byocc.backends.cuda.step.Step` of a planned conv2d composite call."""
    st, call = plan.step, plan.call
    variants = tuple(conv_plan.variant(t) for t in plan.tiers)
    record = {"composite": call.composite, "kind": "conv2d", "formula": st.describe(),
              "problem": {"N": plan.N if isinstance(plan.N, int) else dim_text(plan.N), "H": plan.H, "W": plan.W, "C": plan.C, "K": plan.K, "R": plan.R,
                          "S": plan.S, "P": plan.P, "Q": plan.Q, "padding": list(st.padding),
                          "strides": list(st.strides), "dilation": list(st.dilation), "groups": plan.groups},
              "bias_class": plan.bias_class, "residual_class": plan.residual_class,
              "accumulator": plan.acc_dtype, "variants": [v.to_json() for v in variants]}
    attrs = {"activation": st.act, "accumulator": plan.acc_dtype, "groups": plan.groups,
             "residual_op": st.residual_op, "post": st.post}
    kernels = step_kernels(plan)
    items = [("data", st.data, None), ("weight", st.weight, None), ("bias", st.bias, plan.bias_class),
             ("residual", st.residual, plan.residual_class)]
    operands = tuple(Operand(resolve(call, o), role, cls) for role, o, cls in items if o is not None)
    text = render("cutlass/conv_step.cu.j2", **_context(plan, ctx)).removesuffix("\n")
    return Step(call.composite, text, scratch=conv_plan.step_scratch(plan, ctx),
                units=tuple(k.source for k in kernels),
                declarations=(CONV_INCLUDE, *(k.declaration for k in kernels)),
                header=tuple(_header(plan)), record=record, variants=variants, operands=operands, attrs=attrs)


__all__ = ["CONV_INCLUDE", "conv_step_of", "step_kernels"]
