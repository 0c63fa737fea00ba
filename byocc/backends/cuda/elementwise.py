"""Fused elementwise kernels for composites made only of elementwise and broadcasting ops
(docs/codegen.md#elementwise-composites).

:func:`elementwise_plan` reads a composite's body into an :class:`ElementwisePlan`: the
kernel inputs (composite parameters and non-scalar constants; scalar constants and
``PrimValue`` operands become literals) and one C++ statement per binding. Any op outside
:data:`SUPPORTED_OPS` is a :class:`~byocc.backends.codegen.CodegenError` naming it.

The generated unit ``src/kernels/ew_<hash>.cu`` (``templates/elementwise_kernel.cu.j2``) holds
one kernel: one thread per output element (grid-stride loop), each input read through its
broadcast strides (``byocc::generic::Operand``), the op tree evaluated in fp32 for f16/bf16/f32
values (fp64 for f64, int64 wrapped to the value's dtype after every op for integers), one
store (the loop body: ``templates/elementwise_body.cu.j2``). The hash covers the dtypes and the
loop body, which holds no model-derived names, so equal op trees share one unit.
:func:`elementwise_step` gives the wrapper's step; its call
(``templates/elementwise_step.cu.j2``) binds the shapes at run time, so symbolic dims
broadcast correctly.

Numerics follow the numpy references (:mod:`byocc.ops.reference`, ``reference_nn``): same
formulas (sigmoid as ``0.5*(tanh(x/2)+1)``, erf GELU, NaN-propagating maximum/minimum,
truncating integer division with 0 for a zero divisor), except that a 16-bit intermediate is
not rounded to 16 bits (docs/codegen.md#elementwise-composites); ``astype`` always rounds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import Function
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import TensorStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding

from ..codegen import CodegenError
from ..codegen import SourceFile
from ..codegen import Variant
from ..program import CompositeCall
from ..program import ValueRef
from .elementwise_map import MOVE_OPS
from .elementwise_map import MapPlan
from .elementwise_map import is_mapped_elementwise
from .elementwise_map import map_plan
from .elementwise_map import map_step
from .elementwise_map import needs_map
from .elementwise_ops import SUPPORTED_OPS
from .elementwise_ops import Unsupported
from .elementwise_ops import compute_type
from .elementwise_ops import literal
from .generic import MAX_EW_INPUTS
from .generic import MAX_RANK
from .generic import ctype
from .generic import declaration
from .step import Operand
from .step import Step
from .templates import render
from .wrapper import WrapperContext


# --------------------------------------------------------------------------- plan
@dataclass(frozen=True)
class _Lit:
    """A literal operand (a PrimValue or a scalar constant) and the dtype it came with."""

    value: Any
    dtype: str


@dataclass(frozen=True)
class EwInput:
    """A kernel input: composite parameter ``param`` or a bound constant (``constant``)."""

    param: int | None
    constant: Constant | None
    sinfo: TensorStructInfo


@dataclass(frozen=True)
class ElementwisePlan:
    """One fused elementwise kernel for a composite."""

    name: str  # ew_<hash>
    inputs: tuple[EwInput, ...]
    out_sinfo: TensorStructInfo
    source: SourceFile
    formula: str  # one line, op names and dtypes only

    @property
    def declaration(self) -> str:
        return declaration("elementwise", self.name)


def _dtype_of(sinfo) -> str:
    dt = getattr(sinfo, "dtype", None)
    if not dt:
        raise Unsupported("a value of unknown dtype")
    return dt


@dataclass(frozen=True)
class _Statement:
    """One statement of the kernel body: ``const <type> <name> = ...;``, either the load of
    kernel input ``input`` (of storage type ``storage``) or the value ``expr``."""

    type: str
    name: str
    expr: str | None = None
    input: int | None = None
    storage: str | None = None


class _Body:
    """The kernel body of one composite, built binding by binding: the kernel inputs, each
    loaded once where first used, and one statement per binding."""

    def __init__(self, comp: Function, where: str):
        self.where = where
        self.params = {p: i for i, p in enumerate(comp.params)}
        self.inputs: list[EwInput] = []
        self.input_of: dict[int, int] = {}  # id(param var or constant) -> input index
        self.loaded: set[int] = set()
        self.values: dict[Var, tuple[str, str]] = {}  # var -> (C name, dtype)
        self.statements: list[_Statement] = []
        self.formula: list[str] = []

    def fail(self, what: str) -> CodegenError:
        return CodegenError(f"{self.where}: {what}")

    def _input(self, key: int, make: Callable[[], EwInput], dtype: str) -> tuple[str, str]:
        if key not in self.input_of:
            self.input_of[key] = len(self.inputs)
            self.inputs.append(make())
        k = self.input_of[key]
        if k not in self.loaded:
            self.loaded.add(k)
            self.statements.append(_Statement(compute_type(dtype), f"x{k}", input=k, storage=ctype(dtype)))
        return (f"x{k}", dtype)

    def _constant(self, e: Constant) -> tuple[str, str] | _Lit:
        sinfo = e.struct_info
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
            raise CodegenError(f"{self.where}: constant of unknown shape")
        n = 1
        for d in sinfo.shape:
            n = n * d if isinstance(d, int) else -1
        if n == 1 and e.data is not None:
            import numpy as np

            return _Lit(np.asarray(e.data).reshape(()).item(), sinfo.dtype)
        return self._input(id(e), lambda: EwInput(None, e, sinfo), sinfo.dtype)

    def _param(self, e: Var) -> tuple[str, str]:
        sinfo = e.struct_info
        if id(e) not in self.input_of and (not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None):
            raise CodegenError(f"{self.where}: parameter {e.name_hint} must be a tensor of known shape")
        return self._input(id(e), lambda: EwInput(self.params[e], None, sinfo), sinfo.dtype)

    def leaf(self, e) -> tuple[str, str] | _Lit:
        """The C name and dtype of an operand, or the literal it is."""
        if isinstance(e, Var) and e in self.values:
            return self.values[e]
        if isinstance(e, PrimValue):
            if not isinstance(e.value, (bool, int, float)):
                raise CodegenError(f"{self.where}: a symbolic PrimValue operand is not supported in an "
                                   "elementwise kernel")
            return _Lit(e.value, e.dtype)
        if isinstance(e, Constant):
            return self._constant(e)
        if isinstance(e, Var) and e in self.params:
            return self._param(e)
        raise CodegenError(f"{self.where}: unsupported operand {type(e).__name__} in an elementwise composite")

    def bind(self, k: int, b: VarBinding) -> None:
        """Binding number ``k``: an alias, or one op call evaluated into ``v<k>``."""
        where, value = self.where, b.value
        if isinstance(value, Var):
            got = self.leaf(value)
            if isinstance(got, _Lit):
                raise CodegenError(f"{where}: a binding of a literal is not supported")
            self.values[b.var] = got
            return
        if not isinstance(value, Call) or not isinstance(value.op, Op):
            raise self.fail(f"unsupported binding {type(value).__name__}; the first unsupported op "
                            "is not an operator call")
        op = value.op.name
        if op not in SUPPORTED_OPS:
            raise self.fail(f"cannot generate code: the first unsupported op is {op}")
        out_dtype = _dtype_of(value.struct_info)
        if not isinstance(value.struct_info, TensorStructInfo) or value.struct_info.shape is None:
            raise self.fail(f"{op} has no known tensor shape")
        compute_type(out_dtype)
        got_args = [self.leaf(arg) for arg in value.args]
        # a literal takes the arithmetic type of the tensor operands (else of the result)
        tensor_dts = [g[1] for g in got_args if not isinstance(g, _Lit)]
        lit_dtype = tensor_dts[0] if tensor_dts else out_dtype
        args = [literal(g.value, lit_dtype) if isinstance(g, _Lit) else g[0] for g in got_args]
        dts = [lit_dtype if isinstance(g, _Lit) else g[1] for g in got_args]
        try:
            expr = SUPPORTED_OPS[op](args, dts, out_dtype, value.attrs if value.attrs is not None else {})
        except Unsupported as exc:
            raise self.fail(f"cannot generate code: the first unsupported op is {op} ({exc})") from None
        name = f"v{k}"
        self.statements.append(_Statement(compute_type(out_dtype), name, expr=expr))
        self.formula.append(f"{name} = {op.removeprefix('relax.')}({', '.join(str(x) for x in args)}) : {out_dtype}")
        self.values[b.var] = (name, out_dtype)


def _bindings(comp: Function, where: str) -> list[VarBinding]:
    bindings = []
    for block in comp.body.blocks:
        for b in block.bindings:
            if not isinstance(b, VarBinding):
                raise CodegenError(f"{where}: match_cast is not supported in an elementwise composite")
            bindings.append(b)
    return bindings


def _result(comp: Function, body: _Body, where: str) -> tuple[str, TensorStructInfo]:
    """The C name of the composite's result and its struct info, checked against the kernel's limits."""
    result = comp.body.body
    if not isinstance(result, Var):
        raise CodegenError(f"{where}: an elementwise composite must return a tensor value")
    final = body.leaf(result)
    if isinstance(final, _Lit):
        raise CodegenError(f"{where}: an elementwise composite must not return a constant")
    out_sinfo = result.struct_info
    if not isinstance(out_sinfo, TensorStructInfo) or out_sinfo.shape is None:
        raise CodegenError(f"{where}: the composite's result must be a tensor of known shape")
    if len(out_sinfo.shape) > MAX_RANK:
        raise CodegenError(f"{where}: outputs of rank {len(out_sinfo.shape)} exceed the elementwise "
                           f"kernels' {MAX_RANK}")
    if len(body.inputs) > MAX_EW_INPUTS:
        raise CodegenError(f"{where}: {len(body.inputs)} inputs exceed the elementwise kernels' {MAX_EW_INPUTS}")
    return final[0], out_sinfo


def elementwise_plan(comp: Function, where: str) -> ElementwisePlan | MapPlan:
    """The fused kernel of ``comp`` (the index-mapped one, :mod:`.elementwise_map`, when it
    moves data or returns a tuple); CodegenError (``where``: function and composite) at the
    first op that is not elementwise."""
    if needs_map(comp):
        return map_plan(comp, where)
    body = _Body(comp, where)
    for k, b in enumerate(_bindings(comp, where)):
        body.bind(k, b)
    result, out_sinfo = _result(comp, body, where)
    out_dtype = out_sinfo.dtype
    context = {"statements": body.statements, "out_type": ctype(out_dtype), "result": result}
    # the unit's name is the hash of its loop body and dtypes: equal op trees share one unit
    loop_body = render("cuda/elementwise_body.cu.j2", **context).removesuffix("\n")
    in_desc = ", ".join(f"x{k}: {inp.sinfo.dtype}" for k, inp in enumerate(body.inputs))
    digest = hashlib.sha256((in_desc + "\n" + out_dtype + "\n" + loop_body).encode()).hexdigest()[:16]
    name = f"ew_{digest}"
    formula_text = "; ".join(body.formula) if body.formula else result
    text = render("cuda/elementwise_kernel.cu.j2", name=name, inputs=in_desc, out_dtype=out_dtype,
                  formula=formula_text, **context)
    return ElementwisePlan(name, tuple(body.inputs), out_sinfo, SourceFile(f"src/kernels/{name}.cu", text, "light"),
                           formula_text)


def is_elementwise(comp: Function) -> bool:
    """Every binding of ``comp`` is a call of an op in :data:`SUPPORTED_OPS` (or an alias), or
    the composite is one for the index-mapped kernel (:func:`.elementwise_map.is_mapped_elementwise`)."""
    if needs_map(comp):
        return is_mapped_elementwise(comp)
    for block in comp.body.blocks:
        for b in block.bindings:
            if not isinstance(b, VarBinding):
                return False
            v = b.value
            if isinstance(v, Var):
                continue
            if not isinstance(v, Call) or not isinstance(v.op, Op) or v.op.name not in SUPPORTED_OPS:
                return False
    return True


def first_unsupported_op(comp: Function) -> str | None:
    """Name of the first op call in ``comp`` that neither the elementwise kernels nor a GEMM
    step computes (a callee that is no operator is reported by its kind, ``GlobalVar``);
    ``relax.matmul`` only when the matmuls are all there is to blame."""
    matmul = None
    for block in comp.body.blocks:
        for b in block.bindings:
            v = getattr(b, "value", None)
            if isinstance(v, Call):
                if isinstance(v.op, Op):
                    if v.op.name == "relax.matmul":
                        matmul = matmul or v.op.name
                    elif v.op.name not in SUPPORTED_OPS and v.op.name not in MOVE_OPS:
                        return v.op.name
                else:
                    return type(v.op).__name__
    return matmul


# --------------------------------------------------------------------------- wrapper code
def _input_ref(plan: ElementwisePlan, k: int, call: CompositeCall) -> ValueRef:
    inp = plan.inputs[k]
    if inp.param is not None:
        return call.args[inp.param]
    return next(r for c, r in call.constants if c is inp.constant)


def step_code(plan: ElementwisePlan, call: CompositeCall, ctx: WrapperContext) -> str:
    """The wrapper's code for one elementwise composite call."""
    shape = call.sinfo.shape
    inputs = [{"dims": [ctx.dim(d) for d in inp.sinfo.shape] or ["int64_t(1)"], "rank": len(inp.sinfo.shape),
               "ptr": ctx.ptr(_input_ref(plan, k, call))} for k, inp in enumerate(plan.inputs)]
    return render("cuda/elementwise_step.cu.j2", shape=[ctx.dim(d) for d in shape], numel=ctx.numel(shape),
                  out=ctx.ptr(ValueRef("temp", call.result)), inputs=inputs, kernel=plan.name)


def elementwise_step(plan: ElementwisePlan | MapPlan, call: CompositeCall, ctx: WrapperContext) -> Step:
    """The :class:`~.step.Step` of one elementwise composite call: one fused kernel, no scratch."""
    if isinstance(plan, MapPlan):
        return map_step(plan, call, ctx)
    variants = (Variant("sm_80", "elementwise", {"kernel": plan.source.path}),)
    return Step(
        call.composite, step_code(plan, call, ctx), units=(plan.source,), declarations=(plan.declaration,),
        header=(f"elementwise {plan.name}: {plan.formula}",),
        record={"composite": call.composite, "kind": "elementwise", "formula": plan.formula,
                "variants": [v.to_json() for v in variants]},
        variants=variants,
        operands=tuple(Operand(call.args[inp.param], "input") for inp in plan.inputs if inp.param is not None))


__all__ = [
    "ElementwisePlan", "EwInput", "SUPPORTED_OPS", "compute_type", "elementwise_plan",
    "elementwise_step", "first_unsupported_op", "is_elementwise", "step_code",
]
