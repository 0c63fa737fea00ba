"""`byocc partition --dtype float16` on an fp32 transformer layer as an exporter writes it
(onnx.helper: decomposed LayerNorm, erf GELU, attention on 4-D heads): every matmul, the
norms and the attention are offloaded to cutlass in fp16; without --dtype the fp32 model's
matmuls are offloaded in fp32 and the decomposed forms stay as they are."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from byocc.cli import cli

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402
from onnx import helper  # noqa: E402
from onnx import numpy_helper  # noqa: E402

B, S, N, H = 2, 16, 2, 32
E = N * H


def _layer(path):
    rng = np.random.default_rng(0)
    inits = {}

    def w(name, *shape):
        inits[name] = rng.standard_normal(shape).astype("float32") * 0.1
        return name

    def c(name, value, dtype="float32"):
        inits[name] = np.asarray(value, dtype)
        return name

    nodes = []

    def op(kind, ins, out, **kw):
        nodes.append(helper.make_node(kind, ins, [out], **kw))
        return out

    def linear(x, name, n_out):
        return op("Add", [op("MatMul", [x, w(name + ".w", E, n_out)], name + ".mm"), w(name + ".b", n_out)], name)

    def layer_norm(x, name):
        m = op("ReduceMean", [x], name + ".m", axes=[-1], keepdims=1)
        d = op("Sub", [x, m], name + ".d")
        v = op("ReduceMean", [op("Pow", [d, c("two", 2.0)], name + ".p")], name + ".v", axes=[-1], keepdims=1)
        s = op("Sqrt", [op("Add", [v, c("eps", 1e-12)], name + ".ve")], name + ".s")
        n = op("Div", [d, s], name + ".n")
        return op("Add", [op("Mul", [w(name + ".g", E), n], name + ".ng"), w(name + ".be", E)], name)

    def heads(x, name, perm):
        return op("Transpose", [op("Reshape", [x, c("hs", [B, S, N, H], "int64")], name + ".r")], name + ".t", perm=perm)

    q = heads(linear("x", "q", E), "q", [0, 2, 1, 3])
    k = heads(linear("x", "k", E), "k", [0, 2, 3, 1])
    v = heads(linear("x", "v", E), "v", [0, 2, 1, 3])
    sc = op("Div", [op("MatMul", [q, k], "sc"), c("sq", math.sqrt(H))], "ss")
    o = op("MatMul", [op("Softmax", [sc], "p", axis=-1), v], "o")
    o = op("Reshape", [op("Transpose", [o], "ot", perm=[0, 2, 1, 3]), c("os", [B, S, E], "int64")], "o3")
    x1 = layer_norm(op("Add", ["x", linear(o, "proj", E)], "r1"), "ln1")
    up = linear(x1, "up", E)
    g = op("Div", [up, c("r2", math.sqrt(2))], "g.d")
    g = op("Mul", [op("Mul", [up, op("Add", [op("Erf", [g], "g.e"), c("one", 1.0)], "g.a")], "g.m"), c("half", 0.5)], "g")
    y = layer_norm(op("Add", [x1, linear(g, "down", E)], "r2s"), "y")
    graph = helper.make_graph(nodes, "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, E])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, [B, S, E])],
                              initializer=[numpy_helper.from_array(a, k) for k, a in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.fixture(scope="module")
def layer(tmp_path_factory):
    return _layer(str(tmp_path_factory.mktemp("layer") / "layer.onnx"))


def _partition(model, tmp_path, *extra):
    report = tmp_path / "explain.json"
    result = CliRunner().invoke(cli, ["partition", model, "--backend", "cutlass", "--path", "merge",
                                      "--explain-json", str(report), *extra])
    assert result.exit_code == 0, result.output
    return result.stdout, json.loads(report.read_text())


def test_dtype_float16_offloads_every_heavy_op_in_fp16(layer, tmp_path):
    text, report = _partition(layer, tmp_path, "--dtype", "float16")
    assert report["host"] == []
    composites = [c for item in report["offloaded"] for c in item["composites"]]
    assert composites.count("cutlass.layer_norm") == 2
    assert "cutlass.attention" in composites
    assert "cutlass.matmul_bias_gelu" in composites
    assert sum(c.startswith("cutlass.matmul") for c in composites) == 6
    main = text.split("def main(")[1]
    for op in ("R.matmul", "R.nn.softmax", "R.erf", "R.mean"):
        assert op not in main
    signature = main.split(":\n")[0]
    assert 'dtype="float16"' not in signature and signature.count('dtype="float32"') == 2  # fp32 in and out
    assert 'dtype="float16"' in main


def test_without_dtype_the_decomposed_forms_stay(layer, tmp_path):
    text, report = _partition(layer, tmp_path)
    main = text.split("def main(")[1]
    assert "R.erf" in main and "R.mean" in main and "R.nn.softmax" in main
    assert "float16" not in text


def test_recompose_alone_keeps_fp32(layer, tmp_path):
    text, report = _partition(layer, tmp_path, "--recompose")
    assert "float16" not in text
    main = text.split("def main(")[1]
    assert "R.erf" not in main and "R.mean" not in main


def test_print_after_knows_the_new_passes(layer, tmp_path):
    result = CliRunner().invoke(cli, ["partition", layer, "--backend", "cutlass", "--dtype", "float16",
                                      "--print-after", "ToMixedPrecision", "--print-after", "RecomposeOps"])
    assert result.exit_code == 0, result.output
    assert "After Running Pass: ToMixedPrecision" in result.stderr
    result = CliRunner().invoke(cli, ["partition", layer, "--backend", "cutlass", "--print-after", "ToMixedPrecision"])
    assert result.exit_code == 2 and "--dtype" in result.output


def test_bfloat16_and_an_fp32_accumulator(layer, tmp_path):
    text, report = _partition(layer, tmp_path, "--dtype", "bfloat16")
    assert 'dtype="bfloat16"' in text and 'dtype="float16"' not in text
    # TVM's cutlass matmul check takes no bfloat16: --explain says so for each matmul
    matmuls = [row for row in report["host"] if row["op"] == "relax.matmul"]
    assert len(matmuls) == 6 and all("bfloat16" in row["reason"] for row in matmuls)
    # out_dtype float32: each matmul gives fp32, cast to half for its users; the bias adds
    # and GELU then run on the host in half, the matmuls still offloaded
    text, report = _partition(layer, tmp_path, "--dtype", "float16", "--accumulate-dtype", "float32")
    assert 'out_dtype="float32"' in text
    composites = [c for item in report["offloaded"] for c in item["composites"]]
    assert sum(c.startswith("cutlass.matmul") for c in composites) == 6
    assert report["host_other_ops"].get("relax.astype", 0) >= 6
