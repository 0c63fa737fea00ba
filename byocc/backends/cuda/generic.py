"""byocc's own light CUDA kernels: the generic SIMT GEMM and the generic (broadcasting)
epilogue (docs/codegen.md#epilogue-and-fallback-kernels).

* ``src/byocc_generic.cuh`` (fixed, ``csrc/byocc_generic.cuh``): templates shared by every light unit
  and the host helpers the wrappers call: :cpp:`Operand` (one tensor read through
  broadcast strides over the output's index space), :cpp:`Epilogue`
  (``post(bin(act(acc + bias), residual))`` with run-time act/bin/post codes), the epilogue
  kernel (also used for explicit transposes: a strided copy), the SIMT GEMM (64x64x16 tiles,
  256 threads, fp32 accumulation for float inputs, int32 for 8-bit, the epilogue fused) and
  the elementwise kernel argument block :cpp:`EwArgs` (:mod:`.elementwise`).
* One unit per dtype combination, named by it (so many functions share one):
  ``src/kernels/generic_gemm_<a>_<b>_<d>.cu`` and ``src/kernels/generic_epilogue_<src>_<d>.cu``
  (:func:`gemm_unit`, :func:`epilogue_unit`, from ``templates/generic_gemm.cu.j2`` and
  ``generic_epilogue.cu.j2``). The wrapper declares the entry points with
  :func:`gemm_declaration` / :func:`epilogue_declaration`.
* The direct convolution (``csrc/byocc_conv.cuh``, problem ``ConvArgs`` in
  ``csrc/byocc_conv.h``): NHWC x OHWI, every group, the epilogue fused; one unit per dtype
  combination, ``src/kernels/generic_conv_<a>_<b>_<d>.cu`` (:func:`conv_unit`).

Correct for every shape, stride pattern and alignment (element alignment only), so it is
the last variant every GEMM step compiles. Not fast: a correctness fallback.
"""

from __future__ import annotations

from ..codegen import CodegenError
from ..codegen import SourceFile
from ..dtypes import WRAPPER_DTYPES
from ..dtypes import DType
from ..dtypes import dtype as dtype_row
from .common import fixed_constant
from .templates import fixed_source
from .templates import render

HEADER_PATH = "src/byocc_generic.cuh"
_HEADER = "cuda/byocc_generic.cuh"

#: Most output axes an operand can be broadcast over (deeper outputs are a CodegenError).
MAX_RANK = fixed_constant(_HEADER, "kMaxRank")
#: Most inputs of one elementwise kernel.
MAX_EW_INPUTS = fixed_constant(_HEADER, "kMaxInputs")

#: act / bin / post codes of :cpp:`Epilogue`.
ACT_CODES = {None: 0, "relu": 1, "gelu": 2, "silu": 3}
BIN_CODES = {None: 0, "add": 1, "multiply": 2}
POST_CODES = {None: 0, "relu": 1}


def _row(dtype: str) -> DType:
    if dtype not in WRAPPER_DTYPES:  # the generic kernels take every dtype a wrapper takes
        raise CodegenError(f"dtype {dtype} is not supported by byocc's generic kernels")
    return dtype_row(dtype)


def short(dtype: str) -> str:
    """The dtype's tag in unit and function names (``f16``)."""
    return _row(dtype).short


def ctype(dtype: str) -> str:
    """The dtype's C++ storage type (``__half``)."""
    return _row(dtype).ctype


def header_source() -> SourceFile:
    return SourceFile(HEADER_PATH, fixed_source(_HEADER), "header")


# --------------------------------------------------------------------------- GEMM units
def gemm_name(dtype_a: str, dtype_b: str, dtype_d: str) -> str:
    return f"gemm_{short(dtype_a)}_{short(dtype_b)}_{short(dtype_d)}"


def declaration(kind: str, name: str) -> str:
    """The one-line prototype of generic kernel ``name``'s entry point, ``kind`` ``gemm``,
    ``epilogue``, ``conv`` or ``elementwise`` (``cuda/generic_declaration.h.j2``)."""
    return render("cuda/generic_declaration.h.j2", kind=kind, name=name).removesuffix("\n")


def gemm_declaration(dtype_a: str, dtype_b: str, dtype_d: str) -> str:
    """Prototype of the generic GEMM entry (``byocc::generic::<name>_run``)."""
    return declaration("gemm", gemm_name(dtype_a, dtype_b, dtype_d))


def gemm_unit(dtype_a: str, dtype_b: str, dtype_d: str) -> SourceFile:
    """``src/kernels/generic_<name>.cu``: the SIMT GEMM for one dtype combination."""
    name = gemm_name(dtype_a, dtype_b, dtype_d)
    text = render("cuda/generic_gemm.cu.j2", name=name, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d,
                  a_type=ctype(dtype_a), b_type=ctype(dtype_b), d_type=ctype(dtype_d))
    return SourceFile(f"src/kernels/generic_{name}.cu", text, "light")


def epilogue_name(dtype_src: str, dtype_d: str) -> str:
    return f"epilogue_{short(dtype_src)}_{short(dtype_d)}"


def epilogue_declaration(dtype_src: str, dtype_d: str) -> str:
    return declaration("epilogue", epilogue_name(dtype_src, dtype_d))


def epilogue_unit(dtype_src: str, dtype_d: str) -> SourceFile:
    """``src/kernels/generic_<name>.cu``: the generic epilogue / strided copy for one
    (source, output) dtype pair."""
    name = epilogue_name(dtype_src, dtype_d)
    text = render("cuda/generic_epilogue.cu.j2", name=name, dtype_src=dtype_src, dtype_d=dtype_d,
                  src_type=ctype(dtype_src), d_type=ctype(dtype_d))
    return SourceFile(f"src/kernels/generic_{name}.cu", text, "light")


# --------------------------------------------------------------------------- sm_90a GEMM helpers
#: The split-K reduction and zero-padding kernels (docs/codegen.md#split-k, #unaligned-k): in a
#: library only when a GEMM step has a split-K or K-padded tier.
AUX_HEADER_PATH = "src/byocc_gemm_aux.cuh"


def aux_header_source() -> SourceFile:
    return SourceFile(AUX_HEADER_PATH, fixed_source("cuda/byocc_gemm_aux.cuh"), "header")


def _aux_unit(kind: str, name: str, dtype: str) -> SourceFile:
    """``src/kernels/generic_<name>.cu``: one of byocc_gemm_aux.cuh's kernels for ``dtype``."""
    text = render("cuda/gemm_aux.cu.j2", kind=kind, name=name, dtype_d=dtype, d_type=ctype(dtype))
    return SourceFile(f"src/kernels/generic_{name}.cu", text, "light")


def splitk_name(dtype_d: str) -> str:
    return f"splitk_f32_{short(dtype_d)}"


def splitk_declaration(dtype_d: str) -> str:
    return declaration("splitk", splitk_name(dtype_d))


def splitk_unit(dtype_d: str) -> SourceFile:
    """``src/kernels/generic_splitk_f32_<d>.cu``: the split-K reduction into ``dtype_d``."""
    return _aux_unit("splitk", splitk_name(dtype_d), dtype_d)


def pad_name(dtype: str) -> str:
    return f"pad_{short(dtype)}"


def pad_declaration(dtype: str) -> str:
    return declaration("pad", pad_name(dtype))


def pad_unit(dtype: str) -> SourceFile:
    """``src/kernels/generic_pad_<t>.cu``: the zero padding of 16-bit ``dtype`` matrices."""
    return _aux_unit("pad", pad_name(dtype), dtype)


def uses_aux(paths) -> bool:
    """Whether a library's units include a split-K or padding unit (then it needs the header)."""
    return any(p.startswith(("src/kernels/generic_splitk_", "src/kernels/generic_pad_")) for p in paths)


# --------------------------------------------------------------------------- conv units
#: The conv problem header (``ConvArgs``) and the direct convolution's templates: in a library
#: only when a function has a conv2d step.
CONV_HEADER_PATHS = ("src/byocc_conv.h", "src/byocc_conv.cuh")


def conv_header_sources() -> tuple[SourceFile, ...]:
    return tuple(SourceFile(path, fixed_source("cuda/" + path.removeprefix("src/")), "header")
                 for path in CONV_HEADER_PATHS)


def conv_name(dtype_a: str, dtype_b: str, dtype_d: str) -> str:
    return f"conv_{short(dtype_a)}_{short(dtype_b)}_{short(dtype_d)}"


def conv_declaration(dtype_a: str, dtype_b: str, dtype_d: str) -> str:
    """Prototype of the generic direct convolution's entry (``byocc::generic::<name>_run``)."""
    return declaration("conv", conv_name(dtype_a, dtype_b, dtype_d))


def conv_pad_declaration(dtype_a: str, dtype_b: str, dtype_d: str) -> str:
    """Prototypes of the generic conv unit's channel padding and space-to-depth
    (``byocc::generic::<name>_pad8_run``, ``<name>_s2d16_run``)."""
    return declaration("conv_pad", conv_name(dtype_a, dtype_b, dtype_d))


def conv_unit(dtype_a: str, dtype_b: str, dtype_d: str) -> SourceFile:
    """``src/kernels/generic_<name>.cu``: the direct convolution for one dtype combination."""
    name = conv_name(dtype_a, dtype_b, dtype_d)
    text = render("cuda/generic_conv.cu.j2", name=name, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d,
                  a_type=ctype(dtype_a), b_type=ctype(dtype_b), d_type=ctype(dtype_d))
    return SourceFile(f"src/kernels/generic_{name}.cu", text, "light")


__all__ = [
    "ACT_CODES", "AUX_HEADER_PATH", "BIN_CODES", "CONV_HEADER_PATHS", "HEADER_PATH", "MAX_EW_INPUTS",
    "MAX_RANK", "POST_CODES", "conv_declaration", "conv_header_sources", "conv_name", "conv_pad_declaration",
    "conv_unit", "ctype",
    "declaration", "epilogue_declaration", "epilogue_name", "epilogue_unit",
    "aux_header_source", "gemm_declaration", "gemm_name", "gemm_unit", "header_source", "pad_declaration",
    "pad_name", "pad_unit", "short", "splitk_declaration", "splitk_name", "splitk_unit", "uses_aux",
]
