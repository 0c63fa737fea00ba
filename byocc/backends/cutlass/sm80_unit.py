"""sm_80 CUTLASS GEMM units (docs/codegen.md#alignment-tiers, #ampere-units): a CUTLASS 2.x tensor-op
``GemmUniversal`` (``GemmUniversalWithBroadcast`` with a residual), which also runs on Hopper.
"""

from __future__ import annotations

from .config import GemmKernelConfig
from .unit_text import ACT_FUNCTORS
from .unit_text import BIN_FUNCTORS
from .unit_text import OperandCheck
from .unit_text import cutlass_library
from .unit_text import element_type
from .unit_text import library_type
from .unit_text import render_unit

#: The 2.x epilogue functor (and its header) without a residual, per activation.
_FUNCTORS = {None: ("LinearCombination", "linear_combination"),
             "relu": ("LinearCombinationRelu", "linear_combination_relu"),
             "gelu": ("LinearCombinationGELU", "linear_combination_gelu"),
             "silu": ("LinearCombinationSilu", "linear_combination_silu")}


def _sm80_shapes(cfg: GemmKernelConfig) -> tuple[str, tuple[int, int, int], tuple[int, int, int]]:
    """``(arch tag, warp shape, instruction shape)``. Warps are 64x64 for 128-row tiles and
    2x2 warps for the 64-row ones (cutlass_library's generator counts); alignment-1 f16 takes
    the Sm75 16x8x8 two-stage path (cp.async moves 4, 8 or 16 bytes, not 2)."""
    m, n, k = cfg.tile
    warp = (64, 64, k) if m >= 128 else (m // 2, n // 2, k)
    if cfg.accumulator == "int32":
        return "cutlass::arch::Sm80", warp, (16, 8, 32)
    if cfg.dtype_a == "float32":
        return "cutlass::arch::Sm80", warp, (16, 8, 8)
    if 1 in (cfg.align_a, cfg.align_b):
        return "cutlass::arch::Sm75", warp, (16, 8, 8)
    return "cutlass::arch::Sm80", warp, (16, 8, 16)


def _sm80_kernel_name(cfg: GemmKernelConfig, arch_tag: str, inst: tuple[int, int, int],
                      warp: tuple[int, int, int]) -> str:
    """CUTLASS's procedural name of the mainloop (cutlass_library GemmOperation)."""
    lib, gemm_op = cutlass_library()
    acc = library_type(lib, cfg.accumulator)
    math_in = library_type(lib, cfg.dtype_a, tf32=True)
    math = lib.MathInstruction(list(inst), math_in, math_in, acc, lib.OpcodeClass.TensorOp,
                               lib.MathOperation.multiply_add)
    warps = [cfg.tile[i] // warp[i] for i in range(3)]
    arch = 75 if arch_tag.endswith("Sm75") else 80
    tile = lib.TileDescription(list(cfg.tile), cfg.stages, warps, math, arch, 1024)
    layout_b = lib.LayoutType.ColumnMajor if cfg.b_layout == "tn" else lib.LayoutType.RowMajor
    op = gemm_op.GemmOperation(
        lib.GemmKind.Universal, arch, tile,
        lib.TensorDescription(library_type(lib, cfg.dtype_a), lib.LayoutType.RowMajor, cfg.align_a),
        lib.TensorDescription(library_type(lib, cfg.dtype_b), layout_b, cfg.align_b),
        lib.TensorDescription(library_type(lib, cfg.dtype_d), lib.LayoutType.RowMajor, cfg.align_d),
        lib.DataType.f32)
    return op.procedural_name()


def _includes_and_checks(cfg: GemmKernelConfig) -> tuple[list[str], list[OperandCheck]]:
    ep = cfg.epilogue
    includes = ["cutlass/cutlass.h", "cutlass/numeric_types.h", "cutlass/functional.h",
                "cutlass/epilogue/thread/activation.h"]
    vector = ("kEpilogueVector", "sizeof(ElementD)")
    checks = [OperandCheck("A", "args.lda", "batch_stride_a", str(cfg.align_a), "sizeof(ElementA)"),
              OperandCheck("B", "args.ldb", "batch_stride_b", str(cfg.align_b), "sizeof(ElementB)"),
              OperandCheck("D", "args.ldd", "batch_stride_d", *vector)]
    if ep.residual is not None:
        includes += ["cutlass/epilogue/thread/linear_combination_residual_block.h",
                     "cutlass/gemm/device/gemm_universal_with_broadcast.h"]
        checks += [OperandCheck("C", "args.ldc" if ep.residual == "full" else "0", "batch_stride_c", *vector),
                   OperandCheck("bias", "0", "batch_stride_bias", *vector)]
        return includes, checks
    includes += ["cutlass/gemm/device/gemm_universal.h",
                 f"cutlass/epilogue/thread/{_FUNCTORS[ep.act][1]}.h"]
    if ep.bias:
        checks.append(OperandCheck("bias", "0", "batch_stride_bias", *vector))
    elif ep.source:
        checks.append(OperandCheck("C", "args.ldc", "batch_stride_c", *vector))
    return includes, checks


def emit_sm80(cfg: GemmKernelConfig) -> str:
    """The text of the sm_80 unit of ``cfg``."""
    lib, _ = cutlass_library()
    ep = cfg.epilogue
    arch_tag, warp, inst = _sm80_shapes(cfg)
    operation = lib.MathOperation.multiply_add_saturate if cfg.accumulator == "int32" else lib.MathOperation.multiply_add
    includes, checks = _includes_and_checks(cfg)
    engine = ("CUTLASS 2.x, sm_80 tensor-op" if arch_tag.endswith("Sm80")
              else "CUTLASS 2.x, Sm75 16x8x8 tensor-op path (alignment 1)")
    return render_unit(
        "cutlass/sm80_unit.cu.j2", cfg, engine=engine,
        kernel_name=_sm80_kernel_name(cfg, arch_tag, inst, warp), includes=includes, checks=checks,
        element={"a": element_type(cfg.dtype_a), "b": element_type(cfg.dtype_b), "d": element_type(cfg.dtype_d)},
        accumulator=element_type(cfg.accumulator), act=ACT_FUNCTORS[ep.act],
        bin=BIN_FUNCTORS.get(ep.residual_op), post=ACT_FUNCTORS[ep.post],
        functor=_FUNCTORS[ep.act][0], addend="bias" if ep.bias else ("C" if ep.source else None),
        arch_tag=arch_tag, warp=warp, instruction=inst, operator=lib.MathOperationTag[operation],
        swizzle=lib.SwizzlingFunctorTag[lib.SwizzlingFunctor.Identity8])


__all__ = ["emit_sm80"]
