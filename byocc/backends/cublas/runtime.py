"""The shared cuBLASLt unit of a generated library (docs/codegen.md#dispatch-by-compute-capability and #cublaslt-mapping).

* ``src/byocc_cublaslt.h``: ``byocc::CublasLtMatmul`` (one column-major cuBLASLt
  problem), ``byocc::cublaslt_matmul`` and the small kernels the wrappers need:
  ``byocc::cublaslt_gelu_erf_inplace`` (exact GELU after a ``BIAS`` epilogue),
  ``byocc::cublaslt_permute`` (weights that must be transposed before the GEMM) and
  ``byocc::cublaslt_broadcast`` (a one-element bias made the length-N vector the epilogue reads);
* ``src/cublaslt_runtime.cu``: their definitions: one cuBLASLt handle per device, created
  lazily behind a mutex and kept for the process lifetime; a bounded cache of (matrix
  layouts, matmul descriptor, algorithm) keyed by everything the heuristic reads: dtypes,
  compute and scale types, op, m, n, k, leading dims, batch count and strides, epilogue, bias
  type and the pointers' alignments.

The text is fixed (no model-derived content), in ``byocc/backends/cublas/csrc/``: every output
folder gets the same bytes. It is a light unit (no CUTLASS): nvcc compiles it in a few seconds.
"""

from __future__ import annotations

from byocc.backends.codegen import SourceFile

from ..cuda.templates import fixed_source

HEADER_PATH = "src/byocc_cublaslt.h"
RUNTIME_PATH = "src/cublaslt_runtime.cu"

#: CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (TVM's value), served from the step scratch;
#: ``kCublasLtWorkspaceBytes`` of ``byocc_cublaslt.h`` (a test keeps them equal).
WORKSPACE_BYTES = 32 << 20


def header_text() -> str:
    """The text of ``src/byocc_cublaslt.h``."""
    return fixed_source("cublas/byocc_cublaslt.h")


def runtime_text() -> str:
    """The text of ``src/cublaslt_runtime.cu``."""
    return fixed_source("cublas/cublaslt_runtime.cu")


def runtime_sources() -> tuple[SourceFile, ...]:
    """The header and the shared runtime unit every cuBLAS library contains."""
    return (
        SourceFile(HEADER_PATH, header_text(), "header"),
        SourceFile(RUNTIME_PATH, runtime_text(), "light"),
    )


__all__ = ["HEADER_PATH", "RUNTIME_PATH", "WORKSPACE_BYTES", "header_text", "runtime_sources", "runtime_text"]
