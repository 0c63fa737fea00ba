"""byocc.backends: backend records (:class:`Backend`: pattern table, preferred layout,
rewrites before and steps after fusion, codegen and its option schema; looked up by name;
RunCodegen finds codegens through them), the drivers that read
them (``--prepare``, ``partition_for_<backend>``), the pattern registry, pattern helpers,
check rules, the ``--patterns`` file loader, and one sub-package per backend (``cutlass``,
``cublas``), each with its record in ``backend.py``.

Importing this package is cheap: it registers the built-in records (cutlass, then cublas:
TVM's order) and their codegens, whose code is imported on first use; the pattern tables
are built on the first use of the registry (:func:`get_patterns_with_prefix`).
"""

from byocc.dpl import CheckResult
from byocc.dpl import FusionPattern
from byocc.dpl import PatternCheckContext
from byocc.dpl import backend_of
from byocc.dpl import explain_no_match

from .driver import PREFERRED
from .driver import backend_steps
from .driver import partition_for_backend
from .driver import prepare_for_backend
from .driver import prepare_passes
from .options import CodegenOption
from .options import OptionError
from .options import OptionSchema
from .pattern_file import load_pattern_file
from .pattern_file import pattern_file_namespace
from .pattern_file import user_code_span
from .patterns import make_attention_pattern
from .patterns import make_conv2d_pattern
from .patterns import make_fused_bias_activation_pattern
from .patterns import make_layer_norm_pattern
from .patterns import make_matmul_dequantize_pattern
from .patterns import make_matmul_multiply_pattern
from .patterns import make_matmul_pattern
from .patterns import make_residual_block_pattern
from .patterns import make_rms_norm_pattern
from .patterns import make_stacked_attention_pattern
from .record import BUILTIN_BACKENDS
from .record import Backend
from .record import FunctionRewrite
from .record import Lazy
from .record import ModuleStep
from .record import get_backend
from .record import get_codegen
from .record import lazy
from .record import load_builtin_backends
from .record import register_backend
from .record import register_codegen
from .record import registered_backends
from .record import registered_codegens
from .record import unregister_backend
from .record import unregister_codegen
from .registry import get_pattern
from .registry import get_patterns_with_prefix
from .registry import register_patterns
from .registry import remove_patterns
from .utils import has_leaking_intermediate_variables
from .utils import is_shape_valid_for_cutlass_matmul
from .utils import leak_reason

load_builtin_backends()  # the built-in records and their (lazy) codegens

__all__ = [
    "BUILTIN_BACKENDS", "Backend", "CodegenOption", "FunctionRewrite", "Lazy", "ModuleStep",
    "OptionError", "OptionSchema", "PREFERRED", "backend_steps", "get_backend", "get_codegen",
    "lazy", "register_codegen", "registered_codegens", "unregister_codegen", "partition_for_backend", "prepare_for_backend", "prepare_passes",
    "load_builtin_backends", "register_backend", "unregister_backend",
    "CheckResult", "FusionPattern", "PatternCheckContext", "backend_of", "explain_no_match",
    "get_pattern", "get_patterns_with_prefix", "has_leaking_intermediate_variables",
    "is_shape_valid_for_cutlass_matmul", "leak_reason", "load_pattern_file",
    "make_attention_pattern", "make_conv2d_pattern", "make_fused_bias_activation_pattern",
    "make_layer_norm_pattern", "make_matmul_dequantize_pattern", "make_matmul_multiply_pattern",
    "make_matmul_pattern", "make_residual_block_pattern", "make_rms_norm_pattern",
    "make_stacked_attention_pattern", "pattern_file_namespace", "register_patterns",
    "registered_backends", "remove_patterns", "user_code_span",
]
