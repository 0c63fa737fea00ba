"""One offloaded function from its backend's steps: the wrapper TU and the manifest entry.

A backend describes itself with a :class:`FunctionCodegen` (its name, the includes and compute
capabilities of its wrappers, and ``plan``, which turns one composite call into a
:class:`~.step.Step`). :func:`generate_function` does the rest, the same way for every
backend: it reads the function as an :class:`~byocc.backends.program.OffloadedProgram` (a
composite of matmuls and elementwise ops that is not one GEMM split into one call per piece,
:mod:`.split`), plans every call, lays out the scratch once (:func:`~.scratch.scratch_layout`), renders the wrapper
(:func:`~.wrapper.emit_wrapper`) and builds the :class:`~byocc.backends.codegen.EntryPoint`
(argument specs from the steps' operand roles, symbols, constants, scratch, variants, steps).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass

from byocc.ir import Function
from byocc.ir.prim import dim_text
from byocc.transform.c_symbols import export_symbols
from byocc.transform.c_symbols import is_c_identifier

from ..codegen import CodegenError
from ..codegen import ConstantSpec
from ..codegen import EntryPoint
from ..codegen import SourceFile
from ..codegen import TensorSpec
from ..codegen import Variant
from ..dtypes import itemsize
from ..program import CompositeCall
from ..program import GemmStep
from ..program import OffloadedProgram
from ..program import offloaded_program
from ..program import symbolic_positions
from .cxx import c_identifier
from .scratch import ScratchLayout
from .scratch import scratch_layout
from .split import split_composites
from .step import Operand
from .step import Step
from .wrapper import WrapperContext
from .wrapper import emit_wrapper
from .wrapper import wrapper_context

#: ``plan(program, index, call, ctx)``: the step of composite call ``index``.
PlanCall = Callable[[OffloadedProgram, int, CompositeCall, WrapperContext], Step]


@dataclass(frozen=True)
class FunctionCodegen:
    """What a backend contributes to each of its functions besides the steps' own parts."""

    backend: str
    plan: PlanCall
    title: Callable[[int], str]
    """The wrapper header's first line, given the number of steps."""
    includes: tuple[str, ...] = ()
    """``#include`` lines of the wrapper after byocc's own header."""
    no_calls: str = "function {symbol}: no composite call to generate"
    """The CodegenError of a function that calls no composite (``{symbol}`` is filled in)."""
    compute_capabilities: tuple[int, ...] = (8, 9)
    """Compute-capability majors the backend has kernels for: 9.x takes the sm_90a variants
    where their run-time checks pass, 8.x the sm_80 ones; on any other device the function
    returns BYOCC_E_ARCH before its first step."""
    pattern_ranks: Callable[[tuple[str, ...]], tuple] | None = None
    """The entry's ``pattern_ranks`` for its composites (None: left empty)."""
    keeps_gemm: Callable[[GemmStep], bool] | None = None
    """Whether the backend's GEMM computes a composite of the GEMM reading whole (None: every
    one); a composite it does not is split into its GEMM and a fused elementwise step
    (:mod:`.split`), e.g. cuBLASLt without a SiLU or residual epilogue."""


@dataclass(frozen=True)
class GeneratedFunction:
    entry: EntryPoint
    source: SourceFile
    """The wrapper TU, ``src/funcs/<symbol>.cu``."""
    units: tuple[SourceFile, ...]
    """The kernel units its steps call, one per path, in first-use order."""
    layout: ScratchLayout


def exported_functions(functions: Sequence[tuple[str, Function]]) -> list[tuple[str, str, Function]]:
    """``(C symbol, global symbol, function)`` for a codegen's ``functions``: a name that is
    no usable C identifier (a caller other than RunCodegen, which passes the C symbol already)
    gets its short form (:func:`~byocc.transform.c_symbols.export_symbols` over these names);
    the global symbol is the function's own when the given name is its C symbol."""
    exports = export_symbols(name for name, _ in functions if isinstance(name, str))
    out = []
    for name, func in functions:
        own = func.attrs.get("global_symbol")
        relax = own if isinstance(own, str) and not is_c_identifier(own) and is_c_identifier(name) else name
        out.append((exports.get(name, name), relax, func))
    return out


def generate_function(codegen: FunctionCodegen, symbol: str, func: Function,
                      constant_names: Mapping | None = None, global_symbol: str = "") -> GeneratedFunction:
    """Plan, render and describe the offloaded function ``symbol`` (the C symbol; its Relax
    name is ``global_symbol``, default the same); CodegenError (nothing returned) when one of
    its calls cannot be generated."""
    c_identifier(symbol, "global symbol")
    whole = offloaded_program(symbol, func, dict(constant_names or {}))
    program = split_composites(whole, codegen.keeps_gemm)
    if not program.calls:
        raise CodegenError(codegen.no_calls.format(symbol=symbol))
    ctx = wrapper_context(program)
    steps = [codegen.plan(program, i, call, ctx) for i, call in enumerate(program.calls)]
    for call, step in zip(program.calls, steps):
        if len(call.results) != step.results:
            raise CodegenError(
                f"function {symbol}, composite {call.composite}: it returns {len(call.results)} tensors (an "
                f"intermediate used outside the composite) but its {codegen.backend} step writes {step.results}; "
                "several results are generated for elementwise composites and for matmul composites "
                "split into a GEMM and elementwise steps")
    layout = scratch_layout(program, steps, ctx)
    header = [codegen.title(len(steps)), *(line for s in steps for line in s.header)]
    includes = tuple(dict.fromkeys([*codegen.includes, *(i for s in steps for i in s.includes)]))
    text = emit_wrapper(ctx, steps, layout, header=header, includes=includes,
                        compute_capabilities=codegen.compute_capabilities)
    source = SourceFile(f"src/funcs/{symbol}.cu", text, "light")
    units = {u.path: u for s in steps for u in s.units}
    entry = _entry(codegen, program, steps, layout, source.path, tuple(units), whole.composites)
    if global_symbol and global_symbol != symbol:
        entry = dataclasses.replace(entry, global_symbol=global_symbol)
    return GeneratedFunction(entry, source, tuple(units.values()), layout)


def _dims_json(shape) -> tuple:
    return tuple(d if isinstance(d, int) else dim_text(d) for d in shape)


def tensor_specs(program: OffloadedProgram, steps: Sequence[Step]) -> tuple[tuple, tuple]:
    """(argument specs, output specs): a parameter takes the role of the first operand bound
    to it in step order, else ``input``."""
    roles: dict[int, Operand] = {}
    for step in steps:
        for op in step.operands:
            if op.ref.kind == "param" and op.ref.index not in roles:
                roles[op.ref.index] = op
    args = []
    for i, p in enumerate(program.params):
        op = roles.get(i, Operand(None, "input"))
        si = p.struct_info
        args.append(TensorSpec(p.name_hint, op.role, si.dtype, _dims_json(si.shape), op.layout,
                               itemsize(si.dtype), op.operand_class))
    outputs = tuple(TensorSpec(f"output{i}", "output", si.dtype, _dims_json(si.shape), "row_major",
                               itemsize(si.dtype)) for i, si in enumerate(program.output_sinfo))
    return tuple(args), outputs


def _entry(codegen: FunctionCodegen, program: OffloadedProgram, steps: Sequence[Step], layout: ScratchLayout,
           source_path: str, kernel_sources: tuple[str, ...], composites: tuple[str, ...]) -> EntryPoint:
    args, outputs = tensor_specs(program, steps)
    tensors = [p.struct_info for p in program.params] + list(program.output_sinfo)
    symbols = {k: tuple(tuple(x) for x in v) for k, v in symbolic_positions(tensors).items()}
    variants: list[Variant] = []
    for v in (v for step in steps for v in step.variants):
        if v not in variants:
            variants.append(v)
    constants = tuple(ConstantSpec(name, c.struct_info.dtype, _dims_json(c.struct_info.shape))
                      for name, c in program.constants)
    ranks = codegen.pattern_ranks(composites) if codegen.pattern_ranks else ()
    return EntryPoint(
        symbol=program.symbol, backend=codegen.backend, composites=composites,
        source_file=source_path, args=args, outputs=outputs, kernel_sources=kernel_sources,
        pattern_ranks=ranks, symbols=symbols,
        attrs=dict(steps[0].attrs) if len(steps) == 1 else {},  # a merged function: see steps
        scratch_bytes=layout.scratch_bytes, scratch_expr=layout.scratch_expr, variants=tuple(variants),
        constants=constants, steps=tuple(dict(s.record) for s in steps))


__all__ = ["FunctionCodegen", "GeneratedFunction", "PlanCall", "exported_functions", "generate_function",
           "tensor_specs"]
