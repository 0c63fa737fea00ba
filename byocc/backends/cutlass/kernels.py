"""CUTLASS GEMM kernel translation units: one ``src/kernels/k_<hash>.cu`` per configuration
(spec/backends.md 7.1-7.4, 7.7, 13).

* :class:`EpilogueSpec`: the composite epilogue ``D = post(bin(act(acc + bias [+ C]), residual))``;
* :class:`GemmKernelConfig`: everything a unit is keyed by (its ``hash`` names the unit);
* :func:`sm90_supports` / :func:`sm80_supports`: which configurations a unit exists for (the
  caller routes every other one to the generic GEMM + epilogue kernels);
* :func:`emit_kernel`: the unit's text. sm_90a units instantiate a CUTLASS 3.x TMA
  warp-specialised kernel (the instantiation text comes from ``cutlass_library``'s
  ``EmitGemmUniversal3xInstance``; byocc writes the fusion, the argument mapping and the error
  handling); sm_80 units a CUTLASS 2.x ``GemmUniversal`` / ``GemmUniversalWithBroadcast``.
  The emitters are :mod:`.sm90_unit` and :mod:`.sm80_unit`; the text both share (entry
  points, argument checks, header comment) is :mod:`.unit_text`;
* :func:`cutlass_include_dirs`, :func:`cutlass_version`, :data:`NVCC_COMMON_FLAGS`,
  :data:`NVCC_ARCH_FLAGS`: re-exported from :mod:`byocc.backends.toolchain`, which owns them.

Every unit defines, in namespace ``byocc``, the three functions ``byocc_gemm.h`` names:
``gemm_<hash>_can_implement``, ``gemm_<hash>_workspace_bytes`` and ``gemm_<hash>_run``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from dataclasses import fields
from typing import Literal

from byocc.backends.codegen import CodegenError
from byocc.backends.codegen import SourceFile
from byocc.backends.toolchain import NVCC_ARCH_FLAGS
from byocc.backends.toolchain import NVCC_COMMON_FLAGS
from byocc.backends.toolchain import cutlass_include_dirs
from byocc.backends.toolchain import cutlass_version

from .sm80_unit import emit_sm80
from .sm90_unit import emit_sm90
from .tiles import SM80_MENU
from .tiles import SM90_CANDIDATES
from .tiles import SM90_SWIZZLES
from .tiles import dtype_bits
from .tiles import scale_k
from .tiles import select_sm90
from .tiles import sm80_tile

# NVCC_*_FLAGS and cutlass_include_dirs/cutlass_version live in backends.toolchain; imported
# above so that kernels' old callers keep working.
Arch = Literal["sm90", "sm80"]

_ACTS = (None, "relu", "gelu", "silu")
_FLOAT_INPUTS = ("float16", "bfloat16", "float32")
_INT_INPUTS = ("int8", "uint8")
_OUT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "int32": 32}


@dataclass(frozen=True)
class EpilogueSpec:
    """The fused epilogue of a GEMM, computed in fp32 (spec 7.1, 7.2):
    ``D = post(bin(act(acc + bias [+ C]), residual))``.

    Operand placement in :c:struct:`byocc::GemmArgs`: the per-column bias is ``args.bias``
    (N elements, batch stride ``batch_stride_bias``, 0 or N); the C operand (``source ==
    "full"``) is ``args.C`` (M x N, ``ldc``, ``batch_stride_c``) and is either a full-shape
    addend (no residual) or the full residual; a per-column residual is also ``args.C``
    (N elements, ``ldc`` ignored, batch stride ``batch_stride_c``). Bias and residual have the
    output dtype (spec 7.6).
    """

    bias: Literal["per_column"] | None = None
    """A row vector of N elements added to the accumulator."""
    source: Literal["full"] | None = None
    """The C operand is read (full M x N, beta = 1)."""
    act: Literal["relu", "gelu", "silu"] | None = None
    """Activation after the bias; gelu is the erf form (never CUTLASS's GELU_taylor)."""
    residual_op: Literal["add", "multiply"] | None = None
    """How the residual combines with the activation's result."""
    residual: Literal["full", "per_column"] | None = None
    """The residual: C itself ("full", needs source="full") or a broadcast row vector."""
    post: Literal["relu"] | None = None
    """Activation after the residual (the trailing ``_relu`` of ``*_residual_*_relu``)."""

    def __post_init__(self):
        checks = (
            (self.bias in (None, "per_column"), f"bias {self.bias!r}"),
            (self.source in (None, "full"), f"source {self.source!r}"),
            (self.act in _ACTS, f"act {self.act!r}"),
            (self.residual_op in (None, "add", "multiply"), f"residual_op {self.residual_op!r}"),
            (self.residual in (None, "full", "per_column"), f"residual {self.residual!r}"),
            (self.post in (None, "relu"), f"post {self.post!r}"),
            ((self.residual is None) == (self.residual_op is None),
             "residual and residual_op come together"),
            (self.residual != "full" or self.source == "full",
             "a full residual is the C operand (source='full')"),
            (self.post is None or self.residual is not None, "post needs a residual"),
        )
        for ok, what in checks:
            if not ok:
                raise ValueError(f"invalid EpilogueSpec: {what}")

    @property
    def has_c(self) -> bool:
        """The unit reads ``args.C`` (full source or per-column residual)."""
        return self.source == "full" or self.residual == "per_column"

    @property
    def formula(self) -> str:
        """The epilogue as one line, e.g. ``D = relu(acc + bias)``."""
        terms = ["acc"]
        if self.bias:
            terms.append("bias")
        if self.source == "full" and self.residual != "full":
            terms.append("C")
        z = " + ".join(terms)
        if self.act:
            z = f"{self.act}({z})"
        if self.residual:
            operand = "C" if self.residual == "full" else "residual"
            z = f"{z} {'+' if self.residual_op == 'add' else '*'} {operand}"
        if self.post:
            z = f"{self.post}({z})"
        return f"D = {z}"


@dataclass(frozen=True)
class GemmKernelConfig:
    """Everything one kernel unit is keyed by (spec 13); M, N, K, L, strides and pointers are
    run-time arguments. sm_90a units use ``cluster``/``schedule``/``stream_k``; sm_80 units use
    ``stages``. Alignments are in elements."""

    arch: Arch
    dtype_a: str
    dtype_b: str
    dtype_c: str | None
    """dtype of the C operand (``args.C``), None when the unit reads none."""
    dtype_d: str
    accumulator: Literal["float32", "int32"]
    b_layout: Literal["nn", "tn"]
    """"nn": B is K x N row-major; "tn": B is stored N x K, K contiguous."""
    align_a: int
    align_b: int
    align_c: int
    align_d: int
    tile: tuple[int, int, int]
    cluster: tuple[int, int, int] = (1, 1, 1)
    schedule: Literal["cooperative", "pingpong"] | None = None
    stages: int | None = None
    stream_k: bool = False
    swizzle: int = 1
    """sm_90a: the tile scheduler's max_swizzle_size (1 is CUTLASS's default)."""
    epilogue: EpilogueSpec = EpilogueSpec()

    def __post_init__(self):
        if self.arch not in ("sm90", "sm80"):
            raise ValueError(f"unknown arch {self.arch!r}")
        if self.b_layout not in ("nn", "tn"):
            raise ValueError(f"unknown b_layout {self.b_layout!r}")
        if len(self.tile) != 3 or len(self.cluster) != 3:
            raise ValueError("tile and cluster have three extents")
        if (self.dtype_c is None) == self.epilogue.has_c:
            raise ValueError("dtype_c is set exactly when the epilogue reads C")

    @property
    def canonical_text(self) -> str:
        """``field=value`` lines in declaration order: what :attr:`hash` digests."""
        lines = []
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, EpilogueSpec):
                for g in fields(value):
                    lines.append(f"epilogue.{g.name}={getattr(value, g.name)}")
            else:
                lines.append(f"{f.name}={value}")
        return "\n".join(lines) + "\n"

    @property
    def hash(self) -> str:
        """First 12 hex digits of the sha256 of :attr:`canonical_text`."""
        return hashlib.sha256(self.canonical_text.encode()).hexdigest()[:12]

    @property
    def path(self) -> str:
        return f"src/kernels/k_{self.hash}.cu"

    @property
    def prefix(self) -> str:
        """``gemm_<hash>``: the three functions are ``<prefix>_can_implement`` etc."""
        return f"gemm_{self.hash}"


def _aligned_16b(dtype: str | None, align: int) -> bool:
    return dtype is not None and align * _bits(dtype) == 128


def _bits(dtype: str) -> int:
    return _OUT_BITS[dtype] if dtype in _OUT_BITS else dtype_bits(dtype)


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
    spec 7.7 menu (k-tile scaled by :func:`~byocc.backends.cutlass.tiles.scale_k`), cooperative
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
    """Operand alignments (elements) the 2.x units are built for, largest first (spec 7.3):
    16-bit 8/4/2 on the Sm80 cp.async path and 1 on the Sm75 16x8x8 two-stage path; f32
    4/2/1; 8-bit 16 only."""
    return {"float16": (8, 4, 2, 1), "bfloat16": (8, 4, 2), "float32": (4, 2, 1),
            "int8": (16,), "uint8": (16,)}[dtype]


def sm80_supports(cfg: GemmKernelConfig) -> bool:
    """Whether an sm_80 (CUTLASS 2.x tensor-op) unit exists for ``cfg``.

    Dtypes as :func:`sm90_supports` (any layout for float inputs, "tn" for 8-bit). A and B
    alignments from :func:`sm80_alignments` (alignment 1 only for f16 A/B, with 2 stages);
    D alignment dividing 128 bits, C's equal to D's. The tile is one of the spec 7.4 menu
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


def kernel_declarations(cfg: GemmKernelConfig) -> str:
    """C++ declarations of a unit's three functions, for the wrapper that calls them."""
    p = cfg.prefix
    return (
        "namespace byocc {\n"
        f"bool {p}_can_implement(const GemmArgs& args);\n"
        f"uint64_t {p}_workspace_bytes(const GemmArgs& args);\n"
        f"int {p}_run(const GemmArgs& args, void* workspace, uint64_t workspace_bytes,\n"
        f"    {' ' * len(p)}cudaStream_t stream);\n"
        "}  // namespace byocc\n"
    )


def _largest_dividing(dim: int | None, candidates: tuple[int, ...]) -> int:
    """The largest candidate dividing ``dim`` (the smallest when ``dim`` is symbolic)."""
    if dim is None:
        return min(candidates)
    return max((c for c in candidates if dim % c == 0), default=min(candidates))


def sm90_config(m: int | None, n: int | None, k: int | None, l: int | None, *, dtype: str,
                dtype_d: str, b_layout: Literal["nn", "tn"],
                epilogue: EpilogueSpec) -> GemmKernelConfig:
    """The sm_90a configuration of a problem: spec 7.7's tile choice, 16-byte alignments.
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
    alignments (spec 7.3) dividing K (A; B when "tn"), N (B when "nn"; C and D). Alignment-1
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
    "EpilogueSpec", "GemmKernelConfig", "NVCC_ARCH_FLAGS", "NVCC_COMMON_FLAGS",
    "cutlass_include_dirs", "cutlass_version", "emit_kernel", "kernel_declarations",
    "sm80_alignments", "sm80_config", "sm80_supports", "sm90_config", "sm90_supports",
]
