"""sm_80 CUTLASS GEMM units (spec/backends.md 7.3, 7.4): a CUTLASS 2.x tensor-op
``GemmUniversal`` (``GemmUniversalWithBroadcast`` with a residual), which also runs on Hopper.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .unit_text import ACT_FUNCTORS
from .unit_text import BIN_FUNCTORS
from .unit_text import cutlass_library
from .unit_text import element_type
from .unit_text import header_comment
from .unit_text import library_type
from .unit_text import operand_checks
from .unit_text import unit_text

if TYPE_CHECKING:
    from .config import GemmKernelConfig


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


def emit_sm80(cfg: GemmKernelConfig) -> str:
    lib, _ = cutlass_library()
    ep = cfg.epilogue
    arch_tag, warp, inst = _sm80_shapes(cfg)
    kernel_name = _sm80_kernel_name(cfg, arch_tag, inst, warp)
    is_int = cfg.accumulator == "int32"
    operator = lib.MathOperationTag[lib.MathOperation.multiply_add_saturate if is_int
                                    else lib.MathOperation.multiply_add]
    swizzle = lib.SwizzlingFunctorTag[lib.SwizzlingFunctor.Identity8]
    layout_b = "cutlass::layout::ColumnMajor" if cfg.b_layout == "tn" else "cutlass::layout::RowMajor"
    acc = "float" if cfg.accumulator == "float32" else "int32_t"
    act = ACT_FUNCTORS[ep.act]
    includes = ["cutlass/cutlass.h", "cutlass/numeric_types.h", "cutlass/functional.h",
                "cutlass/epilogue/thread/activation.h"]
    gemm_args = (
        "      cutlass::gemm::GemmCoord(static_cast<int>(args.M), static_cast<int>(args.N),\n"
        "                               static_cast<int>(args.K)),\n"
        "      batched ? static_cast<int>(args.L) : 1,\n")
    vec = ("kEpilogueVector", "sizeof(ElementD)")
    checks = [("A", "args.lda", "batch_stride_a", str(cfg.align_a), "sizeof(ElementA)"),
              ("B", "args.ldb", "batch_stride_b", str(cfg.align_b), "sizeof(ElementB)"),
              ("D", "args.ldd", "batch_stride_d", *vec)]
    if ep.residual is not None:
        includes += ["cutlass/epilogue/thread/linear_combination_residual_block.h",
                     "cutlass/gemm/device/gemm_universal_with_broadcast.h"]
        epilogue = (
            "// D = post(bin(act(acc + bias), residual)): the residual is the C operand, the bias\n"
            "// the broadcast vector.\n"
            "using EpilogueOp = cutlass::epilogue::thread::LinearCombinationResidualBlock<\n"
            f"    ElementD, {acc}, float, ElementD, kEpilogueVector, {act},\n"
            f"    {BIN_FUNCTORS[ep.residual_op]}, {ACT_FUNCTORS[ep.post]}>;\n")
        device = "cutlass::gemm::device::GemmUniversalWithBroadcast"
        ldc = "args.ldc" if ep.residual == "full" else "0  // per-column residual: a broadcast row"
        call = (
            "  typename Gemm::Arguments arguments(\n"
            "      mode,\n" + gemm_args +
            "      {1.0f, 1.0f},  // alpha, beta\n"
            "      args.A, args.B, args.C, args.D,\n"
            "      const_cast<void*>(args.bias),  // broadcast vector (per-column bias)\n"
            "      nullptr,                       // no T output\n"
            "      args.batch_stride_a, args.batch_stride_b, args.batch_stride_c,\n"
            "      args.batch_stride_d, args.batch_stride_bias, 0,\n"
            "      args.lda, args.ldb,\n"
            f"      {ldc.split('  //')[0]},  // ldc{'' if ep.residual == 'full' else ' (0: the residual is one row)'}\n"
            "      args.ldd,\n"
            "      0, 0);  // ldr (the bias is the same row for every M tile), ldt\n")
        checks += [("C", "args.ldc" if ep.residual == "full" else "0", "batch_stride_c", *vec),
                   ("bias", "0", "batch_stride_bias", *vec)]
    else:
        includes.append("cutlass/gemm/device/gemm_universal.h")
        functor = {None: "LinearCombination", "relu": "LinearCombinationRelu",
                   "gelu": "LinearCombinationGELU", "silu": "LinearCombinationSilu"}[ep.act]
        includes.append({None: "cutlass/epilogue/thread/linear_combination.h",
                         "relu": "cutlass/epilogue/thread/linear_combination_relu.h",
                         "gelu": "cutlass/epilogue/thread/linear_combination_gelu.h",
                         "silu": "cutlass/epilogue/thread/linear_combination_silu.h"}[ep.act])
        addend = "bias" if ep.bias else ("C" if ep.source else None)
        if addend is not None and ep.act in (None, "relu"):
            scale, beta = "cutlass::epilogue::thread::ScaleType::NoBetaScaling", "1.0f"
            note = f"// D = act(acc + {addend}): {addend} is the C operand, not scaled by beta.\n"
        elif addend is not None:
            scale, beta = "cutlass::epilogue::thread::ScaleType::Default", "1.0f"
            note = f"// D = act(acc + 1 * {addend}): {addend} is the C operand (beta = 1).\n"
        else:
            scale, beta = "cutlass::epilogue::thread::ScaleType::Default", "0.0f"
            note = "// D = act(acc): beta = 0, C is not read.\n"
        epilogue = (note + f"using EpilogueOp = cutlass::epilogue::thread::{functor}<\n"
                    f"    ElementD, kEpilogueVector, {acc}, float, {scale}>;\n")
        device = "cutlass::gemm::device::GemmUniversal"
        if ep.bias:
            c_ptr, c_ld, c_bs = "args.bias", "0  // ldc = 0: one row for all M", "args.batch_stride_bias"
            checks.append(("bias", "0", "batch_stride_bias", *vec))
        elif ep.source:
            c_ptr, c_ld, c_bs = "args.C", "args.ldc", "args.batch_stride_c"
            checks.append(("C", "args.ldc", "batch_stride_c", *vec))
        else:
            c_ptr, c_ld, c_bs = "args.D", "args.ldd", "args.batch_stride_d"
        c_ld_text, _, c_ld_note = c_ld.partition("  //")
        call = (
            "  typename Gemm::Arguments arguments(\n"
            "      mode,\n" + gemm_args +
            f"      {{1.0f, {beta}}},  // alpha, beta\n"
            f"      args.A, args.B, {c_ptr}, args.D,\n"
            f"      args.batch_stride_a, args.batch_stride_b, {c_bs}, args.batch_stride_d,\n"
            f"      args.lda, args.ldb, {c_ld_text}, args.ldd);"
            + (f"  //{c_ld_note}" if c_ld_note else "") + "\n")
    types = (
        f"using ElementA = {element_type(cfg.dtype_a)};\nusing ElementB = {element_type(cfg.dtype_b)};\n"
        f"using ElementD = {element_type(cfg.dtype_d)};  // also C's type\n"
        f"constexpr int kEpilogueVector = {cfg.align_d};\n\n{epilogue}\n"
        f"// Mainloop {kernel_name}\n"
        f"using Gemm = {device}<\n"
        f"    ElementA, cutlass::layout::RowMajor, ElementB, {layout_b},\n"
        f"    ElementD, cutlass::layout::RowMajor, {acc},\n"
        f"    cutlass::arch::OpClassTensorOp, {arch_tag},\n"
        f"    cutlass::gemm::GemmShape<{', '.join(map(str, cfg.tile))}>,\n"
        f"    cutlass::gemm::GemmShape<{', '.join(map(str, warp))}>,\n"
        f"    cutlass::gemm::GemmShape<{', '.join(map(str, inst))}>,\n"
        f"    EpilogueOp, {swizzle},\n"
        f"    {cfg.stages}, {cfg.align_a}, {cfg.align_b}, {operator}>;\n"
    )
    helpers = (
        operand_checks(checks) + "\n"
        "typename Gemm::Arguments make_arguments(const GemmArgs& args) {\n"
        "  // kGemm's batch_count means split-K slices; batches need kBatched.\n"
        "  const bool batched = args.L > 1;\n"
        "  const cutlass::gemm::GemmUniversalMode mode =\n"
        "      batched ? cutlass::gemm::GemmUniversalMode::kBatched\n"
        "              : cutlass::gemm::GemmUniversalMode::kGemm;\n"
        + call + "  return arguments;\n}\n"
    )
    engine = ("CUTLASS 2.x, sm_80 tensor-op" if arch_tag.endswith("Sm80")
              else "CUTLASS 2.x, Sm75 16x8x8 tensor-op path (alignment 1)")
    header = header_comment(cfg, engine, kernel_name)
    return unit_text(cfg, header, includes, types, helpers)


__all__ = ["emit_sm80"]
