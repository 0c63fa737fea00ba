"""sm_90a CUTLASS GEMM units (spec/backends.md 7.2, 7.7): a CUTLASS 3.x TMA warp-specialized
kernel from the collective builders, the instantiation text from ``cutlass_library``'s
``EmitGemmUniversal3xInstance``; byocc writes the fusion (a library fusion op or a custom
Sm90EVT tree), the argument mapping and the error handling.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    from .config import EpilogueSpec
    from .config import GemmKernelConfig


@dataclass(frozen=True)
class _EvtNode:
    """One node of a Sm90EVT tree: its C++ type, a comment, and its argument initialiser
    (leaves) or children (compute nodes, whose own arguments are ``{}``)."""

    type_text: str
    comment: str
    args: str = "{}"
    children: tuple[_EvtNode, ...] = ()

    def type_lines(self, indent: int) -> list[str]:
        pad = " " * indent
        if not self.children:
            return [f"{pad}{self.type_text}"]
        lines = [f"{pad}evt::Sm90EVT<{self.type_text},  // {self.comment}"]
        for i, child in enumerate(self.children):
            sub = child.type_lines(indent + 4)
            sub[-1] += ">" if i == len(self.children) - 1 else ","
            lines.extend(sub)
        return lines

    def args_lines(self, indent: int) -> list[str]:
        pad = " " * indent
        if not self.children:
            return [f"{pad}{self.args},  // {self.comment}"]
        lines = [f"{pad}{{  // {self.comment}"]
        for child in self.children:
            lines.extend(child.args_lines(indent + 2))
        lines.append(f"{pad}  {{}},  // {self.comment.split(':')[0]} op")
        lines.append(f"{pad}}},")
        return lines


def _compute(fn: str, out: str, comment: str, *children: _EvtNode) -> _EvtNode:
    return _EvtNode(f"evt::Sm90Compute<{fn}, {out}, float, kRound>", comment, children=children)


def _row_broadcast(pointer: str, batch_stride: str, comment: str) -> _EvtNode:
    return _EvtNode(
        "evt::Sm90RowBroadcast<0, TileShape, ElementD, float, "
        "cute::Stride<cute::_0, cute::_1, int64_t>>",
        comment,
        f"{{static_cast<ElementD const*>(args.{pointer}), ElementD(0), "
        f"{{cute::_0{{}}, cute::_1{{}}, args.{batch_stride}}}}}")


def _sm90_evt(ep: EpilogueSpec) -> _EvtNode:
    """``post(bin(act(acc + bias [+ C]), residual))`` as a Sm90EVT tree (spec 7.2): one compute
    node per step, each taking the previous step as its first child; the root converts to
    ElementD, inner nodes stay in float."""
    src = "evt::Sm90SrcFetch<ElementC>"
    steps: list[tuple[str, str, tuple[_EvtNode, ...]]] = []
    if ep.bias:
        steps.append(("cutlass::plus", "plus: acc + bias",
                      (_row_broadcast("bias", "batch_stride_bias", "bias"),)))
    if ep.source == "full" and ep.residual != "full":
        steps.append(("cutlass::plus", "plus: + C", (_EvtNode(src, "C"),)))
    if ep.act:
        steps.append((ACT_FUNCTORS[ep.act], f"{ep.act}: activation", ()))
    if ep.residual:
        operand = (_EvtNode(src, "C: residual") if ep.residual == "full"
                   else _row_broadcast("C", "batch_stride_c", "residual (per column)"))
        steps.append((BIN_FUNCTORS[ep.residual_op], f"{ep.residual_op}: residual", (operand,)))
    if ep.post:
        steps.append((ACT_FUNCTORS[ep.post], f"{ep.post}: post", ()))
    current = _EvtNode("evt::Sm90AccFetch", "acc")
    for i, (fn, comment, operands) in enumerate(steps):
        out = "ElementD" if i == len(steps) - 1 else "float"
        current = _compute(fn, out, comment, current, *operands)
    return current


def _sm90_fusion(cfg: GemmKernelConfig) -> tuple[str, str]:
    """``(type declarations, argument statements)`` for the epilogue fusion (spec 7.2 table)."""
    ep = cfg.epilogue
    act = ACT_FUNCTORS[ep.act]
    beta = "1.0f" if ep.source == "full" else "0.0f"
    bias_args = ("  fusion.bias_ptr = static_cast<ElementD const*>(args.bias);\n"
                 "  fusion.dBias = {cute::_0{}, cute::_1{}, args.batch_stride_bias};\n")
    ops = "cutlass::epilogue::fusion"
    if ep.residual is None and ep.bias is None:
        if ep.act is None:
            decl = f"using FusionOp = {ops}::LinearCombination<ElementD, float, ElementC, float>;"
        else:
            decl = (f"using FusionOp =\n    {ops}::LinCombEltAct<{act}, ElementD, float, "
                    "ElementC, float>;")
        args = f"  fusion.alpha = 1.0f;\n  fusion.beta = {beta};\n"
    elif ep.residual is None:
        name = "LinCombPerColBias" if ep.act is None else "LinCombPerColBiasEltAct"
        lead = "" if ep.act is None else f"{act}, "
        decl = (f"using FusionOp = {ops}::{name}<\n    {lead}ElementD, float, ElementD, ElementC, "
                "float, kAlignmentBias>;")
        args = f"  fusion.alpha = 1.0f;\n  fusion.beta = {beta};\n{bias_args}"
    elif (ep.residual == "full" and ep.residual_op == "add" and ep.post is None
          and ep.bias == "per_column"):
        decl = (f"using FusionOp = {ops}::PerColResAddPerColBiasEltAct<\n    {act}, ElementD, "
                "float, ElementD, ElementC, float, kAlignmentBias>;")
        args = f"  fusion.alpha = 1.0f;\n  fusion.beta = 1.0f;\n{bias_args}"
    else:
        tree = _sm90_evt(ep)
        decl = ("// Custom epilogue visitor tree: " + ep.formula + "\n"
                "namespace evt = cutlass::epilogue::fusion;\n"
                "constexpr cutlass::FloatRoundStyle kRound = cutlass::FloatRoundStyle::round_to_nearest;\n"
                "using FusionOp =\n" + "\n".join(tree.type_lines(4)) + ";")
        arg_lines = tree.args_lines(2)
        arg_lines[-1] = arg_lines[-1].rstrip(",") + ";"
        arg_lines[0] = "  fusion = " + arg_lines[0].lstrip()
        args = "\n".join(arg_lines) + "\n"
    return decl, args


class _FusionDeclaration:
    """What ``EmitGemmUniversal3xInstance`` takes for a user-defined epilogue functor: an
    object whose ``emit_declaration()`` gives the fusion type's text."""

    def __init__(self, name: str):
        self.name = name

    def emit_declaration(self) -> str:
        return self.name


def _sm90_operation(cfg: GemmKernelConfig):
    """The ``cutlass_library`` GemmOperation describing ``cfg`` (tf32 for f32 inputs)."""
    lib, gemm_op = cutlass_library()
    acc = library_type(lib, cfg.accumulator)
    ea, eb = library_type(lib, cfg.dtype_a, tf32=True), library_type(lib, cfg.dtype_b, tf32=True)
    math = lib.MathInstruction([64, cfg.tile[1], cfg.tile[2]], ea, eb, acc, lib.OpcodeClass.TensorOp,
                               lib.MathOperation.multiply_add)
    warps = [4, 1, 1] if cfg.schedule == "cooperative" else [2, 1, 1]
    tile = lib.TileDescription(list(cfg.tile), 0, warps, math, 90, 90, list(cfg.cluster))
    layout_b = lib.LayoutType.ColumnMajor if cfg.b_layout == "tn" else lib.LayoutType.RowMajor
    a = lib.TensorDescription(ea, lib.LayoutType.RowMajor, cfg.align_a)
    b = lib.TensorDescription(eb, layout_b, cfg.align_b)
    # Only a full C goes through the epilogue's TMA source load; a per-column residual is a
    # row broadcast like the bias, so the collective sees no C (void).
    full_c = cfg.epilogue.source == "full" and cfg.dtype_c is not None
    c = lib.TensorDescription(library_type(lib, cfg.dtype_c) if full_c and cfg.dtype_c else lib.DataType.void,
                              lib.LayoutType.RowMajor, cfg.align_c if full_c else 0)
    d = lib.TensorDescription(library_type(lib, cfg.dtype_d), lib.LayoutType.RowMajor, cfg.align_d)
    coop = cfg.schedule == "cooperative"
    kernel_schedule = (lib.KernelScheduleType.TmaWarpSpecializedCooperative if coop
                       else lib.KernelScheduleType.TmaWarpSpecializedPingpong)
    epilogue_schedule = (lib.EpilogueScheduleType.TmaWarpSpecializedCooperative if coop
                         else lib.EpilogueScheduleType.TmaWarpSpecialized)
    scheduler = lib.TileSchedulerType.StreamK if cfg.stream_k else lib.TileSchedulerType.Default
    fusion = _FusionDeclaration("FusionOp")
    op = gemm_op.GemmOperation(
        lib.GemmKind.Universal3x, 90, tile, a, b, c, lib.DataType.f32, fusion,
        lib.SwizzlingFunctor.Identity1, d, kernel_schedule=kernel_schedule,
        epilogue_schedule=epilogue_schedule, tile_scheduler=scheduler)
    return op, fusion, gemm_op


def emit_sm90(cfg: GemmKernelConfig) -> str:
    op, fusion, gemm_op = _sm90_operation(cfg)
    emitter = gemm_op.EmitGemmUniversal3xInstance()
    # EmitGemmUniversal3xInstance.emit reads a non-enum functor from the emitter itself.
    emitter.epilogue_functor = fusion
    kernel_name = op.procedural_name()
    instance = emitter.emit(op)
    decl, fusion_args = _sm90_fusion(cfg)
    ep = cfg.epilogue
    c_type = element_type(cfg.dtype_c) if cfg.dtype_c and ep.source == "full" else "void"
    tile_shape = ", ".join(f"cute::_{x}" for x in cfg.tile)
    elem_a = element_type(cfg.dtype_a, tf32=True)
    elem_b = element_type(cfg.dtype_b, tf32=True)
    types = (
        f"using ElementA = {elem_a};\nusing ElementB = {elem_b};\n"
        f"using ElementC = {c_type};\nusing ElementD = {element_type(cfg.dtype_d)};\n"
        f"using TileShape = cute::Shape<{tile_shape}>;\n"
        + ("// Row vectors (bias, per-column residual) are read 16 bytes at a time.\n"
           "constexpr int kAlignmentBias = 128 / cutlass::sizeof_bits<ElementD>::value;\n"
           if ep.bias or ep.residual == "per_column" else "") + "\n"
        f"{decl}\n\n// CUTLASS kernel (instantiation text from cutlass_library's "
        f"EmitGemmUniversal3xInstance)\n{instance.strip()}\n\n"
        f"using Gemm = cutlass::gemm::device::GemmUniversalAdapter<{kernel_name}>;\n"
        "using StrideA = typename Gemm::GemmKernel::StrideA;\n"
        "using StrideB = typename Gemm::GemmKernel::StrideB;\n"
        "using StrideC = typename Gemm::GemmKernel::StrideC;\n"
        "using StrideD = typename Gemm::GemmKernel::StrideD;\n"
    )
    b_ld = 0 if cfg.b_layout == "tn" else 1
    b_comment = ("(N, K, L): N x K storage, K contiguous" if cfg.b_layout == "tn"
                 else "(N, K, L): K x N row-major, N contiguous")
    c_ptr = "static_cast<ElementC const*>(args.C)" if ep.source == "full" else "nullptr"
    ld_c, bs_c = ("args.ldc", "args.batch_stride_c") if ep.source == "full" else (
        "args.ldd", "args.batch_stride_d")
    checks = [("A", "args.lda", "batch_stride_a", str(cfg.align_a), "sizeof(ElementA)"),
              ("B", "args.ldb", "batch_stride_b", str(cfg.align_b), "sizeof(ElementB)"),
              ("D", "args.ldd", "batch_stride_d", str(cfg.align_d), "sizeof(ElementD)")]
    if ep.source == "full":
        checks.append(("C", "args.ldc", "batch_stride_c", str(cfg.align_c), "sizeof(ElementC)"))
    elif ep.residual == "per_column":
        checks.append(("C", "0", "batch_stride_c", "kAlignmentBias", "sizeof(ElementD)"))
    if ep.bias:
        checks.append(("bias", "0", "batch_stride_bias", "kAlignmentBias", "sizeof(ElementD)"))
    helpers = (
        operand_checks(checks) + "\n"
        "typename Gemm::Arguments make_arguments(const GemmArgs& args) {\n"
        "  StrideA stride_a{};  // (M, K, L): row-major A\n"
        "  cute::get<0>(stride_a) = args.lda;\n"
        "  cute::get<2>(stride_a) = args.batch_stride_a;\n"
        f"  StrideB stride_b{{}};  // {b_comment}\n"
        f"  cute::get<{b_ld}>(stride_b) = args.ldb;\n"
        "  cute::get<2>(stride_b) = args.batch_stride_b;\n"
        "  StrideC stride_c{};  // (M, N, L): row-major C\n"
        f"  cute::get<0>(stride_c) = {ld_c};\n"
        f"  cute::get<2>(stride_c) = {bs_c};\n"
        "  StrideD stride_d{};  // (M, N, L): row-major D\n"
        "  cute::get<0>(stride_d) = args.ldd;\n"
        "  cute::get<2>(stride_d) = args.batch_stride_d;\n\n"
        "  cutlass::KernelHardwareInfo hw_info;\n"
        "  hw_info.device_id = args.device;\n"
        "  hw_info.sm_count = args.sm_count > 0 ? args.sm_count\n"
        "                     : cutlass::KernelHardwareInfo::query_device_multiprocessor_count(args.device);\n\n"
        "  typename Gemm::Arguments arguments{\n"
        "      cutlass::gemm::GemmUniversalMode::kGemm,\n"
        "      {static_cast<int>(args.M), static_cast<int>(args.N), static_cast<int>(args.K),\n"
        "       static_cast<int>(args.L)},\n"
        "      {static_cast<ElementA const*>(args.A), stride_a, static_cast<ElementB const*>(args.B),\n"
        "       stride_b},\n"
        f"      {{{{}}, {c_ptr}, stride_c, static_cast<ElementD*>(args.D), stride_d}},\n"
        "      hw_info};\n"
        + (f"  arguments.scheduler.max_swizzle_size = {cfg.swizzle};  // tiles.select_sm90's swizzle\n"
           if cfg.swizzle != 1 else "") +
        "  auto& fusion = arguments.epilogue.thread;\n"
        f"{fusion_args}"
        "  return arguments;\n"
        "}\n"
    )
    includes = ["cutlass/cutlass.h", "cutlass/numeric_types.h", "cutlass/kernel_hardware_info.h",
                "cutlass/epilogue/thread/activation.h",
                "cutlass/epilogue/collective/collective_builder.hpp",
                "cutlass/gemm/collective/collective_builder.hpp",
                "cutlass/gemm/device/gemm_universal_adapter.h",
                "cutlass/gemm/kernel/gemm_universal.hpp", "cutlass/gemm/kernel/tile_scheduler.hpp"]
    header = header_comment(cfg, "CUTLASS 3.x, sm_90a TMA warp-specialized", kernel_name)
    return unit_text(cfg, header, includes, types, helpers)


__all__ = ["emit_sm90"]
