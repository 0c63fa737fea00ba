"""byocc's layer_norm and rms_norm kernels as build units (docs/codegen.md#layer_norm-and-rms_norm).

* ``src/byocc_norm.cuh`` (fixed, ``csrc/byocc_norm.cuh``): the kernels (fp32 statistics from
  the row held in registers, warp-per-row / CTA-per-row / long-row launches, 16-byte vectors
  where N and the pointers allow) and ``BYOCC_NORM_ENTRY_POINTS(tag, T)``, which defines the
  ``extern "C"`` entry points of one dtype; a library gets it when one of its units uses it.
* One unit per dtype, ``src/kernels/norm_<tag>.cu`` (:func:`norm_unit`, from
  ``templates/norm_unit.cu.j2``): the entry points of that dtype, shared by every function.
  The wrapper declares them with :func:`norm_declaration`; they return a ``cudaError_t`` as
  an int (0: success).
"""

from __future__ import annotations

from ..codegen import CodegenError
from ..codegen import SourceFile
from ..dtypes import dtype as dtype_row
from .templates import fixed_source
from .templates import render

#: The dtypes the norm kernels are instantiated for.
NORM_DTYPES = ("float16", "bfloat16", "float32")
#: The kinds of normalisation, as the entry points name them.
KINDS = ("layer_norm", "rms_norm")

HEADER_PATH = "src/byocc_norm.cuh"
_HEADER = "cuda/byocc_norm.cuh"
UNIT_PREFIX = "src/kernels/norm_"


def _tag(dtype: str) -> str:
    if dtype not in NORM_DTYPES:
        raise CodegenError(f"dtype {dtype} is not supported by byocc's norm kernels "
                           f"({', '.join(NORM_DTYPES)} only)")
    return dtype_row(dtype).short


def entry_name(kind: str, dtype: str) -> str:
    """The C name of the entry point (``byocc_layer_norm_f16``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown norm kind {kind!r}")
    return f"byocc_{kind}_{_tag(dtype)}"


def norm_declaration(kind: str, dtype: str) -> str:
    """The wrapper's prototype of one entry point."""
    pointers = "const void* x, const void* gamma, const void* beta" if kind == "layer_norm" \
        else "const void* x, const void* weight"
    return (f'extern "C" int {entry_name(kind, dtype)}({pointers}, void* y, int64_t rows, int64_t n, '
            "float eps, cudaStream_t stream);")


def norm_unit(dtype: str) -> SourceFile:
    """``src/kernels/norm_<tag>.cu``: both entry points for ``dtype``."""
    row = dtype_row(dtype)
    text = render("cuda/norm_unit.cu.j2", tag=_tag(dtype), dtype=dtype, ctype=row.ctype,
                  header=HEADER_PATH.removeprefix("src/"))
    return SourceFile(f"{UNIT_PREFIX}{row.short}.cu", text, "light")


def uses_norm(sources) -> bool:
    """Whether one of ``sources`` (SourceFiles) is a norm unit (the library then gets the header)."""
    return any(s.path.startswith(UNIT_PREFIX) for s in sources)


def header_source() -> SourceFile:
    return SourceFile(HEADER_PATH, fixed_source(_HEADER), "header")


__all__ = ["HEADER_PATH", "KINDS", "NORM_DTYPES", "entry_name", "header_source", "norm_declaration",
           "norm_unit", "uses_norm"]
