"""Printer details one rule at a time: literals, names, dims, calls, scopes, metadata."""

from __future__ import annotations

import numpy as np
import pytest

from byocc.ir import Attrs
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import PrimMinMax
from byocc.ir import PrimStructInfo
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.text._print_format import NameTable
from byocc.text._print_format import format_float
from byocc.text._print_format import quote_string
from byocc.text._print_format import sanitize_name
from byocc.text.printer import print_expr
from byocc.text.printer import print_function
from byocc.text.printer import print_module

T4 = tensor((4,), "float32")


# ---------------------------------------------------------------------- literals
@pytest.mark.parametrize("value, text", [
    (2.0, "2.0"), (-0.0, "-0.0"), (float(np.float32(1e20)), "100000002004087734272.0"),
    (float(np.float32(0.1)), "0.10000000149011612"), (0.1, "0.10000000000000001"),
    (float(np.float16(0.1)), "0.0999755859375"), (float(np.float32(1e-5)), "9.9999997473787516e-06"),
    (1e-5, "1.0000000000000001e-05"), (float("inf"), '"inf"'), (float("-inf"), '"-inf"'),
    (float("nan"), '"nan"'), (1.5, "1.5"),
])
def test_format_float(value, text):
    assert format_float(value) == text


@pytest.mark.parametrize("value, text", [
    ("abc", '"abc"'), ("café", '"caf\\xC3\\xA9"'), ('a"b\\c', '"a\\"b\\\\c"'),
    ("t\tr\rn\n", '"t\\tr\\rn\\n"'), ("\x01\x7f", '"\\x01\\x7F"'), ("", '""'),
])
def test_quote_string(value, text):
    assert quote_string(value) == text


@pytest.mark.parametrize("hint, name", [("a.b", "a_b"), ("café", "caf__"), ("", "v"), ("1x", "1x"), ("x_1", "x_1")])
def test_sanitize_name(hint, name):
    assert sanitize_name(hint) == name


def test_name_table_first_free_suffix_after_release():
    t = NameTable(["R"])
    assert [t.take(n) for n in ("x", "x", "x", "x_1", "R")] == ["x", "x_1", "x_2", "x_1_1", "R_1"]
    t.release("x_1")
    assert t.take("x") == "x_1"
    assert t.take("x") == "x_3"


# ---------------------------------------------------------------------- helpers
def body_lines(params, bindings, ret, ret_ty, dataflow=False, **kw):
    block = (DataflowBlock if dataflow else BindingBlock)(tuple(VarBinding(v, e) for v, e in bindings))
    f = Function(tuple(params), SeqExpr((block,), ret), ret_ty, True, {"global_symbol": "main"})
    mod = IRModule({"main": f})
    return print_module(mod, **kw).split("\n")


def call(name, *args, ty=T4, attrs=None, sinfo_args=()):
    return Call(Op.get(name, create=True), tuple(args), Attrs(tuple(attrs)) if attrs else None, tuple(sinfo_args), ty)


# ---------------------------------------------------------------------- dims
def test_dim_precedence_and_quoting():
    n = TirVar("n")
    x = Var("x", tensor((n * 2 + 1, (n + 1) * 2, PrimMinMax("max", n, 4), n - (n - 1)), "float32"))
    y = Var("y", tensor((n * 2 + 1,), "float32"))
    lines = body_lines([x], [(y, Call(Op.get("relax.foo", create=True), (ShapeExpr((n * 2 + 1, n // 2 % 3)),), None, (), y.struct_info))],
                       y, y.struct_info)
    sig = next(line for line in lines if "def main" in line)
    assert '("n * 2 + 1", "(n + 1) * 2", "T.max(n, 4)", "n - (n - 1)")' in sig
    assert '-> R.Tensor(("n * 2 + 1",), dtype="float32")' in sig
    body = next(line for line in lines if "R.foo" in line)
    assert body.endswith("= R.foo(R.shape([n * 2 + 1, n // 2 % 3]))")
    assert 'y: R.Tensor((n * 2 + 1,), dtype="float32")' in body
    assert "# from tvm.script import tirx as T" in lines  # T.max


def test_pep695_quotes_nothing_and_declares_type_params():
    n = TirVar("n")
    x = Var("x", tensor((n * 2,), "float32"))
    lines = body_lines([x], [], x, x.struct_info, pep695=True)
    assert lines[0:2] == ["from __future__ import annotations", ""]
    assert any(line.startswith('    def main[n](x: R.Tensor((n * 2,), dtype="float32"))') for line in lines)


def test_parameter_named_like_its_dimension():
    n = TirVar("n")
    p = Var("n", tensor((n,), "float32"))
    lines = body_lines([p], [], p, p.struct_info)
    assert any('def main(n_1: R.Tensor((n,), dtype="float32")) -> R.Tensor((n,), dtype="float32"):' in line for line in lines)
    assert 'n = TypeVar("n")' in lines


# ---------------------------------------------------------------------- expressions
def test_operator_attribute_values():
    x = Var("x", T4)
    attrs = [("a", None), ("b", True), ("c", 3), ("d", 1e-5), ("e", "NCHW"), ("f", (1, 2)), ("g", ((1, 2), (3,))), ("h", -1)]
    y = Var("y", T4)
    lines = body_lines([x], [(y, call("relax.nn.thing", x, attrs=attrs))], y, T4)
    assert lines[-2].endswith('= R.nn.thing(x, a=None, b=True, c=3, d=1.0000000000000001e-05, e="NCHW", f=[1, 2], g=[[1, 2], [3]], h=-1)')


def test_attention_bias_keeps_its_name():
    # TVM 0.27 prints relax.nn.attention_bias as R.nn.attention_bias (conformance corpus)
    q = Var("q", T4)
    y = Var("y", T4)
    lines = body_lines([q], [(y, call("relax.nn.attention_bias", q, q, q, q, attrs=[("scale", None)]))], y, T4)
    assert "R.nn.attention_bias(q, q, q, q, scale=None)" in lines[-2]


@pytest.mark.parametrize("data, text", [
    (np.array(True), 'R.const(True, "bool")'), (np.array(-7, np.int64), 'R.const(-7, "int64")'),
    (np.array(3, np.int8), 'R.const(3, "int8")'), (np.array(np.inf, np.float32), 'R.const("inf", "float32")'),
    (np.array(0.1, np.float16), 'R.const(0.0999755859375, "float16")'),
    (np.array(2, np.float64), 'R.const(2.0, "float64")'),
])
def test_scalar_constants_inline(data, text):
    c = Constant(data, TensorStructInfo((), str(data.dtype)))
    assert print_expr(c) == text


@pytest.mark.parametrize("data", [np.array(1, np.uint8), np.ones((1,), np.float32), np.array(1, np.float32).reshape(1, 1)])
def test_other_constants_are_metadata(data):
    assert print_expr(Constant(data, TensorStructInfo(data.shape, str(data.dtype)))) == 'metadata["ir.GenericConst"][0]'


def test_metadata_numbered_by_identity_with_footer():
    a = Constant(np.ones(4, np.float32), T4)
    b = Constant(np.ones(4, np.float32), T4)
    x, y, z, w = Var("x", T4), Var("y", T4), Var("z", T4), Var("w", T4)
    lines = body_lines([x], [(y, call("relax.add", x, a)), (z, call("relax.add", y, b)), (w, call("relax.add", z, a))], w, T4)
    assert [line.split("= ")[1] for line in lines if "R.add" in line] == [
        'R.add(x, metadata["ir.GenericConst"][0])', 'R.add(y, metadata["ir.GenericConst"][1])',
        'R.add(z, metadata["ir.GenericConst"][0])']
    assert lines[-2:] == ["", "# Metadata omitted. Use show_meta=True in script() method to show it."]


def test_prim_values_tuples_strings():
    x, y = Var("x", T4), Var("y", T4)
    e = call("relax.clip", x, PrimValue(0), PrimValue(6))
    assert print_expr(e) == "R.clip(x, 0, 6)"
    assert print_expr(PrimValue(0.5, "float64")) == "T.float64(0.5)"
    assert print_expr(Tuple(())) == "R.tuple()"
    assert print_expr(Tuple((x,))) == "(x,)"
    assert print_expr(TupleGetItem(Tuple((x, y)), 1)) == "(x, y)[1]"
    assert print_expr(StringImm("a\nb")) == 'R.str("a\\nb")'
    assert print_expr(call("relax.strided_slice", x, Tuple((PrimValue(0),)), attrs=[("assume_inbound", False)])) == \
        "R.strided_slice(x, (0,), assume_inbound=False)"


def test_prim_value_float_adds_t_header():
    x, y = Var("x", T4), Var("y", T4)
    lines = body_lines([x], [(y, call("relax.foo", x, PrimValue(0.5, "float64")))], y, T4)
    assert "# from tvm.script import tirx as T" in lines
    assert lines[-2].endswith("= R.foo(x, T.float64(0.5))")


def test_call_tir_and_tuple_out_ty():
    x, y, z = Var("x", T4), Var("y", T4), Var("z", tensor((4,), "float16"))
    ct = call("relax.call_tir", GlobalVar("add_one"), Tuple((x,)), sinfo_args=(T4,))
    ct2 = call("relax.call_tir", GlobalVar("add_one"), Tuple((x,)), ty=z.struct_info, sinfo_args=(T4,))
    lines = body_lines([x], [(y, ct), (z, ct2)], z, z.struct_info)
    assert '        y = R.call_tir(add_one, (x,), out_ty=R.Tensor((4,), dtype="float32"))' in lines
    # the variable's type differs from out_ty: annotated
    assert any(line.startswith('        z: R.Tensor((4,), dtype="float16") = R.call_tir(') for line in lines)


def test_free_variable_gets_declared():
    x, y, free = Var("x", T4), Var("y", T4), Var("free", T4)
    lines = body_lines([x], [(y, call("relax.add", x, free))], y, T4)
    i = lines.index('        free: R.Tensor((4,), dtype="float32")')
    assert lines[i + 1].startswith("        y: ")


def test_output_lists_non_dataflow_vars_in_order():
    x, a, b, c = Var("x", T4), Var("a", T4), DataflowVar("b", T4), Var("c", T4)
    lines = body_lines([x], [(a, call("relax.exp", x)), (b, call("relax.exp", a)), (c, call("relax.exp", b))],
                       c, T4, dataflow=True)
    assert "            R.output(a, c)" in lines


def test_second_dataflow_block_renames():
    x = Var("x", T4)
    a1, a2 = Var("a", T4), Var("a", T4)
    blocks = (DataflowBlock((VarBinding(a1, call("relax.exp", x)),)), DataflowBlock((VarBinding(a2, call("relax.exp", a1)),)))
    f = Function((x,), SeqExpr(blocks, a2), T4, True, {"global_symbol": "main"})
    text = print_module(IRModule({"main": f}))
    assert "R.output(a)\n        with R.dataflow():\n            a_1:" in text


def test_local_function_gets_own_cls_and_no_private():
    x = Var("x", T4)
    inner_x, inner_y = Var("x", T4), Var("y", T4)
    local = Function((inner_x,), SeqExpr((BindingBlock((VarBinding(inner_y, Call(GlobalVar("helper"), (inner_x,), None, (), T4)),)),), inner_y),
                     T4, False, {})
    lf, out = Var("f", local.struct_info), Var("out", T4)
    outer = Function((x,), SeqExpr((BindingBlock((VarBinding(lf, local), VarBinding(out, Call(lf, (x,), None, (), T4)))),), out),
                     T4, True, {})
    hx = Var("x", T4)
    helper = Function((hx,), SeqExpr((), hx), T4, True, {"global_symbol": "helper"})
    text = print_module(IRModule({"outer": outer, "helper": helper}))
    assert "    @R.function(private=True)\n    def outer(" in text
    assert ("        # from tvm.script import relax as R\n        \n        @R.function(pure=False)\n"
            "        def f(x_1: R.Tensor((4,), dtype=\"float32\")) -> R.Tensor((4,), dtype=\"float32\"):\n"
            "            cls = Module\n            y: R.Tensor((4,), dtype=\"float32\") = cls.helper(x_1)\n"
            "            return y\n\n        out:") in text
    # the outer function itself never references a member: no cls line at its top
    assert "def outer(x: R.Tensor((4,), dtype=\"float32\")) -> R.Tensor((4,), dtype=\"float32\"):\n        # from" in text


def test_body_var_header_reaches_later_local_headers():
    # a T.int64() printed in an earlier member puts the T lines into later local headers
    m = TirVar("m")
    x = Var("x", TensorStructInfo(dtype="float32", ndim=1))
    from byocc.ir import MatchCast
    y = Var("y", tensor((m,), "float32"))
    a = Function((x,), SeqExpr((BindingBlock((MatchCast(y, x, tensor((m,), "float32")),)),), y), x.struct_info, True,
                 {"global_symbol": "a"})
    bx = Var("x", T4)
    lx = Var("x", T4)
    local = Function((lx,), SeqExpr((), lx), T4, True, {})
    lf, out = Var("f", local.struct_info), Var("out", T4)
    b = Function((bx,), SeqExpr((BindingBlock((VarBinding(lf, local), VarBinding(out, Call(lf, (bx,), None, (), T4)))),), out),
                 T4, True, {"global_symbol": "b"})
    text = print_module(IRModule({"b": b, "a": a}))
    assert "        m = T.int64()\n" in text
    assert ("        # from tvm.script import tirx as T\n        # from tvm.tirx.layout import Axis\n"
            "        # from tvm.script import relax as R\n        \n        @R.function\n        def f(") in text


def test_extern_member_then_footer_has_no_blank_line():
    c = Constant(np.ones(4, np.float32), T4)
    mod = IRModule({"main": ExternFunc("sym")}, attrs={"k": c})
    text = print_module(mod)
    assert text.endswith('    main = R.ExternFunc("sym")\n# Metadata omitted. Use show_meta=True in script() method to show it.')


def test_multiline_string_attr_is_metadata():
    x = Var("x", T4)
    f = Function((x,), SeqExpr((), x), T4, True, {"global_symbol": "main", "note": "a\nb"})
    text = print_module(IRModule({"main": f}))
    assert 'R.func_attr({"note": metadata["ffi.String"][0]})' in text


def test_prim_typed_binding_always_annotated():
    x = Var("x", T4)
    s = Var("s", PrimStructInfo("int64"))
    lines = body_lines([x], [(s, PrimValue(3))], x, T4)
    assert "        s: T.int64 = 3" in lines


def test_print_function_standalone_has_no_ir_line():
    x = Var("x", T4)
    f = Function((x,), SeqExpr((), x), T4, True, {"global_symbol": "foo"})
    assert print_function(f) == ('# from tvm.script import relax as R\n\n@R.function\n'
                                 'def foo(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):\n'
                                 '    return x')


def test_hundred_thousand_bindings():
    import time
    t = tensor((8,), "float32")
    x = Var("x", t)
    add = Op.get("relax.add", create=True)
    bindings, prev = [], x
    for _ in range(100_000):
        v = DataflowVar("lv", t)
        bindings.append(VarBinding(v, Call(add, (prev, x), None, (), t)))
        prev = v
    gv = Var("gv", t)
    bindings.append(VarBinding(gv, Call(add, (prev, x), None, (), t)))
    f = Function((x,), SeqExpr((DataflowBlock(tuple(bindings)),), gv), t, True, {"global_symbol": "main"})
    start = time.process_time()
    text = print_module(IRModule({"main": f}))
    elapsed = time.process_time() - start
    lines = text.split("\n")
    assert lines[-4] == '            lv_99999: R.Tensor((8,), dtype="float32") = R.add(lv_99998, x)'
    assert lines[-3] == '            gv: R.Tensor((8,), dtype="float32") = R.add(lv_99999, x)'
    assert elapsed < 5.0
