"""CUTLASS GEMM kernel translation units: one ``src/kernels/k_<hash>.cu`` per configuration
(spec/backends.md 7.1-7.4, 7.7, 13).

* :class:`EpilogueSpec`: the composite epilogue ``D = post(bin(act(acc + bias [+ C]), residual))``;
* :class:`GemmKernelConfig`: everything a unit is keyed by (its ``hash`` names the unit);
* :func:`sm90_supports` / :func:`sm80_supports`: which configurations a unit exists for (the
  caller routes every other one to the generic GEMM + epilogue kernels);
* :func:`emit_kernel`: the unit's text. sm_90a units instantiate a CUTLASS 3.x TMA
  warp-specialised kernel (the instantiation text comes from ``cutlass_library``'s
  ``EmitGemmUniversal3xInstance``; byocc writes the fusion, the argument mapping and the error
  handling); sm_80 units a CUTLASS 2.x ``GemmUniversal`` / ``GemmUniversalWithBroadcast``;
* :func:`cutlass_include_dirs`, :func:`cutlass_version`, :data:`NVCC_COMMON_FLAGS`,
  :data:`NVCC_ARCH_FLAGS`: what the build needs to compile the units (spec 13).

Every unit defines, in namespace ``byocc``, the three functions ``byocc_gemm.h`` names:
``gemm_<hash>_can_implement``, ``gemm_<hash>_workspace_bytes`` and ``gemm_<hash>_run``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Literal

from byocc.backends.codegen import CodegenError, SourceFile

from .tiles import SM80_MENU, SM90_CANDIDATES, dtype_bits, scale_k, select_sm90, sm80_tile

Arch = Literal["sm90", "sm80"]

#: Flags of every CUDA unit (spec 13); the include directories come from cutlass_include_dirs().
NVCC_COMMON_FLAGS: tuple[str, ...] = (
    "-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "-Xcompiler=-fPIC",
    "-Xcompiler=-fvisibility=hidden",
)
#: Code-generation flags per build unit kind (SourceFile.unit). The ``a`` of sm_90a is
#: mandatory: WGMMA and TMA exist only under __CUDA_ARCH_FEAT_SM90_ALL. sm_80 units carry
#: sm_90 SASS too, so the fallback runs natively on an H200.
NVCC_ARCH_FLAGS: dict[str, tuple[str, ...]] = {
    "sm90": ("-gencode=arch=compute_90a,code=sm_90a",),
    "sm80": ("-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=sm_90"),
    "light": ("-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=sm_90"),
}

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
    only with a 128-row tile, stream-K only with cooperative. Every valid
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
    if (cfg.tile, cfg.cluster, cfg.schedule) not in menu:
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
    if cfg.arch != "sm80" or not _common_dtypes_ok(cfg) or cfg.stages is None:
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
        text = _emit_sm90(cfg)
    else:
        if not sm80_supports(cfg):
            raise CodegenError(f"no sm_80 CUTLASS kernel for {cfg}")
        text = _emit_sm80(cfg)
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
    tile, cluster, schedule, stream_k = select_sm90(m, n, k, l, dtype)
    dtype_c = dtype_d if epilogue.has_c else None
    return GemmKernelConfig(
        arch="sm90", dtype_a=dtype, dtype_b=dtype, dtype_c=dtype_c, dtype_d=dtype_d,
        accumulator="int32" if dtype in _INT_INPUTS else "float32", b_layout=b_layout,
        align_a=128 // dtype_bits(dtype), align_b=128 // dtype_bits(dtype),
        align_c=128 // _bits(dtype_d) if dtype_c else 0, align_d=128 // _bits(dtype_d),
        tile=tile, cluster=cluster, schedule=schedule, stream_k=stream_k, epilogue=epilogue)


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


def _find_cutlass_library() -> Path | None:
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def cutlass_include_dirs(override: str | Path | None = None) -> list[Path]:
    """``[<root>/include, <root>/tools/util/include]`` of the CUTLASS headers: ``override``
    (a CUTLASS checkout or the wheel's ``source`` folder) or the ``nvidia-cutlass`` wheel's
    ``cutlass_library/source``, found without importing it. Raises CodegenError if absent."""
    if override is not None:
        root = Path(override)
    else:
        package = _find_cutlass_library()
        if package is None:
            raise CodegenError(
                "CUTLASS headers not found: install the nvidia-cutlass wheel (byocc[cuda]) "
                "or pass a CUTLASS directory")
        root = package / "source"
    dirs = [root / "include", root / "tools" / "util" / "include"]
    if not (dirs[0] / "cutlass" / "cutlass.h").is_file():
        raise CodegenError(f"no CUTLASS headers under {dirs[0]}")
    return dirs


def cutlass_version(override: str | Path | None = None) -> str:
    """``MAJOR.MINOR.PATCH`` read from the headers' ``cutlass/version.h``."""
    text = (cutlass_include_dirs(override)[0] / "cutlass" / "version.h").read_text()
    parts = [re.search(rf"#define CUTLASS_{name}\s+(\d+)", text) for name in
             ("MAJOR", "MINOR", "PATCH")]
    if any(p is None for p in parts):
        raise CodegenError("cutlass/version.h has no CUTLASS_MAJOR/MINOR/PATCH")
    return ".".join(p.group(1) for p in parts if p is not None)



# ---------------------------------------------------------------------------------------------
# Shared pieces of both unit kinds

_CPP_TYPES = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t", "float32": "float",
              "int8": "int8_t", "uint8": "uint8_t", "int32": "int32_t"}
_ACT_FUNCTORS = {None: "cutlass::epilogue::thread::Identity",
                 "relu": "cutlass::epilogue::thread::ReLu",
                 "gelu": "cutlass::epilogue::thread::GELU",  # erf form, not GELU_taylor
                 "silu": "cutlass::epilogue::thread::SiLu"}
_BIN_FUNCTORS = {"add": "cutlass::plus", "multiply": "cutlass::multiplies"}


def _cutlass_library():
    """The ``cutlass_library`` modules (the nvidia-cutlass wheel), imported on first use."""
    try:
        from cutlass_library import gemm_operation, library
    except ImportError as exc:
        raise CodegenError(
            "generating CUTLASS kernels needs the nvidia-cutlass wheel (pip install byocc[cuda])"
        ) from exc
    return library, gemm_operation


def _header_comment(cfg: GemmKernelConfig, engine: str, kernel_name: str) -> str:
    ep = cfg.epilogue
    b_text = ("K x N row-major (N contiguous)" if cfg.b_layout == "nn"
              else "stored N x K (K contiguous)")
    if ep.source == "full":
        c_text = (f"{cfg.dtype_c}, full M x N (ldc), alignment {cfg.align_c}, beta = 1, as the "
                  + ("residual" if ep.residual == "full" else "addend"))
    elif ep.residual == "per_column":
        c_text = f"{cfg.dtype_c}, per-column residual (N, batch stride args.batch_stride_c)"
    else:
        c_text = "none"
    bias_text = (f"{cfg.dtype_d}, per-column (N, batch stride args.batch_stride_bias)"
                 if ep.bias else "none")
    if cfg.arch == "sm90":
        sched = (f"{cfg.schedule}, "
                 + ("stream-K" if cfg.stream_k else "persistent") + " tile scheduler")
        shape = (f"tile {'x'.join(map(str, cfg.tile))}, cluster "
                 f"{'x'.join(map(str, cfg.cluster))}, {sched}")
    else:
        shape = f"tile {'x'.join(map(str, cfg.tile))}, {cfg.stages} stages"
    rows = [
        f"// {cfg.path.rsplit('/', 1)[-1]}: one CUTLASS GEMM kernel, generated by byocc.",
        "//",
        f"//   {ep.formula.replace('D = ', 'D[l] = ').replace('acc', 'acc[l]')}",
        f"//   acc[l] = A[l] x B[l] accumulated in {cfg.accumulator}"
        f"{' (TF32 tensor-core math)' if cfg.dtype_a == 'float32' else ''}",
        "//   the epilogue computes in float32 and rounds once to D's dtype",
        "//",
        f"// engine {engine}",
        f"// A      {cfg.dtype_a}, row-major M x K, alignment {cfg.align_a}",
        f"// B      {cfg.dtype_b}, {b_text} (\"{cfg.b_layout}\"), alignment {cfg.align_b}",
        f"// C      {c_text}",
        f"// bias   {bias_text}",
        f"// D      {cfg.dtype_d}, row-major M x N, alignment {cfg.align_d}",
        f"// shape  {shape}",
        f"// kernel {kernel_name}",
        "//",
        f"// Defines byocc::{cfg.prefix}_{{can_implement,workspace_bytes,run}} (byocc_gemm.h).",
    ]
    return "\n".join(rows) + "\n"


def _tidy(text: str) -> str:
    """Trailing blanks off, at most one empty line in a row, one final newline."""
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out) + "\n"


_COMMON_HELPERS = """\
constexpr const char* kUnit = "k_%(hash)s";

bool is_empty(const GemmArgs& args) { return args.M == 0 || args.N == 0 || args.L == 0; }

// CUTLASS takes int extents; negative or oversized problems are not implementable.
bool fits_int(const GemmArgs& args) {
  const int64_t kMax = INT32_MAX;
  return args.M >= 0 && args.N >= 0 && args.K >= 0 && args.L >= 0 && args.M <= kMax &&
         args.N <= kMax && args.K <= kMax && args.L <= kMax;
}

// An operand is usable when its pointer, leading dimension and batch stride keep groups of
// `align` elements of `size` bytes aligned (0 strides broadcast and always qualify).
bool operand_ok(const void* p, int64_t ld, int64_t batch_stride, int64_t align, int64_t size) {
  return reinterpret_cast<uintptr_t>(p) %% static_cast<uintptr_t>(align * size) == 0 &&
         ld %% align == 0 && batch_stride %% align == 0;
}
"""

_ENTRY_POINTS = """\
bool %(p)s_can_implement(const GemmArgs& args) {
  if (!fits_int(args)) return false;
  if (is_empty(args)) return true;
  if (args.K == 0 || !operands_aligned(args)) return false;
  typename Gemm::Arguments arguments = make_arguments(args);
  return Gemm::can_implement(arguments) == cutlass::Status::kSuccess;
}

uint64_t %(p)s_workspace_bytes(const GemmArgs& args) {
  if (!fits_int(args) || is_empty(args)) return 0;
  typename Gemm::Arguments arguments = make_arguments(args);
  return static_cast<uint64_t>(Gemm::get_workspace_size(arguments));
}

int %(p)s_run(const GemmArgs& args, void* workspace, uint64_t workspace_bytes,
    %(pad)scudaStream_t stream) {
  if (!fits_int(args)) {
    return fail(BYOCC_E_UNSUPPORTED, "%%s: problem %%lld x %%lld x %%lld x %%lld exceeds int extents",
                kUnit, static_cast<long long>(args.M), static_cast<long long>(args.N),
                static_cast<long long>(args.K), static_cast<long long>(args.L));
  }
  if (is_empty(args)) return BYOCC_OK;
  if (args.K == 0 || !operands_aligned(args)) {
    return fail(BYOCC_E_UNSUPPORTED, "%%s: K == 0, or an operand's pointer or stride breaks the unit's alignment", kUnit);
  }
  typename Gemm::Arguments arguments = make_arguments(args);
  cutlass::Status status = Gemm::can_implement(arguments);
  if (status != cutlass::Status::kSuccess) {
    return fail(BYOCC_E_UNSUPPORTED, "%%s: can_implement refused M=%%lld N=%%lld K=%%lld L=%%lld: %%s",
                kUnit, static_cast<long long>(args.M), static_cast<long long>(args.N),
                static_cast<long long>(args.K), static_cast<long long>(args.L),
                cutlassGetStatusString(status));
  }
  const uint64_t needed = static_cast<uint64_t>(Gemm::get_workspace_size(arguments));
  if (needed > 0 && (workspace == nullptr || workspace_bytes < needed)) {
    return fail(BYOCC_E_SCRATCH, "%%s: needs %%llu workspace bytes, got %%llu", kUnit,
                static_cast<unsigned long long>(needed),
                static_cast<unsigned long long>(workspace == nullptr ? 0 : workspace_bytes));
  }
  Gemm gemm;
  status = gemm.initialize(arguments, needed > 0 ? workspace : nullptr, stream);
  if (status != cutlass::Status::kSuccess) {
    return fail(BYOCC_E_CUTLASS, "%%s: initialize failed: %%s", kUnit, cutlassGetStatusString(status));
  }
  status = gemm.run(stream);
  if (status != cutlass::Status::kSuccess) {
    return fail(BYOCC_E_CUTLASS, "%%s: run failed: %%s", kUnit, cutlassGetStatusString(status));
  }
  return check_launch(kUnit);
}
"""


def _unit_text(cfg: GemmKernelConfig, header: str, includes: list[str], types: str,
               helpers: str) -> str:
    """Assembles a unit: header comment, includes, the kernel types and helpers in an
    anonymous namespace (units never clash at link time), then the three entry points."""
    include_lines = "\n".join(f"#include \"{h}\"" for h in includes)
    p = cfg.prefix
    body = (
        f"{header}\n#include <stdint.h>\n\n{include_lines}\n\n"
        "#include \"byocc_gemm.h\"\n#include \"byocc_internal.h\"\n\n"
        "namespace byocc {\nnamespace {\n\n"
        f"{types}\n\n{_COMMON_HELPERS % {'hash': cfg.hash}}\n{helpers}\n"
        "}  // namespace\n\n"
        f"{_ENTRY_POINTS % {'p': p, 'pad': ' ' * len(p)}}\n"
        "}  // namespace byocc\n"
    )
    return _tidy(body)


def _operand_checks(operands: list[tuple[str, str, str, str, str]]) -> str:
    """``operands_aligned(args)``: one ``operand_ok`` per (pointer, ld, batch stride,
    alignment, element size) row; batch strides only count when L > 1."""
    conds = [f"operand_ok(args.{ptr}, {ld}, batched ? args.{bs} : 0, {align}, {size})"
             for ptr, ld, bs, align, size in operands]
    joined = " &&\n         ".join(conds)
    return ("bool operands_aligned(const GemmArgs& args) {\n"
            "  const bool batched = args.L > 1;\n"
            f"  return {joined};\n}}\n")


# ---------------------------------------------------------------------------------------------
# sm_90a: CUTLASS 3.x collective builders (spec 7.2)


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
        steps.append((_ACT_FUNCTORS[ep.act], f"{ep.act}: activation", ()))
    if ep.residual:
        operand = (_EvtNode(src, "C: residual") if ep.residual == "full"
                   else _row_broadcast("C", "batch_stride_c", "residual (per column)"))
        steps.append((_BIN_FUNCTORS[ep.residual_op], f"{ep.residual_op}: residual", (operand,)))
    if ep.post:
        steps.append((_ACT_FUNCTORS[ep.post], f"{ep.post}: post", ()))
    current = _EvtNode("evt::Sm90AccFetch", "acc")
    for i, (fn, comment, operands) in enumerate(steps):
        out = "ElementD" if i == len(steps) - 1 else "float"
        current = _compute(fn, out, comment, current, *operands)
    return current


def _sm90_fusion(cfg: GemmKernelConfig) -> tuple[str, str]:
    """``(type declarations, argument statements)`` for the epilogue fusion (spec 7.2 table)."""
    ep = cfg.epilogue
    act = _ACT_FUNCTORS[ep.act]
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
    lib, gemm_op = _cutlass_library()
    dt = {"float16": lib.DataType.f16, "bfloat16": lib.DataType.bf16,
          "float32": lib.DataType.tf32, "int8": lib.DataType.s8, "uint8": lib.DataType.u8}
    out_dt = {"float16": lib.DataType.f16, "bfloat16": lib.DataType.bf16,
              "float32": lib.DataType.f32, "int32": lib.DataType.s32}
    acc = lib.DataType.f32 if cfg.accumulator == "float32" else lib.DataType.s32
    ea, eb = dt[cfg.dtype_a], dt[cfg.dtype_b]
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
    c = lib.TensorDescription(out_dt[cfg.dtype_c] if full_c and cfg.dtype_c else lib.DataType.void,
                              lib.LayoutType.RowMajor, cfg.align_c if full_c else 0)
    d = lib.TensorDescription(out_dt[cfg.dtype_d], lib.LayoutType.RowMajor, cfg.align_d)
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


def _emit_sm90(cfg: GemmKernelConfig) -> str:
    op, fusion, gemm_op = _sm90_operation(cfg)
    emitter = gemm_op.EmitGemmUniversal3xInstance()
    # EmitGemmUniversal3xInstance.emit reads a non-enum functor from the emitter itself.
    emitter.epilogue_functor = fusion
    kernel_name = op.procedural_name()
    instance = emitter.emit(op)
    decl, fusion_args = _sm90_fusion(cfg)
    ep = cfg.epilogue
    c_type = _CPP_TYPES[cfg.dtype_c] if cfg.dtype_c and ep.source == "full" else "void"
    tile_shape = ", ".join(f"cute::_{x}" for x in cfg.tile)
    elem_a = "cutlass::tfloat32_t" if cfg.dtype_a == "float32" else _CPP_TYPES[cfg.dtype_a]
    elem_b = "cutlass::tfloat32_t" if cfg.dtype_b == "float32" else _CPP_TYPES[cfg.dtype_b]
    types = (
        f"using ElementA = {elem_a};\nusing ElementB = {elem_b};\n"
        f"using ElementC = {c_type};\nusing ElementD = {_CPP_TYPES[cfg.dtype_d]};\n"
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
        _operand_checks(checks) + "\n"
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
    header = _header_comment(cfg, "CUTLASS 3.x, sm_90a TMA warp-specialized", kernel_name)
    return _unit_text(cfg, header, includes, types, helpers)


# ---------------------------------------------------------------------------------------------
# sm_80: CUTLASS 2.x tensor-op GemmUniversal (spec 7.4)


def _sm80_shapes(cfg: GemmKernelConfig) -> tuple[str, tuple[int, int, int], tuple[int, int, int]]:
    """``(arch tag, warp shape, instruction shape)``. Warps are 64x64 for 128-row tiles and
    2x2 warps for the 64-row ones (cutlass_library's generator counts); alignment-1 f16 takes
    the Sm75 16x8x8 two-stage path (cp.async moves 4, 8 or 16 bytes, not 2)."""
    m, n, k = cfg.tile
    warp = (64, 64, k) if m >= 128 else (m // 2, n // 2, k)
    if cfg.dtype_a in _INT_INPUTS:
        return "cutlass::arch::Sm80", warp, (16, 8, 32)
    if cfg.dtype_a == "float32":
        return "cutlass::arch::Sm80", warp, (16, 8, 8)
    if 1 in (cfg.align_a, cfg.align_b):
        return "cutlass::arch::Sm75", warp, (16, 8, 8)
    return "cutlass::arch::Sm80", warp, (16, 8, 16)


def _sm80_kernel_name(cfg: GemmKernelConfig, arch_tag: str, inst: tuple[int, int, int],
                      warp: tuple[int, int, int]) -> str:
    """CUTLASS's procedural name of the mainloop (cutlass_library GemmOperation)."""
    lib, gemm_op = _cutlass_library()
    dt = {"float16": lib.DataType.f16, "bfloat16": lib.DataType.bf16, "float32": lib.DataType.f32,
          "int8": lib.DataType.s8, "uint8": lib.DataType.u8, "int32": lib.DataType.s32}
    acc = lib.DataType.f32 if cfg.accumulator == "float32" else lib.DataType.s32
    math_in = lib.DataType.tf32 if cfg.dtype_a == "float32" else dt[cfg.dtype_a]
    math = lib.MathInstruction(list(inst), math_in, math_in, acc, lib.OpcodeClass.TensorOp,
                               lib.MathOperation.multiply_add)
    warps = [cfg.tile[i] // warp[i] for i in range(3)]
    arch = 75 if arch_tag.endswith("Sm75") else 80
    tile = lib.TileDescription(list(cfg.tile), cfg.stages, warps, math, arch, 1024)
    layout_b = lib.LayoutType.ColumnMajor if cfg.b_layout == "tn" else lib.LayoutType.RowMajor
    op = gemm_op.GemmOperation(
        lib.GemmKind.Universal, arch, tile,
        lib.TensorDescription(dt[cfg.dtype_a], lib.LayoutType.RowMajor, cfg.align_a),
        lib.TensorDescription(dt[cfg.dtype_b], layout_b, cfg.align_b),
        lib.TensorDescription(dt[cfg.dtype_d], lib.LayoutType.RowMajor, cfg.align_d),
        lib.DataType.f32)
    return op.procedural_name()


def _emit_sm80(cfg: GemmKernelConfig) -> str:
    lib, _ = _cutlass_library()
    ep = cfg.epilogue
    arch_tag, warp, inst = _sm80_shapes(cfg)
    kernel_name = _sm80_kernel_name(cfg, arch_tag, inst, warp)
    is_int = cfg.dtype_a in _INT_INPUTS
    operator = lib.MathOperationTag[lib.MathOperation.multiply_add_saturate if is_int
                                    else lib.MathOperation.multiply_add]
    swizzle = lib.SwizzlingFunctorTag[lib.SwizzlingFunctor.Identity8]
    layout_b = "cutlass::layout::ColumnMajor" if cfg.b_layout == "tn" else "cutlass::layout::RowMajor"
    acc = "float" if cfg.accumulator == "float32" else "int32_t"
    act = _ACT_FUNCTORS[ep.act]
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
            f"    {_BIN_FUNCTORS[ep.residual_op]}, {_ACT_FUNCTORS[ep.post]}>;\n")
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
        f"using ElementA = {_CPP_TYPES[cfg.dtype_a]};\nusing ElementB = {_CPP_TYPES[cfg.dtype_b]};\n"
        f"using ElementD = {_CPP_TYPES[cfg.dtype_d]};  // also C's type\n"
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
        _operand_checks(checks) + "\n"
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
    header = _header_comment(cfg, engine, kernel_name)
    return _unit_text(cfg, header, includes, types, helpers)

__all__ = [
    "EpilogueSpec", "GemmKernelConfig", "NVCC_ARCH_FLAGS", "NVCC_COMMON_FLAGS",
    "cutlass_include_dirs", "cutlass_version", "emit_kernel", "kernel_declarations",
    "sm80_alignments", "sm80_config", "sm80_supports", "sm90_config", "sm90_supports",
]
