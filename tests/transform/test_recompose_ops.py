"""RecomposeOps: the decomposed GELU / SiLU / LayerNorm / RMSNorm / attention forms an
ONNX exporter writes, imported from small onnx.helper models, fused back (and near misses
left alone); the fused module computes what the decomposed one does."""

from __future__ import annotations

import math

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402
from onnx import helper  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from byocc.frontend import from_onnx  # noqa: E402
from byocc.ir import Call  # noqa: E402
from byocc.ir.well_formed import well_formed  # noqa: E402
from byocc.runtime.interpreter import run_module  # noqa: E402
from byocc.transform.recompose_ops import recompose_ops  # noqa: E402

RNG = np.random.default_rng(5)


def const(name: str, value) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype="float32"), name))


def model(nodes, inputs, out_shape, inits=(), opset=17, as_onnx=False):
    """The imported module of an fp32 graph (``as_onnx``: the ONNX model itself)."""
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    graph = helper.make_graph(nodes, "g", ins, [out],
                              initializer=[numpy_helper.from_array(np.asarray(v, dtype="float32"), k) for k, v in inits])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return proto if as_onnx else from_onnx(proto)


def ops(mod) -> list[str]:
    return [b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
            if isinstance(b.value, Call) and hasattr(b.value.op, "name")]


def check_same(mod, new, *shapes, tol=1e-5):
    assert well_formed(new) == []
    args = [RNG.standard_normal(s).astype("float32") for s in shapes]
    np.testing.assert_allclose(np.asarray(run_module(new, args)), np.asarray(run_module(mod, args)),
                               rtol=tol, atol=tol)


# --------------------------------------------------------------------------- GELU
def gelu_erf(order: str = "torch", sqrt2: float = math.sqrt(2.0), half: float = 0.5):
    nodes = [const("c2", sqrt2), const("c1", 1.0), const("ch", half),
             helper.make_node("Div", ["x", "c2"], ["u"]), helper.make_node("Erf", ["u"], ["e"]),
             helper.make_node("Add", ["e", "c1"], ["a"])]
    if order == "torch":  # x * (1 + erf) * 0.5, as torch.onnx writes GELU() at opset 17
        nodes += [helper.make_node("Mul", ["x", "a"], ["m"]), helper.make_node("Mul", ["m", "ch"], ["y"])]
    else:  # 0.5 * x first
        nodes += [helper.make_node("Mul", ["ch", "x"], ["m"]), helper.make_node("Mul", ["a", "m"], ["y"])]
    return model(nodes, [("x", [2, 8])], [2, 8])


@pytest.mark.parametrize("order", ["torch", "half_first"])
def test_gelu_erf_form_becomes_gelu(order):
    mod = gelu_erf(order)
    new = recompose_ops(mod)
    assert ops(new) == ["relax.nn.gelu"]
    check_same(mod, new, (2, 8))


@pytest.mark.parametrize("kw", [{"sqrt2": 1.5}, {"half": 0.6}])
def test_gelu_near_miss_constants_stay(kw):
    mod = gelu_erf(**kw)
    assert recompose_ops(mod) is mod


def test_gelu_with_intermediate_used_elsewhere_stays():
    nodes = [const("c2", math.sqrt(2)), const("c1", 1.0), const("ch", 0.5),
             helper.make_node("Div", ["x", "c2"], ["u"]), helper.make_node("Erf", ["u"], ["e"]),
             helper.make_node("Add", ["e", "c1"], ["a"]), helper.make_node("Mul", ["x", "a"], ["m"]),
             helper.make_node("Mul", ["m", "ch"], ["g"]), helper.make_node("Add", ["g", "e"], ["y"])]
    mod = model(nodes, [("x", [2, 8])], [2, 8])
    assert "relax.nn.gelu" not in ops(recompose_ops(mod))


def gelu_tanh(k: float = 0.044715, cube: str = "pow"):
    nodes = [const("c3", 3.0), const("ck", k), const("cs", math.sqrt(2 / math.pi)), const("c1", 1.0),
             const("ch", 0.5)]
    if cube == "pow":
        nodes.append(helper.make_node("Pow", ["x", "c3"], ["p"]))
    else:
        nodes += [helper.make_node("Mul", ["x", "x"], ["xx"]), helper.make_node("Mul", ["xx", "x"], ["p"])]
    nodes += [helper.make_node("Mul", ["ck", "p"], ["kp"]), helper.make_node("Add", ["x", "kp"], ["s"]),
              helper.make_node("Mul", ["s", "cs"], ["w"]), helper.make_node("Tanh", ["w"], ["t"]),
              helper.make_node("Add", ["t", "c1"], ["a"]), helper.make_node("Mul", ["x", "ch"], ["m"]),
              helper.make_node("Mul", ["m", "a"], ["y"])]
    return model(nodes, [("x", [3, 4])], [3, 4])


@pytest.mark.parametrize("cube", ["pow", "mul"])
def test_gelu_tanh_form_becomes_gelu_tanh(cube):
    mod = gelu_tanh(cube=cube)
    new = recompose_ops(mod)
    assert ops(new) == ["relax.nn.gelu_tanh"]
    check_same(mod, new, (3, 4))


def test_gelu_tanh_wrong_coefficient_stays():
    mod = gelu_tanh(k=0.05)
    assert "relax.nn.gelu_tanh" not in ops(recompose_ops(mod))


# --------------------------------------------------------------------------- SiLU
def test_silu_form_becomes_silu_and_gated_mlp_keeps_the_gate():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "x"], ["g"]),
             helper.make_node("Mul", ["g", "u"], ["y"])]
    mod = model(nodes, [("x", [2, 6]), ("u", [2, 6])], [2, 6])
    new = recompose_ops(mod)
    assert ops(new) == ["relax.nn.silu", "relax.multiply"]
    check_same(mod, new, (2, 6), (2, 6))


def test_sigmoid_of_another_tensor_is_no_silu():
    nodes = [helper.make_node("Sigmoid", ["u"], ["s"]), helper.make_node("Mul", ["s", "x"], ["y"])]
    mod = model(nodes, [("x", [2, 6]), ("u", [2, 6])], [2, 6])
    assert recompose_ops(mod) is mod


# --------------------------------------------------------------------------- LayerNorm
def layer_norm(affine: str = "both", axes=(-1,), square: str = "pow", eps: float = 1e-5, mean2_axes=None):
    c = 8
    nodes = [const("c2", 2.0), const("eps", eps),
             helper.make_node("ReduceMean", ["x"], ["m"], axes=list(axes), keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["d"])]
    if square == "pow":
        nodes.append(helper.make_node("Pow", ["d", "c2"], ["q"]))
    else:
        nodes.append(helper.make_node("Mul", ["d", "d"], ["q"]))
    nodes += [helper.make_node("ReduceMean", ["q"], ["v"], axes=list(mean2_axes or axes), keepdims=1),
              helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"])]
    out = "n" if affine != "none" else "y"
    nodes.append(helper.make_node("Div", ["d", "s"], [out]))
    inits = []
    if affine in ("both", "gamma"):
        inits.append(("gamma", RNG.standard_normal(c)))
        nodes.append(helper.make_node("Mul", ["n", "gamma"], ["ng" if affine == "both" else "y"]))
    if affine == "both":
        inits.append(("beta", RNG.standard_normal(c)))
        nodes.append(helper.make_node("Add", ["ng", "beta"], ["y"]))
    return model(nodes, [("x", [2, 3, c])], [2, 3, c], inits)


@pytest.mark.parametrize("affine,square", [("both", "pow"), ("both", "mul"), ("gamma", "pow"), ("none", "pow")])
def test_layer_norm_form_becomes_layer_norm(affine, square):
    mod = layer_norm(affine, square=square)
    new = recompose_ops(mod)
    assert ops(new) == ["relax.nn.layer_norm"]
    check_same(mod, new, (2, 3, 8), tol=1e-4)


def test_layer_norm_over_a_leading_axis_or_mismatched_means_stays():
    for mod in (layer_norm(axes=(1,)), layer_norm(mean2_axes=(1, 2))):
        assert "relax.nn.layer_norm" not in ops(recompose_ops(mod))


def test_layer_norm_with_large_eps_stays():
    assert "relax.nn.layer_norm" not in ops(recompose_ops(layer_norm(eps=2.0)))


# --------------------------------------------------------------------------- RMSNorm
def rms_norm(cast: bool = False, form: str = "rsqrt", weight_first: bool = True, square_of_other: bool = False):
    c = 16
    dt = TensorProto.FLOAT16 if cast else TensorProto.FLOAT
    nodes = [const("c2", 2.0), const("eps", 1e-6)]
    x = "x"
    if cast:
        nodes.append(helper.make_node("Cast", ["x"], ["x32"], to=TensorProto.FLOAT))
        x = "x32"
    nodes += [helper.make_node("Pow", ["u" if square_of_other else x, "c2"], ["q"]),
              helper.make_node("ReduceMean", ["q"], ["v"], axes=[-1], keepdims=1),
              helper.make_node("Add", ["v", "eps"], ["ve"])]
    if form == "rsqrt":  # torch exports rsqrt as 1 / sqrt
        nodes += [const("one", 1.0), helper.make_node("Sqrt", ["ve"], ["s"]),
                  helper.make_node("Div", ["one", "s"], ["r"]), helper.make_node("Mul", [x, "r"], ["n"])]
    else:
        nodes += [helper.make_node("Sqrt", ["ve"], ["s"]), helper.make_node("Div", [x, "s"], ["n"])]
    if cast:
        nodes.append(helper.make_node("Cast", ["n"], ["n16"], to=TensorProto.FLOAT16))
    n = "n16" if cast else "n"
    nodes.append(helper.make_node("Mul", ["w", n] if weight_first else [n, "w"], ["y"]))
    ins = [helper.make_tensor_value_info("x", dt, [2, 5, c]), helper.make_tensor_value_info("u", dt, [2, 5, c])]
    out = helper.make_tensor_value_info("y", dt, [2, 5, c])
    w = numpy_helper.from_array(RNG.standard_normal(c).astype("float16" if cast else "float32"), "w")
    graph = helper.make_graph(nodes, "g", ins, [out], initializer=[w])
    return from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


@pytest.mark.parametrize("form,weight_first", [("rsqrt", True), ("div", False)])
def test_rms_norm_form_becomes_rms_norm(form, weight_first):
    mod = rms_norm(form=form, weight_first=weight_first)
    new = recompose_ops(mod)
    assert ops(new) == ["relax.nn.rms_norm"]
    check_same(mod, new, (2, 5, 16), (2, 5, 16), tol=1e-4)


def test_rms_norm_with_casts_to_fp32_becomes_fp16_rms_norm():
    mod = rms_norm(cast=True)
    new = recompose_ops(mod)
    assert ops(new) == ["relax.nn.rms_norm"]
    (b,) = [b for blk in new["main"].body.blocks for b in blk.bindings]
    assert b.value.args[0].struct_info.dtype == "float16"
    args = [RNG.standard_normal((2, 5, 16)).astype("float16") for _ in range(2)]
    np.testing.assert_allclose(np.asarray(run_module(new, args), dtype="float32"),
                               np.asarray(run_module(mod, args), dtype="float32"), rtol=2e-3, atol=2e-3)


def test_rms_norm_of_another_tensors_square_stays():
    mod = rms_norm(square_of_other=True)
    assert "relax.nn.rms_norm" not in ops(recompose_ops(mod))


# --------------------------------------------------------------------------- attention
def attention(scale_op: str = "Div", mask: bool = False, softmax_axis: int = -1, b=2, n=4, s=6, h=8):
    """The BERT-style chain torch exports: heads split by Reshape + Transpose."""
    e = n * h
    nodes = [helper.make_node("Constant", [], ["shp"], value=numpy_helper.from_array(np.array([b, s, n, h], "int64"))),
             helper.make_node("Constant", [], ["oshp"], value=numpy_helper.from_array(np.array([b, s, e], "int64"))),
             const("c", math.sqrt(h) if scale_op == "Div" else 1 / math.sqrt(h))]
    for t in "qkv":
        nodes.append(helper.make_node("Reshape", [t, "shp"], [t + "r"]))
    nodes += [helper.make_node("Transpose", ["qr"], ["q4"], perm=[0, 2, 1, 3]),
              helper.make_node("Transpose", ["kr"], ["kt"], perm=[0, 2, 3, 1]),
              helper.make_node("Transpose", ["vr"], ["v4"], perm=[0, 2, 1, 3]),
              helper.make_node("MatMul", ["q4", "kt"], ["sc"]), helper.make_node(scale_op, ["sc", "c"], ["ss"])]
    sm_in = "ss"
    inits = []
    if mask:
        inits.append(("mask", np.triu(np.full((s, s), -1e4), 1).reshape(1, 1, s, s)))
        nodes.append(helper.make_node("Add", ["ss", "mask"], ["sm_in"]))
        sm_in = "sm_in"
    nodes += [helper.make_node("Softmax", [sm_in], ["p"], axis=softmax_axis),
              helper.make_node("MatMul", ["p", "v4"], ["o"]),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "oshp"], ["y"])]
    return model(nodes, [(t, [b, s, e]) for t in "qkv"], [b, s, e], inits)


@pytest.mark.parametrize("scale_op,mask", [("Div", False), ("Mul", False), ("Div", True)])
def test_attention_chain_becomes_the_core_the_cutlass_rewrites_take(scale_op, mask):
    from byocc.backends.cutlass.rewrites import rewrite_attention

    mod = attention(scale_op, mask)
    new = recompose_ops(mod)
    assert ops(new).count("relax.nn.softmax") == 1
    check_same(mod, new, (2, 6, 32), (2, 6, 32), (2, 6, 32), tol=1e-5)
    func = rewrite_attention(new["main"])
    names = [b.value.op.name for blk in func.body.blocks for b in blk.bindings
             if isinstance(b.value, Call) and hasattr(b.value.op, "name")]
    assert ("relax.nn.attention_bias" if mask else "relax.nn.attention") in names
    assert "relax.nn.softmax" not in names and "relax.matmul" not in names
    fused = new.clone()
    fused["main"] = func
    check_same(mod, fused, (2, 6, 32), (2, 6, 32), (2, 6, 32), tol=1e-5)


def test_attention_softmax_over_another_axis_stays():
    mod = attention(softmax_axis=2)
    assert recompose_ops(mod) is mod


def gqa_attention(b=1, s=6, n=4, kv=2, h=8, cast: bool = True, as_onnx: bool = False):
    """The Llama-style chain: K/V of ``kv`` heads repeated by Unsqueeze + Expand + Reshape,
    a causal mask, and the no-op fp32 casts torch writes around the softmax."""
    i64 = lambda name, v: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=numpy_helper.from_array(np.array(v, "int64"), name))
    rep = n // kv
    nodes = [i64("qs", [b, s, n, h]), i64("kvs", [b, s, kv, h]), i64("ax", [2]), i64("wide", [b, kv, rep, s, h]),
             i64("full", [b, n, s, h]), i64("os", [b, s, n * h]), const("c", math.sqrt(h)),
             helper.make_node("Reshape", ["q", "qs"], ["qr"]), helper.make_node("Transpose", ["qr"], ["q4"], perm=[0, 2, 1, 3])]
    for t in "kv":
        nodes += [helper.make_node("Reshape", [t, "kvs"], [t + "r"]),
                  helper.make_node("Transpose", [t + "r"], [t + "4"], perm=[0, 2, 1, 3]),
                  helper.make_node("Unsqueeze", [t + "4", "ax"], [t + "u"]),
                  helper.make_node("Expand", [t + "u", "wide"], [t + "e"]),
                  helper.make_node("Reshape", [t + "e", "full"], [t + "f"])]
    nodes += [helper.make_node("Transpose", ["kf"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q4", "kt"], ["sc"]), helper.make_node("Div", ["sc", "c"], ["ss"]),
              helper.make_node("Add", ["ss", "mask"], ["sm"])]
    sm = "sm"
    if cast:
        nodes.append(helper.make_node("Cast", ["sm"], ["smc"], to=TensorProto.FLOAT))
        sm = "smc"
    nodes += [helper.make_node("Softmax", [sm], ["p"], axis=-1), helper.make_node("MatMul", ["p", "vf"], ["o"]),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]), helper.make_node("Reshape", ["ot", "os"], ["y"])]
    mask = np.triu(np.full((s, s), -1e9), 1).reshape(1, 1, s, s)
    return model(nodes, [("q", [b, s, n * h]), ("k", [b, s, kv * h]), ("v", [b, s, kv * h])], [b, s, n * h],
                 [("mask", mask)], as_onnx=as_onnx)


def test_grouped_query_attention_with_casts_becomes_attention_with_repeated_heads():
    from byocc.backends.cutlass.rewrites import rewrite_attention

    mod = gqa_attention()
    new = recompose_ops(mod)
    assert "relax.astype" not in ops(new)  # the casts to fp32 of fp32 tensors are gone
    assert ops(new).count("relax.repeat") == 2 and "relax.broadcast_to" not in ops(new)
    shapes = ((1, 6, 32), (1, 6, 16), (1, 6, 16))
    check_same(mod, new, *shapes)
    fused = new.clone()
    fused["main"] = rewrite_attention(new["main"])
    assert "relax.nn.attention_bias" in ops(fused) and "relax.nn.softmax" not in ops(fused)
    check_same(mod, fused, *shapes)


def test_a_cast_to_another_dtype_is_kept():
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)]
    mod = model(nodes, [("x", [2, 3])], [2, 3])
    assert recompose_ops(mod) is mod


def test_rms_norm_of_an_upcast_input_in_fp32_uses_the_cast_value():
    """``x32 = astype(x16)``, the norm and its weight in fp32: rms_norm(x32, w), fp32."""
    c = 16
    nodes = [const("c2", 2.0), const("eps", 1e-6), const("one", 1.0),
             helper.make_node("Cast", ["x"], ["x32"], to=TensorProto.FLOAT),
             helper.make_node("Pow", ["x32", "c2"], ["q"]),
             helper.make_node("ReduceMean", ["q"], ["v"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["one", "s"], ["r"]), helper.make_node("Mul", ["x32", "r"], ["n"]),
             helper.make_node("Mul", ["n", "w"], ["y"])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, c])]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, c])
    w = numpy_helper.from_array(RNG.standard_normal(c).astype("float32"), "w")
    mod = from_onnx(helper.make_model(helper.make_graph(nodes, "g", ins, [out], initializer=[w]),
                                      opset_imports=[helper.make_opsetid("", 17)]))
    new = recompose_ops(mod)
    assert ops(new) == ["relax.astype", "relax.nn.rms_norm"]
    args = [RNG.standard_normal((2, c)).astype("float16")]
    np.testing.assert_allclose(np.asarray(run_module(new, args)), np.asarray(run_module(mod, args)), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- grouped K/V heads
def test_grouped_query_attention_takes_the_kv_heads_without_the_repeats():
    """After the cutlass rewrites, group_kv_heads drops RecomposeOps' repeats: the attention
    reads (B, S, N_kv, H) keys and values, same values (byocc partition --recompose)."""
    from byocc.backends.cutlass.rewrites import rewrite_attention
    from byocc.transform.recompose_ops import group_kv_heads

    mod = gqa_attention(n=8, kv=2)
    fused = recompose_ops(mod).clone()
    fused["main"] = group_kv_heads(rewrite_attention(fused["main"]))
    assert "relax.repeat" not in ops(fused) and "relax.nn.attention_bias" in ops(fused)
    (att,) = [b.value for blk in fused["main"].body.blocks for b in blk.bindings
              if isinstance(b.value, Call) and getattr(b.value.op, "name", "") == "relax.nn.attention_bias"]
    assert [tuple(a.struct_info.shape)[2] for a in att.args[:3]] == [8, 2, 2]
    check_same(mod, fused, (1, 6, 64), (1, 6, 16), (1, 6, 16))


REPEATED = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, 6, 4, 8), dtype="float32"), k: R.Tensor((1, {sk}, {nk}, 8), dtype="float32"), v: R.Tensor((1, {sk}, {nv}, 8), dtype="float32")):
        with R.dataflow():
            kr = R.repeat(k, repeats={rk}, axis={ak})
            vr = R.repeat(v, repeats={rv}, axis={av})
            o = R.nn.attention(q, kr, vr, scale=0.5)
            R.output(o)
        return o
"""


@pytest.mark.parametrize("kw", [
    dict(sk=6, nk=2, nv=2, rk=2, rv=2, ak=2, av=2),   # the head axis, both the same: dropped
    dict(sk=6, nk=2, nv=2, rk=2, rv=2, ak=-2, av=-2),  # spelled from the end
])
def test_head_axis_repeats_are_dropped_exactly(kw):
    from byocc.text import parse_module
    from byocc.transform.recompose_ops import group_kv_heads

    mod = parse_module(REPEATED.format(**kw))
    new = mod.clone()
    new["main"] = group_kv_heads(mod["main"])
    assert ops(new) == ["relax.nn.attention"]
    shapes = ((1, 6, 4, 8), (1, kw["sk"], kw["nk"], 8), (1, kw["sk"], kw["nv"], 8))
    check_same(mod, new, *shapes, tol=1e-12)


@pytest.mark.parametrize("kw", [
    dict(sk=3, nk=4, nv=4, rk=2, rv=2, ak=1, av=1),   # the sequence axis: not the grouped heads
    dict(sk=6, nk=1, nv=2, rk=4, rv=2, ak=2, av=2),   # K and V repeated differently
    dict(sk=6, nk=4, nv=4, rk=1, rv=1, ak=2, av=2),   # repeats=1: nothing to drop
])
def test_other_repeats_stay(kw):
    from byocc.text import parse_module
    from byocc.transform.recompose_ops import group_kv_heads

    mod = parse_module(REPEATED.format(**kw))
    assert group_kv_heads(mod["main"]) is mod["main"]


def test_the_dtype_pipeline_for_cutlass_offloads_grouped_attention_without_host_repeats():
    """What ``byocc partition --dtype float16 --backend cutlass --path merge`` runs."""
    from byocc.backends import get_patterns_with_prefix
    from byocc.cli.options import apply_frontend
    from byocc.transform import partition

    mod = gqa_attention(n=8, kv=2)
    front = apply_frontend(mod, ("cutlass",), (False, None, None), None, "float16", "half")
    part = partition(front, get_patterns_with_prefix("cutlass"), path="merge")
    assert "relax.repeat" not in ops(part) and "relax.nn.attention_bias" not in ops(part)
    assert "cutlass.attention_bias" in part.script()
    args = [RNG.standard_normal(s).astype("float32") for s in ((1, 6, 64), (1, 6, 16), (1, 6, 16))]
    np.testing.assert_allclose(np.asarray(run_module(part, args)), np.asarray(run_module(mod, args)),
                               rtol=1e-2, atol=1e-2)


def test_an_exported_causal_mask_reaches_the_fused_kernel_as_the_mask(tmp_path):
    """The Llama export adds its mask buffer through Reshape (and, with --dtype float16, a
    cast): FoldConstant after ToMixedPrecision makes it a constant, which the cutlass attention
    reads as the causal mask; the partitioned module still computes what the model does."""
    import json

    import onnx
    from conftest import run_cli

    proto = gqa_attention(b=1, s=16, n=4, kv=2, h=64, as_onnx=True)
    path = tmp_path / "gqa.onnx"
    onnx.save(proto, path)
    out = tmp_path / "out"
    res = run_cli("partition", path, "--dtype", "float16", "--backend", "cutlass", "--path", "merge", "-o", out)
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    (step,) = [s for f in manifest["functions"] for s in f["steps"] if s.get("kind") == "attention"]
    assert step["causal_mask"] == "TopLeft" and step["kernel"] == "sm90_fmha_then_simt"
    assert "causal mask" in step["bias"]
    text = (out / "gqa.partitioned.relax").read_text()
    assert "R.astype(lv4" not in text and text.count("R.reshape(metadata") == 0  # folded at compile time
    args = [RNG.standard_normal(s).astype("float32") for s in ((1, 16, 256), (1, 16, 128), (1, 16, 128))]
    from byocc.cli.device_run import partitioned_module

    got = np.asarray(run_module(partitioned_module(str(out)), args))
    want = np.asarray(run_module(from_onnx(proto), args))
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2 * np.abs(want).max())
