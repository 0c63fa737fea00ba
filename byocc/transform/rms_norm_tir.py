"""``R.nn.rms_norm`` as the ``R.call_tir`` of a standard-form ``rms_norm`` prim_func: the
form TVM's LegalizeOps gives the op (topi's rms_norm), which TVM's CUTLASS table matches
(``cutlass.rms_norm`` is ``R.call_tir(<gv whose name contains rms_norm>, (x, weight))``)
and whose text the cutlass codegen reads the epsilon from (docs/partitioning.md#rms_norm-for-cutlass).

byocc does not model TIR: the prim_func is text (:class:`byocc.ir.tir.PrimFunc`). Only the
form :func:`rms_norm_prim_func` writes is recognised (:func:`standard_rms_norm` reads its
shape, dtype and epsilon back and checks that writing them gives the same text, token for
token), so the interpreter can run such a call (``byocc run`` of a partitioned module, the
device run's host reference) without reading TIR.

:func:`rms_norm_to_call_tir` lowers the norms ``byocc partition --recompose`` (on with
``--dtype``) leaves for the cutlass backend: last-axis norms of a static shape of rank 2 or
more, a weight of shape ``(N,)`` in the data's dtype, a dtype the norm kernels take. The
value is the same: the prim_func computes ``x / sqrt(mean(x**2) + eps) * w`` in fp32, as
``R.nn.rms_norm`` does. Linear in the bindings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import TensorStructInfo
from byocc.ir import VarBinding
from byocc.ir.rms_norm_tir import DTYPES
from byocc.ir.rms_norm_tir import RmsNormTir
from byocc.ir.rms_norm_tir import rms_norm_prim_func
from byocc.ir.rms_norm_tir import standard_rms_norm
from byocc.ir.tir import PrimFunc

from .pass_manager import Pass

_SKIP_ATTRS = ("Composite", "Codegen", "Primitive")


def _lowerable(call: Call) -> tuple[tuple[int, ...], str, float] | None:
    """``(shape, dtype, eps)`` of an ``R.nn.rms_norm`` call the prim_func form can take."""
    x, w = call.args
    xs, ws, out = x.struct_info, w.struct_info, call.struct_info
    if not (isinstance(xs, TensorStructInfo) and isinstance(ws, TensorStructInfo) and isinstance(out, TensorStructInfo)):
        return None
    if xs.shape is None or ws.shape is None or out.shape is None or xs.dtype is None:
        return None
    if call.attrs is None or len(xs.shape) < 2 or not all(isinstance(d, int) and d > 0 for d in xs.shape):
        return None
    shape = tuple(d for d in xs.shape if isinstance(d, int))
    if xs.dtype not in DTYPES:
        return None
    axes = [int(a) for a in (call.attrs.get("axes") or ())]
    if axes not in ([-1], [len(shape) - 1]):
        return None
    if ws.dtype != xs.dtype or tuple(ws.shape) != (shape[-1],) or out.dtype != xs.dtype or tuple(out.shape) != shape:
        return None
    eps = float(call.attrs.get("epsilon"))
    return (shape, xs.dtype, eps) if eps > 0 and eps == eps and eps != float("inf") else None


def rms_norm_to_call_tir(mod: IRModule, stats: dict[str, int] | None = None) -> IRModule:
    """``mod`` with every lowerable ``R.nn.rms_norm`` in its (non-composite) functions'
    dataflow blocks an ``R.call_tir`` of a standard-form prim_func (one per shape, dtype and
    epsilon, named ``rms_norm``, ``rms_norm1``, ...); ``mod`` itself when there is none."""
    from byocc.ops import make_call

    prims: dict[tuple, GlobalVar] = {}
    names = set(mod.names())
    new_funcs: dict[str, PrimFunc] = {}
    out = mod
    for name in list(mod.names()):
        func = mod[name]
        if not isinstance(func, Function) or any(k in func.attrs for k in _SKIP_ATTRS):
            continue
        if not isinstance(func.body, SeqExpr):
            continue
        changed = False
        blocks = []
        for block in func.body.blocks:
            if not isinstance(block, DataflowBlock):
                blocks.append(block)
                continue
            bindings = []
            for b in block.bindings:
                v = b.value
                if (isinstance(b, VarBinding) and isinstance(v, Call) and isinstance(v.op, Op)
                        and v.op.name == "relax.nn.rms_norm"):
                    got = _lowerable(v)
                    if got is not None:
                        gv = prims.get(got)
                        if gv is None:
                            base, i = "rms_norm", 0
                            pname = base
                            while pname in names:
                                i += 1
                                pname = f"{base}{i}"
                            names.add(pname)
                            prim = rms_norm_prim_func(*got, name=pname)
                            gv = GlobalVar(pname, prim.struct_info)
                            prims[got] = gv
                            new_funcs[pname] = prim
                        call = make_call("relax.call_tir", [gv, list(v.args)], {"out_ty": v.struct_info})
                        b = VarBinding(b.var, call, b.span)
                        changed = True
                        if stats is not None:
                            stats["rms_norm"] = stats.get("rms_norm", 0) + 1
                bindings.append(b)
            blocks.append(DataflowBlock(tuple(bindings), block.span))
        if changed:
            out = out.with_function(name, Function(func.params, SeqExpr(tuple(blocks), func.body.body, func.body.span),
                                                   func.ret_struct_info, func.is_pure, dict(func.attrs), func.span),
                                    mod.get_global_var(name))
    for gv in prims.values():
        out = out.with_function(gv.name_hint, new_funcs[gv.name_hint], gv)  # type: ignore[arg-type]
    return out


@dataclass(frozen=True)
class RmsNormToCallTIR(Pass):
    """:func:`rms_norm_to_call_tir` as a pass (``byocc partition --recompose`` for cutlass,
    after ``--dtype``'s ToMixedPrecision)."""

    name: ClassVar[str] = "RmsNormToCallTIR"
    opt_level: ClassVar[int] = 0

    def run(self, mod: IRModule) -> IRModule:
        return rms_norm_to_call_tir(mod)


__all__ = ["DTYPES", "RmsNormTir", "RmsNormToCallTIR", "rms_norm_prim_func", "rms_norm_to_call_tir",
           "standard_rms_norm"]
