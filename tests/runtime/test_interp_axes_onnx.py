"""Every op with an axis attribute, on every value its schema allows, against onnx.reference
where an ONNX operator has the same meaning, else a float64 formula (issue 9, class 5).

For each op and attribute combination the numpy reference must (1) agree with the
independent result and (2) produce exactly the struct info the op's inference gives
(shape and dtype), so interpreter and type checker cannot drift apart.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import tensor
from byocc.ops import get_op_def
from byocc.ops import make_call

SHAPE = (2, 3, 4)
ND = len(SHAPE)
X = np.random.default_rng(7).standard_normal(SHAPE).astype(np.float32)


def onnx_run(op_type, inputs: list, attrs: dict | None = None, n_out: int = 1, opset: int = 18):
    """One ONNX node run by onnx.reference: ``inputs`` are arrays (or None for absent)."""
    from onnx import helper
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    names = [f"i{k}" if a is not None else "" for k, a in enumerate(inputs)]
    inits = [numpy_helper.from_array(np.asarray(a), name) for a, name in zip(inputs, names) if a is not None]
    outs = [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, **(attrs or {}))
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info(o, 0, None) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return ReferenceEvaluator(model).run(None, {})


def check(op: str, arrays: list, attrs: dict, expected):
    """The reference on ``arrays`` equals ``expected``, and its type is the inferred one."""
    opdef = get_op_def(op)
    args = [Var(f"a{i}", tensor(a.shape, a.dtype.name)) for i, a in enumerate(arrays)]
    if op in ("relax.concat", "relax.stack"):
        args = [Tuple(tuple(args))]
        arrays = [tuple(arrays)]
    call = make_call(op, args, attrs)
    got = opdef.reference(*arrays, **dict(call.attrs.items()))
    leaves = got if isinstance(got, (list, tuple)) else [got]
    sinfos = call.struct_info.fields if isinstance(call.struct_info, TupleStructInfo) else [call.struct_info]
    want = expected if isinstance(expected, (list, tuple)) else [expected]
    assert len(leaves) == len(sinfos) == len(want)
    for leaf, si, exp in zip(leaves, sinfos, want):
        leaf = np.asarray(leaf)
        assert isinstance(si, TensorStructInfo)
        assert si.shape is None or tuple(si.shape) == leaf.shape, (si, leaf.shape)
        assert si.dtype == leaf.dtype.name, (si.dtype, leaf.dtype)
        np.testing.assert_allclose(leaf.astype(np.float64), np.asarray(exp).astype(np.float64), rtol=1e-5, atol=1e-6)


def all_axes_lists():
    yield None
    for k in range(1, ND + 1):
        for subset in itertools.combinations(range(ND), k):
            yield list(subset)
            yield [a - ND for a in reversed(subset)]


REDUCE = {"relax.sum": "ReduceSum", "relax.mean": "ReduceMean", "relax.max": "ReduceMax",
          "relax.min": "ReduceMin", "relax.prod": "ReduceProd"}


@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", list(all_axes_lists()), ids=str)
def test_reductions_against_onnx(op, keepdims, axes):
    inputs = [X, None if axes is None else np.array(axes, np.int64)]
    (expected,) = onnx_run(REDUCE[op], inputs, {"keepdims": int(keepdims)})
    check(op, [X], {"axis": axes, "keepdims": keepdims}, expected)


@pytest.mark.parametrize("op", ["relax.variance", "relax.std"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", list(all_axes_lists()), ids=str)
def test_variance_and_std_against_a_formula(op, keepdims, axes):
    red = tuple(range(ND)) if axes is None else tuple(sorted(a % ND for a in axes))
    x = X.astype(np.float64)
    mean = x.sum(axis=red, keepdims=True) / np.prod([SHAPE[a] for a in red])
    var = ((x - mean) ** 2).sum(axis=red, keepdims=keepdims) / np.prod([SHAPE[a] for a in red])
    check(op, [X], {"axis": axes, "keepdims": keepdims}, var if op.endswith("variance") else np.sqrt(var))


@pytest.mark.parametrize("op, onnx_op", [("relax.argmax", "ArgMax"), ("relax.argmin", "ArgMin")])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", list(range(-ND, ND)))
def test_argmax_argmin_against_onnx(op, onnx_op, keepdims, axis):
    (expected,) = onnx_run(onnx_op, [X], {"axis": axis, "keepdims": int(keepdims)})
    check(op, [X], {"axis": axis, "keepdims": keepdims}, expected)


@pytest.mark.parametrize("op, onnx_op", [("relax.nn.softmax", "Softmax"), ("relax.nn.log_softmax", "LogSoftmax")])
@pytest.mark.parametrize("axis", list(range(-ND, ND)))
def test_softmax_against_onnx(op, onnx_op, axis):
    (expected,) = onnx_run(onnx_op, [X], {"axis": axis}, opset=13)
    check(op, [X], {"axis": axis}, expected)


@pytest.mark.parametrize("axis", list(range(-ND, ND)))
def test_concat_and_stack_against_onnx(axis):
    y = X * 2
    (expected,) = onnx_run("Concat", [X, y], {"axis": axis})
    check("relax.concat", [X, y], {"axis": axis}, expected)
    stack_axis = axis if axis >= 0 else axis - 1  # stack adds an axis: -1 means the new last one
    expected = np.stack([X, y], axis=stack_axis)
    check("relax.stack", [X, y], {"axis": stack_axis}, expected)


@pytest.mark.parametrize("axis", list(range(-ND, ND)))
def test_split_against_onnx(axis):
    n = SHAPE[axis]
    for sections in range(1, n + 1):
        if n % sections:
            continue
        expected = onnx_run("Split", [X], {"axis": axis, "num_outputs": sections}, n_out=sections)
        check("relax.split", [X], {"indices_or_sections": sections, "axis": axis}, expected)
    for cut in range(0, n + 1):
        expected = [X.take(range(0, cut), axis=axis), X.take(range(cut, n), axis=axis)]
        check("relax.split", [X], {"indices_or_sections": [cut], "axis": axis}, expected)


@pytest.mark.parametrize("axis", list(range(-ND, ND)))
def test_take_against_onnx_gather(axis):
    idx = np.array([[0, 1], [1, 0]], np.int64)
    (expected,) = onnx_run("Gather", [X, idx], {"axis": axis})
    check("relax.take", [X, idx], {"axis": axis}, expected)


@pytest.mark.parametrize("axes", [None, [0, 1, 2], [2, 0, 1], [1, 2, 0], [0, 2, 1], [-1, -3, -2]], ids=str)
def test_permute_dims_against_onnx_transpose(axes):
    attrs = {} if axes is None else {"perm": [a % ND for a in axes]}
    (expected,) = onnx_run("Transpose", [X], attrs)
    check("relax.permute_dims", [X], {"axes": axes}, expected)


def test_squeeze_and_expand_dims_against_onnx():
    x = X.reshape(2, 1, 3, 1, 4)
    for axes in (None, [1], [3], [-2], [1, 3], [-4, -2]):
        inputs = [x] if axes is None else [x, np.array(axes, np.int64)]
        (expected,) = onnx_run("Squeeze", inputs)
        check("relax.squeeze", [x], {"axis": axes}, expected)
    for axes in ([0], [3], [-1], [0, -1], [1, 3], [-5, 2]):
        (expected,) = onnx_run("Unsqueeze", [X, np.array(axes, np.int64)])
        check("relax.expand_dims", [X], {"axis": axes}, expected)


@pytest.mark.parametrize("axis", [None] + list(range(-ND, ND)))
def test_repeat_against_numpy(axis):
    check("relax.repeat", [X], {"repeats": 2, "axis": axis}, np.repeat(X, 2, axis=axis))


# --------------------------------------------------------------------------- gather_elements / gather_nd
@pytest.mark.parametrize("axis", list(range(-ND, ND)))
def test_gather_elements_against_onnx_and_a_loop(axis):
    rng = np.random.default_rng(8)
    a = axis % ND
    for size in (SHAPE[a], 5):  # onnx.reference handles only an index as large as the data
        idx_shape = list(SHAPE)
        idx_shape[a] = size
        idx = rng.integers(-SHAPE[a], SHAPE[a], size=idx_shape).astype(np.int64)
        expected = np.empty(idx_shape, np.float32)
        for pos in np.ndindex(*idx_shape):
            src = list(pos)
            src[a] = int(idx[pos]) % SHAPE[a]
            expected[pos] = X[tuple(src)]
        if size == SHAPE[a]:
            (from_onnx,) = onnx_run("GatherElements", [X, idx], {"axis": axis})
            np.testing.assert_array_equal(from_onnx, expected)
        check("relax.gather_elements", [X, idx], {"axis": axis}, expected)


def test_gather_elements_beyond_numpy_choose_limit():
    """onnx.reference's GatherElements fails from 64 choices on (numpy.choose); byocc's must not."""
    data = np.arange(200, dtype=np.float32).reshape(2, 100)
    idx = np.array([[99, 0, 64], [70, 1, 98]], np.int64)
    check("relax.gather_elements", [data, idx], {"axis": 1}, np.take_along_axis(data, idx, axis=1))


@pytest.mark.parametrize("batch_dims, idx_shape", [
    (0, (5, 1)), (0, (5, 2)), (0, (5, 3)), (0, (2, 2, 2)), (1, (2, 4, 1)), (1, (2, 3, 2)), (2, (2, 3, 1)),
])
def test_gather_nd_against_onnx(batch_dims, idx_shape):
    rng = np.random.default_rng(9)
    k = idx_shape[-1]
    bounds = [SHAPE[batch_dims + j] for j in range(k)]
    idx = np.stack([rng.integers(-b, b, size=idx_shape[:-1]) for b in bounds], axis=-1).astype(np.int64)
    (expected,) = onnx_run("GatherND", [X, idx], {"batch_dims": batch_dims})
    check("relax.gather_nd", [X, idx], {"batch_dims": batch_dims}, expected)


def test_gather_ops_print_parse_and_import_from_onnx(tmp_path):
    import onnx
    from click.testing import CliRunner
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    from byocc.cli import cli

    idx_e = numpy_helper.from_array(np.array([[0, 2, 1, 0], [1, 1, 0, 2]], np.int64), "ie")
    idx_n = numpy_helper.from_array(np.array([[0, 1], [1, 3]], np.int64), "in")
    nodes = [helper.make_node("GatherElements", ["x", "ie"], ["e"], axis=1),
             helper.make_node("GatherND", ["x", "in"], ["n"], batch_dims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 4]),
                               helper.make_tensor_value_info("n", TensorProto.FLOAT, [2])], [idx_e, idx_n])
    model = tmp_path / "g.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    result = CliRunner().invoke(cli, ["import", str(model), "-o", str(tmp_path / "g.relax")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "g.relax").read_text()
    assert 'R.gather_elements(x, metadata["ir.GenericConst"][0], axis=1)' in text
    assert 'R.gather_nd(x, metadata["ir.GenericConst"][1], batch_dims=0)' in text
    shown = CliRunner().invoke(cli, ["show", str(tmp_path / "g.relax")])
    assert shown.exit_code == 0 and shown.stdout == text  # parses and prints back
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.savez(tmp_path / "in.npz", x=x)
    ran = CliRunner().invoke(cli, ["run", str(tmp_path / "g.relax"), "--inputs", str(tmp_path / "in.npz"),
                                   "-o", str(tmp_path / "out.npz")])
    assert ran.exit_code == 0, ran.output
    from onnx.reference import ReferenceEvaluator

    want = ReferenceEvaluator(str(model)).run(None, {"x": x})
    with np.load(tmp_path / "out.npz") as got:
        np.testing.assert_array_equal(got["output_0"], want[0])
        np.testing.assert_array_equal(got["output_1"], want[1])
