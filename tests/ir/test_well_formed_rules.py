"""well_formed on hand-built IR: every rule of spec/partitioning.md section 9, TVM's messages,
located by the binding or node at fault."""

from __future__ import annotations

from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import If
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import Span
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import WellFormedError
from byocc.ir import tensor
from byocc.ir.well_formed import check_well_formed
from byocc.ir.well_formed import well_formed

T4 = tensor((4, 4), "float32")
SPAN = Span("m.relax", 7, 13)


def op_call(name: str, *args, si=T4) -> Call:
    return Call(Op.get(name, create=True), tuple(args), None, (), si)


def func(params, blocks, ret, name="main", **attrs) -> Function:
    attrs.setdefault("global_symbol", name)
    return Function(tuple(params), SeqExpr(tuple(blocks), ret), ret.struct_info, True, attrs)


def messages(obj) -> list[str]:
    return [p.message for p in well_formed(obj)]


def test_good_module_has_no_problem():
    x, y = Var("x", T4), Var("y", T4)
    lv = DataflowVar("lv", T4)
    gv = Var("gv", T4)
    main = func([x, y], [DataflowBlock((VarBinding(lv, op_call("relax.multiply", x, y)),
                                        VarBinding(gv, op_call("relax.nn.relu", lv))))], gv)
    mod = IRModule({"main": main})
    assert well_formed(mod) == []
    assert check_well_formed(mod) is True


def test_use_before_definition_located_at_the_using_binding():
    x, y = Var("x", T4), Var("y", T4)
    a = Var("a", T4)
    main = func([x], [BindingBlock((VarBinding(a, op_call("relax.add", x, y), SPAN),))], a)
    problems = well_formed(IRModule({"main": main}))
    assert [p.message for p in problems] == ["Var y is not defined."]
    assert isinstance(problems[0], WellFormedError)
    assert problems[0].span == SPAN
    assert str(problems[0]) == "m.relax:7:13: Var y is not defined."
    assert check_well_formed(IRModule({"main": main})) is False


def test_dataflow_var_scope():
    x = Var("x", T4)
    dv = DataflowVar("dv", T4)
    out = Var("out", T4)
    main = func([x], [DataflowBlock((VarBinding(dv, op_call("relax.exp", x)),)),
                      BindingBlock((VarBinding(out, op_call("relax.exp", dv)),))], out)
    assert messages(IRModule({"main": main})) == ["DataflowVar dv is used outside DataflowBlock."]
    # used in a later dataflow block: not defined there
    out2 = Var("out", T4)
    main2 = func([x], [DataflowBlock((VarBinding(dv, op_call("relax.exp", x)),)),
                       DataflowBlock((VarBinding(out2, op_call("relax.exp", dv)),))], out2)
    assert messages(IRModule({"main": main2})) == ["DataflowVar dv is not defined."]


def test_defined_twice_and_dataflow_var_outside_block():
    x = Var("x", T4)
    a = Var("a", T4)
    dv = DataflowVar("dv", T4)
    main = func([x], [BindingBlock((VarBinding(a, op_call("relax.exp", x)),
                                    VarBinding(a, op_call("relax.exp", x)),
                                    VarBinding(dv, op_call("relax.exp", x))))], a)
    assert messages(IRModule({"main": main})) == [
        "Var a is defined more than once.", "DataflowVar dv is defined outside DataflowBlock."]


def test_global_references_and_global_symbol():
    x = Var("x", T4)
    r = Var("r", T4)
    main = func([x], [BindingBlock((VarBinding(r, Call(GlobalVar("fused_relax_multiply"), (x,), None, (), T4)),))],
                r, name="other")
    assert messages(IRModule({"main": main})) == [
        'Name in GlobalVar is not equal to name in gsymbol: I.GlobalVar("main") != other',
        'GlobalVar I.GlobalVar("fused_relax_multiply") is not defined.',
    ]


def test_parameter_shared_by_two_functions():
    x = Var("x", T4)
    a = func([x], [], x, name="a")
    b = func([x], [], x, name="b")
    assert messages(IRModule({"a": a, "b": b})) == [
        'Relax variable x is used as a parameter in both function "a" and function "b".']


def test_missing_type_and_normal_form():
    x = Var("x", T4)
    untyped = Var("u", None)
    nested = Var("n", T4)
    main = func([x], [BindingBlock((
        VarBinding(untyped, op_call("relax.exp", x)),
        VarBinding(nested, op_call("relax.add", op_call("relax.exp", x), x)),
    ))], nested)
    assert messages(IRModule({"main": main})) == [
        "The ty of Expr u is missing.", "Call is not in ANF form, arg 0 gets relax.expr.Call"]
    t = Var("t", T4)
    main2 = func([x], [BindingBlock((
        VarBinding(t, TupleGetItem(op_call("relax.split", x), 0, T4)),))], t)
    assert messages(IRModule({"main": main2})) == [
        "The tuple value in a TupleGetItem node must be a leaf expression."]


def test_if_and_impure_call_in_dataflow_block():
    x = Var("x", T4)
    c = Var("c", tensor((), "bool"))
    r = Var("r", T4)
    branch = SeqExpr((), x)
    main = func([x, c], [DataflowBlock((VarBinding(r, If(c, branch, branch, T4)),))], r)
    assert messages(IRModule({"main": main})) == ["If nodes are not allowed to appear in dataflow blocks."]
    p = Var("p", T4)
    impure = Call(Op.get("relax.call_packed", create=True), (x,), None, (), T4)
    f = func([x], [DataflowBlock((VarBinding(p, impure),))], p)
    f = Function(f.params, f.body, f.ret_struct_info, False, f.attrs)
    msgs = messages(IRModule({"main": f}))
    assert len(msgs) == 1 and msgs[0].startswith("Impure function call ")
    assert msgs[0].endswith(" occurs within a dataflow block.")


def test_pure_function_with_impure_call():
    x = Var("x", T4)
    p = Var("p", T4)
    impure = Call(Op.get("relax.call_packed", create=True), (x,), None, (), T4)
    f = func([x], [BindingBlock((VarBinding(p, impure),))], p)
    msgs = messages(IRModule({"main": f}))
    assert len(msgs) == 1 and msgs[0].startswith('Function "main" is annotated as pure but contains an impure call')


def test_symbolic_dim_must_be_defined():
    n = TirVar("n")
    x = Var("x", tensor((4, 4), "float32"))
    s = Var("s", None)
    from byocc.ir import ShapeStructInfo
    s = Var("s", ShapeStructInfo((n,)))
    main = func([x], [BindingBlock((VarBinding(s, ShapeExpr((n,))),))], x)
    assert "Var n is not defined." in messages(IRModule({"main": main}))
    xn = Var("x", tensor((n, 4), "float32"))
    s2 = Var("s", ShapeStructInfo((n,)))
    ok = func([xn], [BindingBlock((VarBinding(s2, ShapeExpr((n,))),))], xn)
    assert messages(IRModule({"main": ok})) == []


def test_binding_type_contradiction():
    x = Var("x", T4)
    y = Var("y", tensor((4, 4), "float16"))
    main = func([x], [BindingBlock((VarBinding(y, op_call("relax.exp", x)),))], y)
    assert messages(IRModule({"main": main})) == [
        'Expression of type R.Tensor((4, 4), dtype="float32") cannot be assigned to a variable '
        'of type R.Tensor((4, 4), dtype="float16")']


def test_all_problems_are_reported_not_only_the_first():
    x = Var("x", T4)
    a, b = Var("a", T4), Var("b", T4)
    ghost1, ghost2 = Var("g1", T4), Var("g2", T4)
    main = func([x], [BindingBlock((VarBinding(a, op_call("relax.exp", ghost1)),
                                    VarBinding(b, op_call("relax.exp", ghost2))))],
                Tuple((a, b), TupleStructInfo((T4, T4))))
    main = Function(main.params, main.body, None, True, main.attrs)
    assert messages(IRModule({"main": main})) == [
        "Function must have defined ret_ty", "Var g1 is not defined.", "Var g2 is not defined."]


def test_local_function_may_refer_to_itself_and_scopes_close():
    x = Var("x", T4)
    ix = Var("ix", T4)
    f = Var("f", None)
    inner_r = Var("inner_r", T4)
    local = Function((ix,), SeqExpr((BindingBlock((VarBinding(inner_r, Call(f, (ix,), None, (), T4)),)),), inner_r),
                     T4, True, {})
    f = Var("f", local.struct_info)
    inner_r2 = Var("inner_r", T4)
    local = Function((ix,), SeqExpr((BindingBlock((VarBinding(inner_r2, Call(f, (ix,), None, (), T4)),)),), inner_r2),
                     T4, True, {})
    r = Var("r", T4)
    leak = Var("leak", T4)
    main = func([x], [BindingBlock((VarBinding(f, local), VarBinding(r, Call(f, (x,), None, (), T4)),
                                    VarBinding(leak, op_call("relax.exp", inner_r2))))], leak)
    assert messages(IRModule({"main": main})) == ["Var inner_r is not defined."]
