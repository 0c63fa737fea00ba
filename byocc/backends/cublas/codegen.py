"""The cuBLAS backend's codegen: one light wrapper TU per offloaded function, calling
cuBLASLt through ``src/cublaslt_runtime.cu`` (docs/codegen.md#common-contract, #cublaslt-mapping, #build, #manifest, #tvm-027-defects-byocc-does-not-copy).

``codegen(functions, options, constant_names) -> list[GeneratedModule]`` (the contract of
:mod:`byocc.backends.codegen`); one module per function, as TVM's cuBLAS codegen.

Steps per function: read it as an :class:`~byocc.backends.program.OffloadedProgram`; read every
composite call as a GEMM (:func:`~byocc.backends.program.gemm_step`) and plan it (:func:`plan_step`:
dtypes, the row-major -> column-major mapping, the batch mode, the epilogue, a weight that must
be permuted first); emit the wrapper (:func:`~byocc.backends.cuda.wrapper.emit_wrapper`) with
one ``byocc::cublaslt_matmul`` call per step; describe the entry point for the manifest.
Anything that cannot be generated raises :class:`CodegenError` naming the function, the
composite and the reason, before anything is returned.

Mapping (docs/codegen.md#cublaslt-mapping): row-major ``D(M x N) = X(M x K) W(K x N)`` is computed as the
column-major ``D^T(N x M) = W^T X^T``: cuBLASLt's A is the weight (``OP_N``, N x K, lda = N; or,
for a weight stored ``(N, K)`` and transposed in the graph, ``OP_T``, K x N, lda = K), B is X
(K x M, ldb = K), D is N x M (ldd = N); m, n, k = N, M, K, and a bias of length N is per row of
``D^T``, which is what the ``*_BIAS`` epilogues add.

Options (``target_options["cublas"]``): ``fast_gelu`` (True: cuBLASLt's ``GELU_BIAS``, the
tanh approximation; default: the exact erf GELU, a ``BIAS`` epilogue then byocc's erf-GELU
kernel, since ``relax.nn.gelu`` is the erf form, docs/codegen.md#d8-cublaslt-gelu-is-tanh; ``exact_gelu=False``
means the same as ``fast_gelu=True``); ``fp32_math`` (``"ieee"``, the default, full fp32
``CUBLAS_COMPUTE_32F``; ``"tf32"``: ``CUBLAS_COMPUTE_32F_FAST_TF32``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from typing import Any

from byocc.ir import Function
from byocc.ir import TensorStructInfo
from byocc.ir.prim import dim_text

from ..codegen import CodegenError
from ..codegen import GeneratedModule
from ..codegen import Variant
from ..cuda import elementwise_map
from ..cuda import generic
from ..cuda.common import fixed_constant
from ..cuda.elementwise import elementwise_plan
from ..cuda.elementwise import elementwise_step
from ..cuda.elementwise import first_unsupported_op
from ..cuda.elementwise import is_elementwise
from ..cuda.function import FunctionCodegen
from ..cuda.function import exported_functions
from ..cuda.function import generate_function as generate_cuda_function
from ..cuda.step import Operand
from ..cuda.step import Size
from ..cuda.step import Step as WrapperStep
from ..cuda.step import tensor_bytes
from ..cuda.templates import render
from ..cuda.wrapper import WrapperContext
from ..cuda.wrapper import shape_text
from ..dtypes import dtype
from ..dtypes import itemsize
from ..program import CompositeCall
from ..program import GemmStep
from ..program import OffloadedProgram
from ..program import ValueRef
from ..program import gemm_step
from ..program import resolve
from ..program import static_numel
from .backend import OPTIONS
from .runtime import HEADER_PATH
from .runtime import WORKSPACE_BYTES
from .runtime import runtime_sources

BACKEND = "cublas"

#: input dtype -> (output dtypes, compute type, accumulator dtype). cuBLASLt's A/B, C/D and
#: scale types are the ``cuda_r`` names of the input, output and accumulator dtypes
#: (:mod:`byocc.backends.dtypes`).
_TYPES = {
    "float16": (("float16", "float32"), "CUBLAS_COMPUTE_32F", "float32"),
    "bfloat16": (("bfloat16", "float32"), "CUBLAS_COMPUTE_32F", "float32"),
    "float32": (("float32",), "CUBLAS_COMPUTE_32F", "float32"),
    "int8": (("int32",), "CUBLAS_COMPUTE_32I", "int32"),
}

#: Composites of the table whose codegen is deferred (docs/codegen.md#deferred-composites), with the reason.
DEFERRED = {
    "cublas.matmul_transposed_dequantize":
        "the fp8 dequantize epilogue is deferred (docs/codegen.md#deferred-composites: the scale becomes "
        "alpha only while the constant stays bound)",
    "cublas.matmul_transposed_multiply":
        "the fp8 scaled matmul (A/B scale pointers) is deferred (docs/codegen.md#deferred-composites)",
}
_FP8 = ("float8_e4m3fn", "float8_e5m2")

#: (has bias, activation, gelu mode) -> (epilogue, erf-GELU kernel after the GEMM)
_EPILOGUES = {
    (True, None, None): ("CUBLASLT_EPILOGUE_BIAS", False),
    (True, "relu", None): ("CUBLASLT_EPILOGUE_RELU_BIAS", False),
    (True, "gelu", "tanh"): ("CUBLASLT_EPILOGUE_GELU_BIAS", False),
    (True, "gelu", "erf"): ("CUBLASLT_EPILOGUE_BIAS", True),
    (False, None, None): ("CUBLASLT_EPILOGUE_DEFAULT", False),
    (False, "relu", None): ("CUBLASLT_EPILOGUE_RELU", False),
    (False, "gelu", "tanh"): ("CUBLASLT_EPILOGUE_GELU", False),
    (False, "gelu", "erf"): ("CUBLASLT_EPILOGUE_DEFAULT", True),
}

#: Highest rank of a weight ``byocc::cublaslt_permute`` takes (``kCublasLtMaxRank``).
MAX_PERMUTE_RANK = fixed_constant("cublas/byocc_cublaslt.h", "kCublasLtMaxRank")


@dataclass(frozen=True)
class Options:
    gelu: str  # "erf" | "tanh"
    fp32_math: str  # "ieee" | "tf32"


def parse_options(options: Mapping[str, object]) -> Options:
    """The backend options this codegen reads, through its schema (:data:`OPTIONS`: defaults
    filled in); a bad value is a CodegenError."""
    values = OPTIONS.resolve(options)
    return Options("tanh" if values["fast_gelu"] else "erf", values["fp32_math"])


@dataclass(frozen=True)
class Step:
    """One composite call planned for cuBLASLt (dims are program-level IR dims)."""

    index: int
    call: CompositeCall
    gemm: GemmStep
    lhs: ValueRef
    rhs: ValueRef
    bias: ValueRef | None
    out: ValueRef
    in_dtype: str
    out_dtype: str
    ab_type: str
    d_type: str
    compute: str
    scale_type: str
    accumulator: str
    M: Any
    K: Any
    N: Any
    lhs_batch: tuple
    w_batch: tuple
    rhs_shape: tuple  # the weight as stored
    op_a: str  # CUBLAS_OP_N | CUBLAS_OP_T
    prep_axes: tuple | None  # permute the stored weight into scratch first (output axis i <- axes[i])
    act: str | None
    gelu: str | None
    epilogue: str
    gelu_kernel: bool
    batch_mode: str  # "none" | "flatten" | "broadcast_lhs" | "strided" | "runtime"
    bias_check: Any | None  # a bias length to compare with N at run time
    bias_broadcast: bool  # a one-element bias, copied N times into scratch for the epilogue

    @property
    def lda(self) -> Any:
        return self.N if self.op_a == "CUBLAS_OP_N" else self.K

    @property
    def weight_prep(self) -> str | None:
        if self.prep_axes is None:
            return None
        nd = len(self.prep_axes)
        swap = tuple(range(nd - 2)) + (nd - 1, nd - 2)
        return "transpose" if self.prep_axes == swap else "permute"

    @property
    def rhs_layout(self) -> str:
        """How the stored weight reads (manifest ``layout``)."""
        if self.op_a == "CUBLAS_OP_T" and self.prep_axes is None and len(self.rhs_shape) >= 2:
            return "col_major_nk"
        return "row_major"


def _fail(symbol: str, composite: str, reason: str) -> CodegenError:
    return CodegenError(f"cannot generate cuBLAS code for function {symbol} (composite {composite}): {reason}")


def _is_one(dim) -> bool:
    return isinstance(dim, int) and dim == 1


def _same_dim(a, b) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return a is b or dim_text(a) == dim_text(b)


def _batch_mode(lhs_batch: tuple, w_batch: tuple, where) -> str:
    bl, bw = static_numel(lhs_batch), static_numel(w_batch)
    if bw == 1:
        return "none" if bl == 1 else "flatten"
    if bl == 1:
        return "broadcast_lhs"
    n = max(len(lhs_batch), len(w_batch))
    lp = (1,) * (n - len(lhs_batch)) + tuple(lhs_batch)
    wp = (1,) * (n - len(w_batch)) + tuple(w_batch)
    if all(_same_dim(a, b) for a, b in zip(lp, wp)):
        return "strided"
    if bl is not None and bw is not None:
        if lp != wp:
            raise where(f"batch dims {tuple(lhs_batch)} and {tuple(w_batch)} broadcast on both sides; "
                        "cuBLASLt takes equal batches or one unbatched side")
        return "strided"
    return "runtime"


def _rejected_form(gemm: GemmStep) -> str | None:
    """Why cuBLASLt cannot compute the GEMM form ``gemm``, or None."""
    for sinfo in (gemm.lhs_sinfo, gemm.rhs_sinfo):
        if sinfo.dtype in _FP8:
            return f"fp8 ({sinfo.dtype}) matmul codegen is deferred (docs/codegen.md#deferred-composites)"
    if gemm.residual_op is not None or gemm.post is not None:
        return "cuBLASLt has no residual epilogue (a residual add/multiply is not a cuBLAS pattern)"
    if gemm.act == "silu":
        return "cuBLASLt has no SiLU epilogue"
    return None


def _keeps_gemm(gemm: GemmStep) -> bool:
    """Whether one cuBLASLt call computes the GEMM reading ``gemm`` whole. A SiLU or a
    residual epilogue, a bias that is not a vector of the output dtype, an epilogue on an int8
    GEMM are not what cuBLASLt has: such a composite is split into the GEMM and byocc's fused
    elementwise kernel for the rest (:mod:`byocc.backends.cuda.split`); fp8 stays one
    (deferred) step."""
    if any(s.dtype in _FP8 for s in (gemm.lhs_sinfo, gemm.rhs_sinfo)):
        return True
    if gemm.bias_sinfo is not None:
        bshape = tuple(gemm.bias_sinfo.shape or ()) or (1,)
        if gemm.bias_sinfo.dtype != gemm.out_sinfo.dtype or not all(_is_one(d) for d in bshape[:-1]):
            return False  # not cuBLASLt's bias vector: the fused kernel adds it
        if gemm.lhs_sinfo.dtype == "int8":
            return False  # int8 takes no epilogue in cuBLASLt
    if gemm.act is not None and gemm.lhs_sinfo.dtype == "int8":
        return False
    return gemm.residual_op is None and gemm.post is None and gemm.act != "silu"


def _types(in_dtype: str, rhs_dtype: str, out_dtype: str, opts: Options, where) -> tuple:
    """``(ab_type, d_type, compute, scale_type, accumulator)``: cuBLASLt's types of one GEMM."""
    if rhs_dtype != in_dtype:
        raise where(f"lhs dtype {in_dtype} and rhs dtype {rhs_dtype} differ")
    if in_dtype not in _TYPES:
        raise where(f"dtype {in_dtype} is not one cuBLASLt takes here (float16, bfloat16, float32, int8)")
    outs, compute, accumulator = _TYPES[in_dtype]
    if out_dtype not in outs:
        raise where(f"{in_dtype} inputs with a {out_dtype} output are not supported "
                    f"(outputs: {', '.join(sorted(outs))})")
    ab_type, d_type, scale_type = (dtype(t, "cuda_r", "cuBLASLt").cuda_r
                                   for t in (in_dtype, out_dtype, accumulator))
    if in_dtype == "float32" and opts.fp32_math == "tf32":
        compute = "CUBLAS_COMPUTE_32F_FAST_TF32"
    return ab_type, d_type, compute, scale_type, accumulator


def _weight(gemm: GemmStep, rshape: tuple, int8: bool, where) -> tuple:
    """``(w_batch, K, N, op_a, prep_axes)`` of the logical weight (..., K, N) = permute(rhs) or rhs."""
    nd = len(rshape)
    if nd == 1:
        # (K,) is both the K x 1 weight (OP_N, lda = 1) and the stored (N, K) = (1, K) one (OP_T).
        return (), rshape[0], 1, ("CUBLAS_OP_T" if int8 else "CUBLAS_OP_N"), None
    swap = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    if gemm.transposed:
        axes = gemm.perm_axes if gemm.perm_axes is not None else tuple(reversed(range(nd)))
        axes = tuple(int(a) % nd for a in axes)
    else:
        axes = tuple(range(nd))
    logical = tuple(rshape[a] for a in axes)
    prep_axes: tuple | None = None
    if axes == swap:  # the stored weight is (..., N, K)
        op_a = "CUBLAS_OP_T"
    elif int8:
        # cuBLASLt's int8 (IMMA) kernels take only "TN" with the regular order: store the
        # weight as (..., N, K) first. Output axis i of the copy reads rhs axis axes[swap[i]].
        op_a, prep_axes = "CUBLAS_OP_T", tuple(axes[s] for s in swap)
    elif axes == tuple(range(nd)):
        op_a = "CUBLAS_OP_N"
    else:
        op_a, prep_axes = "CUBLAS_OP_N", axes
    if prep_axes is not None and nd > MAX_PERMUTE_RANK:
        raise where(f"a permuted weight of rank {nd} (at most {MAX_PERMUTE_RANK})")
    return logical[:-2], logical[-2], logical[-1], op_a, prep_axes


def _bias(bias_s: TensorStructInfo, out_dtype: str, N, where) -> tuple:
    """``(bias_check, bias_broadcast)``: a bias length to compare with N at run time, and
    whether a one-element bias is copied N times for the epilogue."""
    if bias_s.dtype != out_dtype:
        raise where(f"bias dtype {bias_s.dtype} differs from the output dtype {out_dtype}")
    bshape = tuple(bias_s.shape) or (1,)  # a scalar bias is a one-element vector
    if not all(_is_one(d) for d in bshape[:-1]):
        raise where(f"bias of shape {shape_text(bias_s)} is not a vector (N,) or (1, ..., 1, N)")
    if _is_one(bshape[-1]) and not _is_one(N):
        return None, True  # relax's add broadcasts it; the epilogue needs N values
    if _same_dim(bshape[-1], N):
        return None, False
    if isinstance(bshape[-1], int) and isinstance(N, int):
        raise where(f"bias length {bshape[-1]} differs from N = {N} (cuBLASLt's bias is a vector of N)")
    return bshape[-1], False


def plan_step(program: OffloadedProgram, index: int, call: CompositeCall, opts: Options) -> Step:
    """Plan one composite call; CodegenError when cuBLASLt cannot compute it."""
    symbol, composite = program.symbol, call.composite

    def where(reason: str) -> CodegenError:
        return _fail(symbol, composite, reason)

    if composite in DEFERRED:
        raise where(DEFERRED[composite])
    gemm = gemm_step(call.func)
    if gemm is None:
        op = first_unsupported_op(call.func) or "none; the composite's result is a form byocc does not read"
        raise where("its body is not a GEMM byocc can read ([permute_dims(w)] -> matmul -> [add bias] "
                    "-> [relu|gelu]), nor matmuls with elementwise and data-movement ops, nor an elementwise "
                    f"composite (first unsupported op: {op})")
    reason = _rejected_form(gemm)
    if reason is not None:
        raise where(reason)
    lhs, rhs = resolve(call, gemm.lhs), resolve(call, gemm.rhs)
    bias = None if gemm.bias is None else resolve(call, gemm.bias)
    lhs_s, rhs_s, out_s = program.sinfo_of(lhs), program.sinfo_of(rhs), program.temps[call.result]
    in_dtype, out_dtype = lhs_s.dtype, out_s.dtype
    ab_type, d_type, compute, scale_type, accumulator = _types(in_dtype, rhs_s.dtype, out_dtype, opts, where)

    # ---- shapes: lhs (..., M, K), the logical weight (..., K, N) = permute(rhs) or rhs
    lshape, rshape = tuple(lhs_s.shape), tuple(rhs_s.shape)
    if not lshape or not rshape:
        raise where("matmul operands must have rank >= 1")
    if len(lshape) == 1:
        lhs_batch, M, K = (), 1, lshape[0]
    else:
        lhs_batch, M, K = lshape[:-2], lshape[-2], lshape[-1]
    int8 = in_dtype == "int8"
    w_batch, K_w, N, op_a, prep_axes = _weight(gemm, rshape, int8, where)
    if not _same_dim(K, K_w):
        raise where(f"reduction dims differ: lhs K = {dim_text(K)}, weight K = {dim_text(K_w)}")
    if isinstance(K, int) and K == 0:
        raise where("the reduction dim K is 0")
    batch_mode = _batch_mode(tuple(lhs_batch), tuple(w_batch), where)

    # ---- epilogue
    act = gemm.act
    gelu = opts.gelu if act == "gelu" else None
    if int8 and (bias is not None or act is not None):
        raise where("int8 matmul with an int32 output takes no epilogue in cuBLASLt "
                    "(the cuBLAS check rejects a bias with int8)")
    bias_check, bias_broadcast = (None, False) if bias is None else _bias(program.sinfo_of(bias), out_dtype, N, where)
    epilogue, gelu_kernel = _EPILOGUES[(bias is not None, act, gelu)]
    return Step(index, call, gemm, lhs, rhs, bias, ValueRef("temp", call.result), in_dtype, out_dtype, ab_type,
                d_type, compute, scale_type, accumulator, M, K, N, tuple(lhs_batch), tuple(w_batch), rshape, op_a,
                prep_axes, act, gelu, epilogue, gelu_kernel, batch_mode, bias_check, bias_broadcast)


# --------------------------------------------------------------------------- C++ per step
def _numel_expr(ctx: WrapperContext, dims: Sequence) -> str:
    return ctx.numel(tuple(dims))


def _regions(step: Step) -> list[tuple[tuple, int]]:
    """The step's scratch after the cuBLASLt workspace, in order, as (dims, itemsize): the
    weight copy, then the bias vector."""
    regions = []
    if step.prep_axes is not None:
        regions.append((tuple(step.rhs_shape), itemsize(step.in_dtype)))
    if step.bias_broadcast:
        regions.append(((step.N,), itemsize(step.out_dtype)))
    return regions


def _scratch_expr(regions: list, ctx: WrapperContext) -> str:
    """The C byte count of the cuBLASLt workspace and then ``regions``."""
    return " + ".join(["byocc::kCublasLtWorkspaceBytes"] + [tensor_bytes(d, n, ctx).c for d, n in regions])


def step_code(step: Step, ctx: WrapperContext) -> str:
    """The C++ body of one step (inside the wrapper's exported function), from
    ``cublas/gemm_step.cu.j2``."""
    mode = step.batch_mode
    batch_mismatch = []
    if mode == "runtime":
        n = max(len(step.lhs_batch), len(step.w_batch))
        lp = (1,) * (n - len(step.lhs_batch)) + step.lhs_batch
        wp = (1,) * (n - len(step.w_batch)) + step.w_batch
        batch_mismatch = [f"{ctx.dim(a)} != {ctx.dim(b)}" for a, b in zip(lp, wp) if not _same_dim(a, b)]
    # the bias vector is the last region: it starts after the workspace and the weight copy
    bias_vector_at = _scratch_expr(_regions(step)[:-1], ctx) if step.bias_broadcast else None
    return render(
        "cublas/gemm_step.cu.j2",
        formula=step.gemm.describe(),
        composite=step.call.composite,
        M=ctx.dim(step.M), N=ctx.dim(step.N), K=ctx.dim(step.K),
        bias_length=None if step.bias_check is None else ctx.dim(step.bias_check),
        batch_mode=mode,
        lhs_batch=_numel_expr(ctx, step.lhs_batch) if mode in ("flatten", "runtime") else None,
        w_batch=_numel_expr(ctx, step.w_batch) if mode in ("broadcast_lhs", "strided", "runtime") else None,
        batch_mismatch=batch_mismatch,
        w_shape=[ctx.dim(d) for d in step.rhs_shape] if step.prep_axes is not None else None,
        w_axes=step.prep_axes,
        bias_vector_at=bias_vector_at,
        in_itemsize=itemsize(step.in_dtype),
        out_itemsize=itemsize(step.out_dtype),
        ab_type=step.ab_type, d_type=step.d_type, compute=step.compute, scale_type=step.scale_type,
        op_a=step.op_a, epilogue=step.epilogue, gelu_kernel=step.gelu_kernel,
        lhs=ctx.ptr(step.lhs), rhs=ctx.ptr(step.rhs), out=ctx.ptr(step.out),
        bias=ctx.ptr(step.bias) if step.bias is not None else "nullptr",
    )


# --------------------------------------------------------------------------- description
def _text(dim) -> str:
    return dim_text(dim)


_BATCH_TEXT = {"none": "none", "flatten": "lhs batch flattened into M (unbatched weight)",
               "broadcast_lhs": "strided over the weight's batch, lhs batch stride 0",
               "strided": "strided, equal batches", "runtime": "chosen at run time from the batch dims"}


def _header_lines(program: OffloadedProgram, s: Step) -> list[str]:
    def arg(ref: ValueRef) -> str:
        si = program.sinfo_of(ref)
        return f"{si.dtype} {shape_text(si)}"

    lines = [f"step {s.index}: {s.call.composite}: {s.gemm.describe()}",
             f"  lhs {arg(s.lhs)}; rhs {arg(s.rhs)} ({s.rhs_layout}"
             + (f", {s.weight_prep}d into scratch" if s.weight_prep else "") + ")"
             + (f"; bias {arg(s.bias)}" if s.bias is not None else ""),
             f"  output {s.out_dtype} {shape_text(program.temps[s.call.result])}; accumulate {s.accumulator}",
             f"  row-major D(M x N) = X(M x K) W(K x N): M = {_text(s.M)}, N = {_text(s.N)}, K = {_text(s.K)}"]
    a_dims = "N x K" if s.op_a == "CUBLAS_OP_N" else "K x N"
    lines.append(f"  cuBLASLt column-major D^T = op(A) B: A = weight ({s.op_a}, {a_dims}, lda = "
                 f"{_text(s.lda)}), B = lhs (CUBLAS_OP_N, K x M, ldb = {_text(s.K)}), "
                 f"D (N x M, ldd = {_text(s.N)})")
    lines.append(f"  m = N, n = M, k = K; batch: {_BATCH_TEXT[s.batch_mode]}")
    lines.append(f"  types: A/B {s.ab_type}, C/D {s.d_type}, compute {s.compute}, scale {s.scale_type}")
    epi = f"  epilogue {s.epilogue}"
    if s.bias is not None:
        epi += f" (bias {s.d_type}, length N, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE set)"
    if s.bias_broadcast:
        epi += "; the one-element bias is first repeated N times in scratch"
    if s.gelu_kernel:
        epi += ", then byocc's erf-GELU kernel in place"
    elif s.gelu == "tanh":
        epi += " (tanh GELU, fast_gelu)"
    lines.append(epi)
    lines.append(f"  workspace {WORKSPACE_BYTES} bytes from the step scratch")
    return lines


def _scratch(s: Step, ctx: WrapperContext) -> Size:
    """The step's need: the cuBLASLt workspace, then the weight copy, then the bias vector
    (text: the static part as one number, then the symbolic regions)."""
    regions = _regions(s)
    need, symbolic = WORKSPACE_BYTES, []
    for dims, size in regions:
        region = tensor_bytes(dims, size, ctx)
        if region.value is None:
            symbolic.append(region.text)
        else:
            need += region.value
    return Size(_scratch_expr(regions, ctx), " + ".join([str(need)] + symbolic), None if symbolic else need)


def _operands(s: Step) -> tuple[Operand, ...]:
    ops = [Operand(s.lhs, "lhs"), Operand(s.rhs, "rhs", None, s.rhs_layout)]
    if s.bias is not None:
        ops.append(Operand(s.bias, "bias", "per_column"))
    return tuple(ops)


def _step_json(s: Step) -> dict[str, Any]:
    return {
        "composite": s.call.composite, "kind": "gemm", "formula": s.gemm.describe(), "impl": "cublaslt",
        "accumulator": s.accumulator, "m": _text(s.N), "n": _text(s.M), "k": _text(s.K),
        "op_a": s.op_a, "op_b": "CUBLAS_OP_N", "lda": _text(s.lda), "ldb": _text(s.K), "ldd": _text(s.N),
        "batch": s.batch_mode, "epilogue": s.epilogue, "gelu_kernel": s.gelu_kernel,
        "weight_prep": s.weight_prep, "bias_broadcast": s.bias_broadcast, "ab_type": s.ab_type, "d_type": s.d_type, "compute": s.compute,
    }


def _attrs(s: Step, opts: Options) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "activation": s.act, "transposed_rhs": s.gemm.transposed, "accumulator": s.accumulator,
        "gelu": s.gelu, "epilogue": s.epilogue, "compute_type": s.compute, "op_a": s.op_a,
        "weight_prep": s.weight_prep,
    }
    if s.in_dtype == "float32":
        attrs["fp32_math"] = opts.fp32_math
    return attrs


def _pattern_ranks(composites: Sequence[str]) -> tuple:
    from ..registry import get_patterns_with_prefix

    names = [p.name for p in get_patterns_with_prefix(BACKEND)]
    return tuple(names.index(c) if c in names else None for c in composites)


#: The one variant of every cuBLAS function: cuBLASLt picks its kernel at run time.
_VARIANT = Variant("sm_80", "cublaslt", {"runs_on": ["8.x", "9.x"], "workspace_bytes": WORKSPACE_BYTES})


#: The wrapper's include for byocc's generic kernels (an elementwise step's declaration).
_GENERIC_INCLUDE = f'#include "{generic.HEADER_PATH.removeprefix("src/")}"'


def _elementwise_step(program: OffloadedProgram, index: int, call: CompositeCall, ctx: WrapperContext) -> WrapperStep:
    """An elementwise composite (a pattern file's ``cublas.add``): byocc's fused elementwise
    kernel, the one every backend uses (:mod:`byocc.backends.cuda.elementwise`)."""
    plan = elementwise_plan(call.func, f"function {program.symbol}, composite {call.composite}")
    step = elementwise_step(plan, call, ctx)
    header = (f"step {index}: {call.composite}: elementwise", *(f"  {line}" for line in step.header))
    return replace(step, header=header, includes=(_GENERIC_INCLUDE, *step.includes))


def _wrapper_step(opts: Options, program: OffloadedProgram, index: int, call: CompositeCall,
                  ctx: WrapperContext) -> WrapperStep:
    if gemm_step(call.func) is None and is_elementwise(call.func):
        return _elementwise_step(program, index, call, ctx)
    s = plan_step(program, index, call, opts)
    return WrapperStep(call.composite, step_code(s, ctx), scratch=_scratch(s, ctx), units=(runtime_sources()[1],),
                       header=tuple(_header_lines(program, s)), record=_step_json(s), variants=(_VARIANT,),
                       operands=_operands(s), attrs=_attrs(s, opts))


def function_codegen(opts: Options) -> FunctionCodegen:
    """The cuBLAS backend's part of every function (:func:`~byocc.backends.cuda.function.generate_function`)."""
    return FunctionCodegen(
        BACKEND, functools.partial(_wrapper_step, opts),
        lambda n: f"Backend cublas (cuBLASLt), {n} composite call(s).",
        includes=(f'#include "{HEADER_PATH.split("/", 1)[1]}"',),
        no_calls="cannot generate cuBLAS code for function {symbol}: it calls no composite",
        pattern_ranks=_pattern_ranks, keeps_gemm=_keeps_gemm)


def generate_function(symbol: str, func: Function, opts: Options,
                      constant_names: Mapping | None = None, global_symbol: str = "") -> GeneratedModule:
    """The module of one offloaded function (``symbol``: the C symbol; ``global_symbol``: its
    Relax name when that differs)."""
    fn = generate_cuda_function(function_codegen(opts), symbol, func, constant_names, global_symbol)
    sources = {s.path: s for s in (fn.source, *runtime_sources(), *fn.units)}
    if any(u.path.startswith("src/kernels/") for u in fn.units):  # byocc's generic kernels
        sources[generic.HEADER_PATH] = generic.header_source()
    if elementwise_map.uses_map(sources):
        sources[elementwise_map.HEADER_PATH] = elementwise_map.header_source()
    return GeneratedModule(BACKEND, (fn.entry,), tuple(sources.values()), needs_cublaslt=True)


def codegen(functions: Sequence[tuple[str, Function]], options: Mapping[str, object] | None,
            constant_names: Mapping | None) -> list[GeneratedModule]:
    """RunCodegen's entry for backend ``cublas``: one :class:`GeneratedModule` per function."""
    opts = parse_options(options or {})
    used = OPTIONS.to_json(OPTIONS.resolve(options))
    return [replace(generate_function(symbol, func, opts, constant_names, global_symbol), options=used)
            for symbol, global_symbol, func in exported_functions(functions)]


def supports(composite: str) -> bool:
    """Whether this codegen generates code for composite ``composite`` (a pattern name): the
    matmuls but the fp8 ones whose codegen is deferred (:data:`DEFERRED`), and a pattern
    file's composites of any name (elementwise bodies take byocc's fused kernel; the body
    decides, at codegen)."""
    return composite not in DEFERRED


__all__ = ["DEFERRED", "Options", "Step", "codegen", "function_codegen", "generate_function", "parse_options",
           "plan_step", "step_code"]
