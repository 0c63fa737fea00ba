"""Shared CUDA C++ for every generated library: the exported ABI header (``byocc_abi.h``),
the internal helper header (``byocc_internal.h``: argument checks, error buffer, device
cache, bound constants) and ``runtime.cu`` (spec/backends.md section 6)."""

from .common import ABI_HEADER
from .common import GEMM_HEADER
from .common import INTERNAL_HEADER
from .common import common_sources
from .common import runtime_source

__all__ = ["ABI_HEADER", "GEMM_HEADER", "INTERNAL_HEADER", "common_sources", "runtime_source"]
