"""Constant folding at ONNX import: byocc's own references, through byocc.ops.fold_call
(issue 9: onnx.reference's GatherElements fails from 64 choices on, numpy.choose's limit)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the onnx package")
from onnx import TensorProto  # noqa: E402
from onnx import helper  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from byocc.frontend import from_onnx  # noqa: E402
from byocc.ir import Call  # noqa: E402
from byocc.ir import Constant  # noqa: E402
from byocc.ir import Op  # noqa: E402
from byocc.runtime import run_module  # noqa: E402

RNG = np.random.default_rng(0)
DATA = RNG.standard_normal((3, 100)).astype(np.float32)
IDX = RNG.integers(-100, 100, size=(3, 80)).astype(np.int64)  # 100 choices, negative ones too
ND_DATA = RNG.standard_normal((100, 4)).astype(np.float32)
ND_IDX = RNG.integers(0, 100, size=(70, 1)).astype(np.int64)


def _model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 80])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 80])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [70, 4])
    inits = [numpy_helper.from_array(a, n) for a, n in (
        (DATA, "data"), (IDX, "idx"), (ND_DATA, "nd_data"), (ND_IDX, "nd_idx"))]
    nodes = [helper.make_node("GatherElements", ["data", "idx"], ["ge"], axis=1),
             helper.make_node("Add", ["ge", "x"], ["y"]),
             helper.make_node("GatherND", ["nd_data", "nd_idx"], ["z"])]
    graph = helper.make_graph(nodes, "gathers", [x], [y, z], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _bindings(mod):
    return {b.var.name_hint: b.value for block in mod["main"].body.blocks for b in block.bindings}


def _expected():
    """numpy's formulas (ONNX's meaning): GatherElements along axis 1, GatherND on the rows."""
    ge = np.take_along_axis(DATA, np.where(IDX < 0, IDX + DATA.shape[1], IDX), axis=1)
    return ge, ND_DATA[ND_IDX[:, 0]]


def test_gathers_on_constants_fold_with_byocc_references(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx.reference", None)  # importing it now fails
    mod = from_onnx(_model())
    values = _bindings(mod)
    ge, nd = _expected()
    add = values["y"]
    assert isinstance(add, Call) and add.op is Op.get("relax.add") and isinstance(add.args[0], Constant)
    np.testing.assert_array_equal(add.args[0].data, ge)
    assert isinstance(values["z"], Constant)
    np.testing.assert_array_equal(values["z"].data, nd)
    x = RNG.standard_normal((3, 80)).astype(np.float32)
    y, z = run_module(mod, [x])
    np.testing.assert_allclose(y, ge + x, rtol=0, atol=0)
    np.testing.assert_array_equal(z, nd)


def test_an_op_without_a_reference_stays_a_call(monkeypatch):
    from byocc.ops import evaluate

    evaluate.reference_of("relax.add")  # the table is built
    monkeypatch.delitem(evaluate._TABLE, "relax.gather_elements")
    values = _bindings(from_onnx(_model()))
    ge = values["ge"]
    assert isinstance(ge, Call) and ge.op is Op.get("relax.gather_elements")
    assert all(isinstance(a, Constant) for a in ge.args)
    assert isinstance(values["z"], Constant)


def test_no_import_path_leans_on_onnx_reference():
    package = Path(__file__).resolve().parents[2] / "byocc"
    users = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "onnx.reference" or n.startswith("onnx.reference.") for n in names):
                users.append(f"{path.relative_to(package)}:{node.lineno}")
    assert users == []
