"""Composites the GEMM reading cannot map, run as several steps (docs/codegen.md#elementwise-composites).

A pattern can match more than ``[permute_dims(w)] -> matmul -> epilogue``: TVM's
``matmul_bias`` accepts ``add(matmul(x, w), matmul(x, w))`` (the bias is the product itself),
a pattern file can put two matmuls and an add in one composite. :func:`split_composites`
rewrites such a call of an :class:`~byocc.backends.program.OffloadedProgram` into a sequence
of calls of the same composite name, each over a piece of its body: every matmul (with the
``permute_dims`` of its weight, when that is its only use) is one GEMM call, each run of
elementwise and data-movement ops in between one elementwise call. A piece hands on every
value a later piece reads or the call returns: each becomes a new temporary (in scratch) or,
when the call returns it, the call's own result (a tuple-returning call has each field
written by the piece computing it); an elementwise piece handing on several values returns
them as a tuple, written by its one index-mapped kernel. The backend then plans each piece
as usual (a GEMM step, a fused elementwise step). A backend whose GEMM cannot compute a GEMM
reading whole (``keeps_gemm``: cuBLASLt without a SiLU epilogue) has it split the same way.

Calls are split only when their body is not one GEMM (:func:`~byocc.backends.program.gemm_step`),
calls a matmul, and holds nothing but matmuls, weight permutes and the ops of the fused
elementwise kernel; every other call is left as it is, so anything that generated code before
generates the same code.
"""

from __future__ import annotations

import dataclasses

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import Function
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.analysis import post_order_visit

from ..program import CompositeCall
from ..program import OffloadedProgram
from ..program import ValueRef
from ..program import gemm_step
from .elementwise import SUPPORTED_OPS
from .elementwise_map import MOVE_OPS

_MATMUL = "relax.matmul"
_PERMUTE = "relax.permute_dims"


def _op_bindings(comp: Function) -> tuple[list[VarBinding], list] | None:
    """The body's op-call bindings and the returned values (one, or a returned tuple's
    fields: the tuple may be the body's last binding); None when the body has other bindings."""
    out = []
    result = comp.body.body
    bindings = [b for block in comp.body.blocks for b in block.bindings]
    if bindings and isinstance(bindings[-1], VarBinding) and isinstance(bindings[-1].value, Tuple) \
            and bindings[-1].var is result:
        result = bindings[-1].value
        bindings = bindings[:-1]
    for b in bindings:
        if not isinstance(b, VarBinding) or not isinstance(b.value, Call) or not isinstance(b.value.op, Op):
            return None
        out.append(b)
    return out, list(result.fields) if isinstance(result, Tuple) else [result]


def _uses(bindings: list[VarBinding]) -> dict[Var, list[int]]:
    uses: dict[Var, list[int]] = {}
    for k, b in enumerate(bindings):
        for arg in b.value.args:
            if isinstance(arg, Var):
                uses.setdefault(arg, []).append(k)
    return uses


def _pieces(comp: Function, keeps_gemm=None) -> tuple[list[list[VarBinding]], list, list] | None:
    """The body cut into pieces, each piece's outputs (:func:`_piece_outputs`) and the
    returned values, or None when the call is not split."""
    read = _op_bindings(comp)
    if read is None or not read[0]:
        return None
    bindings, results = read
    gemm = gemm_step(comp)
    if gemm is not None and (keeps_gemm is None or keeps_gemm(gemm)):
        return None
    names = [b.value.op.name for b in bindings]
    if _MATMUL not in names:
        return None
    uses = _uses(bindings)
    params = set(comp.params)
    pieces: list[list[VarBinding]] = []
    current: list[VarBinding] = []
    for k, b in enumerate(bindings):
        name = names[k]
        if name == _PERMUTE and uses.get(b.var) and all(names[u] == _MATMUL and bindings[u].value.args[1] is b.var
                                                        for u in uses[b.var]) and len(uses[b.var]) == 1 \
                and (b.value.args[0] in params or isinstance(b.value.args[0], Constant)):
            if current:
                pieces.append(current)
            current = [b]  # the weight's permute goes with its matmul
        elif name == _MATMUL:
            if current and current[-1].value.op.name != _PERMUTE:
                pieces.append(current)
                current = []
            pieces.append([*current, b])
            current = []
        elif name in SUPPORTED_OPS or (name in MOVE_OPS and name != "relax.split"):
            current.append(b)
        else:
            return None
    if current:
        pieces.append(current)
    return pieces, _piece_outputs(pieces, uses, bindings, results), results


def _piece_outputs(pieces, uses, bindings, results) -> list[list[Var]]:
    """Per piece, the values it hands on: those a later piece reads or the call returns (a
    GEMM piece: its product; an elementwise piece may hand on several, written by its one
    kernel), in binding order; a piece's last value always."""
    index = {b.var: k for k, b in enumerate(bindings)}
    out: list[list[Var]] = []
    for piece in pieces:
        last = index[piece[-1].var]
        if piece[-1].value.op.name == _MATMUL:
            out.append([piece[-1].var])
            continue
        outs = [b.var for b in piece if b is piece[-1] or any(b.var is r for r in results)
                or any(u > last for u in uses.get(b.var, ()))]
        out.append(outs)
    return out


def _piece_function(comp: Function, piece: list[VarBinding], outs: list[Var]) -> tuple[Function, list[Var]]:
    """A composite function of ``piece`` returning ``outs`` (a tuple when there are several):
    its parameters are the values it reads from outside (the original parameters or earlier
    pieces' results), in first-use order."""
    defined = {b.var for b in piece}
    reads: list[Var] = []
    for b in piece:
        for arg in b.value.args:
            if isinstance(arg, Var) and arg not in defined and arg not in reads:
                reads.append(arg)
    if len(outs) == 1:
        body = SeqExpr((DataflowBlock(tuple(piece)),), outs[0])
        return Function(tuple(reads), body, outs[0].struct_info, True, dict(comp.attrs)), reads
    result = Tuple(tuple(outs), TupleStructInfo(tuple(v.struct_info for v in outs)))
    body = SeqExpr((DataflowBlock(tuple(piece)),), result)
    return Function(tuple(reads), body, result.struct_info, True, dict(comp.attrs)), reads


def _constants_of(func: Function, call: CompositeCall) -> tuple:
    found: list = []
    post_order_visit(func.body, lambda e: found.append(e) if isinstance(e, Constant) else None)
    ids = {id(c) for c in found}
    return tuple((c, ref) for c, ref in call.constants if id(c) in ids)


def _result_slots(outs: list[list[Var]], results) -> dict[Var, int] | None:
    """A piece output -> the field of the call's result it is; None when a returned value is
    no piece's output (a parameter) or is returned twice."""
    produced = {id(v) for o in outs for v in o}
    slots: dict[Var, int] = {}
    for k, r in enumerate(results):
        if id(r) not in produced or r in slots:
            return None
        slots[r] = k
    return slots


def split_composites(program: OffloadedProgram, keeps_gemm=None) -> OffloadedProgram:
    """``program`` with every call the GEMM reading cannot map (or that ``keeps_gemm``, the
    backend's test of a GEMM reading, refuses) but whose body is matmuls and elementwise ops
    replaced by one call per piece (module docstring); ``program`` itself when there is none.
    A call returning a tuple has each field written by the piece computing it."""
    calls: list[CompositeCall] = []
    temps = list(program.temps)
    changed = False
    for call in program.calls:
        cut = _pieces(call.func, keeps_gemm)
        slots = None if cut is None else _result_slots(cut[1], cut[2])
        if cut is None or slots is None or len(cut[0]) < 2:
            calls.append(call)
            continue
        pieces, outs = cut[0], cut[1]
        changed = True
        refs: dict[Var, ValueRef] = {p: call.args[i] for i, p in enumerate(call.func.params)}
        for piece, piece_outs in zip(pieces, outs):
            func, reads = _piece_function(call.func, piece, piece_outs)
            slots_of = []
            for v in piece_outs:
                if v in slots:
                    slots_of.append((call.results[slots[v]], call.result_sinfos[slots[v]]))
                else:
                    slots_of.append((len(temps), v.struct_info))
                    temps.append(v.struct_info)
            (result, sinfo), more = slots_of[0], tuple(slots_of[1:])
            calls.append(CompositeCall(call.composite, func, tuple(refs[v] for v in reads),
                                       _constants_of(func, call), result, sinfo, more))
            for v, (temp, _) in zip(piece_outs, slots_of):
                refs[v] = ValueRef("temp", temp)
    if not changed:
        return program
    return dataclasses.replace(program, calls=tuple(calls), temps=tuple(temps))


__all__ = ["split_composites"]
