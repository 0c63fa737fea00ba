"""What both CUTLASS unit kinds share: C++ type and functor names, the ``cutlass_library``
import, the descriptions in a unit's header comment, and :func:`render_unit`, which renders
an arch's template (``templates/sm90_unit.cu.j2``, ``templates/sm80_unit.cu.j2``, both
extending ``templates/unit.cu.j2``: header comment, includes, argument checks and the three
entry points every ``k_<hash>.cu`` defines for ``byocc_gemm.h``).

:mod:`.sm90_unit` and :mod:`.sm80_unit` choose the kernel (through ``cutlass_library``) and
the epilogue; the text is the templates'.
"""

from __future__ import annotations

from typing import Any
from typing import NamedTuple

from byocc.backends.codegen import CodegenError

from ..cuda.templates import render
from ..dtypes import dtype
from .config import GemmKernelConfig

ACT_FUNCTORS = {None: "cutlass::epilogue::thread::Identity",
                 "relu": "cutlass::epilogue::thread::ReLu",
                 "gelu": "cutlass::epilogue::thread::GELU",  # erf form, not GELU_taylor
                 "silu": "cutlass::epilogue::thread::SiLu"}
BIN_FUNCTORS = {"add": "cutlass::plus", "multiply": "cutlass::multiplies"}


class OperandCheck(NamedTuple):
    """One ``operand_ok`` of ``operands_aligned``: pointer field, leading dimension, batch
    stride field (counted only when L > 1), alignment and element size."""

    pointer: str
    ld: str
    batch_stride: str
    align: str
    size: str


def cutlass_library():
    """The ``cutlass_library`` modules (the nvidia-cutlass wheel), imported on first use."""
    try:
        from cutlass_library import gemm_operation
        from cutlass_library import library
    except ImportError as exc:
        raise CodegenError(
            "generating CUTLASS kernels needs the nvidia-cutlass wheel (pip install byocc[cuda])"
        ) from exc
    return library, gemm_operation


def element_type(name: str, tf32: bool = False) -> str:
    """CUTLASS's element type of dtype ``name`` (``cutlass::tfloat32_t`` for float32 with
    ``tf32``: the sm_90a units' TF32 math)."""
    if tf32 and name == "float32":
        return "cutlass::tfloat32_t"
    return dtype(name, "cutlass", "CUTLASS element").cutlass


def library_type(lib, name: str, tf32: bool = False):
    """``cutlass_library``'s ``DataType`` member of dtype ``name`` (``tf32`` as above)."""
    if tf32 and name == "float32":
        return lib.DataType.tf32
    return getattr(lib.DataType, dtype(name, "cutlass", "CUTLASS element").short)


def _about(cfg: GemmKernelConfig) -> dict[str, str]:
    """The header comment's descriptions of B, C, the bias and the kernel's shape."""
    ep = cfg.epilogue
    if ep.source == "full":
        c_text = (f"{cfg.dtype_c}, full M x N (ldc), alignment {cfg.align_c}, beta = 1, as the "
                  + ("residual" if ep.residual == "full" else "addend"))
    elif ep.residual == "per_column":
        c_text = f"{cfg.dtype_c}, per-column residual (N, batch stride args.batch_stride_c)"
    else:
        c_text = "none"
    tile = "x".join(map(str, cfg.tile))
    if cfg.arch == "sm90":
        scheduler = "stream-K" if cfg.stream_k else "persistent"
        swizzle = f", swizzle {cfg.swizzle}" if cfg.swizzle != 1 else ""
        shape = (f"tile {tile}, cluster {'x'.join(map(str, cfg.cluster))}, {cfg.schedule}, "
                 f"{scheduler} tile scheduler{swizzle}")
    else:
        shape = f"tile {tile}, {cfg.stages} stages"
    return {
        "b": "K x N row-major (N contiguous)" if cfg.b_layout == "nn" else "stored N x K (K contiguous)",
        "c": c_text,
        "bias": f"{cfg.dtype_d}, per-column (N, batch stride args.batch_stride_bias)" if ep.bias else "none",
        "shape": shape,
    }


def tidy(text: str) -> str:
    """Trailing blanks off, at most one empty line in a row, no leading or trailing empty
    lines (for the instantiation text ``cutlass_library`` emits)."""
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def render_unit(template: str, cfg: GemmKernelConfig, *, engine: str, kernel_name: str,
                includes: list[str], checks: list[OperandCheck], **context: Any) -> str:
    """The text of a unit from its arch's template."""
    return render(template, cfg=cfg, ep=cfg.epilogue, engine=engine, kernel_name=kernel_name,
                  about=_about(cfg), includes=includes, checks=checks, **context)


__all__ = [
    "ACT_FUNCTORS", "BIN_FUNCTORS", "OperandCheck", "cutlass_library", "element_type",
    "library_type", "render_unit", "tidy",
]
