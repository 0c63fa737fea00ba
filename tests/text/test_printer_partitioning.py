"""Partitioning goldens (spec/partitioning-examples) printed from hand-built IR: the
name de-duplication of spec/partitioning.md section 10 (gv / gv_1 / gv_2, lv_2, gv1_1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from byocc.ir import Attrs
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.text.printer import print_module

EXAMPLES = Path(__file__).parents[1] / "data" / "partitioning-examples"
T44 = tensor((4, 4), "float32")


def expected(case: str, step: str) -> str:
    path = EXAMPLES / case / f"{step}.txt"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path.read_text().rstrip("\n")


def op(name, *args, ty=T44, attrs=None):
    return Call(Op.get(name, create=True), tuple(args), Attrs(tuple(attrs)) if attrs else None, (), ty)


def fn(params, blocks, ret, ty, attrs):
    return Function(tuple(params), SeqExpr(tuple(blocks), ret), ty, True, dict(attrs))


def composite(pattern, opname, n_params, param_hint, attrs=None):
    ps = [Var(param_hint, T44) for _ in range(n_params)]
    g = Var("gv", T44)
    return fn(ps, [DataflowBlock((VarBinding(g, op(opname, *ps, attrs=attrs)),))], g, T44,
              {"Composite": pattern})


def test_05_diamond_two_backends_p2_merge():
    # fused_relax_add1_compiler_A: params both hinted "lv"
    a_name = "fused_relax_add1_compiler_A"
    lv_a, lv_b = Var("lv", T44), Var("lv", T44)
    gv3 = Var("gv3", composite("compiler_A.add", "relax.add", 2, "lv").struct_info)
    out = Var("gv", T44)
    add_fn = fn([lv_a, lv_b], [BindingBlock((
        VarBinding(gv3, composite("compiler_A.add", "relax.add", 2, "lv")),
        VarBinding(out, Call(gv3, (lv_a, lv_b), None, (), T44))))], out, T44,
        {"Codegen": "compiler_A", "global_symbol": a_name})

    # fused_relax_matmul_relax_nn_relu_compiler_A: two composites, tuple result
    m_name = "fused_relax_matmul_relax_nn_relu_compiler_A"
    tt = TupleStructInfo((T44, T44))
    x, w = Var("x", T44), Var("w", T44)
    xm, wm = Var("x", T44), Var("w", T44)
    g_in = Var("gv", T44)
    mm = fn([xm, wm], [DataflowBlock((VarBinding(g_in, op("relax.matmul", xm, wm, attrs=[("out_dtype", None)])),))],
            g_in, T44, {"Composite": "compiler_A.matmul"})
    relu = composite("compiler_A.relu", "relax.nn.relu", 1, "lv")
    gv_f, gv1_f = Var("gv", mm.struct_info), Var("gv1", relu.struct_info)
    r1, r2 = Var("gv", T44), Var("gv1", T44)
    mr_fn = fn([x, w], [BindingBlock((
        VarBinding(gv_f, mm), VarBinding(r1, Call(gv_f, (x, w), None, (), T44)),
        VarBinding(gv1_f, relu), VarBinding(r2, Call(gv1_f, (r1,), None, (), T44))))],
        Tuple((r1, r2), tt), tt, {"Codegen": "compiler_A", "global_symbol": m_name})

    # fused_relax_nn_gelu1_compiler_B
    b_name = "fused_relax_nn_gelu1_compiler_B"
    lv = Var("lv", T44)
    gelu = composite("compiler_B.gelu", "relax.nn.gelu", 1, "lv")
    gv2 = Var("gv2", gelu.struct_info)
    res = Var("gv", T44)
    gelu_fn = fn([lv], [BindingBlock((VarBinding(gv2, gelu), VarBinding(res, Call(gv2, (lv,), None, (), T44))))],
                 res, T44, {"Codegen": "compiler_B", "global_symbol": b_name})

    # main
    mx, mw = Var("x", T44), Var("w", T44)
    t, l1, l2, l3 = DataflowVar("lv", tt), DataflowVar("lv1", T44), DataflowVar("lv2", T44), DataflowVar("lv3", T44)
    g = Var("gv", T44)
    main = fn([mx, mw], [DataflowBlock((
        VarBinding(t, Call(GlobalVar(m_name), (mx, mw), None, (), tt)),
        VarBinding(l1, TupleGetItem(t, 0, T44)), VarBinding(l2, TupleGetItem(t, 1, T44)),
        VarBinding(l3, Call(GlobalVar(b_name), (l1,), None, (), T44)),
        VarBinding(g, Call(GlobalVar(a_name), (l2, l3), None, (), T44))))], g, T44, {"global_symbol": "main"})

    mod = IRModule({"main": main, a_name: add_fn, b_name: gelu_fn, m_name: mr_fn})
    assert print_module(mod) == expected("05_diamond_two_backends", "p2_merge")


def test_13_split_tuple_inside_composite():
    t2 = TupleStructInfo((T44, T44))
    x1 = Var("x", tensor((4, 8), "float32"))
    tv, a, b, g = DataflowVar("t", t2), DataflowVar("a", T44), DataflowVar("b", T44), Var("gv", T44)
    comp = fn([x1], [DataflowBlock((
        VarBinding(tv, op("relax.split", x1, ty=t2, attrs=[("indices_or_sections", 2), ("axis", 1)])),
        VarBinding(a, TupleGetItem(tv, 0, T44)), VarBinding(b, TupleGetItem(tv, 1, T44)),
        VarBinding(g, op("relax.add", a, b))))], g, T44, {"Composite": "x.split_add"})
    name = "fused_relax_split_relax_add1_x"
    x = Var("x", x1.struct_info)
    lf, r = Var("gv", comp.struct_info), Var("gv", T44)
    fused = fn([x], [BindingBlock((VarBinding(lf, comp), VarBinding(r, Call(lf, (x,), None, (), T44))))], r, T44,
               {"Codegen": "x", "global_symbol": name})
    mx, mg = Var("x", x1.struct_info), Var("gv", T44)
    main = fn([mx], [DataflowBlock((VarBinding(mg, Call(GlobalVar(name), (mx,), None, (), T44)),))], mg, T44,
              {"global_symbol": "main"})
    assert print_module(IRModule({"main": main, name: fused})) == expected("13_split_tuple_get_item_inside", "p2_merge")
