"""The numpy references follow the registry's calling convention and agree with the
registry's struct-info inference on shapes and dtypes."""

from __future__ import annotations

import numpy as np
from conftest import random_max_pools

from byocc.ir import Constant
from byocc.ir import ShapeExpr
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import tensor
from byocc.ops import get_op_def
from byocc.ops import make_call
from byocc.ops.reference import dtype_name
from byocc.ops.reference import np_dtype


def run(name, arrays, attrs=None, extra_args=()):
    """Build the call from typed vars, run the reference, check it against inference."""
    args = [Var(f"a{i}", tensor(a.shape, dtype_name(a.dtype))) for i, a in enumerate(arrays)]
    call = make_call(name, args + list(extra_args), attrs)
    kwargs = dict(call.attrs.items()) if call.attrs is not None else {}
    operands = list(arrays) + [tuple(e.values) if isinstance(e, ShapeExpr) else e for e in extra_args]
    out = get_op_def(name).reference(*operands, **kwargs)
    si = call.struct_info
    if isinstance(si, TupleStructInfo):
        for o, f in zip(out, si.fields):
            assert o.shape == f.shape and dtype_name(o.dtype) == f.dtype
    else:
        assert isinstance(si, TensorStructInfo)
        assert out.shape == si.shape and dtype_name(out.dtype) == si.dtype
    return out


def test_dtype_helpers():
    assert np_dtype("float16") == np.float16 and np_dtype("bool") == np.bool_
    assert dtype_name(np.dtype(np.bool_)) == "bool" and dtype_name(np.float32) == "float32"


def test_elementwise_and_matmul_values():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3,), np.float32)
    np.testing.assert_allclose(run("relax.add", [a, b]), a + 1)
    np.testing.assert_allclose(run("relax.nn.relu", [a - 2]), np.maximum(a - 2, 0))
    np.testing.assert_allclose(run("relax.matmul", [a, a.T.copy()]), a @ a.T)
    assert run("relax.less", [a, b]).dtype == np.bool_
    np.testing.assert_allclose(run("relax.erf", [np.zeros(3, np.float32)]), 0.0)


def test_shape_ops():
    a = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    np.testing.assert_array_equal(run("relax.permute_dims", [a], {"axes": [2, 0, 1]}), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(run("relax.reshape", [a], None, [ShapeExpr((6, 4))]), a.reshape(6, 4))
    parts = run("relax.split", [a], {"indices_or_sections": 2, "axis": 2})
    np.testing.assert_array_equal(parts[1], a[:, :, 2:])
    np.testing.assert_array_equal(run("relax.sum", [a], {"axis": [1], "keepdims": True}), a.sum(1, keepdims=True))


def test_normalisation_and_softmax():
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    g, b = np.ones(8, np.float32), np.zeros(8, np.float32)
    y = run("relax.nn.layer_norm", [x, g, b], {"axes": [-1]})
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-5)
    s = run("relax.nn.softmax", [x])
    np.testing.assert_allclose(s.sum(-1), 1, rtol=1e-5)


def test_conv2d_matches_a_direct_sum():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    y = run("relax.nn.conv2d", [x, w], {"padding": 1})
    direct = np.zeros((1, 3, 5, 5))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for o in range(3):
        for i in range(5):
            for j in range(5):
                direct[0, o, i, j] = np.sum(xp[0, :, i:i + 3, j:j + 3] * w[o])
    np.testing.assert_allclose(y, direct, rtol=1e-4, atol=1e-4)


def test_constants_do_not_need_numpy_at_registry_import():
    # the registry builds R.const-like scalars lazily, with TVM's default dtypes
    c = make_call("relax.multiply", [Var("x", tensor((2,), "float32")), 2.0]).args[1]
    assert isinstance(c, Constant) and c.data.dtype == np.float32


def test_max_pool_matches_a_brute_force_window_maximum():
    """max_pool computes a running maximum over strided views of the unpadded input, in its
    own dtype and layout; every window (padding, dilation, ceil mode, NaN) against a loop."""
    from byocc.ops.reference_nn import _pool

    ref = _pool("max")
    rng = np.random.default_rng(1)
    checked = 0
    for x, layout, ks, st, dl, pad, ceil in random_max_pools(rng, 150, [np.float32, np.float16], 0.2, 10):
        dt = x.dtype
        _, _, h, w = x.shape
        got = ref(x if layout == "NCHW" else x.transpose(0, 2, 3, 1).copy(), ks, st, dl, pad, ceil, False, layout)
        got = got if layout == "NCHW" else got.transpose(0, 3, 1, 2)
        assert got.dtype == x.dtype
        want = np.full(got.shape, -np.inf)
        for i in range(got.shape[2]):
            for j in range(got.shape[3]):
                cells = [x[:, :, i * st[0] + a * dl[0] - pad[0], j * st[1] + b * dl[1] - pad[1]].astype(np.float64)
                         for a in range(ks[0]) for b in range(ks[1])
                         if 0 <= i * st[0] + a * dl[0] - pad[0] < h and 0 <= j * st[1] + b * dl[1] - pad[1] < w]
                if cells:
                    want[:, :, i, j] = np.max(np.stack(cells), axis=0)
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(dt).astype(np.float64))
        checked += 1
    assert checked > 100
