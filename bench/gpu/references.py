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
