"""Where the CUDA toolkit and cuBLASLt live: moved to :mod:`byocc.backends.toolchain`, which
owns every piece of toolchain knowledge. Re-exported here for old callers until they import
the toolchain module."""

from __future__ import annotations

from byocc.backends.toolchain import CublasLtPaths
from byocc.backends.toolchain import find_cublaslt
from byocc.backends.toolchain import find_nvcc
from byocc.backends.toolchain import find_optional_cublaslt
from byocc.backends.toolchain import find_optional_cuda_include
from byocc.backends.toolchain import find_optional_nvcc

__all__ = [
    "CublasLtPaths", "find_cublaslt", "find_nvcc", "find_optional_cublaslt",
    "find_optional_cuda_include", "find_optional_nvcc",
]
