"""Struct-info inference rules (TVM 0.27 behaviour): broadcasting, symbolic dims, layouts,
and located errors that name the op."""

from __future__ import annotations

import pytest

from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import Span
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import Var
from byocc.ir import tensor
from byocc.ir.prim import PrimBinary
from byocc.ops import make_call

n = TirVar("n")
k = TirVar("k")


def v(name, shape, dtype="float32"):
    return Var(name, tensor(shape, dtype))


def T(shape, dtype="float32"):
    return TensorStructInfo(tuple(shape), dtype)


def call(op, args, attrs=None):
    return make_call(op, args, attrs).struct_info


# --------------------------------------------------------------------------- broadcasting
@pytest.mark.parametrize("s1,s2,out", [
    ((4, 1), (3,), (4, 3)),
    ((2, 1, 5), (4, 1), (2, 4, 5)),
    ((n, 4), (4,), (n, 4)),
    ((1,), (n,), (n,)),
    ((n, 1), (1, k), (n, k)),
    ((), (3, 2), (3, 2)),
])
def test_broadcast_shapes(s1, s2, out):
    assert call("relax.add", [v("a", s1), v("b", s2)]) == T(out)


def test_broadcast_undecidable_symbolic_dims_keep_only_the_rank():
    assert call("relax.multiply", [v("a", (n,)), v("b", (k, 3, k))]) == TensorStructInfo(None, "float32", 3)


def test_broadcast_unknown_dtype_and_rank():
    a = Var("a", TensorStructInfo(None, None, 2))
    assert call("relax.add", [a, v("b", (4,))]) == TensorStructInfo(None, None, 2)
    c = Var("c", TensorStructInfo(None, "float32", -1))
    assert call("relax.add", [c, v("b", (4,))]) == TensorStructInfo(None, "float32", -1)


def test_comparison_gives_bool():
    assert call("relax.less", [v("a", (4,)), v("b", (4,))]) == T((4,), "bool")


def test_binary_dtype_mismatch_names_the_op_and_span():
    span = Span("m.relax", 5, 9)
    with pytest.raises(TypeInferenceError) as err:
        make_call("relax.add", [v("a", (4,)), v("b", (4,), "float16")], span=span)
    assert "relax.add" in err.value.message and "float32" in err.value.message
    assert err.value.span == span


def test_broadcast_conflict():
    with pytest.raises(TypeInferenceError, match="not broadcastable"):
        make_call("relax.subtract", [v("a", (4, 3)), v("b", (5,))])


def test_binary_non_tensor_operand():
    with pytest.raises(TypeInferenceError, match="relax.add"):
        make_call("relax.add", [v("a", (4,)), Var("s", ShapeStructInfo((4,)))])


# --------------------------------------------------------------------------- matmul
@pytest.mark.parametrize("s1,s2,out", [
    ((4, 32), (32, 8), (4, 8)),
    ((32,), (32, 8), (8,)),
    ((4, 32), (32,), (4,)),
    ((32,), (32,), ()),
    ((2, 1, 4, 8), (3, 8, 5), (2, 3, 4, 5)),
    ((n, 16, 32), (n, 32, 16), (n, 16, 16)),
    ((n, 32), (32, 8), (n, 8)),
])
def test_matmul_shapes(s1, s2, out):
    assert call("relax.matmul", [v("a", s1), v("b", s2)]) == T(out)


def test_matmul_out_dtype_and_errors():
    assert call("relax.matmul", [v("a", (4, 8), "int8"), v("b", (8, 2), "int8")], {"out_dtype": "int32"}) == T((4, 2), "int32")
    with pytest.raises(TypeInferenceError, match="reduction length"):
        make_call("relax.matmul", [v("a", (4, 8)), v("b", (9, 2))])
    with pytest.raises(TypeInferenceError, match="same dtype"):
        make_call("relax.matmul", [v("a", (4, 8)), v("b", (8, 2), "float16")])
    with pytest.raises(TypeInferenceError, match="scalar"):
        make_call("relax.matmul", [v("a", ()), v("b", (8, 2))])
    assert call("relax.matmul", [Var("a", TensorStructInfo(None, "float32", 3)), v("b", (8, 2))]) == TensorStructInfo(None, "float32", 3)


# --------------------------------------------------------------------------- manipulation
def test_permute_dims():
    a = v("a", (2, 3, 4))
    assert call("relax.permute_dims", [a], {"axes": [0, 2, 1]}) == T((2, 4, 3))
    assert call("relax.permute_dims", [a], {"axes": [0, 1, 2]}) is a.struct_info  # identity
    with pytest.raises(TypeInferenceError, match="number of axes"):
        make_call("relax.permute_dims", [a], {"axes": [1, 0]})
    with pytest.raises(TypeInferenceError, match="out of range"):
        make_call("relax.permute_dims", [a], {"axes": [0, 1, 3]})


def test_reshape():
    a = v("a", (n, 4, 8))
    assert call("relax.reshape", [a, ShapeExpr((n, 32))]) == T((n, 32))
    s = Var("s", ShapeStructInfo((2, 16)))
    assert call("relax.reshape", [v("b", (4, 8)), s]) == T((2, 16))
    s2 = Var("s2", ShapeStructInfo(None, 2))
    out = call("relax.reshape", [v("b", (4, 8)), s2])
    assert out.shape is None and out.shape_var is s2 and out.ndim == 2
    with pytest.raises(TypeInferenceError, match="not convertible"):
        make_call("relax.reshape", [v("b", (4, 8)), ShapeExpr((5, 7))])


def test_flatten_and_concat_symbolic():
    assert call("relax.flatten", [v("a", (n, 4))]) == T((PrimBinary("*", n, 4),))
    a = v("a", (n, 4))
    assert call("relax.concat", [Tuple((a, a))], {"axis": 0}) == T((PrimBinary("*", n, 2), 4))
    assert call("relax.concat", [Tuple((a, v("b", (n, 6))))], {"axis": 1}) == T((n, 10))
    with pytest.raises(TypeInferenceError, match="same dtype"):
        make_call("relax.concat", [Tuple((a, v("c", (n, 4), "float16")))], {"axis": 0})
    with pytest.raises(TypeInferenceError, match="same shape"):
        make_call("relax.concat", [Tuple((v("d", (3, 4)), v("e", (2, 5))))], {"axis": 0})


def test_split_by_indices_clamps_and_by_sections():
    a = v("a", (n, 10))
    out = call("relax.split", [a], {"indices_or_sections": [3, 20], "axis": 1})
    assert out == TupleStructInfo((T((n, 3)), T((n, 7)), T((n, 0))))
    out = call("relax.split", [v("b", (10,))], {"indices_or_sections": 4})
    assert out == TupleStructInfo((T((3,)), T((3,)), T((3,)), T((1,))))
    assert call("relax.split", [a], {"indices_or_sections": 1}) is a.struct_info


def test_squeeze_and_expand_dims():
    assert call("relax.squeeze", [v("a", (1, 4, 1))]) == T((4,))
    assert call("relax.squeeze", [v("a", (2, 4))], {"axis": [0]}) == T((2, 4))  # non-1 axis: no-op
    assert call("relax.expand_dims", [v("a", (2, 4))], {"axis": 1}) == T((2, 1, 4))


def test_strided_slice():
    a = v("a", (10, 8))
    assert call("relax.strided_slice", [a, Tuple(()), Tuple(()), Tuple(())]) == T((10, 8))
    from byocc.ops import get_op_def

    opdef = get_op_def("relax.strided_slice")
    args, attrs = opdef.bind([a, [0, 1], [2, -3], [100, 8], [2, 1]], {})
    assert make_call(opdef, args, attrs).struct_info == T((4, 3))


def test_take():
    assert call("relax.take", [v("a", (10, 8)), v("i", (2, 3), "int32")], {"axis": 0}) == T((2, 3, 8))
    with pytest.raises(TypeInferenceError, match="integer indices"):
        make_call("relax.take", [v("a", (10, 8)), v("i", (2,))], {"axis": 0})


# --------------------------------------------------------------------------- reductions
def test_reductions():
    a = v("a", (2, 3, 4))
    assert call("relax.sum", [a]) == T(())
    assert call("relax.sum", [a], {"keepdims": True}) == T((1, 1, 1))
    assert call("relax.mean", [a], {"axis": [0, -1]}) == T((3,))
    assert call("relax.max", [a], {"axis": 1, "keepdims": True}) == T((2, 1, 4))
    with pytest.raises(TypeInferenceError, match="must not repeat"):
        make_call("relax.min", [a], {"axis": [0, -3]})


# --------------------------------------------------------------------------- nn
def test_conv2d_layouts():
    x = v("x", (1, 32, 32, 3))
    w = v("w", (16, 3, 3, 3))
    out = call("relax.nn.conv2d", [x, w], {"padding": 1, "data_layout": "NHWC", "kernel_layout": "OHWI"})
    assert out == T((1, 32, 32, 16))
    w2 = v("w2", (3, 3, 3, 16))
    out = call("relax.nn.conv2d", [x, w2], {"strides": 2, "data_layout": "NHWC", "kernel_layout": "HWIO",
                                            "out_layout": "NCHW", "out_dtype": "float16"})
    assert out == T((1, 16, 15, 15), "float16")


def test_conv2d_symbolic_batch_and_errors():
    out = call("relax.nn.conv2d", [v("x", (n, 3, 8, 8)), v("w", (4, 3, 3, 3))])
    assert out == T((n, 4, 6, 6))
    with pytest.raises(TypeInferenceError, match="channel"):
        make_call("relax.nn.conv2d", [v("x", (1, 4, 8, 8)), v("w", (4, 3, 3, 3))])
    with pytest.raises(TypeInferenceError, match="4-dim"):
        make_call("relax.nn.conv2d", [v("x", (4, 8, 8)), v("w", (4, 3, 3, 3))])
    with pytest.raises(TypeInferenceError, match="layout"):
        make_call("relax.nn.conv2d", [v("x", (1, 3, 8, 8)), v("w", (4, 3, 3, 3))], {"data_layout": "NCHX"})


def test_pooling_ceil_mode():
    x = v("x", (1, 3, 7, 7))
    assert call("relax.nn.max_pool2d", [x], {"pool_size": 2, "strides": 2}) == T((1, 3, 3, 3))
    assert call("relax.nn.max_pool2d", [x], {"pool_size": 2, "strides": 2, "ceil_mode": True}) == T((1, 3, 4, 4))


def test_norm_checks():
    x = v("x", (4, 32))
    with pytest.raises(TypeInferenceError, match="relax.nn.layer_norm"):
        make_call("relax.nn.layer_norm", [x, v("g", (16,)), v("b", (32,))], {"axes": [-1]})
    with pytest.raises(TypeInferenceError, match="same dtype"):
        make_call("relax.nn.rms_norm", [x, v("g", (32,), "float16")])
    with pytest.raises(TypeInferenceError, match="float"):
        make_call("relax.nn.layer_norm", [v("i", (4, 32), "int32"), v("g", (32,), "int32"),
                                          v("b", (32,), "int32")], {"axes": [-1]})
    g = v("g", (n,))
    out = call("relax.nn.layer_norm", [v("y", (4, k)), g, g], {"axes": [-1]})
    assert out == TensorStructInfo(None, "float32", 2)  # cannot confirm k == n


def test_softmax_and_unary_need_float():
    with pytest.raises(TypeInferenceError, match="relax.nn.softmax"):
        make_call("relax.nn.softmax", [v("i", (4,), "int32")])
    with pytest.raises(TypeInferenceError, match="relax.exp"):
        make_call("relax.exp", [v("i", (4,), "int32")])
    assert call("relax.nn.relu", [v("i", (4,), "int32")]) == T((4,), "int32")
    with pytest.raises(TypeInferenceError, match="axis"):
        make_call("relax.nn.softmax", [v("a", (4,))], {"axis": 1})


def test_attention_checks():
    q = v("q", (2, 16, 8, 32), "float16")
    kv = v("kv", (2, 24, 2, 32), "float16")  # grouped-query attention: 8 heads over 2
    assert call("relax.nn.attention", [q, kv, kv]) == T((2, 16, 8, 32), "float16")
    with pytest.raises(TypeInferenceError, match="4 dimensions"):
        make_call("relax.nn.attention", [v("q3", (2, 16, 32), "float16"), kv, kv])
    with pytest.raises(TypeInferenceError, match="batch size"):
        make_call("relax.nn.attention", [q, v("k1", (3, 24, 2, 32), "float16"), kv])
    bias = v("bias", (1, 1, 16, 24), "float16")
    assert call("relax.nn.attention_bias", [q, kv, kv, bias]) == T((2, 16, 8, 32), "float16")
    with pytest.raises(TypeInferenceError, match="sequence length"):
        make_call("relax.nn.attention_bias", [q, kv, kv, v("b2", (1, 1, 16, 23), "float16")])


def test_batch_norm_returns_three_tensors():
    x = v("x", (2, 3, 4, 4))
    c = v("c", (3,))
    out = call("relax.nn.batch_norm", [x, c, c, c, c], {"axis": 1})
    assert out == TupleStructInfo((T((2, 3, 4, 4)), T((3,)), T((3,))))


def test_where_and_astype():
    cond = v("c", (4, 1), "bool")
    assert call("relax.where", [cond, v("a", (3,)), v("b", (1,))]) == T((4, 3))
    with pytest.raises(TypeInferenceError, match="bool"):
        make_call("relax.where", [v("c", (4,)), v("a", (4,)), v("b", (4,))])
    a = Var("a", TensorStructInfo(None, "float32", 3))
    assert call("relax.astype", [a], {"dtype": "int8"}) == TensorStructInfo(None, "int8", 3)


def test_create_ops_and_broadcast_to():
    assert call("relax.zeros", [ShapeExpr((n, 2))], {"dtype": "int32"}) == T((n, 2), "int32")
    assert call("relax.broadcast_to", [v("a", (1, 4)), ShapeExpr((n, 4))]) == T((n, 4))
    with pytest.raises(TypeInferenceError, match="broadcastable"):
        make_call("relax.broadcast_to", [v("a", (3, 4)), ShapeExpr((2, 4))])


def test_dps_calls_require_tensor_out_types():
    from byocc.ir import GlobalVar

    with pytest.raises(TypeInferenceError, match="out_ty"):
        make_call("relax.call_tir", [GlobalVar("f"), Tuple(())], sinfo_args=(ShapeStructInfo((2,)),))
    out = call("relax.call_tir", [GlobalVar("f"), Tuple(())], {"out_ty": [tensor((2,), "float32")]})
    assert out == T((2,))
