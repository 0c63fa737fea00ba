"""``relax.backend.patterns``: pattern helpers returning ``(pattern, annotations)``
(TVM's ``tvm.relax.backend.patterns``; implementation in :mod:`byocc.backends.patterns`)."""

from __future__ import annotations

from byocc.backends import (
    make_attention_pattern,
    make_conv2d_pattern,
    make_fused_bias_activation_pattern,
    make_layer_norm_pattern,
    make_matmul_dequantize_pattern,
    make_matmul_multiply_pattern,
    make_matmul_pattern,
    make_residual_block_pattern,
    make_rms_norm_pattern,
    make_stacked_attention_pattern,
)

__all__ = [
    "make_attention_pattern", "make_conv2d_pattern", "make_fused_bias_activation_pattern",
    "make_layer_norm_pattern", "make_matmul_dequantize_pattern", "make_matmul_multiply_pattern",
    "make_matmul_pattern", "make_residual_block_pattern", "make_rms_norm_pattern",
    "make_stacked_attention_pattern",
]
