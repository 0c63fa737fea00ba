"""byocc.backends: the pattern registry, pattern helpers, check rules, the ``--patterns``
file loader, and one sub-package per backend (``cutlass``, ``cublas``).

Importing this package is cheap: the backend tables are built on the first use of the
registry (:func:`get_patterns_with_prefix`), cutlass first, then cublas (TVM's order).
"""

from byocc.dpl import CheckResult, FusionPattern, PatternCheckContext, backend_of, explain_no_match

from .pattern_file import load_pattern_file, pattern_file_namespace, user_code_span
from .patterns import (
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
from .registry import (
    get_pattern,
    get_patterns_with_prefix,
    register_patterns,
    registered_backends,
    remove_patterns,
)
from .utils import (
    has_leaking_intermediate_variables,
    is_shape_valid_for_cutlass_matmul,
    leak_reason,
)


def _register_builtin_codegens() -> None:
    """The cutlass and cublas codegens, imported on first use (RunCodegen's registry)."""
    from byocc.transform.run_codegen import register_codegen, registered_codegens

    present = set(registered_codegens())
    for backend, target in (("cutlass", "byocc.backends.cutlass.codegen:codegen"),
                            ("cublas", "byocc.backends.cublas.codegen:codegen")):
        if backend not in present:
            register_codegen(backend, target)


_register_builtin_codegens()

__all__ = [
    "CheckResult", "FusionPattern", "PatternCheckContext", "backend_of", "explain_no_match",
    "get_pattern", "get_patterns_with_prefix", "has_leaking_intermediate_variables",
    "is_shape_valid_for_cutlass_matmul", "leak_reason", "load_pattern_file",
    "make_attention_pattern", "make_conv2d_pattern", "make_fused_bias_activation_pattern",
    "make_layer_norm_pattern", "make_matmul_dequantize_pattern", "make_matmul_multiply_pattern",
    "make_matmul_pattern", "make_residual_block_pattern", "make_rms_norm_pattern",
    "make_stacked_attention_pattern", "pattern_file_namespace", "register_patterns",
    "registered_backends", "remove_patterns", "user_code_span",
]
