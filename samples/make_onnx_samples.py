"""Write the ONNX samples: a small CNN and a small transformer encoder (BERT-style).

    python samples/make_onnx_samples.py [OUT_DIR]

Both are built with ``onnx.helper`` from random weights with a fixed seed, so the files
are reproducible. Value names follow PyTorch's exporter (``layer1.conv.weight``,
``/encoder/attn/MatMul_output_0``) so that the importer's name sanitising shows.

* ``small_cnn.onnx`` (opset 14): Conv + BatchNormalization + Relu, MaxPool, a residual
  block with Add, Pad + AveragePool, a Concat branch, Clip (ReLU6), GlobalAveragePool,
  Flatten, Gemm, Softmax. Input ``input`` (1, 3, 32, 32) float32.
* ``small_encoder.onnx`` (opset 17): token and position embeddings (Gather), one encoder
  layer with multi-head attention (shape computations through Shape/Gather/Unsqueeze/
  Concat/Reshape, Split of a fused QKV projection, Transpose, Softmax, an attention mask
  built with Cast/Sub/Mul/Unsqueeze/Where/Equal/Expand), a decomposed LayerNorm
  (ReduceMean/Sub/Pow/Sqrt/Div), a LayerNormalization node, an erf-GELU feed-forward
  block, and a tanh pooler over the first token. Inputs ``input_ids`` and
  ``attention_mask`` (1, 16) int64.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240501


class Graph:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def weight(self, name: str, shape, scale: float = 0.1, dtype=np.float32):
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * scale).astype(dtype), name))
        return name

    def const(self, name: str, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs, name: str, n_out: int = 1, **attrs):
        outs = [f"/{name}/{op}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=f"/{name}/{op}", **attrs))
        return outs[0] if n_out == 1 else outs


def small_cnn() -> onnx.ModelProto:
    g = Graph(SEED)
    x = "input"
    c1 = g.node("Conv", [x, g.weight("conv1.weight", (8, 3, 3, 3)), g.weight("conv1.bias", (8,))], "conv1",
                kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    bn = g.node("BatchNormalization", [c1, g.const("bn1.weight", np.linspace(0.5, 1.5, 8, dtype=np.float32)),
                                       g.weight("bn1.bias", (8,)),
                                       g.weight("bn1.running_mean", (8,)),
                                       g.const("bn1.running_var", np.linspace(0.8, 1.2, 8, dtype=np.float32))],
                "bn1", epsilon=1e-5)
    r1 = g.node("Relu", [bn], "relu1")
    p1 = g.node("MaxPool", [r1], "pool1", kernel_shape=[2, 2], strides=[2, 2])  # (1, 8, 16, 16)
    # residual block
    c2 = g.node("Conv", [p1, g.weight("layer1.conv1.weight", (8, 8, 3, 3))], "layer1/conv1",
                kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    r2 = g.node("Relu", [c2], "layer1/relu")
    c3 = g.node("Conv", [r2, g.weight("layer1.conv2.weight", (8, 8, 3, 3)), g.weight("layer1.conv2.bias", (8,))],
                "layer1/conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    add = g.node("Add", [c3, p1], "layer1/add")
    r3 = g.node("Relu", [add], "layer1/relu_1")
    # downsample with a strided conv and a padded average pool, concatenated
    c4 = g.node("Conv", [r3, g.weight("down.conv.weight", (8, 8, 3, 3)), g.weight("down.conv.bias", (8,))],
                "down/conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])  # (1, 8, 8, 8)
    pad = g.node("Pad", [r3, g.const("down.pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], "down/pad",
                 mode="constant")
    ap = g.node("AveragePool", [pad], "down/avgpool", kernel_shape=[3, 3], strides=[2, 2])  # (1, 8, 8, 8)
    cat = g.node("Concat", [c4, ap], "down/concat", axis=1)  # (1, 16, 8, 8)
    c5 = g.node("Conv", [cat, g.weight("head.conv.weight", (16, 16, 1, 1)), g.weight("head.conv.bias", (16,))],
                "head/conv", kernel_shape=[1, 1])
    clip = g.node("Clip", [c5, g.const("head.min", np.float32(0.0)), g.const("head.max", np.float32(6.0))],
                  "head/relu6")
    drop = g.node("Dropout", [clip], "head/dropout")
    gap = g.node("GlobalAveragePool", [drop], "head/gap")
    flat = g.node("Flatten", [gap], "head/flatten", axis=1)
    fc = g.node("Gemm", [flat, g.weight("fc.weight", (10, 16)), g.weight("fc.bias", (10,))], "fc", transB=1)
    prob = g.node("Softmax", [fc], "softmax", axis=-1)
    graph = helper.make_graph(
        g.nodes, "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info(prob, TensorProto.FLOAT, [1, 10])],
        g.inits)
    return _model(graph, 14)


def small_encoder(vocab: int = 50, seq: int = 16, hidden: int = 32, heads: int = 4, ffn: int = 64):
    g = Graph(SEED + 1)
    head_dim = hidden // heads
    ids, mask = "input_ids", "attention_mask"
    # embeddings: token + position (positions 0..seq-1 sliced from a longer table)
    tok = g.node("Gather", [g.weight("embeddings.word_embeddings.weight", (vocab, hidden)), ids], "emb/word")
    shape_ids = g.node("Shape", [ids], "emb/shape")
    seq_len = g.node("Gather", [shape_ids, g.const("emb.one", np.array(1, np.int64))], "emb/seq_len")
    seq_1d = g.node("Unsqueeze", [seq_len, g.const("emb.axes0", np.array([0], np.int64))], "emb/seq_1d")
    pos_ids = g.node("Slice", [g.const("embeddings.position_ids", np.arange(64, dtype=np.int64)[None, :]),
                               g.const("emb.zero_1d", np.array([0], np.int64)), seq_1d,
                               g.const("emb.axis1", np.array([1], np.int64))], "emb/pos_ids")
    pos = g.node("Gather", [g.weight("embeddings.position_embeddings.weight", (64, hidden)), pos_ids], "emb/pos")
    emb = g.node("Add", [tok, pos], "emb/add")
    h0 = _decomposed_layer_norm(g, emb, hidden, "emb/LayerNorm")
    # attention mask: (1 - mask) * -10000, broadcast over heads and queries
    maskf = g.node("Cast", [mask], "attn_mask/cast", to=TensorProto.FLOAT)
    inv = g.node("Sub", [g.const("attn_mask.one", np.float32(1.0)), maskf], "attn_mask/sub")
    neg = g.node("Mul", [inv, g.const("attn_mask.neg", np.float32(-10000.0))], "attn_mask/mul")
    m4 = g.node("Unsqueeze", [neg, g.const("attn_mask.axes", np.array([1, 2], np.int64))], "attn_mask/unsqueeze")
    # fused QKV projection, split into three
    qkv = g.node("MatMul", [h0, g.weight("encoder.layer.0.attention.qkv.weight", (hidden, 3 * hidden))], "attn/qkv")
    qkv = g.node("Add", [qkv, g.weight("encoder.layer.0.attention.qkv.bias", (3 * hidden,))], "attn/qkv_bias")
    q, k, v = g.node("Split", [qkv, g.const("attn.split", np.array([hidden] * 3, np.int64))], "attn/split",
                     n_out=3, axis=-1)
    # (B, S, H) -> (B, heads, S, head_dim), shape computed from the input's shape
    shape_h = g.node("Shape", [h0], "attn/shape")
    batch = g.node("Unsqueeze", [g.node("Gather", [shape_h, g.const("attn.i0", np.array(0, np.int64))], "attn/b"),
                                 g.const("attn.ax0", np.array([0], np.int64))], "attn/b1")
    seq_u = g.node("Unsqueeze", [g.node("Gather", [shape_h, g.const("attn.i1", np.array(1, np.int64))], "attn/s"),
                                 g.const("attn.ax0b", np.array([0], np.int64))], "attn/s1")
    heads_shape = g.node("Concat", [batch, seq_u, g.const("attn.heads", np.array([heads, head_dim], np.int64))],
                         "attn/heads_shape", axis=0)

    def split_heads(t, name, perm):
        r = g.node("Reshape", [t, heads_shape], f"attn/{name}_reshape")
        return g.node("Transpose", [r], f"attn/{name}_transpose", perm=perm)

    qh = split_heads(q, "q", [0, 2, 1, 3])
    kh = split_heads(k, "k", [0, 2, 3, 1])
    vh = split_heads(v, "v", [0, 2, 1, 3])
    scores = g.node("MatMul", [qh, kh], "attn/scores")
    scale = g.node("Sqrt", [g.const("attn.head_dim", np.float32(head_dim))], "attn/sqrt")
    scores = g.node("Div", [scores, scale], "attn/div")
    scores = g.node("Add", [scores, m4], "attn/add_mask")
    # mask out nothing extra, but exercise Equal/Expand/Where on the scores' shape
    keep = g.node("Equal", [g.node("Expand", [g.const("attn.true", np.array(1, np.int64)),
                                              g.const("attn.expand_shape", np.array([1, 1, 1, seq], np.int64))],
                                   "attn/expand"),
                            g.const("attn.one_i", np.array(1, np.int64))], "attn/equal")
    scores = g.node("Where", [keep, scores, g.const("attn.minus_inf", np.float32(-1e9))], "attn/where")
    probs = g.node("Softmax", [scores], "attn/softmax", axis=-1)
    ctx = g.node("MatMul", [probs, vh], "attn/context")
    ctx = g.node("Transpose", [ctx], "attn/context_transpose", perm=[0, 2, 1, 3])
    merged_shape = g.node("Concat", [batch, seq_u, g.const("attn.hidden", np.array([hidden], np.int64))],
                          "attn/merged_shape", axis=0)
    ctx = g.node("Reshape", [ctx, merged_shape], "attn/merge")
    out = g.node("MatMul", [ctx, g.weight("encoder.layer.0.attention.output.dense.weight", (hidden, hidden))],
                 "attn/out")
    out = g.node("Add", [out, g.weight("encoder.layer.0.attention.output.dense.bias", (hidden,))], "attn/out_bias")
    h1 = g.node("Add", [out, h0], "attn/residual")
    h1 = g.node("LayerNormalization", [h1, g.const("encoder.layer.0.attention.output.LayerNorm.weight",
                                                   np.ones(hidden, np.float32)),
                                       g.weight("encoder.layer.0.attention.output.LayerNorm.bias", (hidden,))],
                "attn/LayerNorm", axis=-1, epsilon=1e-12)
    # feed-forward with erf GELU
    f = g.node("MatMul", [h1, g.weight("encoder.layer.0.intermediate.dense.weight", (hidden, ffn))], "ffn/fc1")
    f = g.node("Add", [f, g.weight("encoder.layer.0.intermediate.dense.bias", (ffn,))], "ffn/fc1_bias")
    e = g.node("Erf", [g.node("Div", [f, g.const("ffn.sqrt2", np.float32(np.sqrt(2.0)))], "ffn/div")], "ffn/erf")
    e = g.node("Add", [e, g.const("ffn.one", np.float32(1.0))], "ffn/add_one")
    f = g.node("Mul", [g.node("Mul", [f, e], "ffn/mul"), g.const("ffn.half", np.float32(0.5))], "ffn/gelu")
    f = g.node("MatMul", [f, g.weight("encoder.layer.0.output.dense.weight", (ffn, hidden))], "ffn/fc2")
    f = g.node("Add", [f, g.weight("encoder.layer.0.output.dense.bias", (hidden,))], "ffn/fc2_bias")
    h2 = _decomposed_layer_norm(g, g.node("Add", [f, h1], "ffn/residual"), hidden, "ffn/LayerNorm")
    # pooler: first token -> Gemm -> Tanh
    first = g.node("Gather", [h2, g.const("pool.index", np.array(0, np.int64))], "pooler/first", axis=1)
    pooled = g.node("Gemm", [first, g.weight("pooler.dense.weight", (hidden, hidden)),
                             g.weight("pooler.dense.bias", (hidden,))], "pooler/dense", transB=1)
    pooled = g.node("Tanh", [pooled], "pooler/tanh")
    graph = helper.make_graph(
        g.nodes, "small_encoder",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, [1, seq]),
         helper.make_tensor_value_info(mask, TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info(h2, TensorProto.FLOAT, [1, seq, hidden]),
         helper.make_tensor_value_info(pooled, TensorProto.FLOAT, [1, hidden])],
        g.inits)
    return _model(graph, 17)


def _decomposed_layer_norm(g: Graph, x: str, hidden: int, name: str) -> str:
    """LayerNorm as older exporters write it: ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add."""
    mean = g.node("ReduceMean", [x], f"{name}/mean", axes=[-1], keepdims=1)
    d = g.node("Sub", [x, mean], f"{name}/sub")
    var = g.node("ReduceMean", [g.node("Pow", [d, g.const(f"{name}.two", np.float32(2.0))], f"{name}/pow")],
                 f"{name}/var", axes=[-1], keepdims=1)
    std = g.node("Sqrt", [g.node("Add", [var, g.const(f"{name}.eps", np.float32(1e-12))], f"{name}/add_eps")],
                 f"{name}/sqrt")
    y = g.node("Div", [d, std], f"{name}/div")
    y = g.node("Mul", [y, g.const(f"{name}.weight", np.ones(hidden, np.float32))], f"{name}/mul")
    return g.node("Add", [y, g.weight(f"{name}.bias", (hidden,))], f"{name}/add")


def _model(graph, opset: int) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="byocc samples/make_onnx_samples.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for name, model in (("small_cnn.onnx", small_cnn()), ("small_encoder.onnx", small_encoder())):
        onnx.save(model, os.path.join(out_dir, name))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
