"""One layer_norm or rms_norm step of a CUTLASS function (docs/codegen.md#layer_norm-and-rms_norm).

:func:`norm_call` recognises the composite *by its body* (one binding, returned):
``R.nn.layer_norm(x, gamma, beta)``, ``R.nn.rms_norm(x, weight)`` or
``R.call_tir(<prim_func whose name contains rms_norm>, (x, weight))`` (TVM's CUTLASS table).
:func:`plan_norm` checks it (the last axis only, center and scale, one dtype, gamma/beta/weight
of shape ``(N,)``, the call's output shaped and typed as its input) and picks the epsilon:
the IR attribute (``"ir"``); for the call_tir form the constant the called prim_func adds to
the mean of squares, when its text shows exactly one (``"prim_func"``), else the ``rms_eps``
codegen option (``"option"``). :func:`norm_step` renders ``templates/norm_step.cu.j2``:
rows (the product of the leading dims, symbolic ones at run time) and N, one call of the
dtype's entry point in ``src/kernels/norm_<tag>.cu``, its ``cudaError_t`` mapped to
``BYOCC_E_CUDA``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import Op
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.prim import dim_text
from byocc.ir.prim import dims_equal
from byocc.ir.tir import PrimFunc
from byocc.transform import codegen_module

from ..codegen import CodegenError
from ..codegen import Variant
from ..cuda import norm
from ..cuda.step import Operand
from ..cuda.step import Step
from ..cuda.step import dims_text
from ..cuda.templates import render
from ..cuda.wrapper import WrapperContext
from ..program import CompositeCall
from ..program import ValueRef
from ..program import resolve
from ..program import static_numel

#: Most rows one launch takes (the grid's x dimension).
MAX_ROWS = 2**31 - 1
#: Operand roles in the manifest, per kind.
ROLES = {"layer_norm": ("data", "gamma", "beta"), "rms_norm": ("data", "weight")}

#: A float constant of TVMScript (``T.float32(1.0000000000000001e-05)``).
_FLOAT = re.compile(r"T\.float(?:16|32|64)\(\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*\)")
_SQRT = re.compile(r"\bT\.r?sqrt\(")


@dataclass(frozen=True)
class NormPlan:
    kind: str  # "layer_norm" | "rms_norm"
    call: CompositeCall
    operands: tuple  # composite operands (parameter index or Constant): x, gamma[, beta] / x, weight
    dtype: str
    shape: tuple  # x's (and the output's)
    eps: float
    eps_source: str  # "ir" | "prim_func" | "option"
    prim_func: str | None = None  # the call_tir callee's name

    @property
    def rows(self) -> tuple:
        return tuple(self.shape[:-1])

    @property
    def n(self) -> Any:
        return self.shape[-1]


def _single_call(comp: Function) -> Call | None:
    """The composite's one bound call when it returns it, else None."""
    bindings = [b for block in comp.body.blocks for b in block.bindings]
    if len(bindings) != 1 or not isinstance(bindings[0], VarBinding):
        return None
    b = bindings[0]
    if comp.body.body is not b.var or not isinstance(b.value, Call):
        return None
    return b.value


def norm_call(comp: Function) -> tuple[str, Call] | None:
    """``(kind, call)`` when ``comp`` is a layer_norm or rms_norm composite, else None."""
    call = _single_call(comp)
    if call is None or not isinstance(call.op, Op):
        return None
    name = call.op.name
    if name == "relax.nn.layer_norm":
        return "layer_norm", call
    if name == "relax.nn.rms_norm":
        return "rms_norm", call
    if (name == "relax.call_tir" and call.args and isinstance(call.args[0], GlobalVar)
            and "rms_norm" in call.args[0].name_hint):
        return "rms_norm", call
    return None


def _is_addend(text: str, start: int, end: int) -> bool:
    """The constant at ``text[start:end]`` is an operand of a ``+`` (``a + c``, ``c + a``),
    not of a ``*`` or ``/`` that binds tighter (``a * c + b``)."""
    before = text[:start].rstrip()[-1:]
    after = text[end:].lstrip()[:1]
    return (before == "+" and after not in ("*", "/")) or (after == "+" and before not in ("*", "/"))


def prim_func_epsilon(text: str) -> float | None:
    """The epsilon of an rms_norm prim_func in the standard form: its text takes a square
    root and adds exactly one float constant (``mean + T.float32(1e-05)``), a positive
    finite one; None for anything else (no constant, several, no sqrt/rsqrt)."""
    if not _SQRT.search(text):
        return None
    found = [m.group(1) for m in _FLOAT.finditer(text) if _is_addend(text, m.start(), m.end())]
    if len(found) != 1:
        return None
    eps = float(found[0])
    return eps if math.isfinite(eps) and eps > 0 else None


def _callee_text(gv: GlobalVar) -> str | None:
    mod = codegen_module()
    if mod is None or gv.name_hint not in mod:
        return None
    func = mod[gv.name_hint]
    return func.source if isinstance(func, PrimFunc) else None


def _operands(kind: str, call: Call, comp: Function, where: str) -> tuple:
    params = {p: i for i, p in enumerate(comp.params)}
    if call.op.name == "relax.call_tir":
        if len(call.args) != 2 or not isinstance(call.args[1], Tuple) or len(call.args[1].fields) != 2:
            raise CodegenError(f"{where}: the rms_norm call_tir must take (x, weight) and no TIR vars")
        args = call.args[1].fields
    else:
        args = call.args
    out = []
    for role, e in zip(ROLES[kind], args):
        if isinstance(e, Var) and e in params:
            out.append(params[e])
        elif isinstance(e, Constant):
            out.append(e)
        else:
            raise CodegenError(f"{where}: the {role} of {kind} is not a parameter or a constant of the composite")
    return tuple(out)


def _sinfo(comp: Function, operand) -> TensorStructInfo:
    return operand.struct_info if isinstance(operand, Constant) else comp.params[operand].struct_info


def _same_dim(a, b) -> bool:
    if dims_equal(a, b):
        return True
    return not isinstance(a, int) and not isinstance(b, int) and dim_text(a) == dim_text(b)


def _same_shape(a, b) -> bool:
    return len(a) == len(b) and all(_same_dim(x, y) for x, y in zip(a, b))


def _check_attrs(kind: str, call: Call, rank: int, where: str) -> None:
    """The op's attributes: the last axis only; layer_norm with center and scale."""
    attrs = call.attrs
    if attrs is None or call.op.name == "relax.call_tir":
        return
    axes = [int(a) for a in (attrs.get("axes") or ())]
    if len(axes) != 1 or axes[0] not in (-1, rank - 1):
        raise CodegenError(f"{where}: {kind} over axes {axes}: only the last axis ([-1]) is normalised")
    if kind == "layer_norm" and not (attrs.get("center") and attrs.get("scale")):
        raise CodegenError(f"{where}: layer_norm without center or scale is not supported")


def _check_tensors(kind: str, comp: Function, operands: tuple, call: CompositeCall, where: str) -> TensorStructInfo:
    """Every tensor of one dtype the kernels have; gamma/beta/weight of shape (N,); the
    call's output shaped and typed as its input. Returns x's struct info."""
    sinfos = [_sinfo(comp, op) for op in operands]
    for role, si in zip(ROLES[kind], sinfos):
        if not isinstance(si, TensorStructInfo) or si.shape is None or not si.dtype:
            raise CodegenError(f"{where}: the {role} of {kind} needs a known shape and dtype")
    x = sinfos[0]
    if len(x.shape) < 1:
        raise CodegenError(f"{where}: {kind} of a rank-0 tensor")
    for role, si in zip(ROLES[kind][1:], sinfos[1:]):
        if si.dtype != x.dtype:
            raise CodegenError(f"{where}: the {role} is {si.dtype} and the data {x.dtype}: one dtype is needed")
        if len(si.shape) != 1 or not _same_dim(si.shape[0], x.shape[-1]):
            raise CodegenError(f"{where}: the {role} has shape {dims_text(si.shape)}, not "
                               f"({dim_text(x.shape[-1])}) (N, the last dim of the data)")
    for out in (comp.body.body.struct_info, call.sinfo):  # the composite's result, as called
        if (not isinstance(out, TensorStructInfo) or out.shape is None or out.dtype != x.dtype
                or not _same_shape(out.shape, x.shape)):
            raise CodegenError(f"{where}: the call's output ({out}) differs from the input's shape or dtype "
                               f"({x.dtype} {dims_text(x.shape)})")
    if x.dtype not in norm.NORM_DTYPES:
        raise CodegenError(f"{where}: {kind} of {x.dtype}: byocc's norm kernels take "
                           f"{', '.join(norm.NORM_DTYPES)}")
    rows = static_numel(x.shape[:-1])
    if rows is not None and rows > MAX_ROWS:
        raise CodegenError(f"{where}: {kind} over {rows} rows: at most {MAX_ROWS}")
    return x


def _epsilon(call: Call, options: dict, where: str) -> tuple[float, str]:
    if call.op.name != "relax.call_tir":
        eps = float(call.attrs.get("epsilon"))
        if not math.isfinite(eps):
            raise CodegenError(f"{where}: epsilon {eps} is not finite")
        return eps, "ir"
    text = _callee_text(call.args[0])
    eps = None if text is None else prim_func_epsilon(text)
    if eps is not None:
        return eps, "prim_func"
    return float(options["rms_eps"]), "option"


def plan_norm(comp_call: CompositeCall, where: str, options: dict) -> NormPlan | None:
    """The plan of a norm composite call; None when its composite is not one (``where``
    names the function and composite in every CodegenError)."""
    found = norm_call(comp_call.func)
    if found is None:
        return None
    kind, call = found
    comp = comp_call.func
    operands = _operands(kind, call, comp, where)
    x = _sinfo(comp, operands[0])
    if isinstance(x, TensorStructInfo) and x.shape is not None:
        _check_attrs(kind, call, len(x.shape), where)
    x = _check_tensors(kind, comp, operands, comp_call, where)
    eps, source = _epsilon(call, options, where)
    callee = call.args[0].name_hint if call.op.name == "relax.call_tir" else None
    return NormPlan(kind, comp_call, operands, x.dtype, tuple(x.shape), eps, source, callee)


def _rows_text(plan: NormPlan) -> str:
    return " * ".join(dim_text(d) for d in plan.rows) or "1"


def _describe(plan: NormPlan) -> str:
    source = {"ir": "the IR", "prim_func": f"prim_func {plan.prim_func}",
              "option": "the rms_eps option"}[plan.eps_source]
    return f"{plan.kind} rows={_rows_text(plan)} N={dim_text(plan.n)} {plan.dtype}, eps {plan.eps!r} (from {source})"


def norm_step(plan: NormPlan, ctx: WrapperContext) -> Step:
    """The :class:`~byocc.backends.cuda.step.Step` of one norm call: no scratch, one kernel unit."""
    call = plan.call
    refs = [resolve(call, op) for op in plan.operands]
    unit = norm.norm_unit(plan.dtype)
    entry = norm.entry_name(plan.kind, plan.dtype)
    code = render("cutlass/norm_step.cu.j2", kind=plan.kind, entry=entry, symbol=ctx.program.symbol,
                  describe=_describe(plan), rows=ctx.numel(plan.rows), n=ctx.dim(plan.n),
                  check_rows=static_numel(plan.rows) is None, max_rows=MAX_ROWS, eps=repr(plan.eps),
                  pointers=[ctx.ptr(r) for r in refs], out=ctx.ptr(ValueRef("temp", call.result)))
    variants = (Variant("sm_80", "byocc_norm", {"kernel": unit.path}),)
    facts = {"epsilon": plan.eps, "epsilon_source": plan.eps_source}
    if plan.prim_func is not None:
        facts["prim_func"] = plan.prim_func
    record = {"composite": call.composite, "kind": plan.kind, "dtype": plan.dtype,
              "rows": _rows_text(plan), "n": dim_text(plan.n),
              **facts, "variants": [v.to_json() for v in variants]}
    return Step(call.composite, code.removesuffix("\n"), units=(unit,),
                declarations=(norm.norm_declaration(plan.kind, plan.dtype),), header=(_describe(plan),),
                record=record, variants=variants,
                operands=tuple(Operand(r, role) for r, role in zip(refs, ROLES[plan.kind])),
                attrs={"norm": plan.kind, **facts})


__all__ = ["MAX_ROWS", "NormPlan", "norm_call", "norm_step", "plan_norm", "prim_func_epsilon"]
