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

import re
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
from byocc.ir.tir import PrimFunc

from .pass_manager import Pass

#: the dtypes lowered (those of byocc's norm kernels, byocc/backends/cuda/norm.py)
DTYPES = ("float16", "bfloat16", "float32")
_SKIP_ATTRS = ("Composite", "Codegen", "Primitive")


def _index_names(rank: int) -> list[str]:
    """The loop variables: TVM's ``bsz, i, k`` for rank 3; ``ax0 .. k`` otherwise."""
    if rank == 3:
        return ["bsz", "i", "k"]
    return [f"ax{j}" for j in range(rank - 1)] + ["k"]


def _dims(shape: tuple[int, ...]) -> str:
    inner = ", ".join(f"T.int64({d})" for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def _cast32(dtype: str, expr: str) -> str:
    return expr if dtype == "float32" else f'T.Cast("float32", {expr})'


def _num(x: float) -> str:
    """A float constant as TVM prints it (17 significant digits, a point or exponent)."""
    text = format(float(x), ".17g")
    return text if any(c in text for c in ".en") else text + ".0"


def rms_norm_prim_func(shape: tuple[int, ...], dtype: str, eps: float, name: str = "rms_norm") -> PrimFunc:
    """The standard-form prim_func of ``rms_norm(x, w, axes=[-1], epsilon=eps)`` for ``x`` of
    static ``shape`` (rank 2 or more) and ``dtype``, ``w`` of shape ``(shape[-1],)``: a sum
    of squares in fp32 (``Ared_temp``), then ``w * (x / sqrt(sum * (1/N) + eps))`` cast back,
    as TVM's legalization of ``R.nn.rms_norm`` prints it (private; ``name`` is its name)."""
    if len(shape) < 2 or not all(isinstance(d, int) and d > 0 for d in shape):
        raise ValueError(f"rms_norm_prim_func: a static shape of rank >= 2, not {shape}")
    idx = _index_names(len(shape))
    v = [f"v_{n}" for n in idx]
    rows, n = shape[:-1], shape[-1]
    a = f"A[{', '.join(v)}]"
    red = f"Ared_temp[{', '.join(v[:-1])}]"
    grid = f"T.grid({', '.join(f'T.int64({d})' for d in shape)})"
    loops = ", ".join(idx)
    lines = [
        "@T.prim_func(private=True)",
        f'def {name}(A: T.Buffer({_dims(shape)}, "{dtype}"),',
        f'             B: T.Buffer({_dims((n,))}, "{dtype}"),',
        f'             rms_norm: T.Buffer({_dims(shape)}, "{dtype}")):',
        '    T.func_attr({"tir.noalias": True})',
        f"    Ared_temp = T.alloc_buffer({_dims(rows)})",
        f"    for {loops} in {grid}:",
        '        with T.sblock("Ared_temp"):',
        f'            {", ".join(v)} = T.axis.remap("{"S" * len(rows)}R", [{loops}])',
        "            with T.init():",
        f"                {red} = T.float32(0.0)",
        f"            {red} = {red} + {_cast32(dtype, a)} * {_cast32(dtype, a)}",
        f"    for {loops} in {grid}:",
        '        with T.sblock("rms_norm"):',
        f'            {", ".join(v)} = T.axis.remap("{"S" * len(shape)}", [{loops}])',
    ]
    value = (f"{_cast32(dtype, 'B[' + v[-1] + ']')} * ({_cast32(dtype, a)} / T.sqrt({red} * "
             f"T.float32({_num(1.0 / n)}) + T.float32({_num(eps)})))")
    lines.append(f"            rms_norm[{', '.join(v)}] = "
                 + (value if dtype == "float32" else f'T.Cast("{dtype}", {value})'))
    return PrimFunc("\n".join(lines))


_BUFFER = re.compile(r'def\s+\w+\(\s*A:\s*T\.Buffer\(\((.*?)\),\s*"(\w+)"\)', re.S)
_INT = re.compile(r"T\.int64\((\d+)\)")
_F32 = re.compile(r"T\.float32\(([^()]*)\)")


@dataclass(frozen=True)
class RmsNormTir:
    """What a standard-form rms_norm prim_func computes."""

    shape: tuple[int, ...]
    dtype: str
    eps: float


def standard_rms_norm(func: PrimFunc) -> RmsNormTir | None:
    """The shape, dtype and epsilon of ``func`` when it is exactly the form
    :func:`rms_norm_prim_func` writes (its name aside), else None."""
    m = _BUFFER.search(func.source)
    if m is None or m.group(2) not in DTYPES:
        return None
    shape = tuple(int(d) for d in _INT.findall(m.group(1)))
    consts = _F32.findall(func.source)  # the epsilon is the last; the comparison checks the rest
    try:
        eps = float(consts[-1]) if consts else 0.0
    except ValueError:
        return None
    if len(shape) < 2 or not (0 < eps < float("inf")) or 0 in shape:
        return None
    try:
        want = rms_norm_prim_func(shape, m.group(2), eps)
    except ValueError:
        return None
    return RmsNormTir(shape, m.group(2), eps) if want.key == func.key else None


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
