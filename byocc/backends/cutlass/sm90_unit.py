"""sm_90a CUTLASS GEMM units (docs/codegen.md#hopper-units, #kernel-choice): a CUTLASS 3.x TMA warp-specialized
kernel from the collective builders, the instantiation text from ``cutlass_library``'s
``EmitGemmUniversal3xInstance``; byocc writes the fusion (a library fusion op or a custom
Sm90EVT tree), the argument mapping and the error handling.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import EpilogueSpec
from .config import GemmKernelConfig
from .unit_text import ACT_FUNCTORS
from .unit_text import BIN_FUNCTORS
from .unit_text import OperandCheck
from .unit_text import cutlass_library
from .unit_text import element_type
from .unit_text import library_type
from .unit_text import render_unit
from .unit_text import tidy


@dataclass(frozen=True)
class EvtNode:
    """One node of a Sm90EVT tree (``templates/sm90_unit.cu.j2`` writes its type and its
    arguments): ``kind`` "acc" (the accumulator), "src" (the C operand), "row" (a row
    broadcast of ``pointer`` with batch stride ``batch_stride``) or "compute" (``fn`` applied
    to the children, result type ``out``); ``pointer`` and ``batch_stride`` are C++ expressions
    of the unit's arguments."""

    kind: str
    comment: str
    fn: str = ""
    out: str = ""
    pointer: str = ""
    batch_stride: str = ""
    children: tuple[EvtNode, ...] = ()


#: Where a GEMM unit's row vectors are (byocc::GemmArgs): name -> (pointer, batch stride).
GEMM_ROWS = {"bias": ("args.bias", "args.batch_stride_bias"), "residual": ("args.C", "args.batch_stride_c")}


def sm90_evt(ep: EpilogueSpec, rows: dict[str, tuple[str, str]] = GEMM_ROWS) -> EvtNode:
    """``post(bin(act(acc + bias [+ C]), residual))`` as a Sm90EVT tree: one compute node per
    step, each taking the previous step as its first child; the root converts to ElementD,
    inner nodes stay in float. ``rows``: the C++ pointer and batch stride of the bias and of a
    per-column residual (:data:`GEMM_ROWS`; the conv units pass ``byocc::ConvArgs``')."""
    steps: list[tuple[str, str, tuple[EvtNode, ...]]] = []
    if ep.bias:
        pointer, stride = rows["bias"]
        steps.append(("cutlass::plus", "plus: acc + bias",
                      (EvtNode("row", "bias", pointer=pointer, batch_stride=stride),)))
    if ep.source == "full" and ep.residual != "full":
        steps.append(("cutlass::plus", "plus: + C", (EvtNode("src", "C"),)))
    if ep.act:
        steps.append((ACT_FUNCTORS[ep.act], f"{ep.act}: activation", ()))
    if ep.residual:
        operand = (EvtNode("src", "C: residual") if ep.residual == "full"
                   else EvtNode("row", "residual (per column)", pointer=rows["residual"][0],
                                batch_stride=rows["residual"][1]))
        steps.append((BIN_FUNCTORS[ep.residual_op], f"{ep.residual_op}: residual", (operand,)))
    if ep.post:
        steps.append((ACT_FUNCTORS[ep.post], f"{ep.post}: post", ()))
    current = EvtNode("acc", "acc")
    for i, (fn, comment, operands) in enumerate(steps):
        out = "ElementD" if i == len(steps) - 1 else "float"
        current = EvtNode("compute", comment, fn=fn, out=out, children=(current, *operands))
    return current


def sm90_fusion(ep: EpilogueSpec) -> str:
    """The epilogue's fusion: a ``cutlass::epilogue::fusion`` op of the library, or "evt" (a
    custom Sm90EVT tree, :func:`sm90_evt`)."""
    if ep.residual is None and ep.bias is None:
        return "LinearCombination" if ep.act is None else "LinCombEltAct"
    if ep.residual is None:
        return "LinCombPerColBias" if ep.act is None else "LinCombPerColBiasEltAct"
    if ep.residual == "full" and ep.residual_op == "add" and ep.post is None and ep.bias == "per_column":
        return "PerColResAddPerColBiasEltAct"
    return "evt"


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


def _checks(cfg: GemmKernelConfig) -> list[OperandCheck]:
    ep = cfg.epilogue
    checks = [OperandCheck("A", "args.lda", "batch_stride_a", str(cfg.align_a), "sizeof(ElementA)"),
              OperandCheck("B", "args.ldb", "batch_stride_b", str(cfg.align_b), "sizeof(ElementB)"),
              OperandCheck("D", "args.ldd", "batch_stride_d", str(cfg.align_d), "sizeof(ElementD)")]
    if ep.source == "full":
        checks.append(OperandCheck("C", "args.ldc", "batch_stride_c", str(cfg.align_c), "sizeof(ElementC)"))
    elif ep.residual == "per_column":
        checks.append(OperandCheck("C", "0", "batch_stride_c", "kAlignmentBias", "sizeof(ElementD)"))
    if ep.bias:
        checks.append(OperandCheck("bias", "0", "batch_stride_bias", "kAlignmentBias", "sizeof(ElementD)"))
    return checks


_INCLUDES = ["cutlass/cutlass.h", "cutlass/numeric_types.h", "cutlass/kernel_hardware_info.h",
             "cutlass/epilogue/thread/activation.h",
             "cutlass/epilogue/collective/collective_builder.hpp",
             "cutlass/gemm/collective/collective_builder.hpp",
             "cutlass/gemm/device/gemm_universal_adapter.h",
             "cutlass/gemm/kernel/gemm_universal.hpp", "cutlass/gemm/kernel/tile_scheduler.hpp"]


def emit_sm90(cfg: GemmKernelConfig) -> str:
    """The text of the sm_90a unit of ``cfg``."""
    op, fusion, gemm_op = _sm90_operation(cfg)
    emitter = gemm_op.EmitGemmUniversal3xInstance()
    # EmitGemmUniversal3xInstance.emit reads a non-enum functor from the emitter itself.
    emitter.epilogue_functor = fusion
    ep = cfg.epilogue
    element = {"a": element_type(cfg.dtype_a, tf32=True), "b": element_type(cfg.dtype_b, tf32=True),
               "c": element_type(cfg.dtype_c) if cfg.dtype_c and ep.source == "full" else "void",
               "d": element_type(cfg.dtype_d)}
    return render_unit(
        "cutlass/sm90_unit.cu.j2", cfg, engine="CUTLASS 3.x, sm_90a TMA warp-specialized",
        kernel_name=op.procedural_name(), includes=_INCLUDES, checks=_checks(cfg),
        instance=tidy(emitter.emit(op)), element=element, fusion=sm90_fusion(ep),
        act=ACT_FUNCTORS[ep.act], tree=sm90_evt(ep))


__all__ = ["GEMM_ROWS", "EvtNode", "emit_sm90", "sm90_evt", "sm90_fusion"]
