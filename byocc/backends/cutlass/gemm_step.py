"""The wrapper code of one CUTLASS GEMM step and the kernel units it uses.

:func:`step_code` renders ``cutlass/gemm_step.cu.j2`` from a :class:`~.gemm_plan.GemmPlan`:
the problem (``gm``, ``gn``, ``gk``, ``gl``), the step's scratch regions (materialised B,
accumulator, CUTLASS workspace), the generic epilogue's description of the output, then every
CUTLASS tier in run-time order and the generic SIMT GEMM. At run time a tier runs when its
alignment checks, ``can_implement`` and its workspace need pass; a tier whose run returns
BYOCC_E_CUTLASS / BYOCC_E_UNSUPPORTED (CUTLASS's ``initialize`` refused before anything ran)
hands over to the next one with the error buffer cleared; launch errors are returned.

:func:`step_kernels` lists the units the step needs, each with the declaration the wrapper
includes for it (one list, so the two cannot drift apart).
"""

from __future__ import annotations

from typing import NamedTuple

from ..codegen import SourceFile
from ..cuda import generic
from ..cuda.templates import render
from ..cuda.wrapper import WrapperContext
from ..dtypes import itemsize
from ..program import ValueRef
from ..program import resolve
from . import kernels
from .gemm_plan import GemmPlan
from .gemm_plan import Tier
from .gemm_plan import impl_name
from .gemm_plan import pad_regions
from .gemm_plan import scratch_regions
from .gemm_plan import split_k_bytes

#: The build macro that leaves a tier's unit out (``byocc build`` without that arch).
GUARDS = {"sm90": "BYOCC_NO_SM90", "sm80": "BYOCC_NO_SM80"}
#: The run-time condition of a tier (sm_90a units need a compute-capability-9 device).
CONDITIONS = {"sm90": "dev.major == 9", "sm80": "true"}


class StepKernel(NamedTuple):
    """One kernel unit of a step and the wrapper's declaration of its entry points."""

    source: SourceFile
    declaration: str


def _dims(shape, ctx: WrapperContext) -> list[str]:
    return [ctx.dim(d) for d in shape]


def _array(shape, ctx: WrapperContext) -> list[str]:
    """The elements of a shape array (one dummy element for rank 0)."""
    return _dims(shape, ctx) or ["int64_t(1)"]


def _permutation(plan: GemmPlan, source: str, axes: tuple, ctx: WrapperContext) -> dict:
    """A strided copy of the stored rhs into scratch, permuted by ``axes``."""
    shape = plan.stored_rhs_shape
    b_dt = plan.step.rhs_sinfo.dtype
    return {"array": _array(shape, ctx), "rank": len(shape), "axes": list(axes), "source": source,
            "permuted": _dims(tuple(shape[a] for a in axes), ctx),
            "kernel": generic.epilogue_name(b_dt, b_dt)}


def _operand(ref: ValueRef, sinfo, operand_class: str | None, ctx: WrapperContext) -> dict:
    """A bias or residual: its pointer, shape (broadcast over the output) and whether it is
    a batched row (a batch stride of N in the CUTLASS tiers)."""
    return {"ptr": ctx.ptr(ref), "array": _array(sinfo.shape, ctx), "rank": len(sinfo.shape),
            "batched": operand_class == "batched_row"}


def _condition(tier: Tier) -> str:
    """The tier's run-time condition: its arch's, and its bucket's bounds on the actual M (or
    N, K: ``gm``/``gn``/``gk``) when it has one."""
    text = CONDITIONS[tier.arch]
    if tier.m_range is not None:
        lo, hi = tier.m_range
        var = f"g{tier.bucket_dim}"
        if lo > 1:
            text += f" && {var} >= {lo}"
        if hi is not None:
            text += f" && {var} <= {hi}"
    return text


def _tier(tier: Tier, problem: dict | None = None) -> dict:
    cfg = tier.cfg
    out = {"arch": tier.arch, "cfg": cfg, "fused": tier.fused, "guard": GUARDS[tier.arch],
           "condition": _condition(tier), "impl": impl_name(tier),
           "d_bytes": itemsize(cfg.dtype_d), "splits": tier.splits, "pad_k": tier.pad_k}
    if problem is not None and (tier.splits > 1 or tier.pad_k):
        padded = tier.pad_k is not None
        out.update(a="ws_base + off_pad_a" if padded else problem["a_ptr"],
                   b="ws_base + off_pad_b" if padded else problem["b_src"],
                   k="gkp" if padded else "gk",
                   bsa=problem["bsa"].replace("gk", "gkp"), bsb=problem["bsb"].replace("gk", "gkp"))
    return out


def _aux(plan: GemmPlan, ctx: WrapperContext) -> dict | None:
    """The split-K and padding regions and kernels of the step (None without such tiers)."""
    if not any(t.splits > 1 or t.pad_k for t in plan.tiers):
        return None
    split = split_k_bytes(plan)
    pad_a, pad_b = pad_regions(plan, ctx)
    a_dt = plan.step.lhs_sinfo.dtype
    stored = plan.stored_rhs_shape
    return {"split_region": f"uint64_t({split})", "pad_a_region": pad_a.c, "pad_b_region": pad_b.c,
            "splitk_kernel": generic.splitk_name(plan.out_dtype), "pad_kernel": generic.pad_name(a_dt),
            "a_rows": ctx.numel(tuple(plan.lhs_shape[:-1])), "b_rows": ctx.numel(tuple(stored[:-1])),
            "b_batches": ctx.numel(tuple(stored[:-2]))}


def _problem(plan: GemmPlan, ctx: WrapperContext) -> dict:
    """The GEMM extents and the batch strides of A, B and D (in elements)."""
    flat_m = ctx.numel(tuple(plan.lhs_batch) + (plan.M,)) if plan.lhs_batch else ctx.dim(plan.M)
    return {
        "case": plan.case, "layout": plan.layout, "M": ctx.dim(plan.M), "N": ctx.dim(plan.N),
        "K": ctx.dim(plan.K), "m_flat": flat_m, "lhs_batch": ctx.numel(plan.lhs_batch),
        "rhs_batch": ctx.numel(plan.rhs_batch),
        "bsa": "int64_t(0)" if plan.case in ("flatten", "broadcast_a") else "gm * gk",
        "bsb": "int64_t(0)" if plan.case == "flatten" else "gk * gn",
        "bsd": "gm * gn",
        "generic_ldb": "gk" if plan.layout == "tn" else "gn",
        # the generic GEMM's B strides along K and N
        "stride_bk": "int64_t(1)" if plan.layout == "tn" else "g.ldb",
        "stride_bn": "g.ldb" if plan.layout == "tn" else "int64_t(1)",
    }


def _context(plan: GemmPlan, ctx: WrapperContext) -> dict:
    st, call = plan.step, plan.call
    a_dt, b_dt = st.lhs_sinfo.dtype, st.rhs_sinfo.dtype
    b_region, acc_region, _ = scratch_regions(plan, ctx)
    b_ptr = ctx.ptr(resolve(call, st.rhs))
    out_ptr = ctx.ptr(ValueRef("temp", call.result))
    b_src = b_ptr if plan.materialize_axes is None else "static_cast<void*>(ws_base + off_b)"
    fused_out = plan.acc_dtype == plan.out_dtype and not plan.grows
    transpose_b = None
    if plan.cutlass_transpose_b:
        axes = list(range(len(plan.stored_rhs_shape)))
        axes[-1], axes[-2] = axes[-2], axes[-1]
        transpose_b = _permutation(plan, b_src, tuple(axes), ctx)
    return {
        **_problem(plan, ctx),
        "describe": st.describe(), "symbol": ctx.program.symbol,
        "b_region": b_region.c, "acc_region": acc_region.c,
        "a_ptr": ctx.ptr(resolve(call, st.lhs)), "b_src": b_src, "out_ptr": out_ptr,
        "acc_ptr": out_ptr if fused_out else "static_cast<void*>(ws_base + off_acc)",
        "materialize": (None if plan.materialize_axes is None
                        else _permutation(plan, b_ptr, plan.materialize_axes, ctx)),
        "transpose_b": transpose_b, "b_tn_ready": plan.has_transposed_b,
        "out_shape": _dims(plan.out_shape, ctx),
        "mm_shape": _dims(plan.mm_shape, ctx), "mm_array": _array(plan.mm_shape, ctx),
        "grows": plan.grows,
        "act_code": generic.ACT_CODES[st.act], "bin_code": generic.BIN_CODES[st.residual_op],
        "post_code": generic.POST_CODES[st.post],
        "bias": (None if st.bias is None
                 else _operand(resolve(call, st.bias), st.bias_sinfo, plan.bias_class, ctx)),
        "residual": (None if st.residual is None
                     else _operand(resolve(call, st.residual), st.residual_sinfo, plan.residual_class, ctx)),
        "aux": _aux(plan, ctx),
        "a_bytes": itemsize(a_dt), "b_bytes": itemsize(b_dt),
        "epilogue_kernel": generic.epilogue_name(plan.acc_dtype, plan.out_dtype),
        "generic_gemm": generic.gemm_name(a_dt, b_dt, plan.acc_dtype if plan.grows else plan.out_dtype),
    }


def step_code(plan: GemmPlan, ctx: WrapperContext) -> str:
    """The wrapper code of one GEMM step: problem, tiers in order, generic fallback."""
    context = _context(plan, ctx)
    context["tiers"] = [_tier(t, context) for t in plan.tiers if t.arch != "generic"]
    return render("cutlass/gemm_step.cu.j2", **context).removesuffix("\n")


def step_kernels(plan: GemmPlan) -> list[StepKernel]:
    """The kernel units (CUTLASS and generic) a GEMM step needs, with their declarations."""
    st = plan.step
    a_dt, b_dt = st.lhs_sinfo.dtype, st.rhs_sinfo.dtype
    used = [StepKernel(kernels.emit_kernel(t.cfg), kernels.kernel_declarations(t.cfg, GUARDS[t.arch]))
            for t in plan.tiers if t.arch != "generic"]
    d_dt = plan.acc_dtype if plan.grows else plan.out_dtype
    used.append(StepKernel(generic.gemm_unit(a_dt, b_dt, d_dt), generic.gemm_declaration(a_dt, b_dt, d_dt)))
    if plan.needs_acc or plan.grows:
        used.append(StepKernel(generic.epilogue_unit(plan.acc_dtype, plan.out_dtype),
                               generic.epilogue_declaration(plan.acc_dtype, plan.out_dtype)))
    if plan.materialize_axes is not None or plan.has_transposed_b:
        used.append(StepKernel(generic.epilogue_unit(b_dt, b_dt), generic.epilogue_declaration(b_dt, b_dt)))
    if any(t.splits > 1 for t in plan.tiers):
        used.append(StepKernel(generic.splitk_unit(plan.out_dtype), generic.splitk_declaration(plan.out_dtype)))
    if any(t.pad_k for t in plan.tiers):
        used.append(StepKernel(generic.pad_unit(a_dt), generic.pad_declaration(a_dt)))
    return used


__all__ = ["CONDITIONS", "GUARDS", "StepKernel", "step_code", "step_kernels"]
