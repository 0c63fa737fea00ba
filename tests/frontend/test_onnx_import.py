"""The ONNX importer: samples against ONNX's reference evaluator, folding, names,
parameters, symbolic dimensions, the text round trip and the unsupported-node report."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from byocc.frontend import from_onnx
from byocc.frontend import supported_onnx_ops
from byocc.ir import Constant
from byocc.ir import FrontendError
from byocc.ir import TirVar
from byocc.ir import UnsupportedError
from byocc.runtime import flatten_outputs
from byocc.runtime import run_module
from byocc.text import print_module

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def cnn_feeds(seed):
    return {"input": np.random.default_rng(seed).standard_normal((1, 3, 32, 32)).astype(np.float32)}


def encoder_feeds(seed):
    rng = np.random.default_rng(seed)
    mask = np.ones((1, 16), np.int64)
    mask[0, rng.integers(4, 16):] = 0
    return {"input_ids": rng.integers(0, 50, (1, 16)).astype(np.int64), "attention_mask": mask}


@pytest.mark.parametrize("name,feeds", [("small_cnn", cnn_feeds), ("small_encoder", encoder_feeds)])
def test_samples_match_onnx_reference(name, feeds):
    model = onnx.load(str(SAMPLES / f"{name}.onnx"))
    mod = from_onnx(model)
    func = mod["main"]
    ref = ReferenceEvaluator(model)
    for seed in (0, 1):
        f = feeds(seed)
        expected = ref.run(None, f)
        got = flatten_outputs(run_module(mod, [f[p.name_hint] for p in func.params], check=True))
        assert [g.shape for g in got] == [e.shape for e in expected]
        for g, e in zip(got, expected):
            assert g.dtype == np.float32
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_samples_are_what_the_script_writes(tmp_path):
    subprocess.run([sys.executable, str(SAMPLES / "make_onnx_samples.py"), str(tmp_path)], check=True)
    for name in ("small_cnn.onnx", "small_encoder.onnx"):
        assert filecmp.cmp(tmp_path / name, SAMPLES / name, shallow=False), name


def test_encoder_shape_computations_fold_away():
    text = print_module(from_onnx(str(SAMPLES / "small_encoder.onnx")))
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape became a literal shape
    assert "R.reshape(attn_split_Split_output_0, R.shape([1, 16, 4, 8]))" in text
    assert "R.reshape(attn_context_transpose_Transpose_output_0, R.shape([1, 16, 32]))" in text
    # shape arithmetic, the Equal/Expand mask and the position-embedding lookup are constants
    for folded in ("_Shape_output", "_Concat_output", "_Equal_output", "_Expand_output", "emb_pos_",
                   "emb_pos_ids"):
        assert folded not in text, folded
    assert "R.where(metadata[\"ir.GenericConst\"][6], attn_add_mask_Add_output_0" in text
    assert text.count("R.take(") == 2  # word embedding and the pooler's first token
    assert "R.nn.layer_norm(" in text and "R.erf(" in text and "R.split(" in text


def test_cnn_text_uses_tvm_ops_and_sanitised_names():
    text = print_module(from_onnx(str(SAMPLES / "small_cnn.onnx")))
    assert "def main(input: R.Tensor((1, 3, 32, 32), dtype=\"float32\")) -> R.Tensor((1, 10), dtype=\"float32\"):" in text
    assert "conv1_Conv_output_0: R.Tensor((1, 8, 32, 32), dtype=\"float32\") = R.add(lv, metadata[\"ir.GenericConst\"][1])" in text
    assert "R.nn.batch_norm(" in text and "training=False" in text
    assert "R.clip(head_conv_Conv_output_0, 0, 6)" in text
    assert "R.mean(head_relu6_Clip_output_0, axis=[2, 3], keepdims=True)" in text
    # Gemm with transB: the constant weight is transposed at import time
    assert "R.permute_dims" not in text


@pytest.mark.parametrize("name,feeds,n_consts", [("small_cnn", cnn_feeds, 15), ("small_encoder", encoder_feeds, 19)])
def test_text_round_trip_with_sidecar(tmp_path, name, feeds, n_consts):
    from byocc.cli.import_ import print_with_constants
    from byocc.text import read_file

    mod = from_onnx(str(SAMPLES / f"{name}.onnx"))
    text, constants = print_with_constants(mod)
    assert sorted(constants, key=lambda k: int(k.split("/")[1])) == [f"ir.GenericConst/{i}" for i in range(n_consts)]
    (tmp_path / "m.relax").write_text(text + "\n")
    np.savez(tmp_path / "m.npz", **constants)
    back = read_file(str(tmp_path / "m.relax"))
    assert print_module(back) == text
    f = feeds(3)
    args = [f[p.name_hint] for p in mod["main"].params]
    for a, b in zip(flatten_outputs(run_module(back, args)), flatten_outputs(run_module(mod, args))):
        np.testing.assert_array_equal(a, b)


def test_params_as_inputs():
    model = onnx.load(str(SAMPLES / "small_cnn.onnx"))
    mod = from_onnx(model, params_as_inputs=True)
    func = mod["main"]
    names = [p.name_hint for p in func.params]
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    float_inits = [i.name for i in model.graph.initializer if inits[i.name].dtype.kind == "f"]
    assert names[0] == "input" and func.attrs["num_input"] == 1
    assert len(names) == 1 + len([n for n in float_inits if n not in ("head.min", "head.max")])
    assert names[1:4] == ["conv1_weight", "conv1_bias", "bn1_weight"]
    assert not any(isinstance(c, Constant) and c.data.size > 1 for c in _constants(func))
    by_param = {p.name_hint: n for p, n in zip(func.params[1:], [n for n in float_inits
                                                                   if n not in ("head.min", "head.max")])}
    x = cnn_feeds(0)["input"]
    args = [x] + [inits[by_param[p.name_hint]] for p in func.params[1:]]
    expected = ReferenceEvaluator(model).run(None, {"input": x})[0]
    np.testing.assert_allclose(run_module(mod, args), expected, rtol=1e-4, atol=1e-5)


def _constants(func):
    out = []
    for b in func.body.blocks[0].bindings:
        out += [a for a in getattr(b.value, "args", ()) if isinstance(a, Constant)]
    return out


def _model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_unsupported_nodes_are_all_listed():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("TopK", ["a", "k"], ["v", "i"], name="topk_1"),
        helper.make_node("Relu", ["v"], ["b"], name="after"),  # fed by an unsupported node: not listed
        helper.make_node("Det", ["a"], ["d"], name="det"),
        helper.make_node("FusedGemm", ["a", "a"], ["e"], name="ms", domain="com.microsoft"),
    ]
    model = _model(nodes, [x], [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "bde"],
                   [numpy_helper.from_array(np.array([1], np.int64), "k")])
    with pytest.raises(UnsupportedError) as info:
        from_onnx(model)
    msg = info.value.message
    assert msg.splitlines() == [
        "3 ONNX nodes cannot be imported:",
        "  TopK (node 'topk_1', opset 13): no converter",
        "  Det (node 'det', opset 13): no converter",
        "  com.microsoft::FusedGemm (node 'ms'): only the default ONNX domain is supported",
    ]
    assert "Conv" in info.value.notes[0] and "LayerNormalization" in info.value.notes[0]


def test_supported_operator_list_covers_the_issue():
    wanted = ["Conv", "BatchNormalization", "Relu", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul", "Add", "Mul", "Sum", "Concat", "Reshape", "Flatten", "Transpose", "Softmax", "LRN", "Dropout", "Unsqueeze", "Squeeze", "ConstantOfShape", "Constant", "Identity", "Clip", "Pad", "Gather", "Shape", "Slice", "Split", "Cast", "Where", "Erf", "Gelu", "Sqrt", "Pow", "Div", "Sub", "ReduceMean", "LayerNormalization", "Tanh", "Sigmoid", "Expand", "Equal"]
    assert sorted(set(wanted) - set(supported_onnx_ops())) == []


def test_names_are_sanitised_unique_and_deterministic():
    nodes = [helper.make_node("Relu", ["input.1"], ["1x"]), helper.make_node("Neg", ["1x"], ["class"]),
             helper.make_node("Abs", ["class"], ["v1x"])]
    model = _model(nodes, [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("v1x", TensorProto.FLOAT, None)])
    text = print_module(from_onnx(model))
    assert "def main(input_1: R.Tensor((2,), dtype=\"float32\"))" in text
    assert "v1x: R.Tensor((2,), dtype=\"float32\") = R.nn.relu(input_1)" in text
    assert "class_: R.Tensor((2,), dtype=\"float32\") = R.negative(v1x)" in text
    assert "v1x_1: R.Tensor((2,), dtype=\"float32\") = R.abs(class_)" in text
    assert text == print_module(from_onnx(model))


def symbolic_model():
    def ints(name, v):
        return numpy_helper.from_array(np.asarray(v, np.int64), name)

    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["b"]),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Concat", ["b1", "c24"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Flatten", ["t"], ["f"], axis=1),
        helper.make_node("Slice", ["f", "zero", "b1", "ax0"], ["sl"]),
        helper.make_node("MatMul", ["sl", "w"], ["y"]),
    ]
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32), "w")
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                  [ints("i0", 0), ints("ax0", [0]), ints("c24", [2, 4]), ints("zero", [0]), w])


def test_symbolic_batch_folds_shape_arithmetic():
    model = symbolic_model()
    mod = from_onnx(model)
    (x,) = mod["main"].params
    batch = x.struct_info.shape[0]
    assert isinstance(batch, TirVar) and batch.name == "batch"
    text = print_module(mod)
    assert 'batch = TypeVar("batch")' in text and "R.reshape(x, R.shape([batch, 2, 4]))" in text
    assert "strided_slice" not in text  # the slice 0:batch of a batch-sized axis is dropped
    for b in (2, 5):
        xv = np.random.default_rng(b).standard_normal((b, 8)).astype(np.float32)
        expected = ReferenceEvaluator(model).run(None, {"x": xv})[0]
        np.testing.assert_allclose(run_module(mod, [xv], check=True), expected, rtol=1e-5, atol=1e-6)


def test_opset_range_and_bad_files(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    from byocc.frontend.onnx import MAX_OPSET

    relu = _model([helper.make_node("Relu", ["x"], ["y"])], [x], [helper.make_tensor_value_info("y", 1, None)],
                  opset=MAX_OPSET + 1)  # opsets up to the installed onnx's import (issue 9)
    with pytest.raises(UnsupportedError, match=f"ONNX opset {MAX_OPSET + 1} is not supported"):
        from_onnx(relu)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07not a model at all\xff\xff")
    with pytest.raises(FrontendError, match="not a readable ONNX model"):
        from_onnx(str(bad))
    with pytest.raises(FrontendError, match="no such file"):
        from_onnx(str(tmp_path / "missing.onnx"))
