"""The cuBLAS backend's record (:class:`~byocc.backends.record.Backend`): its pattern table,
its codegen and the codegen's options; no layout preference, no rewrites and no steps after
fusion (docs/codegen.md#partition_for_cublas). Its code is imported on first use."""

from __future__ import annotations

from ..options import CodegenOption
from ..options import OptionSchema
from ..record import Backend
from ..record import lazy

#: What the cuBLAS codegen reads from ``target_options["cublas"]``.
OPTIONS = OptionSchema((
    CodegenOption("fast_gelu", "bool", False,
                  "GELU as cuBLASLt's GELU_BIAS epilogue (tanh approximation) instead of a BIAS "
                  "epilogue and byocc's exact erf-GELU kernel"),
    CodegenOption("exact_gelu", "bool", True,
                  "the exact erf GELU (the negation of fast_gelu)", negates="fast_gelu"),
    CodegenOption("fp32_math", "choice", "ieee",
                  "float32 GEMMs: ieee (CUBLAS_COMPUTE_32F) or tf32 (CUBLAS_COMPUTE_32F_FAST_TF32)",
                  choices=("ieee", "tf32")),
), backend="cublas")

BACKEND = Backend(
    name="cublas",
    table=lazy("byocc.backends.cublas.patterns:registration_entries"),
    codegen=lazy("byocc.backends.cublas.codegen:codegen"),
    options=OPTIONS,
    supports=lazy("byocc.backends.cublas.codegen:supports"),
)

__all__ = ["BACKEND", "OPTIONS"]
