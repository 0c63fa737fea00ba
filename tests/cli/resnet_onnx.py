"""A ResNet-50 as ONNX, built with ``onnx.helper`` (torchvision's topology, random weights):
a 7x7/2 stem with BatchNormalization and Relu, a 3x3/2 MaxPool, 16 bottleneck blocks
(3, 4, 6, 3 per stage; a 1x1 projection with BatchNormalization on the skip path of each
stage's first block, stride on the 3x3 conv as torchvision v1.5 does), GlobalAveragePool,
Flatten and a 1000-way Gemm. Value names follow PyTorch's exporter (``layer1.0.conv1.weight``).

    python tests/cli/resnet_onnx.py OUT.onnx [--dtype float16] [--width 64]

``width`` scales every channel count (64 is ResNet-50; smaller keeps tests light with the
same graph). The weights come from a fixed seed, so the file is reproducible.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper
from onnx import numpy_helper

STAGES = ((3, 1), (4, 2), (6, 2), (3, 2))  # (blocks, stride of the first block)


class _Builder:
    def __init__(self, dtype: str, seed: int = 50):
        self.np_dtype = np.dtype(dtype)
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []

    def weight(self, name: str, shape, scale: float = 0.05):
        value = (self.rng.standard_normal(shape) * scale).astype(self.np_dtype)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def array(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, self.np_dtype), name))
        return name

    def node(self, op: str, inputs, name: str, **attrs) -> str:
        out = f"/{name}/{op}_output_0"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=f"/{name}/{op}", **attrs))
        return out

    def conv_bn(self, x: str, prefix: str, bn: str, cin: int, cout: int, k: int, stride: int,
                relu: bool) -> str:
        w = self.weight(f"{prefix}.weight", (cout, cin, k, k), scale=(2.0 / (cin * k * k)) ** 0.5)
        y = self.node("Conv", [x, w], prefix, kernel_shape=[k, k], strides=[stride, stride],
                      pads=[k // 2] * 4)
        scale = self.array(f"{bn}.weight", 1.0 + 0.1 * self.rng.standard_normal(cout))
        bias = self.weight(f"{bn}.bias", (cout,), 0.1)
        mean = self.weight(f"{bn}.running_mean", (cout,), 0.1)
        var = self.array(f"{bn}.running_var", 1.0 + 0.1 * self.rng.random(cout))
        y = self.node("BatchNormalization", [y, scale, bias, mean, var], bn, epsilon=1e-5)
        return self.node("Relu", [y], f"{bn}.relu") if relu else y


def resnet50(dtype: str = "float32", width: int = 64, image: int = 224) -> onnx.ModelProto:
    """The model (module docstring); input ``input`` of shape (1, 3, image, image)."""
    b = _Builder(dtype)
    x = b.conv_bn("input", "conv1", "bn1", 3, width, 7, 2, relu=True)
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, (blocks, first_stride) in enumerate(STAGES, start=1):
        mid = width * 2 ** (stage - 1)
        cout = mid * 4
        for i in range(blocks):
            p = f"layer{stage}.{i}"
            stride = first_stride if i == 0 else 1
            y = b.conv_bn(x, f"{p}.conv1", f"{p}.bn1", cin, mid, 1, 1, relu=True)
            y = b.conv_bn(y, f"{p}.conv2", f"{p}.bn2", mid, mid, 3, stride, relu=True)
            y = b.conv_bn(y, f"{p}.conv3", f"{p}.bn3", mid, cout, 1, 1, relu=False)
            skip = x
            if i == 0:
                skip = b.conv_bn(x, f"{p}.downsample.0", f"{p}.downsample.1", cin, cout, 1, stride, relu=False)
            x = b.node("Relu", [b.node("Add", [y, skip], f"{p}.add")], f"{p}.relu")
            cin = cout
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x], "avgpool")], "flatten")
    w = b.weight("fc.weight", (1000, cin), scale=cin ** -0.5)
    x = b.node("Gemm", [x, w, b.weight("fc.bias", (1000,), 0.01)], "fc", transB=1)
    elem = TensorProto.FLOAT16 if b.np_dtype == np.float16 else TensorProto.FLOAT
    graph = helper.make_graph(
        b.nodes, "resnet50",
        [helper.make_tensor_value_info("input", elem, [1, 3, image, image])],
        [helper.make_tensor_value_info(x, elem, [1, 1000])],
        initializer=b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="byocc tests/cli/resnet_onnx.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args(argv)
    onnx.save(resnet50(args.dtype, args.width), args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
