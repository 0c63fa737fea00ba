"""The op table, walked op by op: every registered op has a sample call whose inferred
struct info is checked, and whose printed keyword form binds back to the same call."""

from __future__ import annotations

import pytest

from byocc.ir import Attrs
from byocc.ir import Call
from byocc.ir import ExternFunc
from byocc.ir import GlobalVar
from byocc.ir import Op
from byocc.ir import PrimStructInfo
from byocc.ir import PrimValue
from byocc.ir import ShapeExpr
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import Var
from byocc.ir import tensor
from byocc.ops import REQUIRED
from byocc.ops import AttrField
from byocc.ops import OpDef
from byocc.ops import all_op_defs
from byocc.ops import binary
from byocc.ops import get_op_def
from byocc.ops import infer_struct_info
from byocc.ops import lookup_printed
from byocc.ops import make_call
from byocc.ops import unary


def v(name, shape, dtype="float32"):
    return Var(name, tensor(shape, dtype))


def T(shape, dtype="float32"):
    return TensorStructInfo(tuple(shape), dtype)


m = v("m", (4, 32))
x4 = v("x", (1, 3, 32, 32))
w4 = v("w", (16, 3, 3, 3))
q = v("q", (2, 16, 4, 32), "float16")
bias = v("bias", (2, 4, 16, 16), "float16")
g32 = v("g", (32,))
b32 = v("b", (32,))
c3 = v("c3", (3,))
i64 = v("idx", (5,), "int64")
cond = v("cond", (4, 32), "bool")
x1d = v("x1d", (1, 3, 16))
w1d = v("w1d", (8, 3, 3))
x3d = v("x3d", (1, 3, 8, 8, 8))
w3d = v("w3d", (4, 3, 3, 3, 3))
q8 = v("q8", (4, 32), "int8")
s32 = v("s32", (32,))
z32 = v("z32", (32,), "int8")
seq = v("seq", (3,), "int32")
fill = v("fill", (), "float32")

# (dotted callee, positional, keywords, expected struct info)
SAMPLES = {
    "relax.matmul": ("matmul", [m, v("k", (32, 8))], {}, T((4, 8))),
    "relax.permute_dims": ("permute_dims", [m], {"axes": None}, T((32, 4))),
    "relax.reshape": ("reshape", [m, ShapeExpr((4, 4, 8))], {}, T((4, 4, 8))),
    "relax.expand_dims": ("expand_dims", [m], {"axis": [0, -1]}, T((1, 4, 32, 1))),
    "relax.squeeze": ("squeeze", [v("s", (1, 4, 1))], {"axis": [0]}, T((4, 1))),
    "relax.flatten": ("flatten", [x4], {}, T((3072,))),
    "relax.concat": ("concat", [Tuple((m, m))], {"axis": 1}, T((4, 64))),
    "relax.stack": ("stack", [Tuple((m, m))], {"axis": 0}, T((2, 4, 32))),
    "relax.split": ("split", [m], {"indices_or_sections": 3, "axis": 1},
                    TupleStructInfo((T((4, 11)), T((4, 11)), T((4, 10))))),
    "relax.broadcast_to": ("broadcast_to", [g32, ShapeExpr((4, 32))], {}, T((4, 32))),
    "relax.repeat": ("repeat", [m], {"repeats": 2, "axis": 0}, T((8, 32))),
    "relax.tile": ("tile", [m], {"repeats": [2, 1]}, T((8, 32))),
    "relax.gather_elements": ("gather_elements", [m, v("gi", (4, 5), "int64")], {"axis": 1}, T((4, 5))),
    "relax.gather_nd": ("gather_nd", [x4, v("gn", (2, 2), "int64")], {"batch_dims": 0}, T((2, 32, 32))),
    "relax.take": ("take", [m, i64], {"axis": 1}, T((4, 5))),
    "relax.strided_slice": ("strided_slice", [m, (1,), (0,), (16,)], {"assume_inbound": False}, T((4, 16))),
    "relax.astype": ("astype", [m], {"dtype": "float16"}, T((4, 32), "float16")),
    "relax.wrap_param": ("wrap_param", [m], {"dtype": "float16"}, T((4, 32), "float16")),
    "relax.clip": ("clip", [m, 0, 6], {}, T((4, 32))),
    "relax.where": ("where", [cond, m, g32], {}, T((4, 32))),
    "relax.zeros": ("zeros", [ShapeExpr((2, 2))], {"dtype": "float32"}, T((2, 2))),
    "relax.ones": ("ones", [[2, 3]], {"dtype": "int32"}, T((2, 3), "int32")),
    "relax.full": ("full", [[2, 3], fill], {"dtype": None}, T((2, 3))),
    "relax.zeros_like": ("zeros_like", [m], {"dtype": None}, T((4, 32))),
    "relax.ones_like": ("ones_like", [m], {"dtype": "float16"}, T((4, 32), "float16")),
    "relax.full_like": ("full_like", [m, fill], {"dtype": None}, T((4, 32))),
    "relax.tril": ("tril", [m, 0], {}, T((4, 32))),
    "relax.triu": ("triu", [m, 1], {}, T((4, 32))),
    "relax.argmax": ("argmax", [m], {"axis": 1, "keepdims": False}, T((4,), "int64")),
    "relax.argmin": ("argmin", [m], {"axis": None, "keepdims": False}, T((), "int64")),
    "relax.nn.conv1d": ("nn.conv1d", [x1d, w1d], {"padding": 1}, T((1, 8, 16))),
    "relax.nn.conv2d": ("nn.conv2d", [x4, w4], {"padding": [1, 1]}, T((1, 16, 32, 32))),
    "relax.nn.conv3d": ("nn.conv3d", [x3d, w3d], {}, T((1, 4, 6, 6, 6))),
    "relax.nn.conv1d_transpose": ("nn.conv1d_transpose", [x1d, v("wt1", (3, 8, 3))], {"strides": [2]}, T((1, 8, 33))),
    "relax.nn.conv2d_transpose": ("nn.conv2d_transpose", [x4, v("wt", (3, 8, 2, 2))], {"strides": 2}, T((1, 8, 64, 64))),
    "relax.nn.conv3d_transpose": ("nn.conv3d_transpose", [x3d, v("wt3", (3, 2, 1, 1, 1))], {}, T((1, 2, 8, 8, 8))),
    "relax.nn.max_pool1d": ("nn.max_pool1d", [x1d], {"pool_size": 2, "strides": 2}, T((1, 3, 8))),
    "relax.nn.max_pool2d": ("nn.max_pool2d", [x4], {"pool_size": [2, 2], "strides": [2, 2]}, T((1, 3, 16, 16))),
    "relax.nn.max_pool3d": ("nn.max_pool3d", [x3d], {"pool_size": 2, "strides": 2}, T((1, 3, 4, 4, 4))),
    "relax.nn.avg_pool1d": ("nn.avg_pool1d", [x1d], {"pool_size": 3, "padding": 1}, T((1, 3, 16))),
    "relax.nn.avg_pool2d": ("nn.avg_pool2d", [x4], {"pool_size": 3, "strides": 2, "ceil_mode": True}, T((1, 3, 16, 16))),
    "relax.nn.avg_pool3d": ("nn.avg_pool3d", [x3d], {"pool_size": 2}, T((1, 3, 7, 7, 7))),
    "relax.nn.adaptive_avg_pool1d": ("nn.adaptive_avg_pool1d", [x1d], {"output_size": 1}, T((1, 3, 1))),
    "relax.nn.adaptive_avg_pool2d": ("nn.adaptive_avg_pool2d", [x4], {"output_size": [1, 1]}, T((1, 3, 1, 1))),
    "relax.nn.adaptive_avg_pool3d": ("nn.adaptive_avg_pool3d", [x3d], {"output_size": 2}, T((1, 3, 2, 2, 2))),
    "relax.nn.softmax": ("nn.softmax", [m], {"axis": -1}, T((4, 32))),
    "relax.nn.log_softmax": ("nn.log_softmax", [m], {"axis": 0}, T((4, 32))),
    "relax.nn.leakyrelu": ("nn.leakyrelu", [m], {"alpha": 0.1}, T((4, 32))),
    "relax.nn.softplus": ("nn.softplus", [m], {}, T((4, 32))),
    "relax.nn.prelu": ("nn.prelu", [m, v("alpha", (32,))], {"axis": 1}, T((4, 32))),
    "relax.nn.batch_norm": ("nn.batch_norm", [x4, c3, c3, c3, c3], {"axis": 1},
                            TupleStructInfo((T((1, 3, 32, 32)), T((3,)), T((3,))))),
    "relax.nn.layer_norm": ("nn.layer_norm", [m, g32, b32], {"axes": [-1], "epsilon": 1e-5}, T((4, 32))),
    "relax.nn.group_norm": ("nn.group_norm", [x4, c3, c3], {"num_groups": 3, "channel_axis": 1, "axes": [2, 3]},
                            T((1, 3, 32, 32))),
    "relax.nn.instance_norm": ("nn.instance_norm", [x4, c3, c3], {"channel_axis": 1, "axes": [2, 3]},
                               T((1, 3, 32, 32))),
    "relax.nn.rms_norm": ("nn.rms_norm", [m, g32], {}, T((4, 32))),
    "relax.nn.dropout": ("nn.dropout", [m], {"rate": 0.1}, TupleStructInfo((T((4, 32)), T((4, 32))))),
    "relax.nn.pad": ("nn.pad", [x4], {"pad_width": [0, 0, 0, 0, 1, 1, 2, 2]}, T((1, 3, 34, 36))),
    "relax.nn.attention": ("nn.attention", [q, q, v("vv", (2, 16, 4, 8), "float16")], {"causal_mask": "TopLeft"},
                           T((2, 16, 4, 8), "float16")),
    "relax.nn.attention_bias": ("nn.attention", [q, q, q, bias], {}, T((2, 16, 4, 32), "float16")),
    "relax.nn.attention_var_len": (
        "nn.attention_var_len", [v("qv", (1, 20, 4, 32), "float16")] * 3 + [seq, seq, v("mq", (), "int32"),
                                                                           v("mk", (), "int32")],
        {}, T((1, 20, 4, 32), "float16")),
    "relax.quantize": ("quantize", [m, s32, z32], {"axis": -1, "out_dtype": "int8"}, T((4, 32), "int8")),
    "relax.dequantize": ("dequantize", [q8, s32, z32], {}, T((4, 32))),
    "relax.image.resize2d": ("image.resize2d", [x4, [64, 48]], {}, T((1, 3, 64, 48))),
    "relax.call_tir": ("call_tir", [GlobalVar("f"), (m,)], {"out_ty": tensor((4,), "float32")}, T((4,))),
    "relax.call_dps_packed": ("call_dps_packed", ["sym", (m,)], {"out_ty": [tensor((4,), "float32"), tensor((2,), "int32")]},
                              TupleStructInfo((T((4,)), T((2,), "int32")))),
    "relax.builtin.alloc_tensor": ("builtin.alloc_tensor", [ShapeExpr((2, 3)), "float16", 0], {}, T((2, 3), "float16")),
}
for _n in ("sum", "mean", "max", "min", "prod", "std", "variance", "median"):
    SAMPLES["relax." + _n] = (_n, [m], {"axis": [1], "keepdims": True}, T((4, 1)))
for _n in binary.ARITH:
    SAMPLES["relax." + _n] = (_n, [m, g32], {}, T((4, 32)))
for _n in binary.COMPARE:
    SAMPLES["relax." + _n] = (_n, [v("a", (4, 1)), g32], {}, T((4, 32), "bool"))
for _n in unary.FLOAT_ONLY + unary.ANY_DTYPE:
    SAMPLES["relax." + _n] = (_n, [m], {}, T((4, 32)))
for _n in unary.CHECKS:
    SAMPLES["relax." + _n] = (_n, [m], {}, T((4, 32), "bool"))
for _n in ("relu", "gelu", "gelu_tanh", "silu", "selu"):
    SAMPLES["relax.nn." + _n] = ("nn." + _n, [m], {}, T((4, 32)))

# ops whose calls are not Op calls (call_packed builds Call(ExternFunc, ...)), checked separately
NOT_OP_CALLS = {"relax.call_packed", "relax.call_pure_packed"}
# ops whose format string is an operand, not an attribute (R.print, R.assert_op); checked in
# tests/text/test_parser_impure_builtins.py
FORMAT_OPERAND_CALLS = {"relax.print", "relax.assert_op"}

REQUIRED_OPS = """add subtract multiply divide floor_divide power maximum minimum equal not_equal less
less_equal greater greater_equal exp log sqrt rsqrt tanh sigmoid negative abs erf clip nn.relu nn.gelu
nn.gelu_tanh nn.silu nn.leakyrelu nn.softmax nn.log_softmax matmul permute_dims reshape expand_dims
squeeze flatten concat split strided_slice take astype broadcast_to sum mean max min variance nn.conv2d
nn.conv2d_transpose nn.max_pool2d nn.avg_pool2d nn.adaptive_avg_pool2d nn.batch_norm nn.layer_norm
nn.rms_norm nn.group_norm nn.attention nn.attention_bias nn.attention_var_len nn.dropout nn.pad where
zeros ones full zeros_like ones_like repeat dequantize call_tir call_dps_packed call_packed
builtin.alloc_tensor""".split()


def build(name):
    dotted, pos, kw, _ = SAMPLES[name]
    opdef = lookup_printed(dotted, len(pos), kw)
    args, attrs = opdef.bind(pos, kw)
    return opdef, make_call(opdef, args, attrs)


def test_required_ops_are_registered():
    names = {d.name for d in all_op_defs()}
    missing = [n for n in REQUIRED_OPS if "relax." + n not in names]
    assert not missing


def test_every_op_has_a_sample():
    assert sorted(d.name for d in all_op_defs()
                  if d.name not in SAMPLES and d.name not in NOT_OP_CALLS and d.name not in FORMAT_OPERAND_CALLS) == []


@pytest.mark.parametrize("opdef", all_op_defs(), ids=lambda d: d.name)
def test_table_entry_is_consistent(opdef: OpDef):
    assert Op.get(opdef.name).op_def is opdef
    assert get_op_def(opdef.name) is opdef
    assert opdef.printed.startswith("R.")
    names = [f.name for f in opdef.attrs]
    assert len(set(names)) == len(names)
    assert all(isinstance(f, AttrField) for f in opdef.attrs)
    assert set(opdef.arg_names) <= set(opdef.params)
    assert set(names) <= set(opdef.params) | {opdef.sinfo_key}
    n_required = len([a for a in opdef.arg_names if a not in opdef.arg_defaults])
    found = lookup_printed(opdef.printed[2:], n_required)
    assert found is opdef


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_call_infers_expected_struct_info(name):
    opdef, call = build(name)
    assert call.op is Op.get(name)
    assert call.struct_info == SAMPLES[name][3]
    assert infer_struct_info(call) == call.struct_info
    # attrs are complete, in print order
    if opdef.attrs:
        assert call.attrs.keys() == [f.name for f in opdef.attrs]
    else:
        assert call.attrs is None


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_printed_keyword_form_binds_back(name):
    """Operands positionally plus every attribute as a keyword (the printed form) rebuilds
    the same call."""
    opdef, call = build(name)
    kw = dict(call.attrs.items()) if call.attrs is not None else {}
    if opdef.sinfo_key:
        out = call.sinfo_args[0]
        kw[opdef.sinfo_key] = list(out.fields) if isinstance(out, TupleStructInfo) else out
    args, attrs = opdef.bind(list(call.args), kw)
    again = make_call(opdef, args, attrs)
    assert again.attrs == call.attrs
    assert again.args == call.args
    assert again.struct_info == call.struct_info
    assert again.sinfo_args == call.sinfo_args


def test_printed_attribute_examples():
    """Attribute values as spec/textual-ir.md section 5.2 prints them."""
    _, c = build("relax.nn.conv2d")
    assert c.attrs.items() == [("strides", (1, 1)), ("padding", (1, 1, 1, 1)), ("dilation", (1, 1)),
                               ("groups", 1), ("data_layout", "NCHW"), ("kernel_layout", "OIHW"),
                               ("out_layout", "NCHW"), ("out_dtype", None)]
    _, c = build("relax.nn.max_pool2d")
    assert c.attrs.keys() == ["pool_size", "strides", "dilation", "padding", "ceil_mode",
                              "count_include_pad", "layout", "out_layout"]
    assert c.attrs.padding == (0, 0, 0, 0) and c.attrs.out_layout == "NCHW"
    _, c = build("relax.nn.layer_norm")
    assert c.attrs.items() == [("axes", (-1,)), ("epsilon", 1e-05), ("center", True), ("scale", True)]
    _, c = build("relax.nn.batch_norm")
    assert c.attrs.items() == [("axis", 1), ("epsilon", 1e-05), ("center", True), ("scale", True),
                               ("momentum", 0.1), ("training", True)]
    _, c = build("relax.nn.pad")
    assert c.attrs.keys() == ["pad_width", "pad_value", "pad_mode"]
    assert c.attrs.pad_value == 0.0 and isinstance(c.attrs.pad_value, float)
    _, c = build("relax.split")
    assert c.attrs.items() == [("indices_or_sections", 3), ("axis", 1)]
    _, c = build("relax.nn.rms_norm")
    assert c.attrs.items() == [("axes", (-1,)), ("epsilon", 1e-05)]
    _, c = build("relax.strided_slice")
    assert [type(a).__name__ for a in c.args] == ["Var", "Tuple", "Tuple", "Tuple"]
    assert c.args[1].fields[0].value == 1 and c.args[1].fields[0].dtype == "int64"
    _, c = build("relax.clip")
    assert [(a.value, a.dtype) for a in c.args[1:]] == [(0, "int64"), (6, "int64")]
    _, c = build("relax.nn.attention")
    assert c.attrs.items() == [("scale", None), ("causal_mask", "TopLeft"), ("window_size", None)]


def test_attention_with_bias_is_attention_bias():
    assert lookup_printed("nn.attention", 4) is get_op_def("relax.nn.attention_bias")
    assert lookup_printed("nn.attention", 3, {"bias": bias}) is get_op_def("relax.nn.attention_bias")
    assert lookup_printed("nn.attention", 3, {"bias": None}) is get_op_def("relax.nn.attention")
    assert lookup_printed("nn.attention_bias", 4) is get_op_def("relax.nn.attention_bias")
    assert get_op_def("relax.nn.attention_bias").printed == "R.nn.attention_bias"
    # make_call on relax.nn.attention with four operands builds attention_bias, as TVM's constructor does
    c = make_call("relax.nn.attention", [q, q, q, bias])
    assert c.op.name == "relax.nn.attention_bias"
    # bias=None leaves the operand out
    opdef = get_op_def("relax.nn.attention")
    args, _ = opdef.bind([q, q, q], {"bias": None})
    assert len(args) == 3


def test_attention_scale_is_a_float32_value():
    opdef = get_op_def("relax.nn.attention")
    _, attrs = opdef.bind([q, q, q], {"scale": 0.125})
    assert isinstance(attrs.scale, PrimValue) and (attrs.scale.value, attrs.scale.dtype) == (0.125, "float32")
    _, attrs = opdef.bind([q, q, q], {"scale": PrimValue(0.125, "float32")})
    assert attrs.scale.value == 0.125


def test_call_packed_builds_an_extern_call():
    opdef = lookup_printed("call_packed", 2)
    args, attrs = opdef.bind(["log_it", m], {"ty_args": (TupleStructInfo(()),)})
    c = make_call(opdef, args, attrs)
    assert isinstance(c.op, ExternFunc) and c.op.global_symbol == "log_it"
    assert c.args == (m,) and c.attrs is None
    assert c.sinfo_args == (TupleStructInfo(()),) and c.struct_info == TupleStructInfo(())
    assert infer_struct_info(c) == TupleStructInfo(())


def test_legacy_spellings():
    opdef = get_op_def("relax.call_tir")
    args, attrs = opdef.bind([GlobalVar("f"), (m,)], {"out_sinfo": tensor((4,), "float32")})
    assert make_call(opdef, args, attrs).sinfo_args == (T((4,)),)
    opdef = get_op_def("relax.matmul")
    for unset in ("void", "", None):
        _, attrs = opdef.bind([m, m], {"out_dtype": unset})
        assert attrs.out_dtype is None


def test_make_call_accepts_dicts_attrs_and_partial_attrs():
    a = make_call("relax.nn.softmax", [m])
    b = make_call(Op.get("relax.nn.softmax"), [m], {"axis": -1})
    c = make_call(get_op_def("relax.nn.softmax"), [m], Attrs((("axis", -1),)))
    assert a.attrs == b.attrs == c.attrs == Attrs((("axis", -1),))
    d = make_call("relax.nn.conv2d", [x4, w4], {"padding": 1, "strides": 1})
    assert d.attrs.padding == (1, 1, 1, 1) and d.attrs.strides == (1, 1)


def test_python_number_operand_becomes_a_scalar_constant():
    opdef = get_op_def("relax.add")
    args, _ = opdef.bind([m, 2.0], {})
    const = args[1]
    assert const.struct_info == T((), "float32") and float(const.data) == 2.0
    args, _ = opdef.bind([m, 3], {})
    assert args[1].struct_info == T((), "int32")


def test_reshape_list_shape_infers_minus_one_and_zero():
    opdef = get_op_def("relax.reshape")
    args, attrs = opdef.bind([v("r", (4, 8, 32)), [0, -1]], {})
    c = make_call(opdef, args, attrs)
    assert c.args[1].values == (4, 256) and c.struct_info == T((4, 256))


@pytest.mark.parametrize("dotted,pos,kw,message", [
    ("nn.softmax", [m], {"axes": 1}, "unexpected keyword argument 'axes'"),
    ("nn.softmax", [m, 1], {"axis": 1}, "multiple values for argument 'axis'"),
    ("astype", [m], {}, "missing the required argument 'dtype'"),
    ("nn.layer_norm", [m, g32], {"axes": [-1]}, "missing the required argument 'beta'"),
    ("add", [m, m, m], {}, "at most 2 positional arguments"),
    ("nn.conv2d", [x4, w4], {"padding": [1, 2, 3]}, "padding must have 1, 2 or 4 values"),
    ("split", [m], {"indices_or_sections": 0}, "positive number of sections"),
    ("sum", [m], {"keepdims": "yes"}, "expected True or False"),
])
def test_bind_errors_are_located(dotted, pos, kw, message):
    from byocc.ir import Span

    span = Span("model.relax", 3, 7)
    opdef = lookup_printed(dotted, len(pos), kw)
    with pytest.raises(TypeInferenceError) as err:
        opdef.bind(pos, kw, span)
    assert message in err.value.message
    assert err.value.span == span


def test_unknown_ops():
    assert lookup_printed("nn.no_such_op", 1) is None
    with pytest.raises(KeyError):
        get_op_def("relax.no_such_op")


def test_required_sentinel_and_attr_field():
    f = AttrField("axis")
    assert f.default is REQUIRED and repr(REQUIRED) == "REQUIRED"
    with pytest.raises(AttributeError):
        f.name = "other"  # frozen


def test_call_without_struct_info_can_be_inferred_later():
    c = Call(Op.get("relax.add"), (m, m))
    assert infer_struct_info(c) == T((4, 32))


def test_prim_operands_for_binary_ops():
    p = PrimValue(1, "int64")
    assert make_call("relax.add", [p, p]).struct_info == PrimStructInfo("int64")


def test_op_defs_are_complete_and_immutable_once_registered():
    import dataclasses
    import subprocess
    import sys

    from byocc.ops import evaluate_call
    from byocc.ops import reference_of

    opdef = get_op_def("relax.add")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opdef.infer = None
    assert opdef.reference is reference_of("relax.add") is not None
    # evaluating a call needs nothing installed first; importing byocc.ops loads no reference
    import numpy as np

    ones = np.ones((4, 32), "float32")
    out = evaluate_call(make_call("relax.add", [m, m]), [ones, ones])
    assert out.dtype == np.float32 and (out == 2).all()
    code = "import sys, byocc.ops; print(any(n.startswith('byocc.ops.reference') for n in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
