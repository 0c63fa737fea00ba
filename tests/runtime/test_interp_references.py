"""Numpy references against ONNX's reference evaluator, one operator at a time.

Each case is a one-node ONNX model whose tensors are graph inputs (so nothing is folded at
import time): byocc imports it, the interpreter runs it with the op references, and the
result must match ``onnx.reference.ReferenceEvaluator`` in shape, dtype and value. Where
onnx's evaluator is known to be wrong (LRN, see below) the ONNX formula is checked instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto
from onnx import helper
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from byocc.frontend import from_onnx
from byocc.ops import all_op_defs
from byocc.runtime import flatten_outputs
from byocc.runtime import run_module

RNG = np.random.default_rng(1234)
_NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
               np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
               np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.float64): TensorProto.DOUBLE}


def f32(*shape, low=None):
    x = RNG.standard_normal(shape).astype(np.float32)
    return np.abs(x) + 0.1 if low == "pos" else x


def one_node_model(op, inputs, attrs, opset, consts=None, n_out=1):
    consts = consts or {}
    names = [n for n, _ in inputs]
    in_names = names + list(consts)
    node = helper.make_node(op, in_names, [f"y{i}" for i in range(n_out)], name=f"{op.lower()}_node", **attrs)
    graph = helper.make_graph(
        [node], "case",
        [helper.make_tensor_value_info(n, _NP_TO_ONNX[a.dtype], a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.UNDEFINED, None) for i in range(n_out)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def run_both(op, inputs, attrs=None, opset=17, consts=None, n_out=1):
    model = one_node_model(op, inputs, attrs or {}, opset, consts, n_out)
    feeds = dict(inputs)
    expected = ReferenceEvaluator(model).run(None, feeds)
    mod = from_onnx(model)
    params = mod["main"].params
    got = flatten_outputs(run_module(mod, [feeds[p.name_hint] for p in params], check=True))
    return expected, got


def check(op, inputs, attrs=None, opset=17, consts=None, n_out=1, rtol=1e-5, atol=1e-5):
    expected, got = run_both(op, inputs, attrs, opset, consts, n_out)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert g.shape == e.shape, (g.shape, e.shape)
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        if g.dtype == np.bool_ or np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol)


X34, X234 = f32(3, 4), f32(2, 3, 4)
IMG = f32(2, 3, 7, 7)
CASES = [
    ("Add", [("a", X34), ("b", f32(4))], {}, 17, None),
    ("Sub", [("a", X234), ("b", f32(3, 1))], {}, 17, None),
    ("Mul", [("a", X34), ("b", f32(3, 4))], {}, 17, None),
    ("Div", [("a", X34), ("b", f32(3, 4, low="pos"))], {}, 17, None),
    ("Div", [("a", np.array([7, -7, 7, -7], np.int64)), ("b", np.array([2, 2, -2, -2], np.int64))], {}, 17, None),
    ("Pow", [("a", f32(3, 4, low="pos")), ("b", f32(4))], {}, 17, None),
    ("Equal", [("a", np.array([1, 2, 3], np.int64)), ("b", np.array([1, 0, 3], np.int64))], {}, 17, None),
    ("Less", [("a", X34), ("b", f32(4))], {}, 17, None),
    ("Greater", [("a", X34), ("b", f32(4))], {}, 17, None),
    ("Where", [("c", RNG.integers(0, 2, (3, 4)).astype(bool)), ("a", X34), ("b", f32(4))], {}, 17, None),
    ("Max", [("a", X34), ("b", f32(4)), ("c", f32(3, 1))], {}, 17, None),
    ("Sum", [("a", X34), ("b", f32(4)), ("c", f32(3, 1))], {}, 17, None),
    ("Mean", [("a", X34), ("b", f32(3, 4))], {}, 17, None),
    ("Mod", [("a", np.array([5, -5, 7], np.int64)), ("b", np.array([3, 3, -4], np.int64))], {}, 17, None),
    ("Mod", [("a", f32(5)), ("b", f32(5, low="pos"))], {"fmod": 1}, 17, None),
    ("And", [("a", np.array([True, False, True])), ("b", np.array([True, True, False]))], {}, 17, None),
    ("Not", [("a", np.array([True, False]))], {}, 17, None),
    ("Relu", [("x", X234)], {}, 17, None),
    ("Sigmoid", [("x", X234)], {}, 17, None),
    ("Tanh", [("x", X234)], {}, 17, None),
    ("Exp", [("x", X234)], {}, 17, None),
    ("Log", [("x", f32(2, 3, low="pos"))], {}, 17, None),
    ("Sqrt", [("x", f32(2, 3, low="pos"))], {}, 17, None),
    ("Erf", [("x", X234)], {}, 17, None),
    ("Abs", [("x", X34)], {}, 17, None),
    ("Neg", [("x", X34)], {}, 17, None),
    ("Floor", [("x", X34 * 3)], {}, 17, None),
    ("Ceil", [("x", X34 * 3)], {}, 17, None),
    ("Reciprocal", [("x", f32(3, 4, low="pos"))], {}, 17, None),
    ("LeakyRelu", [("x", X34)], {"alpha": 0.2}, 17, None),
    ("Elu", [("x", X34)], {"alpha": 0.7}, 17, None),
    ("Selu", [("x", X34)], {}, 17, None),
    ("HardSigmoid", [("x", X34 * 4)], {"alpha": 0.3, "beta": 0.4}, 17, None),
    ("HardSwish", [("x", X34 * 4)], {}, 17, None),
    ("PRelu", [("x", f32(2, 3, 4, 4)), ("s", f32(3, 1, 1))], {}, 17, None),
    ("Softplus", [("x", X34)], {}, 17, None),
    ("Softsign", [("x", X34)], {}, 17, None),
    ("Shrink", [("x", X34)], {"lambd": 0.4, "bias": 0.1}, 17, None),
    ("Gelu", [("x", X34)], {}, 20, None),
    ("Gelu", [("x", X34)], {"approximate": "tanh"}, 20, None),
    ("IsNaN", [("x", np.array([1.0, np.nan, 0.0], np.float32))], {}, 17, None),
    ("Softmax", [("x", X234)], {"axis": 1}, 13, None),
    ("LogSoftmax", [("x", X234)], {}, 13, None),
    ("MatMul", [("a", X234), ("b", f32(4, 5))], {}, 17, None),
    ("Gemm", [("a", f32(4, 3)), ("b", f32(5, 4)), ("c", f32(5))],
     {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, 17, None),
    ("Conv", [("x", IMG), ("w", f32(6, 3, 3, 3)), ("b", f32(6))],
     {"pads": [1, 0, 2, 1], "strides": [2, 1], "dilations": [1, 2]}, 17, None),
    ("Conv", [("x", IMG), ("w", f32(6, 1, 3, 3))], {"group": 3, "auto_pad": "SAME_UPPER", "strides": [2, 2]},
     17, None),
    ("Conv", [("x", f32(2, 3, 9)), ("w", f32(4, 3, 3))], {"pads": [1, 1]}, 17, None),
    ("ConvTranspose", [("x", f32(1, 3, 4, 4)), ("w", f32(3, 2, 3, 3)), ("b", f32(2))],
     {"strides": [2, 2], "pads": [1, 1, 0, 0], "output_padding": [1, 0]}, 17, None),
    ("MaxPool", [("x", IMG)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 17, None),
    ("MaxPool", [("x", IMG)], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, 17, None),
    ("AveragePool", [("x", IMG)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 17, None),
    ("AveragePool", [("x", IMG)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
     17, None),
    ("GlobalAveragePool", [("x", IMG)], {}, 17, None),
    ("GlobalMaxPool", [("x", IMG)], {}, 17, None),
    ("BatchNormalization", [("x", IMG), ("s", f32(3)), ("b", f32(3)), ("m", f32(3)), ("v", f32(3, low="pos"))],
     {"epsilon": 1e-3}, 15, None),
    ("InstanceNormalization", [("x", IMG), ("s", f32(3)), ("b", f32(3))], {}, 17, None),
    ("LayerNormalization", [("x", X234), ("s", f32(4)), ("b", f32(4))], {"epsilon": 1e-3}, 17, None),
    ("LayerNormalization", [("x", X234), ("s", f32(3, 4))], {"axis": 1}, 17, None),
    ("Reshape", [("x", X234)], {}, 17, {"shape": np.array([0, -1, 2], np.int64)}),
    ("Flatten", [("x", IMG)], {"axis": 2}, 17, None),
    ("Transpose", [("x", X234)], {"perm": [2, 0, 1]}, 17, None),
    ("Transpose", [("x", X234)], {}, 17, None),
    ("Unsqueeze", [("x", X34)], {"axes": [0, -1]}, 11, None),
    ("Unsqueeze", [("x", X34)], {}, 13, {"axes": np.array([1], np.int64)}),
    ("Squeeze", [("x", f32(3, 1, 4, 1))], {}, 13, {"axes": np.array([-1], np.int64)}),
    ("Squeeze", [("x", f32(3, 1, 4, 1))], {}, 13, None),
    ("Concat", [("a", X234), ("b", f32(2, 1, 4))], {"axis": -2}, 17, None),
    ("Slice", [("x", f32(5, 6))], {}, 17,
     {"starts": np.array([4, 1], np.int64), "ends": np.array([-6, 2 ** 62], np.int64),
      "axes": np.array([0, 1], np.int64), "steps": np.array([-2, 2], np.int64)}),
    ("Slice", [("x", f32(5, 6))], {"starts": [1], "ends": [100], "axes": [1]}, 9, None),
    ("Gather", [("x", f32(5, 4)), ("i", np.array([[0, 4], [2, 1]], np.int64))], {"axis": 0}, 17, None),
    ("Gather", [("x", X234)], {"axis": 1}, 17, {"i": np.array([-1, 0], np.int64)}),
    ("Expand", [("x", f32(3, 1))], {}, 17, {"shape": np.array([2, 1, 4], np.int64)}),
    ("Tile", [("x", X34)], {}, 17, {"r": np.array([2, 1], np.int64)}),
    ("Pad", [("x", f32(1, 2, 3, 3))], {"mode": "constant"}, 17,
     {"pads": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64), "v": np.array(1.5, np.float32)}),
    ("Pad", [("x", f32(1, 2, 3, 3))], {"mode": "reflect"}, 17, {"pads": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)}),
    ("Pad", [("x", f32(1, 2, 3, 3))], {"mode": "edge"}, 17, {"pads": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)}),
    ("Clip", [("x", X34 * 4)], {}, 13, {"lo": np.array(-1.0, np.float32), "hi": np.array(2.0, np.float32)}),
    ("Clip", [("x", X34 * 4)], {"min": 0.0, "max": 6.0}, 6, None),
    ("Cast", [("x", X34 * 5)], {"to": TensorProto.INT32}, 17, None),
    ("Cast", [("x", np.arange(6, dtype=np.int64))], {"to": TensorProto.FLOAT16}, 17, None),
    ("ReduceMean", [("x", X234)], {"axes": [-1], "keepdims": 1}, 13, None),
    ("ReduceSum", [("x", X234)], {"keepdims": 0}, 13, {"axes": np.array([0, 2], np.int64)}),
    ("ReduceMax", [("x", X234)], {"keepdims": 0}, 18, {"axes": np.array([1], np.int64)}),
    ("ReduceMin", [("x", X234)], {}, 17, None),
    ("ReduceProd", [("x", X234)], {"axes": [1]}, 17, None),
    ("ReduceL2", [("x", X234)], {"axes": [2]}, 17, None),
    ("ReduceSumSquare", [("x", X234)], {"axes": [0], "keepdims": 0}, 17, None),
    ("ArgMax", [("x", X234)], {"axis": 1, "keepdims": 0}, 17, None),
    ("Identity", [("x", X34)], {}, 17, None),
    ("Dropout", [("x", X34)], {}, 17, None),
]


@pytest.mark.parametrize("op,inputs,attrs,opset,consts", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_reference_matches_onnx(op, inputs, attrs, opset, consts):
    check(op, inputs, attrs, opset, consts)


def test_split_outputs_match_onnx():
    check("Split", [("x", f32(2, 7))], {"axis": 1}, 13, {"s": np.array([2, 4, 1], np.int64)}, n_out=3)
    check("Split", [("x", f32(2, 7))], {"axis": 1, "num_outputs": 3}, 18, None, n_out=3)


RESIZE_CASES = [
    ({"mode": "nearest"}, {"scales": np.array([1, 1, 2, 3], np.float32)}),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
     {"sizes": np.array([1, 2, 9, 13], np.int64)}),
    ({"mode": "linear"}, {"sizes": np.array([1, 2, 3, 4], np.int64)}),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, {"scales": np.array([1, 1, 2, 2], np.float32)}),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, {"sizes": np.array([1, 2, 1, 8], np.int64)}),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 1.5},
     {"roi": np.array([0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3], np.float32), "sizes": np.array([1, 2, 4, 6], np.int64)}),
]


@pytest.mark.parametrize("attrs,consts", RESIZE_CASES)
def test_resize_matches_onnx(attrs, consts):
    x = f32(1, 2, 5, 6)
    names = ["roi", "scales", "sizes"]
    full = {n: consts.get(n) for n in names}
    last = max(i for i, n in enumerate(names) if full[n] is not None)
    model = one_node_model("Resize", [("x", x)], attrs, 13)
    node = model.graph.node[0]
    del node.input[1:]
    # absent optional inputs keep their position as ""
    node.input.extend(n if full[n] is not None else "" for n in names[: last + 1])
    model.graph.initializer.extend(numpy_helper.from_array(v, n) for n, v in full.items() if v is not None)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = run_module(from_onnx(model), [x], check=True)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_float16_stays_float16():
    """fp16 in, fp16 out, close to ONNX's fp16 evaluation (byocc computes in float64)."""
    x = f32(2, 3, 8, 8).astype(np.float16)
    w = f32(4, 3, 3, 3).astype(np.float16)
    for op, inputs, attrs in [
        ("Conv", [("x", x), ("w", w)], {"pads": [1, 1, 1, 1]}),
        ("MatMul", [("a", f32(4, 16).astype(np.float16)), ("b", f32(16, 8).astype(np.float16))], {}),
        ("Softmax", [("x", x)], {"axis": -1}),
        ("Add", [("a", x), ("b", x)], {}),
        ("LayerNormalization", [("x", x), ("s", f32(8).astype(np.float16)), ("b", f32(8).astype(np.float16))], {}),
    ]:
        expected, got = run_both(op, inputs, attrs)
        assert got[0].dtype == np.float16
        np.testing.assert_allclose(got[0].astype(np.float32), expected[0].astype(np.float32), rtol=1e-2, atol=1e-2)


def test_softmax_before_opset_13_coerces_to_2d():
    # ONNX < 13: the input is viewed as 2-D (dims before axis, dims from axis on), and
    # onnx.reference does not do that, so numpy is the oracle.
    x = f32(2, 3, 4)
    got = run_module(from_onnx(one_node_model("Softmax", [("x", x)], {"axis": 1}, 11)), [x])
    flat = x.reshape(2, 12).astype(np.float64)
    e = np.exp(flat - flat.max(1, keepdims=True))
    np.testing.assert_allclose(got, (e / e.sum(1, keepdims=True)).reshape(2, 3, 4), rtol=1e-6)


def test_lrn_follows_the_onnx_formula():
    # onnx.reference's LRN loops over the batch dimension instead of the channels, so the
    # spec's formula is the oracle here.
    x = f32(2, 7, 3, 3) * 3
    size, alpha, beta, bias = 4, 1e-3, 0.75, 2.0
    model = one_node_model("LRN", [("x", x)], {"size": size, "alpha": alpha, "beta": beta, "bias": bias}, 13)
    got = run_module(from_onnx(model), [x])
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = np.stack([(x[:, max(0, c - lo):min(6, c + hi) + 1] ** 2).sum(1) for c in range(7)], axis=1)
    np.testing.assert_allclose(got, x / (bias + alpha / size * sq) ** beta, rtol=1e-5)


# Ops the interpreter runs itself: external code and buffers.
WITHOUT_REFERENCE = {"relax.call_tir", "relax.call_dps_packed", "relax.call_packed", "relax.call_pure_packed",
                     "relax.builtin.alloc_tensor"}


def test_every_registered_op_has_a_reference():
    missing = sorted(o.name for o in all_op_defs() if o.reference is None and o.name not in WITHOUT_REFERENCE)
    assert missing == []


def _softmax_attention(q, k, v, bias=None, scale=None, keep=None):
    q, k, v = (np.transpose(a.astype(np.float64), (0, 2, 1, 3)) for a in (q, k, v))
    p = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    if bias is not None:
        p = p + bias
    if keep is not None:
        p = np.where(keep, p, -np.inf)
    e = np.exp(p - p.max(-1, keepdims=True))
    return np.transpose((e / e.sum(-1, keepdims=True)) @ v, (0, 2, 1, 3))


@pytest.mark.parametrize("causal", [None, "TopLeft", "BottomRight"])
def test_attention_reference_through_the_interpreter(causal):
    from byocc.ir import BindingBlock
    from byocc.ir import Function
    from byocc.ir import IRModule
    from byocc.ir import SeqExpr
    from byocc.ir import Var
    from byocc.ir import VarBinding
    from byocc.ir import tensor
    from byocc.ops import make_call

    b, s, skv, n, h, hv = 2, 4, 6, 3, 8, 5
    q, k, v = f32(b, s, n, h).astype(np.float16), f32(b, skv, n, h).astype(np.float16), f32(b, skv, n, hv).astype(np.float16)
    bias = f32(b, 1, s, skv).astype(np.float16)
    params = [Var(nm, tensor(a.shape, "float16")) for nm, a in zip("qkvb", (q, k, v, bias))]
    call = make_call("relax.nn.attention", params, {"scale": 0.3, "causal_mask": causal})
    out = Var("out", call.struct_info)
    body = SeqExpr((BindingBlock((VarBinding(out, call),)),), out)
    mod = IRModule({"main": Function(tuple(params), body, out.struct_info, attrs={"global_symbol": "main"})})
    got = run_module(mod, [q, k, v, bias], check=True)
    assert got.dtype == np.float16 and got.shape == (b, s, n, hv)
    i, j = np.arange(s)[:, None], np.arange(skv)[None, :]
    keep = None if causal is None else (j <= i if causal == "TopLeft" else j <= i + (skv - s))
    np.testing.assert_allclose(got.astype(np.float64), _softmax_attention(q, k, v, bias.astype(np.float64), 0.3, keep),
                               rtol=1e-2, atol=1e-2)


def test_attention_var_len_attends_each_sequence_alone():
    from byocc.ops.reference import reference_table

    fn = reference_table()["relax.nn.attention_var_len"]
    n, h = 2, 4
    lens = [3, 1, 5]
    starts = np.array([0, 3, 4, 9], np.int32)
    q, k, v = f32(9, n, h), f32(9, n, h), f32(9, n, h)
    out = fn(q, k, v, starts, starts, np.array(5), np.array(5), causal_mask="TopLeft")
    for b, length in enumerate(lens):
        sl = slice(starts[b], starts[b + 1])
        keep = np.arange(length)[None, :] <= np.arange(length)[:, None]
        want = _softmax_attention(q[sl][None], k[sl][None], v[sl][None], keep=keep)[0]
        np.testing.assert_allclose(out[sl], want, rtol=1e-5, atol=1e-6)
