"""CUTLASS GEMM kernel translation units: one ``src/kernels/k_<hash>.cu`` per configuration
(docs/codegen.md#cutlass-gemm-family, #build-units).

* :class:`EpilogueSpec`, :class:`GemmKernelConfig` (defined in :mod:`.config`): the fused
  epilogue and everything a unit is keyed by (its ``hash`` names the unit);
* :func:`sm90_supports` / :func:`sm80_supports`: which configurations a unit exists for (the
  caller routes every other one to the generic GEMM + epilogue kernels);
* :func:`emit_kernel`: the unit's text. sm_90a units instantiate a CUTLASS 3.x TMA
  warp-specialised kernel (the instantiation text comes from ``cutlass_library``'s
  ``EmitGemmUniversal3xInstance``; byocc writes the fusion, the argument mapping and the error
  handling); sm_80 units a CUTLASS 2.x ``GemmUniversal`` / ``GemmUniversalWithBroadcast``.
  The emitters are :mod:`.sm90_unit` and :mod:`.sm80_unit`; the text is rendered from
  ``templates/sm90_unit.cu.j2`` / ``templates/sm80_unit.cu.j2`` (both extend
  ``templates/unit.cu.j2``: header comment, includes, argument checks, entry points);
* what the build needs to compile the units (flags, the CUTLASS include directories and
  version) is :mod:`byocc.backends.toolchain`'s.

Every unit defines, in namespace ``byocc``, the three functions ``byocc_gemm.h`` names:
``gemm_<hash>_can_implement``, ``gemm_<hash>_workspace_bytes`` and ``gemm_<hash>_run``.
"""

from __future__ import annotations

from typing import Literal

from byocc.backends.codegen import CodegenError
from byocc.backends.codegen import SourceFile

from ..cuda.templates import render
from ..dtypes import DTYPES
from ..dtypes import GEMM_INPUT_DTYPES
from ..dtypes import UnknownDType
from ..dtypes import dtype as dtype_row
from .config import EpilogueSpec
from .config import GemmKernelConfig
from .sm80_unit import emit_sm80
from .sm90_unit import emit_sm90
from .tiles import SM80_MENU
from .tiles import SM90_CANDIDATES
from .tiles import SM90_SWIZZLES
from .tiles import dtype_bits
from .tiles import scale_k
from .tiles import select_sm90
from .tiles import sm80_tile

_FLOAT_INPUTS = tuple(d for d in GEMM_INPUT_DTYPES if DTYPES[d].is_float)
_INT_INPUTS = tuple(d for d in GEMM_INPUT_DTYPES if not DTYPES[d].is_float)


def _aligned_16b(dtype: str | None, align: int) -> bool:
    return dtype is not None and align * _bits(dtype) == 128


def _bits(dtype: str) -> int:
    """Bits of a CUTLASS element; ValueError for a dtype CUTLASS has no type for."""
    try:
        return dtype_row(dtype, "cutlass").bits
    except UnknownDType as exc:
        raise ValueError(str(exc)) from None


def _common_dtypes_ok(cfg: GemmKernelConfig) -> bool:
    if cfg.dtype_a in _FLOAT_INPUTS:
        ok = cfg.dtype_b == cfg.dtype_a and cfg.accumulator == "float32" and cfg.dtype_d in (
            "float16", "bfloat16", "float32")
    elif cfg.dtype_a in _INT_INPUTS:
        ok = (cfg.dtype_b in _INT_INPUTS and cfg.accumulator == "int32"
              and cfg.dtype_d == "int32" and cfg.b_layout == "tn")
    else:
        ok = False
    return ok and (cfg.dtype_c is None or cfg.dtype_c == cfg.dtype_d)


def sm90_supports(cfg: GemmKernelConfig) -> bool:
    """Whether an sm_90a (CUTLASS 3.x TMA) unit exists for ``cfg``.

    Supported: A/B both f16, both bf16 (either B layout), both f32 (TF32 math, "tn" B only)
    with f16/bf16/f32 D, or both in {int8, uint8} with int32 D and "tn" B (8-bit GMMA needs
    K-major B); fp32 accumulate
    (int32 for 8-bit), C (when read) of D's dtype; every operand on the 16-byte TMA tier
    (align * bits == 128: 8 for 16-bit, 4 for 32-bit, 16 for 8-bit); tile and cluster from the
    docs/codegen.md#kernel-choice menu (k-tile scaled by :func:`~byocc.backends.cutlass.tiles.scale_k`), cooperative
    only with a 128-row tile, stream-K only with cooperative, a swizzle from
    :data:`~byocc.backends.cutlass.tiles.SM90_SWIZZLES`. Every valid
    :class:`EpilogueSpec` is supported (library fusion ops or a custom EVT tree).
    """
    if cfg.arch != "sm90" or not _common_dtypes_ok(cfg):
        return False
    if cfg.dtype_a == "float32" and cfg.b_layout != "tn":
        # The TF32 "nn" unit (CUTLASS's register-sourced, transposed-B mainloop) compiled but
        # gave non-finite results on the H200; callers transpose B into scratch instead.
        return False
    if not (_aligned_16b(cfg.dtype_a, cfg.align_a) and _aligned_16b(cfg.dtype_b, cfg.align_b)
            and _aligned_16b(cfg.dtype_d, cfg.align_d)):
        return False
    if cfg.dtype_c is not None and not _aligned_16b(cfg.dtype_c, cfg.align_c):
        return False
    menu = {(scale_k(t, cfg.dtype_a), c, s) for t, c, s in SM90_CANDIDATES.values()}
    if (cfg.tile, cfg.cluster, cfg.schedule) not in menu or cfg.swizzle not in SM90_SWIZZLES:
        return False
    return not cfg.stream_k or cfg.schedule == "cooperative"


def sm80_alignments(dtype: str) -> tuple[int, ...]:
    """Operand alignments (elements) the 2.x units are built for, largest first (docs/codegen.md#alignment-tiers):
    16-bit 8/4/2 on the Sm80 cp.async path and 1 on the Sm75 16x8x8 two-stage path; f32
    4/2/1; 8-bit 16 only."""
    return {"float16": (8, 4, 2, 1), "bfloat16": (8, 4, 2), "float32": (4, 2, 1),
            "int8": (16,), "uint8": (16,)}[dtype]


def sm80_supports(cfg: GemmKernelConfig) -> bool:
    """Whether an sm_80 (CUTLASS 2.x tensor-op) unit exists for ``cfg``.

    Dtypes as :func:`sm90_supports` (any layout for float inputs, "tn" for 8-bit). A and B
    alignments from :func:`sm80_alignments` (alignment 1 only for f16 A/B, with 2 stages);
    D alignment dividing 128 bits, C's equal to D's. The tile is one of the docs/codegen.md#ampere-units menu
    (k scaled per dtype). Epilogues: without a residual, at most one addend besides the
    accumulator (a per-column bias *or* a full C, passed as the 2.x C operand) and any act;
    with a residual (``GemmUniversalWithBroadcast`` + ``LinearCombinationResidualBlock``), a
    per-column bias and a full or per-column residual, any act, post relu or none.
    """
    if cfg.arch != "sm80" or not _common_dtypes_ok(cfg) or cfg.stages is None or cfg.swizzle != 1:
        return False
    aligns = sm80_alignments(cfg.dtype_a)
    if cfg.align_a not in aligns or cfg.align_b not in aligns:
        return False
    if 1 in (cfg.align_a, cfg.align_b) and (cfg.dtype_a != "float16" or cfg.stages != 2):
        return False
    return sm80_epilogue_ok(cfg)


def sm80_epilogue_ok(cfg) -> bool:
    """The 2.x units' conditions on D, C, the tile and the epilogue, shared by the GEMM and the
    conv units (``cfg``: a :class:`GemmKernelConfig` or a conv configuration): D's alignment
    divides 128 bits, C's equals D's, the tile is on the 2.x menu (k scaled per dtype), one
    addend without a residual, a per-column bias with one."""
    bits_d = _bits(cfg.dtype_d)
    if cfg.align_d < 1 or (128 // bits_d) % cfg.align_d != 0:
        return False
    if cfg.dtype_c is not None and cfg.align_c != cfg.align_d:
        return False
    if cfg.tile not in {scale_k(t, cfg.dtype_a) for t, _ in SM80_MENU.values()}:
        return False
    ep = cfg.epilogue
    if ep.residual is None:
        return not (ep.bias and ep.source)
    return ep.bias == "per_column"


def emit_kernel(cfg: GemmKernelConfig) -> SourceFile:
    """The translation unit of ``cfg`` (``unit`` "sm90" or "sm80"); byte-deterministic.

    Raises CodegenError when the arch does not support ``cfg`` or cutlass_library (the
    ``cuda`` extra) is missing.
    """
    if cfg.arch == "sm90":
        if not sm90_supports(cfg):
            raise CodegenError(f"no sm_90a CUTLASS kernel for {cfg}")
        text = emit_sm90(cfg)
    else:
        if not sm80_supports(cfg):
            raise CodegenError(f"no sm_80 CUTLASS kernel for {cfg}")
        text = emit_sm80(cfg)
    return SourceFile(cfg.path, text, cfg.arch)


def kernel_declarations(cfg: GemmKernelConfig, guard: str | None = None) -> str:
    """C++ declarations of a unit's three functions, for the wrapper that calls them; with
    ``guard``, inside ``#ifndef guard`` (the build leaves the unit out when it is defined)."""
    text = render("cutlass/kernel_declarations.h.j2", prefix=cfg.prefix, guard=guard)
    return text.removesuffix("\n") if guard else text


def _largest_dividing(dim: int | None, candidates: tuple[int, ...]) -> int:
    """The largest candidate dividing ``dim`` (the smallest when ``dim`` is symbolic)."""
    if dim is None:
        return min(candidates)
    return max((c for c in candidates if dim % c == 0), default=min(candidates))


def sm90_config(m: int | None, n: int | None, k: int | None, l: int | None, *, dtype: str,
                dtype_d: str, b_layout: Literal["nn", "tn"],
                epilogue: EpilogueSpec) -> GemmKernelConfig:
    """The sm_90a configuration of a problem: the tile choice of docs/codegen.md#kernel-choice, 16-byte alignments.
    Check :func:`sm90_supports` on the result (and the dims' divisibility at run time)."""
    tile, cluster, schedule, stream_k, swizzle = select_sm90(m, n, k, l, dtype)
    dtype_c = dtype_d if epilogue.has_c else None
    return GemmKernelConfig(
        arch="sm90", dtype_a=dtype, dtype_b=dtype, dtype_c=dtype_c, dtype_d=dtype_d,
        accumulator="int32" if dtype in _INT_INPUTS else "float32", b_layout=b_layout,
        align_a=128 // dtype_bits(dtype), align_b=128 // dtype_bits(dtype),
        align_c=128 // _bits(dtype_d) if dtype_c else 0, align_d=128 // _bits(dtype_d),
        tile=tile, cluster=cluster, schedule=schedule, stream_k=stream_k, swizzle=swizzle,
        epilogue=epilogue)


def sm80_config(m: int | None, n: int | None, k: int | None, l: int | None, *, dtype: str,
                dtype_d: str, b_layout: Literal["nn", "tn"],
                epilogue: EpilogueSpec) -> GemmKernelConfig:
    """The sm_80 configuration of a problem: :func:`sm80_tile`'s tile, and the largest
    alignments (docs/codegen.md#alignment-tiers) dividing K (A; B when "tn"), N (B when "nn"; C and D). Alignment-1
    f16 units get 2 stages (the Sm75 path). Check :func:`sm80_supports` on the result."""
    tile, stages = sm80_tile(m, n, k, l, dtype)
    aligns = sm80_alignments(dtype)
    align_a = _largest_dividing(k, aligns)
    align_b = _largest_dividing(k if b_layout == "tn" else n, aligns)
    vector = 128 // _bits(dtype_d)
    align_d = _largest_dividing(n, tuple(v for v in (8, 4, 2, 1) if v <= vector))
    if 1 in (align_a, align_b):
        stages = 2
    dtype_c = dtype_d if epilogue.has_c else None
    return GemmKernelConfig(
        arch="sm80", dtype_a=dtype, dtype_b=dtype, dtype_c=dtype_c, dtype_d=dtype_d,
        accumulator="int32" if dtype in _INT_INPUTS else "float32", b_layout=b_layout,
        align_a=align_a, align_b=align_b, align_c=align_d if dtype_c else 0, align_d=align_d,
        tile=tile, stages=stages, epilogue=epilogue)


__all__ = [
    "EpilogueSpec", "GemmKernelConfig", "emit_kernel", "kernel_declarations", "sm80_epilogue_ok",
    "sm80_alignments", "sm80_config", "sm80_supports", "sm90_config", "sm90_supports",
]
