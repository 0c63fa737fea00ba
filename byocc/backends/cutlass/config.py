"""The configuration of one CUTLASS GEMM kernel unit: :class:`EpilogueSpec` (the fused
epilogue) and :class:`GemmKernelConfig` (everything a unit is keyed by; its ``hash`` names the
unit ``src/kernels/k_<hash>.cu``).

A module of its own so that the planner (:mod:`.gemm_plan`), the support checks
(:mod:`.kernels`) and the unit emitters (:mod:`.sm90_unit`, :mod:`.sm80_unit`,
:mod:`.unit_text`) all import it and none of them imports another for its types.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from dataclasses import fields
from typing import Literal

Arch = Literal["sm90", "sm80"]

_ACTS = (None, "relu", "gelu", "silu")


@dataclass(frozen=True)
class EpilogueSpec:
    """The fused epilogue of a GEMM, computed in fp32 (docs/codegen.md#epilogue-and-fallback-kernels, #hopper-units):
    ``D = post(bin(act(acc + bias [+ C]), residual))``.

    Operand placement in :c:struct:`byocc::GemmArgs`: the per-column bias is ``args.bias``
    (N elements, batch stride ``batch_stride_bias``, 0 or N); the C operand (``source ==
    "full"``) is ``args.C`` (M x N, ``ldc``, ``batch_stride_c``) and is either a full-shape
    addend (no residual) or the full residual; a per-column residual is also ``args.C``
    (N elements, ``ldc`` ignored, batch stride ``batch_stride_c``). Bias and residual have the
    output dtype (docs/codegen.md#edge-cases).
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


def canonical_text(cfg, head: tuple[str, ...] = ()) -> str:
    """A kernel configuration as ``field=value`` lines in declaration order (an
    :class:`EpilogueSpec` field as ``epilogue.<name>=...`` lines), after the ``head`` lines:
    what its unit's name hashes."""
    lines = list(head)
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, EpilogueSpec):
            lines.extend(f"epilogue.{g.name}={getattr(value, g.name)}" for g in fields(value))
        else:
            lines.append(f"{f.name}={value}")
    return "\n".join(lines) + "\n"


def config_hash(text: str) -> str:
    """First 12 hex digits of the sha256 of a configuration's canonical text."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class GemmKernelConfig:
    """Everything one kernel unit is keyed by (docs/codegen.md#build-units); M, N, K, L, strides and pointers are
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
        return canonical_text(self)

    @property
    def hash(self) -> str:
        """First 12 hex digits of the sha256 of :attr:`canonical_text`."""
        return config_hash(self.canonical_text)

    @property
    def path(self) -> str:
        return f"src/kernels/k_{self.hash}.cu"

    @property
    def prefix(self) -> str:
        """``gemm_<hash>``: the three functions are ``<prefix>_can_implement`` etc."""
        return f"gemm_{self.hash}"


__all__ = ["Arch", "EpilogueSpec", "GemmKernelConfig", "canonical_text", "config_hash"]
