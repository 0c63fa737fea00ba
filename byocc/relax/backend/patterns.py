"""``relax.backend.patterns``: pattern helpers returning ``(pattern, annotations)``
(TVM's ``tvm.relax.backend.patterns``; implementation in :mod:`byocc.backends.patterns`)."""

from __future__ import annotations

from byocc.backends import make_attention_pattern
from byocc.backends import make_conv2d_pattern
from byocc.backends import make_fused_bias_activation_pattern
from byocc.backends import make_layer_norm_pattern
from byocc.backends import make_matmul_dequantize_pattern
from byocc.backends import make_matmul_multiply_pattern
from byocc.backends import make_matmul_pattern
from byocc.backends import make_residual_block_pattern
from byocc.backends import make_rms_norm_pattern
from byocc.backends import make_stacked_attention_pattern
from byocc.backends.cutlass.rewrites import make_attention_rewrite


def make_attention_rewrite_pattern(qkv_layout: str, out_layout: str, with_bias: bool, with_cast: bool,
                                   with_kv_repeat: bool = False):
    """``(pattern, rewriter)`` turning a hand-written ``matmul -> softmax -> matmul``
    attention chain into ``R.nn.attention`` (layouts ``"BSNH"`` or ``"BSH"``); use with
    ``relax.dpl.rewrite_call``. The rewriter returns the original expression when a check
    fails (see :mod:`byocc.backends.cutlass.rewrites`)."""
    return make_attention_rewrite(qkv_layout, out_layout, with_bias, with_cast, with_kv_repeat)


__all__ = [
    "make_attention_pattern", "make_attention_rewrite_pattern", "make_conv2d_pattern", "make_fused_bias_activation_pattern",
    "make_layer_norm_pattern", "make_matmul_dequantize_pattern", "make_matmul_multiply_pattern",
    "make_matmul_pattern", "make_residual_block_pattern", "make_rms_norm_pattern",
    "make_stacked_attention_pattern",
]
