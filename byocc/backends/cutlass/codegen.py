"""The CUTLASS backend's codegen: ``codegen(functions, options, constant_names)`` (docs/codegen.md#common-contract, #cutlass-gemm-family, #layer_norm-and-rms_norm, #tvm-027-defects-byocc-does-not-copy and #elementwise-composites).

For every offloaded function: one :class:`~byocc.backends.codegen.EntryPoint`, its light
wrapper ``src/funcs/<symbol>.cu`` (:func:`~byocc.backends.cuda.wrapper.emit_wrapper`) and
the kernel units its steps need, de-duplicated by path across functions (a CUTLASS unit is
named by its configuration hash, a generic unit by its dtypes, an elementwise unit by the
hash of its text). All functions of one call share one GeneratedModule.

Steps per composite call:

1. **GEMM family** (read from the body by :func:`~byocc.backends.program.gemm_step`):
   planned by :mod:`.gemm_plan` (problem mapping, operand classes, the CUTLASS tiers and the
   generic SIMT GEMM in run-time order, scratch need), written by :mod:`.gemm_step` (the
   wrapper code from ``templates/gemm_step.cu.j2`` and the kernel units it uses).
2. **layer_norm and rms_norm** (read from the body by :func:`.norm_step.plan_norm`): one call
   of byocc's norm kernels (``src/kernels/norm_<dtype>.cu`` over the fixed
   ``src/byocc_norm.cuh``, which a library gets when it uses them).
3. **Conv2d family** (read by :func:`.conv_plan.conv_step`): planned by :mod:`.conv_plan`
   (per-group implicit GEMM, operand classes, the sm_80 CUTLASS tier and the generic direct
   convolution), written by :mod:`.conv_step` (``templates/conv_step.cu.j2``, the units of
   :mod:`.conv_unit`).
3. **Elementwise composites** (:mod:`byocc.backends.cuda.elementwise`): one fused kernel.
4. Anything else is a :class:`~byocc.backends.codegen.CodegenError` naming the function, the
   composite and the first unsupported op.

Scratch: the wrapper's temporaries plus the largest step region (a GEMM step's is
:func:`.gemm_plan.step_scratch`).
"""

from __future__ import annotations

import dataclasses
import functools

from byocc.ir.prim import dim_text

from ..codegen import CodegenError
from ..codegen import GeneratedModule
from ..codegen import SourceFile
from ..cuda import elementwise_map
from ..cuda import generic
from ..cuda import norm
from ..cuda.elementwise import elementwise_plan
from ..cuda.elementwise import elementwise_step
from ..cuda.elementwise import first_unsupported_op
from ..cuda.elementwise import is_elementwise
from ..cuda.function import FunctionCodegen
from ..cuda.function import exported_functions
from ..cuda.function import generate_function
from ..cuda.step import Operand
from ..cuda.step import Step
from ..cuda.wrapper import WrapperContext
from ..cuda.wrapper import shape_text
from ..program import CompositeCall
from ..program import OffloadedProgram
from ..program import gemm_step
from ..program import resolve
from . import gemm_plan
from .attention_step import AttentionPlan
from .attention_step import attention_plan
from .attention_step import attention_step
from .attention_step import header_sources
from .backend import OPTIONS
from .conv_plan import ConvPlan
from .conv_plan import PointwiseConvGemm
from .conv_plan import conv_step
from .conv_plan import plan_conv
from .conv_plan import pointwise_gemm
from .conv_step import conv_step_of
from .gemm_plan import GemmPlan
from .gemm_step import step_code as gemm_code
from .gemm_step import step_kernels
from .norm_step import NormPlan
from .norm_step import norm_step
from .norm_step import plan_norm

BACKEND = "cutlass"


# --------------------------------------------------------------------------- per function
def _plan_call(program: OffloadedProgram, call: CompositeCall, options: dict):
    where = f"function {program.symbol}, composite {call.composite}"
    step = gemm_step(call.func)
    if step is not None:
        return gemm_plan.plan_gemm(step, call, where, options)
    plan = plan_norm(call, where, options)
    if plan is not None:
        return plan
    conv = conv_step(call.func)
    if conv is not None:
        as_gemm = pointwise_gemm(conv)
        if as_gemm is not None:
            try:
                plan = gemm_plan.plan_gemm(as_gemm, call, where, options, mm_shape=tuple(conv.conv_sinfo.shape))
            except CodegenError:
                plan = None  # e.g. a dtype the GEMM family lacks: the conv tiers (at least the direct conv) run it
            # A split-K GEMM loses to the conv unit on ResNet's batch-1 1x1 layers (2 MB weights:
            # the reduction launch costs more than the split saves; H200, bench/gpu/conv_bench.py:
            # 7x7 512->2048 10.6 us split vs 6.0 us conv unit, 2048->512 10.7 vs 10.1).
            if plan is not None and not any(t.splits > 1 for t in plan.tiers):
                return plan
        return plan_conv(conv, call, where, options)
    if is_elementwise(call.func):
        return elementwise_plan(call.func, where)
    attention = attention_plan(call, where, options, program)
    if attention is not None:
        return attention
    op = first_unsupported_op(call.func) or "no supported operator"
    raise CodegenError(f"{where}: the cutlass backend cannot generate code for this composite "
                       f"(first unsupported op: {op})")


def _gemm_header(plan: GemmPlan) -> list[str]:
    st = plan.step
    lines = [f"out = {st.describe()}",
             f"GEMM M={dim_text(plan.M)} N={dim_text(plan.N)} K={dim_text(plan.K)} batch={plan.case}, "
             f"B {plan.layout}, {st.lhs_sinfo.dtype} x {st.rhs_sinfo.dtype} -> {plan.out_dtype} "
             f"(accumulate {plan.acc_dtype})"]
    if isinstance(st, PointwiseConvGemm):
        n, h, w, c = (dim_text(d) for d in st.lhs_sinfo.shape)
        lines.insert(1, f"conv2d 1x1 N={n} H={h} W={w} C={c} K={dim_text(plan.N)}, stride 1, no padding: "
                        "one GEMM over the N*H*W pixels, the OHWI weight read as the (K, C) matrix")

    def tier_text(tier) -> str:
        c = tier.cfg
        return f"variant {gemm_plan.impl_name(tier)} {c.path} align A {c.align_a} B {c.align_b} D {c.align_d}"

    return lines + gemm_plan.epilogue_header(st, plan, "generic_simt", tier_text)


def _gemm_operands(plan: GemmPlan) -> tuple[Operand, ...]:
    st, call = plan.step, plan.call
    rhs_layout = ("col_major_nk" if st.transposed and plan.layout == "tn" and plan.materialize_axes is None
                  else "row_major")
    items = [("lhs", st.lhs, None, "row_major"), ("rhs", st.rhs, None, rhs_layout),
             ("bias", st.bias, plan.bias_class, "row_major"),
             ("residual", st.residual, plan.residual_class, "row_major")]
    return tuple(Operand(resolve(call, operand), role, cls, layout)
                 for role, operand, cls, layout in items if operand is not None)


def _gemm_step(plan: GemmPlan, ctx: WrapperContext) -> Step:
    st = plan.step
    variants = tuple(gemm_plan.variant(t) for t in plan.tiers)
    record = {"composite": plan.call.composite, "kind": "gemm", "formula": st.describe(),
              "batch": plan.case, "b_layout": plan.layout,
              **({"lowered_from": "conv2d"} if isinstance(st, PointwiseConvGemm) else {}),
              "bias_class": plan.bias_class, "residual_class": plan.residual_class,
              "accumulator": plan.acc_dtype, "variants": [v.to_json() for v in variants]}
    buckets = [t for t in plan.tiers if t.m_range is not None]
    if buckets:
        # docs/codegen.md#m-buckets: the run-time bounds of the symbolic M (or N, K) -> the
        # sm_90a variant they run
        d = buckets[0].bucket_dim
        record[f"{d}_buckets"] = [{f"{d}_min": t.m_range[0], f"{d}_max": t.m_range[1], "kernel": t.cfg.path,
                                   "tile": list(t.cfg.tile), "split_k": t.splits} for t in buckets]
    attrs = {"activation": st.act, "transposed_rhs": st.transposed, "accumulator": plan.acc_dtype,
             "gelu": "erf" if st.act == "gelu" else None, "residual_op": st.residual_op, "post": st.post}
    kernels = step_kernels(plan)
    return Step(plan.call.composite, gemm_code(plan, ctx), scratch=gemm_plan.step_scratch(plan, ctx),
                units=tuple(k.source for k in kernels), declarations=tuple(k.declaration for k in kernels),
                header=tuple(_gemm_header(plan)), record=record, variants=variants,
                operands=_gemm_operands(plan), attrs=attrs)


def _step(options: dict, program: OffloadedProgram, index: int, call: CompositeCall, ctx: WrapperContext) -> Step:
    """Composite call ``index`` as a GEMM, norm or elementwise step, its header lines under
    ``step <index>: ...``."""
    plan = _plan_call(program, call, options)
    if isinstance(plan, GemmPlan):
        step = _gemm_step(plan, ctx)
    elif isinstance(plan, NormPlan):
        step = norm_step(plan, ctx)
    elif isinstance(plan, ConvPlan):
        step = conv_step_of(plan, ctx)
    elif isinstance(plan, AttentionPlan):
        step = attention_step(plan, ctx)
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
    options = OPTIONS.resolve(options)
    skeleton = function_codegen(options)
    units: dict[str, SourceFile] = {}
    entries = []
    for symbol, global_symbol, func in exported_functions(functions):
        fn = generate_function(skeleton, symbol, func, constant_names, global_symbol)
        units.update((u.path, u) for u in fn.units)
        units[fn.source.path] = fn.source
        entries.append(fn.entry)
    units[generic.HEADER_PATH] = generic.header_source()
    if elementwise_map.uses_map(units):
        units[elementwise_map.HEADER_PATH] = elementwise_map.header_source()
    if generic.uses_aux(units):
        units[generic.AUX_HEADER_PATH] = generic.aux_header_source()
    if norm.uses_norm(units.values()):
        units[norm.HEADER_PATH] = norm.header_source()
    if any(e.steps and any(s.get("kind") == "conv2d" for s in e.steps) for e in entries):
        units.update((h.path, h) for h in generic.conv_header_sources())
    if any(p.startswith("src/kernels/attention_") for p in units):
        fused = any(p.startswith("src/kernels/attention_sm90_") for p in units)
        units.update((h.path, h) for h in header_sources(fused))
    sources = tuple(units[p] for p in sorted(units))
    needs_cutlass = any(s.unit in ("sm90", "sm80") for s in sources)
    return [GeneratedModule(BACKEND, tuple(entries), sources, needs_cutlass=needs_cutlass,
                            options=OPTIONS.to_json(options))]


#: Composite families (pattern names after ``cutlass.``) whose code this codegen does not
#: generate yet.
_NOT_GENERATED = ("decode_matmul", "attention_var_len")


def supports(composite: str) -> bool:
    """Whether this codegen generates code for composite ``composite`` (a pattern name): the
    GEMM family (``matmul*``), the conv2d family, ``layer_norm``, ``rms_norm``, attention
    (``attention``, ``attention_bias``, ``stacked_attention``) and elementwise composites;
    decode matmuls and ``attention_var_len`` are refused (a CodegenError naming the
    composite)."""
    return not composite.partition(".")[2].startswith(_NOT_GENERATED)


__all__ = ["codegen", "function_codegen", "supports"]
