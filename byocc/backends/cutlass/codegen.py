"""The CUTLASS backend's codegen: ``codegen(functions, options, constant_names)`` (spec/backends.md
sections 6, 7, 16 and 17.1).

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
2. **Elementwise composites** (:mod:`byocc.backends.cuda.elementwise`): one fused kernel.
3. Anything else is a :class:`~byocc.backends.codegen.CodegenError` naming the function, the
   composite and the first unsupported op.

Scratch: the wrapper's temporaries plus the largest step region (a GEMM step's is
:func:`.gemm_plan.step_scratch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from byocc.ir import Function
from byocc.ir.prim import dim_text

from ..codegen import CodegenError
from ..codegen import EntryPoint
from ..codegen import GeneratedModule
from ..codegen import SourceFile
from ..codegen import TensorSpec
from ..codegen import Variant
from ..cuda import generic
from ..cuda.cxx import c_identifier
from ..cuda.elementwise import elementwise_plan
from ..cuda.elementwise import first_unsupported_op
from ..cuda.elementwise import is_elementwise
from ..cuda.elementwise import step_code as elementwise_step_code
from ..cuda.wrapper import Wrapper
from ..cuda.wrapper import WrapperContext
from ..cuda.wrapper import emit_wrapper
from ..cuda.wrapper import itemsize
from ..cuda.wrapper import shape_text
from ..program import CompositeCall
from ..program import OffloadedProgram
from ..program import ValueRef
from ..program import gemm_step
from ..program import offloaded_program
from ..program import resolve
from ..program import static_numel
from ..program import symbolic_positions
from . import gemm_plan
from .backend import OPTIONS
from .gemm_step import step_code as gemm_wrapper_code
from .gemm_step import step_kernels

BACKEND = "cutlass"


# --------------------------------------------------------------------------- GEMM steps
# The GEMM step lives in .gemm_plan (plan, tiers, manifest records, scratch need) and
# .gemm_step (wrapper code, kernel units); the names below keep the per-function code's calls.
Tier = gemm_plan.Tier
GemmPlan = gemm_plan.GemmPlan
Size = gemm_plan.Size
classify = gemm_plan.classify
plan_gemm = gemm_plan.plan_gemm
shape_text_of = gemm_plan.shape_text_of
gemm_step_scratch = gemm_plan.step_scratch
_round_up = gemm_plan.round_up
_impl_name = gemm_plan.impl_name


def _variant(tier: Tier, plan: GemmPlan | None = None) -> Variant:
    return gemm_plan.variant(tier)


def gemm_step_code(plan: GemmPlan, index: int, ctx: WrapperContext) -> str:
    return gemm_wrapper_code(plan, ctx)


def gemm_units(plan: GemmPlan) -> list[SourceFile]:
    return [k.source for k in step_kernels(plan)]


def gemm_declarations(plan: GemmPlan) -> list[str]:
    return [k.declaration for k in step_kernels(plan)]


# --------------------------------------------------------------------------- per function
def _plan_call(program: OffloadedProgram, i: int, call: CompositeCall, options: dict):
    where = f"function {program.symbol}, composite {call.composite}"
    step = gemm_step(call.func)
    if step is not None:
        return plan_gemm(step, call, where, options)
    if is_elementwise(call.func):
        return elementwise_plan(call.func, where)
    op = first_unsupported_op(call.func) or "no supported operator"
    raise CodegenError(f"{where}: the cutlass backend cannot generate code for this composite "
                       f"(first unsupported op: {op})")


def _header_lines(program: OffloadedProgram, plans: Sequence) -> list:
    lines = [f"Composites ({len(program.calls)} call{'s' if len(program.calls) != 1 else ''}, in order):"]
    for i, (call, plan) in enumerate(zip(program.calls, plans)):
        lines.append(f"  step {i}: {call.composite} -> {call.sinfo.dtype} {shape_text(call.sinfo)}")
        if isinstance(plan, GemmPlan):
            st = plan.step
            lines.append(f"    out = {st.describe()}")
            lines.append(f"    GEMM M={dim_text(plan.M)} N={dim_text(plan.N)} K={dim_text(plan.K)} "
                         f"batch={plan.case}, B {plan.layout}, {st.lhs_sinfo.dtype} x {st.rhs_sinfo.dtype} -> "
                         f"{plan.out_dtype} (accumulate {plan.acc_dtype})")
            if st.bias is not None:
                lines.append(f"    bias {shape_text(st.bias_sinfo)}: {plan.bias_class}")
            if st.residual is not None:
                lines.append(f"    residual {shape_text(st.residual_sinfo)}: {plan.residual_class}")
            for tier in plan.tiers:
                if tier.arch == "generic":
                    lines.append("    variant generic_simt (fp32/int32 accumulation, generic epilogue fused)")
                else:
                    c = tier.cfg
                    lines.append(f"    variant {_impl_name(tier)} {c.path} align A {c.align_a} B {c.align_b} D {c.align_d}"
                                 f"{'' if tier.fused else ' + generic epilogue'}")
        else:
            lines.append(f"    elementwise {plan.name}: {plan.formula}")
    return lines


def _roles(program: OffloadedProgram, plans: Sequence) -> dict:
    roles: dict[int, tuple[str, str | None, str]] = {}
    for call, plan in zip(program.calls, plans):
        if isinstance(plan, GemmPlan):
            st = plan.step
            items = [("lhs", st.lhs, None, "row_major"),
                     ("rhs", st.rhs, None, "col_major_nk" if plan.step.transposed and plan.layout == "tn"
                      and plan.materialize_axes is None else "row_major"),
                     ("bias", st.bias, plan.bias_class, "row_major"),
                     ("residual", st.residual, plan.residual_class, "row_major")]
            for role, operand, cls, layout in items:
                if operand is None:
                    continue
                ref = resolve(call, operand)
                if ref.kind == "param" and ref.index not in roles:
                    roles[ref.index] = (role, cls, layout)
        else:
            for inp in plan.inputs:
                if inp.param is not None:
                    ref = call.args[inp.param]
                    if ref.kind == "param" and ref.index not in roles:
                        roles[ref.index] = ("input", None, "row_major")
    return roles


def _dims_json(shape) -> tuple:
    return tuple(d if isinstance(d, int) else dim_text(d) for d in shape)


def _function(symbol: str, func: Function, options: dict, constant_names: dict, units: dict) -> EntryPoint:
    c_identifier(symbol, "global symbol")
    program = offloaded_program(symbol, func, constant_names)
    if not program.calls:
        raise CodegenError(f"function {symbol}: no composite call to generate")
    plans = [_plan_call(program, i, call, options) for i, call in enumerate(program.calls)]
    includes = [f'#include "{generic.HEADER_PATH.removeprefix("src/")}"', '#include "byocc_gemm.h"']
    decls: list[str] = []
    kernel_paths: list[str] = []
    for plan in plans:
        if isinstance(plan, GemmPlan):
            for unit in gemm_units(plan):
                units[unit.path] = unit
                kernel_paths.append(unit.path)
            decls.extend(gemm_declarations(plan))
        else:
            units[plan.source.path] = plan.source
            kernel_paths.append(plan.source.path)
            decls.append(plan.declaration)
    decls = list(dict.fromkeys(decls))
    scratch_sizes: list[Size] = []

    def step_code(i: int, call: CompositeCall, ctx: WrapperContext) -> str:
        plan = plans[i]
        if isinstance(plan, GemmPlan):
            return gemm_step_code(plan, i, ctx)
        return elementwise_step_code(plan, call, ctx)

    def step_scratch(i: int, call: CompositeCall, ctx: WrapperContext) -> str:
        plan = plans[i]
        size = gemm_step_scratch(plan, ctx) if isinstance(plan, GemmPlan) else Size.zero()
        scratch_sizes.append(size)
        return size.c if size.value != 0 else "0"

    header = _header_lines(program, plans)
    # The prototypes go with the includes: emit_wrapper's prelude sits in an anonymous
    # namespace, which would give the kernel entry points internal linkage.
    includes.append("")
    includes.extend(decls)
    text = emit_wrapper(Wrapper(program, header, includes, "", step_code, step_scratch))
    source_path = f"src/funcs/{symbol}.cu"
    units[source_path] = SourceFile(source_path, text, "light")
    # scratch: the wrapper's temporaries + the largest step region (as scratch_layout)
    ctx = WrapperContext(program, {})
    temps_total: Size = Size.zero()
    for call in program.calls:
        ref = ValueRef("temp", call.result)
        if ctx.is_output(ref):
            continue
        sinfo = program.temps[call.result]
        n = static_numel(sinfo.shape)
        text_expr = "round_up(" + " * ".join([dim_text(d) for d in sinfo.shape] + [str(itemsize(sinfo.dtype))]) + ")"
        temps_total = temps_total + Size("", text_expr, None if n is None else _round_up(n * itemsize(sinfo.dtype)))
    step_max: int | None = 0
    step_texts = []
    for s in scratch_sizes:
        if s.value is None:
            step_max = None
        elif step_max is not None:
            step_max = max(step_max, s.value)
        if s.value != 0:
            step_texts.append(s.text)
    if temps_total.value is not None and step_max is not None:
        scratch_bytes: int | None = temps_total.value + step_max
        scratch_expr = None
    else:
        scratch_bytes = None
        parts = [temps_total.text] if temps_total.value != 0 else []
        if step_texts:
            parts.append(step_texts[0] if len(step_texts) == 1 else f"max({', '.join(step_texts)})")
        scratch_expr = " + ".join(parts) or "0"
    # manifest entry
    roles = _roles(program, plans)
    args = []
    for i, p in enumerate(program.params):
        role, cls, layout = roles.get(i, ("input", None, "row_major"))
        si = p.struct_info
        args.append(TensorSpec(p.name_hint, role, si.dtype, _dims_json(si.shape), layout=layout,
                               align_bytes=itemsize(si.dtype), operand_class=cls))
    outputs = tuple(TensorSpec(f"output{i}", "output", s.dtype, _dims_json(s.shape))
                    for i, s in enumerate(program.output_sinfo))
    tensors = [p.struct_info for p in program.params] + list(program.output_sinfo)
    symbols = {k: tuple(tuple(x) for x in v) for k, v in symbolic_positions(tensors).items()}
    variants: list[Variant] = []
    steps = []
    for call, plan in zip(program.calls, plans):
        if isinstance(plan, GemmPlan):
            vs = [_variant(t, plan) for t in plan.tiers]
            st = plan.step
            steps.append({"composite": call.composite, "kind": "gemm", "formula": st.describe(),
                          "batch": plan.case, "b_layout": plan.layout,
                          "bias_class": plan.bias_class, "residual_class": plan.residual_class,
                          "accumulator": plan.acc_dtype, "variants": [v.to_json() for v in vs]})
        else:
            vs = [Variant("sm_80", "elementwise", {"kernel": plan.source.path})]
            steps.append({"composite": call.composite, "kind": "elementwise", "formula": plan.formula,
                          "variants": [v.to_json() for v in vs]})
        for v in vs:
            if v not in variants:
                variants.append(v)
    attrs: dict[str, Any] = {}
    if len(plans) == 1 and isinstance(plans[0], GemmPlan):
        st = plans[0].step
        attrs = {"activation": st.act, "transposed_rhs": st.transposed, "accumulator": plans[0].acc_dtype,
                 "gelu": "erf" if st.act == "gelu" else None, "residual_op": st.residual_op,
                 "post": st.post}
    constants = ()
    if program.constants:
        from ..codegen import ConstantSpec

        constants = tuple(ConstantSpec(name, c.struct_info.dtype, _dims_json(c.struct_info.shape))
                          for name, c in program.constants)
    return EntryPoint(
        symbol=symbol, backend=BACKEND, composites=program.composites, source_file=source_path,
        args=tuple(args), outputs=outputs, kernel_sources=tuple(dict.fromkeys(kernel_paths)),
        symbols=symbols, attrs=attrs, scratch_bytes=scratch_bytes, scratch_expr=scratch_expr,
        variants=tuple(variants), constants=constants, steps=tuple(steps))


def codegen(functions, options, constant_names) -> list[GeneratedModule]:
    """The CUTLASS codegen (RunCodegen's contract, :mod:`byocc.backends.codegen`): one
    GeneratedModule with an entry per function; CodegenError on the first composite that
    cannot be generated (nothing is returned then)."""
    options = OPTIONS.resolve(options)
    units: dict[str, SourceFile] = {}
    entries = []
    for symbol, func in functions:
        entries.append(_function(symbol, func, options, dict(constant_names or {}), units))
    units[generic.HEADER_PATH] = generic.header_source()
    sources = tuple(units[p] for p in sorted(units))
    needs_cutlass = any(s.unit in ("sm90", "sm80") for s in sources)
    return [GeneratedModule(BACKEND, tuple(entries), sources, needs_cutlass=needs_cutlass,
                            options=OPTIONS.to_json(options))]


#: Composite families (pattern names after ``cutlass.``) whose code this codegen does not
#: generate yet.
_NOT_GENERATED = ("conv2d", "decode_matmul", "attention", "stacked_attention", "layer_norm", "rms_norm")


def supports(composite: str) -> bool:
    """Whether this codegen generates code for composite ``composite`` (a pattern name): the
    GEMM family (``matmul*``) and elementwise composites; convolutions, decode matmuls,
    attention and norms are refused (a CodegenError naming the composite)."""
    return not composite.partition(".")[2].startswith(_NOT_GENERATED)


__all__ = ["GemmPlan", "Tier", "classify", "codegen", "plan_gemm"]
