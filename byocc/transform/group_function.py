"""The function of one group in one block (docs/partitioning.md#composite-function): name hint, parameters
in first-occurrence order with the caller's names, shape/prim literals inline, constants
inline or ``param_<k>``, tuple parameters split into ``<t>_<i>``, ``tir_vars``, one dataflow
block whose outputs are named ``gv``, ``gv1``... Used by :mod:`byocc.transform.materialize`.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from byocc.ir import Binding
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import NameSupply
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import StructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import sinfo_of
from byocc.ir.functor import map_operands

from .symbolic import free_symbolic_vars
from .symbolic import has_symbolic
from .symbolic import renew_symbolic_vars

CALL_TIR = frozenset({"relax.call_tir", "relax.call_tir_inplace"})


def fused_name_hint(bindings: Sequence[Binding]) -> str:
    """``fused`` + ``_<op name>`` / ``_<callee global>`` per call binding (docs/partitioning.md#composite-function)."""
    hint = "fused"
    for b in bindings:
        v = b.value
        if not isinstance(b, VarBinding) or type(v) is not Call:
            continue
        op = v.op
        if isinstance(op, Op):
            if op.name in CALL_TIR and v.args and isinstance(v.args[0], GlobalVar):
                hint += "_" + v.args[0].name_hint
            else:
                hint += "_" + op.name
        elif isinstance(op, GlobalVar):
            name = op.name_hint
            hint += "_" + (name.removeprefix("fused_"))
    return hint


def _sinfo(e: Expr) -> StructInfo:
    if e.struct_info is None and isinstance(e, Tuple):
        return TupleStructInfo(tuple(_sinfo(f) for f in e.fields))
    return sinfo_of(e)


def _inlinable(e: Expr) -> bool:
    """Shape/prim literals without symbolic variables, and tuples of them (TVM
    ``IsInlinableConstants``)."""
    if isinstance(e, Tuple):
        return all(_inlinable(f) for f in e.fields)
    if isinstance(e, PrimValue):
        return isinstance(e.value, (int, float, bool))
    if isinstance(e, ShapeExpr):
        return all(isinstance(d, int) for d in e.values)
    return False


class GroupFunction:
    """Builds the function of one group in one block (TVM FunctionCreator, docs/partitioning.md#composite-function)."""

    def __init__(self, bindings: list, outputs: list, outer: Mapping[Var, Expr], lift: bool):
        self.bindings = bindings
        self.outputs = outputs
        self.outer = outer
        self.lift = lift
        self.defined: set = set()
        self.args: list = []
        self.params: list = []
        self.arg_pos: dict[int, int] = {}
        self.inlined: dict = {}
        self.n_const = 0
        self.partial: dict[int, list] = {}  # id(tuple arg) -> indices accessed through t[i]
        self.tuple_pos: dict[int, int] = {}
        for b in bindings:
            self._append(b)

    def _check_def(self, e: Expr) -> None:
        if id(e) in self.arg_pos:
            return
        is_var = isinstance(e, Var)
        if is_var and e not in self.defined:
            bound: Any = e
            seen: set = set()
            while isinstance(bound, Var) and bound not in seen:
                seen.add(bound)
                nxt = self.outer.get(bound)
                if nxt is None:
                    break
                bound = nxt
            if bound is not e and _inlinable(bound):
                self.inlined[e] = bound
                return
        if (not is_var or e not in self.defined) and (self.lift or not isinstance(e, Constant)):
            if isinstance(e, Var):
                name = e.name_hint
            else:
                name = f"param_{self.n_const}"
                self.n_const += 1
            si = _sinfo(e)
            if not _inlinable(e):
                self.arg_pos[id(e)] = len(self.args)
                self.args.append(e)
                self.params.append(Var(name, si))
            if isinstance(si, TupleStructInfo):
                self.partial[id(e)] = []
                self.tuple_pos[id(e)] = len(self.args) - 1

    def _append(self, b: Binding) -> None:
        if not isinstance(b, VarBinding):
            return
        v = b.value
        if type(v) is Call:
            if isinstance(v.op, Op) and v.op.name in CALL_TIR and len(v.args) > 1 \
                    and isinstance(v.args[1], Tuple):
                for a in v.args[1].fields:
                    self._check_def(a)
            else:
                for a in v.args:
                    if isinstance(a, Tuple):
                        for f in a.fields:
                            self._check_def(f)
                    else:
                        self._check_def(a)
                    if isinstance(_sinfo(a), TupleStructInfo):
                        self.partial.pop(id(a), None)  # the whole tuple is used
        elif type(v) is TupleGetItem:
            self._check_def(v.tuple_value)
            acc = self.partial.get(id(v.tuple_value))
            if acc is not None:
                acc.append(v.index)
        self.defined.add(b.var)

    def build(self, attrs: Mapping[str, Any]) -> tuple[Function, list, Any]:
        """The function, the caller-side arguments and the caller-side return struct info."""
        args, params = self.args, self.params
        # split tuple parameters used only through t[i] (highest position first, so the
        # recorded positions stay valid)
        split: dict[int, dict[int, Var]] = {}
        for key, idxs in sorted(self.partial.items(), key=lambda kv: -self.tuple_pos[kv[0]]):
            if not idxs:
                continue
            pos = self.tuple_pos[key]
            tup, param = args[pos], params[pos]
            tup_si = _sinfo(tup)
            assert isinstance(tup_si, TupleStructInfo)  # partial holds tuple-typed arguments only
            fields = tup_si.fields
            new_args: list[Expr] = []
            new_params: list[Var] = []
            remap: dict[int, Var] = {}
            for k in idxs:
                p = Var(f"{param.name_hint}_{k}", fields[k])
                new_args.append(TupleGetItem(tup, k, fields[k]))
                new_params.append(p)
                remap[k] = p
            args[pos:pos + 1] = new_args
            params[pos:pos + 1] = new_params
            split[key] = remap
        self.arg_pos = {id(a): i for i, a in enumerate(args)}
        supply = NameSupply()
        out_index = {v: i for i, v in enumerate(self.outputs)}
        results: list = [None] * len(self.outputs)
        self.remap: dict = {}
        new_bindings: list = []
        for b in self.bindings:
            v = b.value
            if type(v) is TupleGetItem and id(v.tuple_value) in split:
                p = split[id(v.tuple_value)][v.index]
                self.remap[b.var] = p
                if b.var in out_index:
                    results[out_index[b.var]] = p
                continue
            value = self._visit(v)
            # the variable's own struct info: it equals the value's (the parser checked it)
            # and stays precise where the value's is unknown (constants without values)
            si = b.var.struct_info or _sinfo(value)
            if b.var in out_index:
                nv = Var(supply.fresh("gv"), si)
                results[out_index[b.var]] = nv
            else:
                nv = type(b.var)(b.var.name_hint, si, b.var.span)
            self.remap[b.var] = nv
            new_bindings.append(VarBinding(nv, value, b.span))
        if len(results) == 1:
            body_expr = results[0]
            ret = _sinfo(body_expr)
        else:
            ret = TupleStructInfo(tuple(_sinfo(r) for r in results))
            body_expr = Tuple(tuple(results), ret)
        blocks = (DataflowBlock(tuple(new_bindings)),) if new_bindings else ()
        fattrs = dict(attrs)
        fattrs["Primitive"] = True
        func = Function(tuple(params), SeqExpr(blocks, body_expr), ret, True, fattrs)
        if not has_symbolic(func):
            return func, args, ret
        # TVM collects the free vars into an unordered_set (pointer-hashed, 13 buckets for a
        # handful of vars) and lists that set: in libstdc++ that is the reverse of insertion
        # (first-use) order, exactly so for two vars (measured with TVM 0.27 up to four).
        free = free_symbolic_vars(func)[::-1]
        if free:
            params.append(Var("tir_vars", ShapeStructInfo(tuple(free))))
            args.append(ShapeExpr(tuple(free)))
            func = Function(tuple(params), func.body, ret, True, fattrs)
        return renew_symbolic_vars(func, check=False), args, ret

    def _visit(self, e: Expr) -> Expr:
        pos = self.arg_pos.get(id(e))
        if pos is not None and self.args[pos] is e:
            return self.params[pos]
        if type(e) is Var or type(e) is DataflowVar:
            hit = self.inlined.get(e)
            if hit is not None:
                return hit
            return self.remap.get(e, e)
        return map_operands(e, self._visit, (Var,))



__all__ = ["CALL_TIR", "GroupFunction", "fused_name_hint"]
