"""The printer reproduces spec/textual-ir.md's worked examples from hand-built IR."""

from __future__ import annotations

import numpy as np
from test_printer_spec_texts import EXAMPLES

from byocc.ir import EMPTY_TUPLE
from byocc.ir import Attrs
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import ExternFunc
from byocc.ir import FuncStructInfo
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import ObjectStructInfo
from byocc.ir import Op
from byocc.ir import PrimStructInfo
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.text.printer import print_function
from byocc.text.printer import print_module

F32, F16 = "float32", "float16"


# ---------------------------------------------------------------------- tiny IR builders
def call(op: str, *args, ty, attrs=None, sinfo_args=()):
    a = Attrs(tuple(attrs)) if attrs else None
    return Call(Op.get(op, create=True), tuple(args), a, tuple(sinfo_args), ty)


def dps(symbol, args, out):
    ty = out if not isinstance(out, list) else TupleStructInfo(tuple(out))
    return call("relax.call_dps_packed", ExternFunc(symbol), Tuple(tuple(args)), ty=ty, sinfo_args=(ty,))


def gcall(name, *args, ty):
    return Call(GlobalVar(name), tuple(args), None, (), ty)


def func(params, blocks, ret, ret_ty, attrs=None, pure=True):
    return Function(tuple(params), SeqExpr(tuple(blocks), ret), ret_ty, pure, dict(attrs or {}))


def df(*bindings):
    return DataflowBlock(tuple(VarBinding(v, e) if not isinstance(v, VarBinding) else v for v, e in bindings))


def blk(*bindings):
    return BindingBlock(tuple(VarBinding(v, e) for v, e in bindings))


def public(name, f: Function) -> Function:
    return f.with_attrs(global_symbol=name)


def module(*members, attrs=None):
    return IRModule({name: f for name, f in members}, attrs=attrs)


def check(text: str, n: int):
    assert text == EXAMPLES[n].rstrip("\n")


# ---------------------------------------------------------------------- examples
def seed_multiply(prefix_x="x", prefix_y="y"):
    t = tensor((10, 10), F32)
    x, y, gv = Var(prefix_x, t), Var(prefix_y, t), Var("gv", t)
    return x, y, gv, t


def test_e1_seed():
    x, y, gv, t = seed_multiply()
    main = func([x, y], [df((gv, call("relax.multiply", x, y, ty=t)))], gv, t)
    check(print_module(module(("main", public("main", main)))), 1)


def _e2_like(composite_var_name: str, result_name: str, inner_result: str, member: str, n: int):
    t = tensor((10, 10), F32)
    x1, y1, g = Var("x", t), Var("y", t), Var(inner_result, t)
    local = func([x1, y1], [df((g, call("relax.multiply", x1, y1, ty=t)))], g, t,
                 {"Composite": "cutlass.multiply"})
    x, y = Var("x", t), Var("y", t)
    lf, out = Var(composite_var_name, FuncStructInfo((t, t), t)), Var(result_name, t)
    fused = func([x, y], [blk((lf, local), (out, Call(lf, (x, y), None, (), t)))], out, t,
                 {"Codegen": "cutlass", "global_symbol": member})
    mx, my, mgv = Var("x", t), Var("y", t), DataflowVar("gv", t)
    mgv = Var("gv", t)
    main = func([mx, my], [df((mgv, gcall(member, mx, my, ty=t)))], mgv, t)
    mod = module(("main", public("main", main)), (member, fused))
    check(print_module(mod), n)


def test_e2_annotate_codegen_local_function():
    _e2_like("local_func", "output", "gv", "fused_relax_multiply_cutlass", 2)


def test_e4_local_function_names_released():
    _e2_like("gv", "gv", "gv", "fused_relax_multiply1_cutlass", 4)


def test_e3_private_member_and_attrs():
    x, y, gv, t = seed_multiply()
    fused = func([x, y], [df((gv, call("relax.multiply", x, y, ty=t)))], gv, t,
                 {"Primitive": True, "Composite": "cutlass.multiply"})
    mx, my, mgv = Var("x", t), Var("y", t), Var("gv", t)
    main = func([mx, my], [df((mgv, gcall("fused_relax_multiply", mx, my, ty=t)))], mgv, t)
    check(print_module(module(("main", public("main", main)), ("fused_relax_multiply", fused))), 3)


def test_e5_call_dps_packed_hides_annotation():
    x, y, gv, t = seed_multiply()
    main = func([x, y], [df((gv, dps("fused_relax_multiply1_cutlass", [x, y], t)))], gv, t)
    check(print_module(module(("main", public("main", main)))), 5)


def test_e6_conv2d_attributes():
    td, tw, tb, to = (tensor((1, 3, 16, 16), F32), tensor((8, 3, 3, 3), F32),
                      tensor((1, 8, 1, 1), F32), tensor((1, 8, 16, 16), F32))
    d1, w1, b1 = Var("data", td), Var("weight", tw), Var("bias", tb)
    lv, lv1, gv = DataflowVar("lv", to), DataflowVar("lv1", to), Var("gv", to)
    conv_attrs = [("strides", (1, 1)), ("padding", (1, 1, 1, 1)), ("dilation", (1, 1)), ("groups", 1),
                  ("data_layout", "NCHW"), ("kernel_layout", "OIHW"), ("out_layout", "NCHW"),
                  ("out_dtype", None)]
    local = func([d1, w1, b1], [df((lv, call("relax.nn.conv2d", d1, w1, ty=to, attrs=conv_attrs)),
                                   (lv1, call("relax.add", lv, b1, ty=to)),
                                   (gv, call("relax.nn.relu", lv1, ty=to)))], gv, to,
                 {"Composite": "dnnl.conv2d_bias_relu"})
    name = "fused_relax_nn_conv2d_relax_add_relax_nn_relu_dnnl"
    d, w, b = Var("data", td), Var("weight", tw), Var("bias", tb)
    lf, out = Var("local_func", local.struct_info), Var("output", to)
    fused = func([d, w, b], [blk((lf, local), (out, Call(lf, (d, w, b), None, (), to)))], out, to,
                 {"Codegen": "dnnl", "global_symbol": name})
    md, mw, mb, mgv = Var("data", td), Var("weight", tw), Var("bias", tb), Var("gv", to)
    main = func([md, mw, mb], [df((mgv, gcall(name, md, mw, mb, ty=to)))], mgv, to)
    check(print_module(module(("main", public("main", main)), (name, fused))), 6)


def _e8_main(batch):
    tx, tw = tensor((batch, 64), F16), tensor((64, 128), F16)
    tl, tg = tensor((batch, 128), F16), tensor((batch * 2, 64), F16)
    x, w = Var("x", tx), Var("w", tw)
    lv, lv1, gv = DataflowVar("lv", tl), DataflowVar("lv1", tl), Var("gv", tg)
    main = func([x, w], [df((lv, call("relax.matmul", x, w, ty=tl, attrs=[("out_dtype", None)])),
                            (lv1, call("relax.nn.relu", lv, ty=tl)),
                            (gv, call("relax.reshape", lv1, ShapeExpr((batch * 2, 64)), ty=tg)))], gv, tg)
    return public("main", main)


def test_e8_typevar_mode():
    check(print_module(module(("main", _e8_main(TirVar("batch"))))), 8)


def test_e9_pep695_mode():
    check(print_module(module(("main", _e8_main(TirVar("batch")))), pep695=True), 9)


def test_e10_local_function_own_typevar():
    name = "fused_relax_matmul_relax_nn_relu1_cutlass"
    ib = TirVar("batch")
    x1, w1 = Var("x", tensor((ib, 64), F16)), Var("w", tensor((64, 128), F16))
    lv, g = DataflowVar("lv", tensor((ib, 128), F16)), Var("gv", tensor((ib, 128), F16))
    local = func([x1, w1], [df((lv, call("relax.matmul", x1, w1, ty=lv.struct_info, attrs=[("out_dtype", None)])),
                               (g, call("relax.nn.relu", lv, ty=g.struct_info)))],
                 g, g.struct_info, {"Composite": "cutlass.matmul_relu"})
    ob = TirVar("batch")
    tout = tensor((ob, 128), F16)
    x, w = Var("x", tensor((ob, 64), F16)), Var("w", tensor((64, 128), F16))
    lf, out = Var("gv", local.struct_info), Var("gv", tout)
    fused = func([x, w], [blk((lf, local), (out, Call(lf, (x, w), None, (), tout)))], out, tout,
                 {"Codegen": "cutlass", "global_symbol": name})
    mb = TirVar("batch")
    mx, mw = Var("x", tensor((mb, 64), F16)), Var("w", tensor((64, 128), F16))
    ml, mg = DataflowVar("lv", tensor((mb, 128), F16)), Var("gv", tensor((mb * 2, 64), F16))
    main = func([mx, mw], [df((ml, gcall(name, mx, mw, ty=ml.struct_info)),
                              (mg, call("relax.reshape", ml, ShapeExpr((mb * 2, 64)), ty=mg.struct_info)))],
                mg, mg.struct_info)
    check(print_module(module((name, fused), ("main", public("main", main)))), 10)


def test_e11_tuples_blocks_packed_pair():
    t = tensor((2, 2), F32)
    tt = TupleStructInfo((t, t))
    x, y = Var("x", t), Var("y", t)
    a, b, e = Var("a", t), Var("b", t), Var("e", t)
    c, d = DataflowVar("c", t), DataflowVar("d", tt)
    g, h = Var("g", tt), Var("h", t)
    main = func([x, y], [
        blk((a, call("relax.add", x, y, ty=t))),
        df((b, call("relax.multiply", a, y, ty=t)), (c, call("relax.subtract", b, x, ty=t)),
           (d, Tuple((b, c), tt)), (e, TupleGetItem(d, 1, t))),
        blk((g, dps("ext_pair", [b, e], [t, t])), (h, TupleGetItem(g, 0, t))),
    ], Tuple((h, e), tt), tt)
    check(print_module(module(("main", public("main", main)))), 11)


def test_e12_constants_numbered_by_identity():
    t = tensor((2, 3), F32)
    c1 = Constant(np.ones((2, 3), np.float32), t)
    c2 = Constant(np.ones((3,), np.float16), tensor((3,), F16))
    s01 = Constant(np.array(0.1, np.float32), tensor((), F32))
    s1 = Constant(np.array(1, np.float32), tensor((), F32))
    x = Var("x", t)
    lv, lv1, lv2, lv3, lv4 = (DataflowVar(n, t) for n in ("lv", "lv1", "lv2", "lv3", "lv4"))
    lv2 = DataflowVar("lv2", tensor((3,), F32))
    gv = Var("gv", t)
    main = func([x], [df((lv, call("relax.add", x, c1, ty=t)), (lv1, call("relax.multiply", lv, c1, ty=t)),
                         (lv2, call("relax.astype", c2, ty=lv2.struct_info, attrs=[("dtype", F32)])),
                         (lv3, call("relax.multiply", lv1, s01, ty=t)), (lv4, call("relax.add", lv3, s1, ty=t)),
                         (gv, call("relax.add", lv4, lv2, ty=t)))], gv, t)
    check(print_module(module(("main", public("main", main)))), 12)


class _RuntimeModule:
    is_runtime_module = True


def test_e13_module_attrs_metadata():
    t = tensor((4,), F32)
    x, gv = Var("x", t), Var("gv", t)
    main = func([x], [df((gv, dps("fused_relax_multiply1_cutlass", [x], t)))], gv, t)
    attrs = {"external_mods": [_RuntimeModule()],
             "const_name_to_constant": {"fused_relax_multiply1_cutlass_cutlass_const_0": Constant(np.ones(4, np.float32), t)}}
    check(print_module(module(("main", public("main", main)), attrs=attrs)), 13)


def test_e14_type_annotations():
    n, m = TirVar("n"), TirVar("m")
    ps = [("a", tensor((2, 3), F32)), ("b", TensorStructInfo(None, F16, 2)), ("c", TensorStructInfo(dtype="bool")),
          ("d", TensorStructInfo((4,))), ("e", TensorStructInfo(ndim=3)), ("f", TensorStructInfo()),
          ("g", TupleStructInfo((tensor((2,), "int32"), tensor((), "bool")))), ("h", TupleStructInfo(())),
          ("i", ShapeStructInfo((2, 3))), ("j", ShapeStructInfo(ndim=2)), ("k", ShapeStructInfo()),
          ("l", ObjectStructInfo()),
          ("o", FuncStructInfo((tensor((2,), F32),), tensor((2,), F32), True)),
          ("p", tensor((n, m * 2), "bfloat16")), ("s", PrimStructInfo("int64"))]
    params = [Var(k, v) for k, v in ps]
    main = func(params, [], params[0], tensor((2, 3), F32))
    check(print_module(module(("main", public("main", main)))), 14)


def test_e15_order_decorators_attrs():
    t = tensor((4,), F32)

    def ident(**kw):
        x = Var("x", t)
        return func([x], [], x, t, **kw)

    x, y, z = Var("x", t), Var("y", t), Var("z", t)
    main = public("main", func([x], [blk((y, gcall("b_func", x, ty=t)), (z, gcall("A_func", y, ty=t)))], z, t))
    attrs = {"zeta": 1, "nested": {"b": 1, "a": "x"}, "list": (1, 2), "gamma": 1.5, "beta": True, "Alpha": "s"}
    mod = module(("main", main), ("b_func", ident(attrs={"global_symbol": "ext_sym"})), ("A_func", ident()),
                 ("_x", public("_x", ident(pure=False))), ("a_func", ident(pure=False, attrs=attrs)))
    check(print_module(mod), 15)


def test_e16_names():
    t = tensor((2,), F32)
    params = [Var(h, t) for h in ("x", "x", "x_1", "R", "cls", "Module", "metadata", "if", "a.b", "", "café")]
    bx, bt, bm = Var("x", t), Var("T", t), Var("main", t)
    main = func(params, [blk((bx, call("relax.add", params[0], params[1], ty=t)),
                             (bt, call("relax.add", bx, params[2], ty=t)),
                             (bm, call("relax.add", bt, params[3], ty=t)))], bm, t)
    check(print_module(module(("main", public("main", main)))), 16)


def test_e17_extern_packed_void():
    t = tensor((2,), F32)
    x = Var("x", t)
    gv = Var("gv", FuncStructInfo(None, ObjectStructInfo(), False))
    gv1, gv2, gv3, gv4 = Var("gv1", t), Var("gv2", EMPTY_TUPLE), Var("gv3", t), Var("gv4", t)
    main = func([x], [blk(
        (gv, ExternFunc("my_packed")),
        (gv1, Call(ExternFunc("my_packed"), (x,), None, (t,), t)),
        (gv2, Call(ExternFunc("log_it"), (gv1,), None, (EMPTY_TUPLE,), EMPTY_TUPLE)),
        (gv3, dps("my_packed", [gv1], t)),
        (gv4, dps("other", [gv3], t)),
    )], gv4, t, pure=False)
    mod = module(("main", public("main", main)), ("ext_global", ExternFunc("ext_sym")))
    check(print_module(mod), 17)


def test_e18_body_variables():
    m, k = TirVar("m"), TirVar("k")
    t2 = TensorStructInfo(dtype=F32, ndim=2)
    tmk = tensor((m, k), F32)
    x, y, z = Var("x", t2), Var("y", tmk), Var("z", tmk)
    body = BindingBlock((MatchCast(y, x, tmk), VarBinding(z, call("relax.add", y, y, ty=tmk))))
    main = public("main", Function((x,), SeqExpr((body,), z), t2))
    check(print_module(module(("main", main))), 18)


# ---------------------------------------------------------------------- stand-alone form
def test_standalone_function_header_and_private():
    x, y, gv, t = seed_multiply()
    f = func([x, y], [df((gv, call("relax.multiply", x, y, ty=t)))], gv, t)
    text = print_function(f)
    assert text.splitlines()[:4] == ["# from tvm.script import relax as R", "",
                                     "@R.function(private=True)",
                                     'def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):']
    assert not text.endswith("\n")
    assert print_function(public("foo", f)).splitlines()[2:4] == [
        "@R.function", 'def foo(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):']


def test_standalone_function_typevars_at_top():
    text = print_function(_e8_main(TirVar("batch")))
    lines = text.splitlines()
    assert lines[:5] == ["# from typing import TypeVar", "# from tvm.script import relax as R", "",
                         'batch = TypeVar("batch")', "@R.function"]


def test_empty_module_prints_pass():
    assert print_module(IRModule({})) == "# from tvm.script import ir as I\n\n@I.ir_module\nclass Module:\n    pass"


def test_script_method_matches():
    # IRModule.script() is the printer
    x, y, gv, t = seed_multiply()
    main = func([x, y], [df((gv, call("relax.multiply", x, y, ty=t)))], gv, t)
    mod = module(("main", public("main", main)))
    assert mod.script() == print_module(mod)
