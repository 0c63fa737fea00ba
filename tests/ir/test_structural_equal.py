"""structural_equal / structural_hash: alpha-equivalence, names and spans ignored, constants
compared element-wise, symbolic dims renamed consistently (spec/partitioning.md 2.3)."""

from __future__ import annotations

import numpy as np

from byocc.ir import Attrs
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import Span
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import structural_equal
from byocc.ir import structural_hash
from byocc.ir import tensor

T4 = tensor((4, 4), "float32")


def _call(name, *args, ty=T4, attrs=None):
    return Call(Op.get(name, create=True), tuple(args), Attrs(tuple(attrs)) if attrs else None, (), ty)


def composite(pname="x", inner="gv", op="relax.multiply", attrs=None, const=None, ty=T4):
    x, y = Var(pname, ty), Var("y", ty)
    other = const if const is not None else y
    out = Var(inner, ty)
    body = SeqExpr((DataflowBlock((VarBinding(out, _call(op, x, other, ty=ty)),)),), out)
    return Function((x, y), body, ty, True, attrs if attrs is not None else {"Composite": "c.mul"})


def both(a, b) -> bool:
    eq = structural_equal(a, b)
    if eq:
        assert structural_hash(a) == structural_hash(b)
    assert eq == structural_equal(b, a)
    return eq


def test_names_are_ignored():
    assert both(composite("x", "gv"), composite("a", "lv"))


def test_same_object_and_fresh_copies():
    f = composite()
    assert both(f, f)
    assert both(composite(), composite())


def test_operator_attrs_struct_info_and_function_attrs_matter():
    assert not both(composite(), composite(op="relax.add"))
    assert not both(composite(attrs={"Composite": "c.mul"}), composite(attrs={"Composite": "c.mul2"}))
    assert not both(composite(), composite(ty=tensor((4, 4), "float16")))
    a = _call("relax.sum", Var("x", T4), attrs=[("axis", (1,)), ("keepdims", False)])
    b = _call("relax.sum", Var("x", T4), attrs=[("axis", (1,)), ("keepdims", True)])
    x = Var("x", T4)
    assert not both(Function((x,), SeqExpr((), x), T4), Function((Var("x", T4),), SeqExpr((), Var("z", T4)), T4))
    assert not structural_equal(a, b)


def test_bool_attr_is_not_int():
    a = _call("relax.sum", Var("x", T4), attrs=[("keepdims", True)])
    b = _call("relax.sum", a.args[0], attrs=[("keepdims", 1)])
    assert not structural_equal(a, b)


def test_argument_order_and_binding_structure():
    x, y = Var("x", T4), Var("y", T4)
    o = Var("o", T4)
    f1 = Function((x, y), SeqExpr((DataflowBlock((VarBinding(o, _call("relax.subtract", x, y)),)),), o), T4)
    x2, y2 = Var("x", T4), Var("y", T4)
    o2 = Var("o", T4)
    f2 = Function((x2, y2), SeqExpr((DataflowBlock((VarBinding(o2, _call("relax.subtract", y2, x2)),)),), o2), T4)
    assert not both(f1, f2)
    # a DataflowVar is not a Var
    o3 = DataflowVar("o", T4)
    f3 = Function((x2, y2), SeqExpr((DataflowBlock((VarBinding(o3, _call("relax.subtract", x2, y2)),)),), o3), T4)
    assert not both(f1, f3)


def test_constants_compare_element_wise():
    c1 = Constant(np.ones((4, 4), "float32"), T4)
    c2 = Constant(np.ones((4, 4), "float32"), T4)
    c3 = Constant(np.full((4, 4), 2, "float32"), T4)
    c4 = Constant(np.ones((4, 4), "float64"), tensor((4, 4), "float64"))
    assert both(composite(const=c1), composite(const=c2))
    assert not both(composite(const=c1), composite(const=c3))
    assert not structural_equal(c1, c4)


def test_free_variables_compare_by_identity_unless_mapped():
    x, y = Var("x", T4), Var("x", T4)
    assert not structural_equal(_call("relax.nn.relu", x), _call("relax.nn.relu", y))
    assert structural_equal(_call("relax.nn.relu", x), _call("relax.nn.relu", x))
    assert structural_equal(_call("relax.nn.relu", x), _call("relax.nn.relu", y), map_free_vars=True)


def test_symbolic_dims_are_alpha_renamed():
    def sym(name):
        n = TirVar(name)
        ty = TensorStructInfo((n, 4), "float32")
        x = Var("x", ty)
        o = Var("gv", ty)
        return Function((x,), SeqExpr((DataflowBlock((VarBinding(o, _call("relax.nn.relu", x, ty=ty)),)),), o), ty)

    assert both(sym("n"), sym("m"))
    n = TirVar("n")
    ty = TensorStructInfo((n, n), "float32")
    x, o = Var("x", ty), Var("gv", ty)
    square = Function((x,), SeqExpr((DataflowBlock((VarBinding(o, _call("relax.nn.relu", x, ty=ty)),)),), o), ty)
    n2, m2 = TirVar("n"), TirVar("m")
    ty2 = TensorStructInfo((n2, m2), "float32")
    x2, o2 = Var("x", ty2), Var("gv", ty2)
    rect = Function((x2,), SeqExpr((DataflowBlock((VarBinding(o2, _call("relax.nn.relu", x2, ty=ty2)),)),), o2), ty2)
    assert not both(square, rect)


def test_spans_ignored_and_modules_compared_by_function():
    s = Span("a.relax", 1, 1)
    x = Var("x", T4, s)
    f_span = Function((x,), SeqExpr((), x), T4, True, {}, s)
    f = Function((Var("y", T4),), SeqExpr((), Var("unused", T4)), T4)
    g = Function((Var("z", T4),), SeqExpr((), Var("unused", T4)), T4)
    assert not structural_equal(f, g)  # different free variables
    y = Var("y", T4)
    assert both(f_span, Function((y,), SeqExpr((), y), T4))
    m1 = IRModule({"main": f_span})
    m2 = IRModule({"main": Function((y,), SeqExpr((), y), T4)})
    m3 = IRModule({"other": Function((y,), SeqExpr((), y), T4)})
    assert both(m1, m2)
    assert not both(m1, m3)


def test_global_references_compare_by_name():
    a = Call(GlobalVar("f"), (Var("x", T4),), None, (), T4)
    b = Call(GlobalVar("f"), (a.args[0],), None, (), T4)
    c = Call(GlobalVar("g"), (a.args[0],), None, (), T4)
    assert structural_equal(a, b)
    assert not structural_equal(a, c)
