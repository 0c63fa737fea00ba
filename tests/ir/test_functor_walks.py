"""The walks built on byocc.ir.functor (CanonicalizeBindings, group materialisation, the
interpreter's plans, the ``show`` summary, symbolic renewal) on a function of more bindings
than Python's recursion limit has frames: bindings are walked in loops, so nothing recurses
per binding (measured by hand at 100 000 bindings too; this size keeps the test quick)."""

from __future__ import annotations

import sys

import numpy as np

from byocc.cli.summary import summarize
from byocc.dpl import is_op
from byocc.dpl import wildcard
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.ops import make_call
from byocc.runtime import run_module
from byocc.transform import FuseOpsByPattern
from byocc.transform.canonicalize_bindings import canonicalize_bindings
from byocc.transform.symbolic import renew_symbolic_vars

N = 4 * sys.getrecursionlimit()


def _chain() -> IRModule:
    """``add(x, x)`` and ``relu`` alternating, each on the previous result; the last is
    bound through an alias ``gv = lv`` that CanonicalizeBindings folds."""
    si = tensor((2,), "float32")
    x = Var("x", si)
    bindings, cur = [], x
    for i in range(N):
        v = DataflowVar(f"lv{i}", si)
        call = make_call("relax.nn.relu", [cur]) if i % 2 else make_call("relax.add", [cur, cur])
        bindings.append(VarBinding(v, call))
        cur = v
    gv = Var("gv", si)
    bindings.append(VarBinding(gv, cur))
    body = SeqExpr((DataflowBlock(tuple(bindings)),), gv)
    return IRModule({"main": Function((x,), body, si, True, {"global_symbol": "main"})})


def test_walks_of_a_function_longer_than_the_recursion_limit():
    mod = _chain()
    func = mod["main"]
    canon = canonicalize_bindings(func)
    last = canon.body.blocks[0].bindings[-1]
    assert len(canon.body.blocks[0].bindings) == N and last.var.name_hint == "gv"
    assert last.value.op.name == "relax.nn.relu"
    summary = summarize(mod)
    assert summary.op_counts == {"relax.add": N // 2, "relax.nn.relu": N // 2}
    assert summary.functions[0].bindings == N + 1
    out = run_module(mod, [np.full(2, -1.0, "float32")])
    np.testing.assert_array_equal(out, np.zeros(2, "float32"))
    assert renew_symbolic_vars(func, check=False).body.blocks[0].bindings[-1].var.name_hint == "gv"
    fused = FuseOpsByPattern([("p.add_relu", is_op("relax.nn.relu")(is_op("relax.add")(wildcard(), wildcard())))])(mod)
    calls = fused["main"].body.blocks[0].bindings
    assert len(calls) == N // 2 + 1 and len(fused.names()) == 2
