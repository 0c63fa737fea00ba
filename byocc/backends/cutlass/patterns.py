"""The CUTLASS pattern table: 79 entries (docs/codegen.md#cutlass-table).

:func:`registration_entries` lists them in TVM 0.27's registration order (conv2d, matmul,
decode_matmul, residual blocks, attention, layer_norm, rms_norm); the registry reverses it,
so ``get_patterns_with_prefix("cutlass")`` starts with ``cutlass.rms_norm`` and ends with
``cutlass.conv2d``. Graph shapes and annotation keys are TVM's.
"""

from __future__ import annotations

from byocc.dpl import GlobalVarPattern
from byocc.dpl import TuplePattern
from byocc.dpl import is_op
from byocc.dpl import wildcard

from ..patterns import make_attention_pattern
from ..patterns import make_fused_bias_activation_pattern
from ..patterns import make_layer_norm_pattern
from ..patterns import make_matmul_pattern
from ..patterns import make_residual_block_pattern
from ..patterns import make_rms_norm_pattern
from ..patterns import make_stacked_attention_pattern
from .checks import check_conv2d
from .checks import check_decode_matmul
from .checks import check_layer_norm
from .checks import check_matmul
from .checks import check_rms_norm
from .checks import check_stacked_attention


def activation_from_name(pattern_name: str) -> str | None:
    """The activation op a pattern name asks for (``_relu``, ``_gelu_tanh``, ``_gelu``, ``_silu``)."""
    if "_relu" in pattern_name:
        return "relax.nn.relu"
    if "_gelu_tanh" in pattern_name:
        return "relax.nn.gelu_tanh"
    if "_gelu" in pattern_name:
        return "relax.nn.gelu"
    if "_silu" in pattern_name:
        return "relax.nn.silu"
    return None


def _matmul_entry(name: str) -> tuple:
    return (name, *make_matmul_pattern(transposed_rhs="_transposed" in name, with_bias="_bias" in name,
                                       activation=activation_from_name(name)), check_matmul)


def matmul_patterns() -> list:
    names = ["matmul", "matmul_bias", "matmul_bias_relu", "matmul_bias_gelu", "matmul_transposed",
             "matmul_transposed_bias", "matmul_transposed_bias_relu", "matmul_transposed_bias_gelu"]
    return [_matmul_entry("cutlass." + n) for n in names]


def _decode_matmul_entry(name: str) -> tuple:
    scales, x, w_packed = wildcard(), wildcard(), wildcard()
    w = is_op("relax.call_tir")(GlobalVarPattern(), TuplePattern([w_packed, scales]))
    matmul = is_op("relax.matmul")(x, w)
    if "cast" in name:
        matmul = is_op("relax.astype")(matmul)
    annotations = {"root": matmul, "lhs": x, "w_encoded": w_packed, "w_decoded": w, "scales": scales}
    out = matmul
    if "bias" in name:
        annotations["bias"] = bias = wildcard()
        out = is_op("relax.add")(matmul, bias)
    if "gelu" in name:
        out = is_op("relax.nn.gelu")(out)
    return name, out, annotations, check_decode_matmul


def decode_matmul_patterns() -> list:
    names = ["decode_matmul", "decode_matmul_bias", "decode_matmul_cast", "decode_matmul_cast_bias",
             "decode_matmul_bias_gelu", "decode_matmul_cast_bias_gelu"]
    return [_decode_matmul_entry("cutlass." + n) for n in names]


def _conv2d_entry(name: str) -> tuple:
    return (name, *make_fused_bias_activation_pattern("relax.nn.conv2d", with_bias="_bias" in name,
                                                      activation=activation_from_name(name)), check_conv2d)


def conv2d_patterns() -> list:
    return [_conv2d_entry("cutlass." + n) for n in ("conv2d", "conv2d_bias", "conv2d_bias_relu", "conv2d_bias_silu")]


def residual_block_patterns() -> list:
    """Residual add/multiply (then optional relu) after every base pattern with a bias."""
    out = []
    for activation, postfix in ((None, ""), ("relax.nn.relu", "_relu")):
        families = ((check_conv2d, conv2d_patterns()), (check_matmul, matmul_patterns()),
                    (check_decode_matmul, decode_matmul_patterns()))
        for check, bases in families:
            for name, pat, base_annotations, _ in bases:
                if "bias" not in name:
                    continue
                for bin_op in ("relax.add", "relax.multiply"):
                    out.append((name + "_residual_" + bin_op.split(".")[-1] + postfix,
                                *make_residual_block_pattern((pat, base_annotations), binary_op=bin_op,
                                                             activation=activation), check))
    return out


def attention_patterns() -> list:
    return [
        ("cutlass.attention", *make_attention_pattern()),
        ("cutlass.attention_bias", *make_attention_pattern(with_bias=True)),
        ("cutlass.stacked_attention", *make_stacked_attention_pattern(start_op="split"), check_stacked_attention),
        ("cutlass.stacked_attention", *make_stacked_attention_pattern(start_op="split", with_bias=True),
         check_stacked_attention),
        ("cutlass.stacked_attention", *make_stacked_attention_pattern(start_op="strided_slice"),
         check_stacked_attention),
        ("cutlass.stacked_attention", *make_stacked_attention_pattern(start_op="strided_slice", with_bias=True),
         check_stacked_attention),
        ("cutlass.attention_var_len", *make_attention_pattern(var_len=True)),
    ]


def layer_norm_pattern() -> list:
    return [("cutlass.layer_norm", *make_layer_norm_pattern(), check_layer_norm)]


def rms_norm_pattern() -> list:
    return [("cutlass.rms_norm", *make_rms_norm_pattern(), check_rms_norm)]


def registration_entries() -> list:
    """All 79 entries in registration order (lowest priority first)."""
    return [
        *conv2d_patterns(),
        *matmul_patterns(),
        *decode_matmul_patterns(),
        *residual_block_patterns(),
        *attention_patterns(),
        *layer_norm_pattern(),
        *rms_norm_pattern(),
    ]


__all__ = [
    "activation_from_name", "attention_patterns", "conv2d_patterns", "decode_matmul_patterns",
    "layer_norm_pattern", "matmul_patterns", "registration_entries", "residual_block_patterns",
    "rms_norm_pattern",
]
