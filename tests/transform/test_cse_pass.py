"""EliminateCommonSubexpr: the API, if/else scoping (built by hand: byocc does not read
``if``), unchanged input kept as is, and a large function (no recursion, linear time)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.script import from_source
from byocc.transform.eliminate_common_subexpr import EliminateCommonSubexpr
from byocc.transform.eliminate_common_subexpr import eliminate_common_subexpr
from byocc.transform.pass_manager import Pass

DATA = Path(__file__).parents[1] / "data" / "cse"
T = 'R.Tensor((2, 3), dtype="float32")'
HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"


def _module(body_lines: list[str], ret: str = "j") -> IRModule:
    lines = ["    @R.function",
             f"    def main(x: {T}, y: {T}) -> {T}:"]
    lines += ["        " + line for line in body_lines]
    lines.append(f"        return {ret}")
    return from_source(HEADER + "\n".join(lines) + "\n")


def _if_else_module() -> IRModule:
    """tests/data/cse/if_else.relax, assembled from a flat parse of the same bindings."""
    flat = _module([
        "s = R.sum(x)", "t = R.sum(y)", "c = R.less(s, t)", "c2 = R.less(s, t)", "a = R.add(x, y)",
        "b = R.add(x, y)", "d = R.multiply(x, y)", "e = R.multiply(x, y)", "f = R.add(d, e)",
        "g = R.multiply(x, y)", "k = R.less(s, t)",
        "r = R.add(f, g)", "h = R.multiply(x, y)", "i = R.add(x, y)", "j = R.add(r, i)",
    ])
    func = flat["main"]
    by_name = {b.var.name_hint: b for b in func.body.blocks[0].bindings}
    def pick(*names):
        return tuple(by_name[n] for n in names)
    then = SeqExpr((BindingBlock(pick("b", "d", "e", "f")),), by_name["f"].var)
    other = SeqExpr((BindingBlock(pick("g", "k")),), by_name["g"].var)
    r = by_name["r"].var
    cond = If(by_name["c2"].var, then, other, r.struct_info)
    bindings = pick("s", "t", "c", "c2", "a") + (VarBinding(r, cond),) + pick("h", "i", "j")
    body = SeqExpr((BindingBlock(bindings),), by_name["j"].var)
    main = Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs))
    return flat.with_function("main", main, flat.get_global_var("main"))


def test_hand_built_if_else_is_the_golden_input():
    want = (DATA / "if_else.show.txt").read_text().rstrip("\n")
    assert _if_else_module().script() == want


@pytest.mark.parametrize("call_only,golden", [(False, "if_else.cse.txt"),
                                              (True, "if_else.cse_call_only.txt")])
def test_if_else_branches_see_outer_values_but_do_not_leak(call_only, golden):
    out = EliminateCommonSubexpr(call_only=call_only)(_if_else_module())
    assert out.script() == (DATA / golden).read_text().rstrip("\n")


def test_pass_metadata():
    p = EliminateCommonSubexpr()
    assert isinstance(p, Pass)
    assert p.name == "EliminateCommonSubexpr" and p.opt_level == 1
    assert p.call_only is False and EliminateCommonSubexpr(True).call_only is True
    assert EliminateCommonSubexpr(True) == EliminateCommonSubexpr(call_only=True)


def test_nothing_to_do_returns_the_same_objects():
    mod = _module(["a = R.add(x, y)", "b = R.multiply(x, y)", "j = (a, b)"], ret="a")
    func = mod["main"]
    assert eliminate_common_subexpr(func) is func
    assert EliminateCommonSubexpr()(mod)["main"] is func


def test_call_only_keeps_non_calls_and_input_is_not_mutated():
    mod = _module(["a = (x, y)", "b = (x, y)", "c = R.add(x, y)", "j = R.add(x, y)"])
    before = mod.script()

    def values(m):
        return {b.var.name_hint: b.value for b in m["main"].body.blocks[0].bindings}

    full = values(EliminateCommonSubexpr()(mod))
    calls = values(EliminateCommonSubexpr(call_only=True)(mod))
    assert mod.script() == before
    names = {k: getattr(v, "name_hint", None) for k, v in full.items()}
    assert names == {"a": None, "b": "a", "c": None, "j": "c"}
    names = {k: getattr(v, "name_hint", None) for k, v in calls.items()}
    assert names == {"a": None, "b": None, "c": None, "j": "c"}


def test_twenty_thousand_bindings_fast():
    """Two identical chains of 10 000 calls collapse onto the first one, in one linear walk."""
    n = 10_000
    ty = tensor((2, 3), "float32")
    exp = Op.get("relax.exp")
    x = Var("x", ty)
    bindings, prev_a, prev_b = [], x, x
    firsts = []
    for i in range(n):
        a = DataflowVar(f"a{i}", ty)
        b = DataflowVar(f"b{i}", ty)
        bindings.append(VarBinding(a, Call(exp, (prev_a,), None, (), ty)))
        bindings.append(VarBinding(b, Call(exp, (prev_b,), None, (), ty)))
        firsts.append(a)
        prev_a, prev_b = a, b
    gv = Var("gv", ty)
    bindings.append(VarBinding(gv, Call(Op.get("relax.add"), (prev_a, prev_b), None, (), ty)))
    func = Function((x,), SeqExpr((DataflowBlock(tuple(bindings)),), gv), ty)

    start = time.perf_counter()
    out = eliminate_common_subexpr(func)
    elapsed = time.perf_counter() - start

    new = out.body.blocks[0].bindings
    assert len(new) == 2 * n + 1
    for i in range(n):
        first, dup = new[2 * i], new[2 * i + 1]
        assert first.var is firsts[i] and isinstance(first.value, Call)
        assert first.value.args[0] is (firsts[i - 1] if i else x)
        assert dup.value is firsts[i]  # b_i = a_i
    assert new[-1].value.args == (prev_a, prev_a)
    assert elapsed < 5.0, f"{elapsed:.2f}s for {2 * n} bindings"
