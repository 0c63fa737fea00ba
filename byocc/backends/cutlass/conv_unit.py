"""CUTLASS conv2d units (docs/codegen.md#cutlass-conv2d-family): one
``src/kernels/conv_<hash>.cu`` per configuration.

sm_90a (:class:`ConvSm90Config`, ``templates/conv_sm90_unit.cu.j2``): a CUTLASS 3.x
implicit-GEMM fprop from the collective builders (``conv::collective::CollectiveBuilder``
for Sm90 with the ``KernelImplicitTmaWarpSpecializedSm90`` schedule, im2col TMA loads of the
activation, ``conv::kernel::ConvUniversal`` in ``conv::device::ConvUniversalAdapter``), the
epilogue the GEMM family's sm_90a fusion (a library fusion op or a Sm90EVT tree,
:mod:`.sm90_unit`), NHWC activations and KRSC (OHWI) filters with 16-byte aligned channels.

sm_80 (:class:`ConvKernelConfig`): a CUTLASS 2.x implicit-GEMM
fprop (``conv::device::ImplicitGemmConvolution`` over ``conv::kernel::DefaultConv2dFprop``,
``DefaultConv2dFpropWithBroadcast`` + ``LinearCombinationResidualBlock`` with a residual),
NHWC activations, KRSC (OHWI) filters, strided, which also runs on Hopper.

The epilogue is the GEMM family's :class:`~.config.EpilogueSpec`: a per-channel bias is the C
operand with a zero stride, a full-shape bias the C operand itself; a residual is C and the
bias the broadcast vector. Alignment-1 f16 units take the Sm75 16x8x8 two-stage path
(cp.async moves 4, 8 or 16 bytes). The text is ``templates/conv_sm80_unit.cu.j2``; the kernel
name in its header is ``cutlass_library``'s ``Conv2dOperation.procedural_name()``.

Every unit defines, in namespace ``byocc``, ``conv_<hash>_can_implement``,
``conv_<hash>_workspace_bytes`` and ``conv_<hash>_run`` (``byocc_conv.h``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..codegen import CodegenError
from ..codegen import SourceFile
from ..cuda.templates import render
from .config import EpilogueSpec
from .config import canonical_text
from .config import config_hash
from .kernels import sm80_epilogue_ok
from .sm80_unit import _FUNCTORS
from .sm90_unit import sm90_evt
from .sm90_unit import sm90_fusion
from .unit_text import ACT_FUNCTORS
from .unit_text import BIN_FUNCTORS
from .unit_text import cutlass_library
from .unit_text import element_type
from .unit_text import library_type

#: Input dtypes with an sm_80 conv unit, and their A/B alignments (elements), largest first.
CONV_ALIGNMENTS = {"float16": (8, 4, 2, 1), "float32": (4, 2)}


#: The 2.x activation/filter iterators: config name -> (CUTLASS tag, cutlass_library name).
_ITERATORS = {"optimized": ("kOptimized", "Optimized"), "analytic": ("kAnalytic", "Analytic"),
              "fixed_channels": ("kFixedChannels", "FixedChannels")}


class _ConvUnitName:
    """The unit's name from its ``canonical_text``: ``conv_<hash>``, in ``src/kernels/``."""

    canonical_text: str  # a property of each config

    @property
    def hash(self) -> str:
        return config_hash(self.canonical_text)

    @property
    def path(self) -> str:
        return f"src/kernels/conv_{self.hash}.cu"

    @property
    def prefix(self) -> str:
        return f"conv_{self.hash}"


@dataclass(frozen=True)
class ConvKernelConfig(_ConvUnitName):
    """Everything one conv unit is keyed by; the problem (N, H, W, C, K, R, S, P, Q, padding,
    stride, dilation), pointers and channel strides are run-time arguments. Alignments are
    in elements: A and B along C, C/D along K."""

    dtype_a: str
    dtype_b: str
    dtype_c: str | None
    """dtype of the C operand, None when the unit reads none."""
    dtype_d: str
    accumulator: Literal["float32"]
    align_a: int
    align_b: int
    align_c: int
    align_d: int
    tile: tuple[int, int, int]
    stages: int
    iterator: Literal["optimized", "analytic", "fixed_channels"] = "optimized"
    """fixed_channels: C equals the A/B alignment (the padded stem), each k-tile spans taps."""
    epilogue: EpilogueSpec = EpilogueSpec()
    arch: Literal["sm80"] = "sm80"

    def __post_init__(self):
        if (self.dtype_c is None) == self.epilogue.has_c:
            raise ValueError("dtype_c is set exactly when the epilogue reads C")
        if self.iterator not in _ITERATORS:
            raise ValueError(f"unknown iterator {self.iterator!r}")

    @property
    def canonical_text(self) -> str:
        """``kind=conv2d_fprop`` then ``field=value`` lines: what :attr:`hash` digests."""
        return canonical_text(self, ("kind=conv2d_fprop",))

    @property
    def sm75_path(self) -> bool:
        """Alignment-1 16-bit operands: the Sm75 16x8x8 two-stage mainloop."""
        return 1 in (self.align_a, self.align_b)


def conv_supports(cfg: ConvKernelConfig) -> bool:
    """Whether an sm_80 conv unit exists for ``cfg``: A and B both f16 (alignments 8/4/2, or
    1 with 2 stages) or both f32 (TF32 math, alignments 4/2), fp32 accumulation; D f16 or
    f32 with an alignment dividing 128 bits, C's equal to D's; a tile of the 2.x menu (k
    scaled per dtype); epilogues as the 2.x GEMM units (one addend without a residual; a
    per-channel bias with a residual)."""
    aligns = CONV_ALIGNMENTS.get(cfg.dtype_a)
    if aligns is None or cfg.dtype_b != cfg.dtype_a or cfg.accumulator != "float32":
        return False
    if cfg.align_a not in aligns or cfg.align_b not in aligns:
        return False
    if cfg.sm75_path and cfg.stages != 2:
        return False
    if cfg.iterator == "fixed_channels" and (cfg.align_a != cfg.align_b or cfg.sm75_path):
        return False
    if cfg.dtype_d not in ("float16", "float32"):
        return False
    if cfg.dtype_c is not None and cfg.dtype_c != cfg.dtype_d:
        return False
    return sm80_epilogue_ok(cfg)


def _shapes(cfg: ConvKernelConfig) -> tuple[str, tuple[int, int, int], tuple[int, int, int]]:
    """``(arch tag, warp shape, instruction shape)`` as the 2.x GEMM units choose them."""
    m, n, k = cfg.tile
    warp = (64, 64, k) if m >= 128 else (m // 2, n // 2, k)
    if cfg.dtype_a == "float32":
        return "cutlass::arch::Sm80", warp, (16, 8, 8)
    if cfg.sm75_path:
        return "cutlass::arch::Sm75", warp, (16, 8, 8)
    return "cutlass::arch::Sm80", warp, (16, 8, 16)


def _kernel_name(cfg: ConvKernelConfig, arch_tag: str, inst, warp) -> str:
    """CUTLASS's procedural name of the kernel (cutlass_library Conv2dOperation)."""
    lib, _ = cutlass_library()
    from cutlass_library import conv2d_operation

    math_in = library_type(lib, cfg.dtype_a, tf32=True)
    math = lib.MathInstruction(list(inst), math_in, math_in, lib.DataType.f32, lib.OpcodeClass.TensorOp,
                               lib.MathOperation.multiply_add)
    arch = 75 if arch_tag.endswith("Sm75") else 80
    tile = lib.TileDescription(list(cfg.tile), cfg.stages, [cfg.tile[i] // warp[i] for i in range(3)],
                               math, arch, 1024)
    nhwc = lib.LayoutType.TensorNHWC
    iterator = getattr(lib.IteratorAlgorithm, _ITERATORS[cfg.iterator][1])
    op = conv2d_operation.Conv2dOperation(
        lib.ConvKind.Fprop, iterator, arch, tile,
        lib.TensorDescription(library_type(lib, cfg.dtype_a), nhwc, cfg.align_a),
        lib.TensorDescription(library_type(lib, cfg.dtype_b), nhwc, cfg.align_b),
        lib.TensorDescription(library_type(lib, cfg.dtype_d), nhwc, cfg.align_d),
        lib.DataType.f32, lib.StrideSupport.Strided, swizzling_functor=lib.SwizzlingFunctor.Identity4)
    return op.procedural_name()


def emit_conv(cfg: ConvKernelConfig | ConvSm90Config) -> SourceFile:
    """The translation unit of ``cfg`` (unit kind "sm80" or "sm90"); byte-deterministic.
    CodegenError when no unit exists for it or cutlass_library is missing."""
    if isinstance(cfg, ConvSm90Config):
        return _emit_conv_sm90(cfg)
    if not conv_supports(cfg):
        raise CodegenError(f"no sm_80 CUTLASS conv kernel for {cfg}")
    ep = cfg.epilogue
    arch_tag, warp, inst = _shapes(cfg)
    includes = ["cutlass/cutlass.h", "cutlass/numeric_types.h", "cutlass/functional.h",
                "cutlass/epilogue/thread/activation.h", "cutlass/conv/conv2d_problem_size.h"]
    if ep.residual is not None:
        includes += ["cutlass/epilogue/thread/linear_combination_residual_block.h",
                     "cutlass/conv/kernel/default_conv2d_fprop_with_broadcast.h"]
    else:
        includes += [f"cutlass/epilogue/thread/{_FUNCTORS[ep.act][1]}.h",
                     "cutlass/conv/kernel/default_conv2d_fprop.h"]
    # the device adapter after the kernel headers: its templates name conv2d_problem_size.h's functions
    includes.append("cutlass/conv/device/implicit_gemm_convolution.h")
    lib, _ = cutlass_library()
    text = render(
        "cutlass/conv_sm80_unit.cu.j2", cfg=cfg, ep=ep, includes=includes,
        engine=("CUTLASS 2.x implicit GEMM, Sm75 16x8x8 tensor-op path (alignment 1)" if cfg.sm75_path
                else "CUTLASS 2.x implicit GEMM, sm_80 tensor-op"),
        kernel_name=_kernel_name(cfg, arch_tag, inst, warp),
        element={"a": element_type(cfg.dtype_a), "b": element_type(cfg.dtype_b), "d": element_type(cfg.dtype_d)},
        act=ACT_FUNCTORS[ep.act], bin=BIN_FUNCTORS.get(ep.residual_op), post=ACT_FUNCTORS[ep.post],
        functor=_FUNCTORS[ep.act][0], addend="bias" if ep.bias else ("C" if ep.source else None),
        arch_tag=arch_tag, warp=warp, instruction=inst,
        operator=lib.MathOperationTag[lib.MathOperation.multiply_add],
        iterator_tag=f"cutlass::conv::IteratorAlgorithm::{_ITERATORS[cfg.iterator][0]}")
    return SourceFile(cfg.path, text, "sm80")


def conv_declarations(cfg: ConvKernelConfig | ConvSm90Config, guard: str | None = None) -> str:
    """C++ declarations of a conv unit's three functions (inside ``#ifndef guard``)."""
    text = render("cutlass/kernel_declarations.h.j2", prefix=cfg.prefix, guard=guard, args="ConvArgs")
    return text.removesuffix("\n") if guard else text


# --------------------------------------------------------------------------- sm_90a
#: Input dtypes with an sm_90a conv unit and the alignment (elements, 16 bytes) it needs.
CONV_SM90_ALIGNMENT = {"float16": 8}

#: The sm_90a conv tiles: M and N 64 or 128 (one consumer warp group: at most 128x128
#: accumulators), the k-tile 64, 32 or 16 f16 channels (the largest dividing C).
CONV_SM90_TILES = tuple((m, n, k) for m in (128, 64) for n in (128, 64) for k in (64, 32, 16))


@dataclass(frozen=True)
class ConvSm90Config(_ConvUnitName):
    """One sm_90a conv unit. A, B, C and D are 16-byte aligned along their channels (the
    TMA's requirement); the problem, pointers and channel strides are run-time arguments, as
    for :class:`ConvKernelConfig`."""

    dtype_a: str
    dtype_b: str
    dtype_c: str | None
    """dtype of the C operand (a full residual or a full-shape addend), None when not read."""
    dtype_d: str
    accumulator: Literal["float32"]
    tile: tuple[int, int, int]
    cluster: tuple[int, int, int]
    stages: int = 0
    """Mainloop stages; 0: as many as shared memory holds next to the epilogue."""
    epilogue: EpilogueSpec = EpilogueSpec()
    arch: Literal["sm90"] = "sm90"

    def __post_init__(self):
        full_c = self.epilogue.source == "full"
        if (self.dtype_c is None) == full_c:
            raise ValueError("dtype_c is set exactly when the epilogue reads a full C")

    @property
    def align(self) -> int:
        return CONV_SM90_ALIGNMENT.get(self.dtype_a, 0)

    @property
    def canonical_text(self) -> str:
        return canonical_text(self, ("kind=conv2d_fprop_sm90",))


def conv_sm90_supports(cfg: ConvSm90Config) -> bool:
    """Whether an sm_90a conv unit exists for ``cfg``: f16 A and B, fp32 accumulation, D f16
    (C, when read, f16 too), a tile of :data:`CONV_SM90_TILES`, a cluster of 1 or 2 CTAs
    along M, and an epilogue the sm_90a GEMM units fuse (a bias with a residual)."""
    if cfg.dtype_a not in CONV_SM90_ALIGNMENT or cfg.dtype_b != cfg.dtype_a or cfg.accumulator != "float32":
        return False
    if cfg.dtype_d != "float16" or cfg.dtype_c not in (None, "float16"):
        return False
    if cfg.tile not in CONV_SM90_TILES or cfg.cluster not in ((1, 1, 1), (2, 1, 1)) or cfg.stages not in (0, 2, 3, 4):
        return False
    ep = cfg.epilogue
    if ep.residual is not None and ep.bias is None:
        return False
    return not (ep.bias and ep.source == "full" and ep.residual is None)


#: Where an sm_90a conv unit's row vectors are (byocc::ConvArgs; no batch mode).
CONV_ROWS = {"bias": ("a.bias", "0"), "residual": ("a.source", "0")}


def _sm90_kernel_name(cfg: ConvSm90Config) -> str:
    """A descriptive name of the kernel (in the style of cutlass_library's procedural names)."""
    lib, _ = cutlass_library()
    short = {d: lib.DataTypeNames[library_type(lib, d)] for d in {cfg.dtype_a, cfg.dtype_d}}
    c = short.get(cfg.dtype_c, "void") if cfg.dtype_c else "void"
    return (f"cutlass3x_sm90_tensorop_fprop_{short[cfg.dtype_a]}_{short[cfg.dtype_a]}_f32_{c}_{short[cfg.dtype_d]}_"
            f"{'x'.join(map(str, cfg.tile))}_{'x'.join(map(str, cfg.cluster))}_nhwc_align{cfg.align}_"
            "warpspecialized_epi_tma")


def _emit_conv_sm90(cfg: ConvSm90Config) -> SourceFile:
    if not conv_sm90_supports(cfg):
        raise CodegenError(f"no sm_90a CUTLASS conv kernel for {cfg}")
    ep = cfg.epilogue
    # cute before the conv headers (convnd_problem_shape.hpp uses cute without including it)
    includes = ["cutlass/cutlass.h", "cute/tensor.hpp", "cutlass/numeric_types.h", "cutlass/kernel_hardware_info.h",
                "cutlass/epilogue/thread/activation.h", "cutlass/epilogue/collective/collective_builder.hpp",
                "cutlass/conv/collective/collective_builder.hpp", "cutlass/conv/kernel/conv_universal.hpp",
                "cutlass/conv/device/conv_universal_adapter.hpp"]
    text = render(
        "cutlass/conv_sm90_unit.cu.j2", cfg=cfg, ep=ep, includes=includes,
        engine="CUTLASS 3.x implicit GEMM, sm_90a TMA warp-specialized (im2col TMA)",
        kernel_name=_sm90_kernel_name(cfg),
        element={"a": element_type(cfg.dtype_a), "b": element_type(cfg.dtype_b),
                 "c": element_type(cfg.dtype_c) if cfg.dtype_c else "void", "d": element_type(cfg.dtype_d)},
        fusion=sm90_fusion(ep), act=ACT_FUNCTORS[ep.act], tree=sm90_evt(ep, CONV_ROWS))
    return SourceFile(cfg.path, text, "sm90")


__all__ = ["CONV_ALIGNMENTS", "CONV_ROWS", "CONV_SM90_ALIGNMENT", "CONV_SM90_TILES", "ConvKernelConfig",
           "ConvSm90Config", "conv_declarations", "conv_sm90_supports", "conv_supports", "emit_conv"]
