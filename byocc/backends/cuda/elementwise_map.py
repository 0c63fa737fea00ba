"""Index-mapped elementwise kernels: elementwise composites with data-movement ops or several
outputs (docs/codegen.md#data-movement-and-several-outputs).

The fused kernel of :mod:`.elementwise` reads every input at the output's index (through
broadcast strides). A composite that also moves data (``permute_dims``, ``reshape``,
``flatten``, ``concat``, ``strided_slice``, ``split`` with ``TupleGetItem``, ``broadcast_to``,
``expand_dims``, ``squeeze``) or returns a tuple (TVM returns an intermediate used outside
the composite as an extra field) gets one kernel of this module instead: each thread takes
one element of the outputs' index space and evaluates the composite *at that index*: an
elementwise op evaluates its operands at the broadcast-reduced index, a data-movement op at
the source index it maps to (a permutation of the coordinates, the same linear index for a
reshape, an offset along the axis for a slice, a branch per input for a concat), an input is
loaded at the linear index in its own shape. No op is materialised; a value asked for at two
indices is computed twice, a value asked for twice at one index once. All outputs of the
composite are written by the one kernel (outputs of one shape share one evaluation).

The generated unit ``src/kernels/ewm_<hash>.cu`` (``templates/elementwise_map.cu.j2``) holds
``<name>_element(const EwMapArgs&, int64_t i)`` (``__host__ __device__``: the tests run it on
the host), the kernel and ``<name>_run``; the argument block is ``csrc/byocc_ewmap.h``. Static
dims are literals in the body, symbolic ones read ``a.dims[k]`` (the wrapper fills them from
the arguments' shapes), so the hash (dtypes and body) names equal kernels equally.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from byocc.ir import Function
from byocc.ir import TensorStructInfo
from byocc.ir.prim import dim_text

from ..codegen import CodegenError
from ..codegen import SourceFile
from ..codegen import Variant
from ..program import CompositeCall
from ..program import ValueRef
from .elementwise_index import HEADER_PATH
from .elementwise_index import INCLUDE
from .elementwise_index import MAX_OUTPUTS
from .elementwise_index import MOVE_OPS
from .elementwise_index import MapInput
from .elementwise_index import Planner
from .elementwise_index import drop_unused_indices
from .elementwise_index import is_mapped_elementwise
from .elementwise_index import needs_map
from .elementwise_index import result_fields
from .elementwise_index import same_dim
from .generic import ctype
from .generic import declaration
from .step import Operand
from .step import Step
from .templates import fixed_source
from .templates import render

_HEADER = "cuda/byocc_ewmap.h"


def header_source() -> SourceFile:
    return SourceFile(HEADER_PATH, fixed_source(_HEADER), "header")


def uses_map(paths) -> bool:
    """Whether any of the unit ``paths`` is an index-mapped elementwise kernel."""
    return any(str(p).startswith("src/kernels/ewm_") for p in paths)


@dataclass(frozen=True)
class MapPlan:
    """One index-mapped kernel for a composite."""

    name: str  # ewm_<hash>
    inputs: tuple[MapInput, ...]
    out_sinfos: tuple[TensorStructInfo, ...]
    dims: tuple  # symbolic IR dims read through a.dims[k], in order
    source: SourceFile
    formula: tuple[str, ...]

    @property
    def declaration(self) -> str:
        return declaration("elementwise_map", self.name)


def map_plan(comp: Function, where: str) -> MapPlan:
    """The index-mapped kernel of ``comp``; CodegenError (``where``: function and composite)
    at the first op it cannot generate."""
    fields = result_fields(comp)
    if not fields:
        raise CodegenError(f"{where}: the composite returns nothing")
    if len(fields) > MAX_OUTPUTS:
        raise CodegenError(f"{where}: {len(fields)} results exceed the elementwise kernels' {MAX_OUTPUTS}")
    p = Planner(comp, where)
    sinfos = []
    for f in fields:
        si = getattr(f, "struct_info", None)
        if not isinstance(si, TensorStructInfo) or si.shape is None or not si.dtype:
            raise CodegenError(f"{where}: every result must be a tensor of known shape and dtype (got {si!s})")
        sinfos.append(si)
    groups: list[tuple[tuple, list[int]]] = []
    for k, si in enumerate(sinfos):
        for shape, members in groups:
            if len(shape) == len(si.shape) and all(same_dim(a, b) for a, b in zip(shape, si.shape)):
                members.append(k)
                break
        else:
            groups.append((tuple(si.shape), [k]))
    numels = [p.numel(shape) for shape, _ in groups]
    for (shape, members), numel in zip(groups, numels):
        guarded = len(groups) > 1
        if guarded:
            p.emit(f"if (i < {numel}) {{")
            p.indent += 1
        p.memo.append({})
        ix = p.index(shape, linear="i")
        for k in members:
            got, _ = p.tensor(fields[k], ix)
            st = ctype(sinfos[k].dtype)
            p.emit(f"static_cast<{st}*>(a.out[{k}])[i] = Num<{st}>::store({got});")
        p.memo.pop()
        if guarded:
            p.indent -= 1
            p.emit("}")
    body = "\n".join(drop_unused_indices(p.lines))
    in_desc = ", ".join(f"in{k}: {inp.sinfo.dtype} {_shape_text(inp.sinfo.shape)}" for k, inp in enumerate(p.inputs))
    out_desc = ", ".join(f"out{k}: {si.dtype} {_shape_text(si.shape)}" for k, si in enumerate(sinfos))
    digest = hashlib.sha256((in_desc + "\n" + out_desc + "\n" + body).encode()).hexdigest()[:16]
    name = f"ewm_{digest}"
    formula = tuple(p.formula) or ("copy",)
    text = render("cuda/elementwise_map.cu.j2", name=name, inputs=in_desc, outputs=out_desc, formula=formula,
                  body=body)
    return MapPlan(name, tuple(p.inputs), tuple(sinfos), tuple(p.dims),
                   SourceFile(f"src/kernels/{name}.cu", text, "light"), formula)


def _shape_text(shape) -> str:
    return "(" + ", ".join(dim_text(d) for d in shape) + ")"


# --------------------------------------------------------------------------- wrapper code
def _input_ref(plan: MapPlan, k: int, call: CompositeCall) -> ValueRef:
    inp = plan.inputs[k]
    if inp.param is not None:
        return call.args[inp.param]
    return next(r for c, r in call.constants if c is inp.constant)


def step_code(plan: MapPlan, call: CompositeCall, ctx) -> str:
    """The wrapper's code for one index-mapped elementwise call (``ctx``: the wrapper context)."""
    results = call.results
    if len(results) != len(plan.out_sinfos):
        raise CodegenError(f"composite {call.composite}: {len(plan.out_sinfos)} results planned, "
                           f"{len(results)} in the call")
    numels = [ctx.numel(si.shape) for si in plan.out_sinfos]
    numel = numels[0]
    for n in numels[1:]:
        if n != numel:
            numel = f"({numel} > {n} ? {numel} : {n})"
    return render("cuda/elementwise_map_step.cu.j2", numel=numel, dims=[ctx.dim(d) for d in plan.dims],
                  outs=[ctx.ptr(ValueRef("temp", r)) for r in results],
                  ins=[ctx.ptr(_input_ref(plan, k, call)) for k in range(len(plan.inputs))], kernel=plan.name)


def map_step(plan: MapPlan, call: CompositeCall, ctx) -> Step:
    """The :class:`~.step.Step` of one index-mapped elementwise call: one kernel, no scratch."""
    variants = (Variant("sm_80", "elementwise", {"kernel": plan.source.path}),)
    formula = "; ".join(plan.formula)
    return Step(
        call.composite, step_code(plan, call, ctx), units=(plan.source,), declarations=(plan.declaration,),
        includes=(INCLUDE,),
        header=(f"elementwise (index-mapped) {plan.name}: {formula}",
                f"{len(plan.inputs)} input(s), {len(plan.out_sinfos)} output(s)"),
        record={"composite": call.composite, "kind": "elementwise", "formula": formula, "index_mapped": True,
                "outputs": len(plan.out_sinfos), "variants": [v.to_json() for v in variants]},
        variants=variants, results=len(plan.out_sinfos),
        operands=tuple(Operand(call.args[inp.param], "input") for inp in plan.inputs if inp.param is not None))


__all__ = ["HEADER_PATH", "INCLUDE", "MOVE_OPS", "MapPlan", "header_source", "is_mapped_elementwise", "map_plan",
           "map_step", "needs_map", "result_fields", "step_code", "uses_map"]
