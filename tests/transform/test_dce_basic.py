"""DeadCodeElimination on hand-built IR (spec/partitioning.md section 8)."""

from __future__ import annotations

import time

import pytest

from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import PassError
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.ir.well_formed import well_formed
from byocc.transform.dead_code_elimination import DeadCodeElimination
from byocc.transform.dead_code_elimination import dead_code_elimination

T4 = tensor((4, 4), "float32")


def op_call(name: str, *args, si=T4) -> Call:
    return Call(Op.get(name, create=True), tuple(args), None, (), si)


def func(params, blocks, ret, public=True, **attrs) -> Function:
    if public:
        attrs.setdefault("global_symbol", attrs.pop("_name", "main"))
    return Function(tuple(params), SeqExpr(tuple(blocks), ret), ret.struct_info, True, attrs)


def names(fn: Function) -> list[str]:
    return [b.var.name_hint for block in fn.body.blocks for b in block.bindings]


def test_dead_binding_in_dataflow_block_is_removed():
    x = Var("x", T4)
    a = Var("a", T4)
    dead = DataflowVar("dead", T4)
    main = func([x], [DataflowBlock((VarBinding(a, op_call("relax.nn.relu", x)),
                                     VarBinding(dead, op_call("relax.nn.gelu", a))))], a)
    out = dead_code_elimination(IRModule({"main": main}))
    assert names(out["main"]) == ["a"]
    assert well_formed(out) == []


def test_dead_chain_and_unused_block_output_vanish():
    x = Var("x", T4)
    d1 = DataflowVar("d1", T4)
    d2 = Var("d2", T4)  # a block output nobody reads after the block
    y = Var("y", T4)
    main = func([x], [
        DataflowBlock((VarBinding(d1, op_call("relax.nn.relu", x)),
                       VarBinding(d2, op_call("relax.nn.gelu", d1)))),
        BindingBlock((VarBinding(y, op_call("relax.exp", x)),)),
    ], y)
    out = dead_code_elimination(IRModule({"main": main}))
    assert len(out["main"].body.blocks) == 1  # the emptied dataflow block is gone
    assert names(out["main"]) == ["y"]


def test_impure_binding_outside_dataflow_is_kept():
    x = Var("x", T4)
    p = Var("p", T4)
    y = Var("y", T4)
    impure = Call(Op.get("relax.call_packed", create=True), (x,), None, (), T4)
    main = func([x], [BindingBlock((VarBinding(p, impure), VarBinding(y, op_call("relax.exp", x))))], y)
    main = Function(main.params, main.body, main.ret_struct_info, False, main.attrs)
    out = dead_code_elimination(IRModule({"main": main}))
    assert names(out["main"]) == ["p", "y"]


def test_unreachable_private_function_removed_reachable_kept():
    x = Var("x", T4)
    hx, gx = Var("x", T4), Var("x", T4)
    helper = func([hx], [], hx, public=False)
    garbage = func([gx], [], gx, public=False)
    r = Var("r", T4)
    main = func([x], [BindingBlock((VarBinding(r, Call(GlobalVar("helper"), (x,), None, (), T4)),))], r)
    out = dead_code_elimination(IRModule({"main": main, "helper": helper, "garbage": garbage}))
    assert sorted(out.names()) == ["helper", "main"]
    # an explicit entry keeps a private function alive
    out2 = dead_code_elimination(IRModule({"main": main, "garbage": garbage, "helper": helper}),
                                 ["garbage"])
    assert sorted(out2.names()) == ["garbage", "helper", "main"]


def test_function_made_unreachable_by_binding_removal_goes():
    x = Var("x", T4)
    hx = Var("x", T4)
    helper = func([hx], [], hx, public=False)
    dead = DataflowVar("dead", T4)
    main = func([x], [DataflowBlock((VarBinding(dead, Call(GlobalVar("helper"), (x,), None, (), T4)),))], x)
    out = dead_code_elimination(IRModule({"main": main, "helper": helper}))
    assert out.names() == ["main"]
    assert out["main"].body.blocks == ()


def test_reference_to_missing_function_keeps_all_functions():
    x, gx = Var("x", T4), Var("x", T4)
    garbage = func([gx], [], gx, public=False)
    r = Var("r", T4)
    main = func([x], [BindingBlock((VarBinding(r, Call(GlobalVar("nowhere"), (x,), None, (), T4)),))], r)
    out = dead_code_elimination(IRModule({"main": main, "garbage": garbage}))
    assert sorted(out.names()) == ["garbage", "main"]


def test_dead_bindings_inside_local_function_removed():
    x = Var("x", T4)
    ix = Var("x", T4)
    inner_dead = DataflowVar("inner_dead", T4)
    inner_out = Var("gv", T4)
    local = Function((ix,), SeqExpr((DataflowBlock((
        VarBinding(inner_dead, op_call("relax.nn.relu", ix)),
        VarBinding(inner_out, op_call("relax.exp", ix)))),), inner_out), T4, True, {"Composite": "A.x"})
    f = Var("f", local.struct_info)
    r = Var("r", T4)
    main = func([x], [BindingBlock((VarBinding(f, local), VarBinding(r, Call(f, (x,), None, (), T4))))], r)
    out = dead_code_elimination(IRModule({"main": main}))
    new_local = out["main"].body.blocks[0].bindings[0].value
    assert names(new_local) == ["gv"]
    assert names(out["main"]) == ["f", "r"]


def test_unknown_entry_function_is_an_error():
    x = Var("x", T4)
    with pytest.raises(PassError, match="'nope'"):
        dead_code_elimination(IRModule({"main": func([x], [], x)}), ["nope"])


def test_pass_object_and_unchanged_module():
    x = Var("x", T4)
    a = Var("a", T4)
    main = func([x], [DataflowBlock((VarBinding(a, op_call("relax.nn.relu", x)),))], a)
    mod = IRModule({"main": main})
    out = DeadCodeElimination()(mod)
    assert out["main"] is main  # nothing dead: the very same function object
    assert DeadCodeElimination(["main"]).entry_functions == ("main",)


def test_long_dead_chain_is_linear():
    n = 100_000
    x = Var("x", T4)
    bindings = []
    prev = x
    for i in range(n):
        v = DataflowVar(f"v{i}", T4)
        bindings.append(VarBinding(v, op_call("relax.nn.relu", prev)))
        prev = v
    out_var = Var("o", T4)
    bindings.append(VarBinding(out_var, op_call("relax.exp", x)))
    main = func([x], [DataflowBlock(tuple(bindings))], out_var)
    start = time.perf_counter()
    out = dead_code_elimination(IRModule({"main": main}))
    assert time.perf_counter() - start < 10
    assert names(out["main"]) == ["o"]
