"""PyTorch versions of the samples `bench/gpu/e2e.sh` times (``byocc bench --reference
bench/gpu/references.py:NAME``): each NAME() returns a callable taking the sample's
parameters, in order, as CUDA tensors (the weights are parameters of these samples)."""

from __future__ import annotations


def mlp_fp16():
    """samples/mlp_fp16.relax: three matmul + bias layers, ReLU between."""
    import torch

    def forward(x, w1, b1, w2, b2, w3, b3):
        h = torch.relu(x @ w1 + b1)
        h = torch.relu(h @ w2 + b2)
        return h @ w3 + b3

    return forward


def conv2d_nhwc_fp16():
    """samples/conv2d_nhwc_fp16.relax: NHWC conv2d 3x3 (OHWI weights) + bias + ReLU; the
    permuted views are channels-last NCHW tensors, so PyTorch runs its channels-last kernels
    without a copy."""
    import torch
    import torch.nn.functional as F

    def forward(x, w, b):
        y = F.conv2d(x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2), padding=1)
        return torch.relu(y.permute(0, 2, 3, 1) + b)

    return forward


# --------------------------------------------------------------------------- whole models
# The end-to-end models of bench/gpu/e2e_models.sh (issue 21). Each is built in fp32 on the
# CPU from ``torch.manual_seed(seed)`` by the same constructor bench/gpu/export_models.py
# exports to ONNX, so the weights are the ONNX model's; the references cast it to fp16 on the
# GPU. ``E2E_SMALL=1`` selects the small shapes of the dry run, ``E2E_SEED`` the seed (0).

#: name -> (constructor, its keyword arguments, the input: shape and dtype), full and small
MODEL_CONFIGS = {
    "full": {
        "resnet50_b32": ("resnet50", {}, ((32, 3, 224, 224), "float32")),
        "resnet50_b1": ("resnet50", {}, ((1, 3, 224, 224), "float32")),
        "bert": ("bert", {}, ((8, 512), "int64")),
        "llama": ("llama", {}, ((1, 2048, 4096), "float32")),
    },
    "small": {
        "resnet50_b32": ("resnet50", {}, ((2, 3, 64, 64), "float32")),
        "resnet50_b1": ("resnet50", {}, ((1, 3, 64, 64), "float32")),
        "bert": ("bert", {"layers": 2, "max_pos": 128}, ((2, 128), "int64")),
        "llama": ("llama", {"hidden": 512, "heads": 8, "kv_heads": 2, "ffn": 1376, "seq": 128},
                  ((1, 128, 512), "float32")),
    },
}


def model_config(name: str, small: bool | None = None):
    import os

    if small is None:
        small = os.environ.get("E2E_SMALL", "0") not in ("", "0")
    return MODEL_CONFIGS["small" if small else "full"][name]


def _export_models():
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "export_models.py")
    spec = importlib.util.spec_from_file_location("byocc_export_models", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _resnet50_plain():
    """torchvision's ResNet-50 (v1.5, its module order and initialisation) for machines without
    torchvision; the same seed gives the same weights as ``torchvision.models.resnet50()``."""
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride, down):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3, self.bn3 = nn.Conv2d(width, width * 4, 1, bias=False), nn.BatchNorm2d(width * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = down

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + (x if self.downsample is None else self.downsample(x)))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1, self.relu = nn.BatchNorm2d(64), nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin, layers = 64, []
            for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                down = None
                if stride != 1 or cin != width * 4:
                    down = nn.Sequential(nn.Conv2d(cin, width * 4, 1, stride, bias=False), nn.BatchNorm2d(width * 4))
                mods = [Bottleneck(cin, width, stride, down)]
                cin = width * 4
                mods += [Bottleneck(cin, width, 1, None) for _ in range(blocks - 1)]
                layers.append(nn.Sequential(*mods))
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(2048, 1000)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet()


def build_model(name: str, seed: int | None = None, small: bool | None = None):
    """The fp32 CPU torch module of an end-to-end model (``MODEL_CONFIGS``), in eval mode,
    its weights from ``torch.manual_seed(seed)`` (``E2E_SEED``, default 0)."""
    import os

    import torch

    kind, kwargs, _ = model_config(name, small)
    if seed is None:
        seed = int(os.environ.get("E2E_SEED", "0"))
    torch.manual_seed(seed)
    if kind == "resnet50":
        try:
            import torchvision

            model = torchvision.models.resnet50(weights=None)
        except ImportError:
            model = _resnet50_plain()
    elif kind == "bert":
        model = _export_models().bert_base(**kwargs)
    else:
        model = _export_models().llama_block(**kwargs)
    return model.eval()


def _fp16_on_gpu(name: str, channels_last: bool = False, compile: bool = False):
    import os

    import torch

    if os.environ.get("E2E_DEVICE", "cuda") == "cpu":  # the dry run: fp32 on the CPU, same code path
        model = build_model(name)
        half = False
    else:
        model = build_model(name).half().cuda()
        half = True
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    if compile:
        model = torch.compile(model)  # mode "default"
    floating = model_config(name)[2][1].startswith("float")

    def forward(x):
        if floating:
            x = x.half() if half else x
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
        return model(x).float()  # byocc's module keeps the fp32 input and output

    forward.weight_bytes = sum(t.numel() * t.element_size()  # type: ignore[attr-defined]
                               for t in list(model.parameters()) + list(model.buffers()))
    return forward


def resnet50_b32_fp16():
    """ResNet-50 (torchvision, random weights) in fp16, NCHW; input (32, 3, 224, 224) fp32."""
    return _fp16_on_gpu("resnet50_b32")


def resnet50_b32_fp16_cl():
    """The same, channels-last (PyTorch's fast path for convolutions)."""
    return _fp16_on_gpu("resnet50_b32", channels_last=True)


def resnet50_b1_fp16():
    return _fp16_on_gpu("resnet50_b1")


def resnet50_b1_fp16_cl():
    return _fp16_on_gpu("resnet50_b1", channels_last=True)


def bert_fp16():
    """BERT-base (bench/gpu/export_models.py) in fp16; input ids (8, 512) int64."""
    return _fp16_on_gpu("bert")


def llama_fp16():
    """The Llama-style decoder layer (bench/gpu/export_models.py) in fp16; input (1, 2048, 4096)."""
    return _fp16_on_gpu("llama")
