"""Shared CUDA C++ for every generated library: the exported ABI header (``byocc_abi.h``),
the internal helper header (``byocc_internal.h``: argument checks, error buffer, device
cache, bound constants), the GEMM kernel interface (``byocc_gemm.h``) and ``runtime.cu``,
fixed files in ``csrc/`` (docs/codegen.md#common-contract)."""

from .common import common_sources
from .common import return_codes
from .common import runtime_source

__all__ = ["common_sources", "return_codes", "runtime_source"]
