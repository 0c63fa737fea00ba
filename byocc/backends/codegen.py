"""The codegen contract: what a backend's codegen returns to RunCodegen (spec/backends.md
sections 6, 13, 14, 17).

A codegen is a callable ``codegen(functions, options, constant_names) -> list[GeneratedModule]``:

* ``functions``: ``[(global_symbol, Function), ...]``, every function of the module carrying
  ``Codegen == backend`` (annotate path: a wrapper calling one ``Composite`` local function;
  merge path: a wrapper calling several, in order);
* ``options``: ``target_options[backend]`` (plain values: ``arch``, ``exact_gelu``, ...),
  read through the backend's :class:`~byocc.backends.options.OptionSchema`;
* ``constant_names``: :class:`~byocc.ir.Constant` -> the name RunCodegen gave it.

A :class:`GeneratedModule` holds the source files (paths relative to the output folder) and
one :class:`EntryPoint` per exported symbol: the manifest entry, the exact C signature and the
build units its symbol needs. Nothing here knows a particular backend; a backend's codegen
is named by its record (:mod:`byocc.backends.record`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar

from byocc.ir import InputError

#: Version of the exported C ABI (``byocc_abi_version()``), spec section 6.1.
ABI_VERSION = 1
#: Bumped whenever generated code changes for the same input (part of the object-cache key).
CODEGEN_VERSION = "1"

#: Build units a source file belongs to: the compile rule ``byocc build`` and the generated
#: ``build.ninja``/``CMakeLists.txt`` use for it (spec section 13).
UNIT_KINDS = ("sm90", "sm80", "light", "header")

ROLES = frozenset({
    "lhs", "rhs", "bias", "residual", "data", "weight", "query", "key", "value", "qkv", "gamma",
    "beta", "weight_norm", "workspace", "const", "input", "output",
})


class CodegenError(InputError):
    """A composite that the backend cannot generate code for (exit 1, nothing written)."""


@dataclass(frozen=True)
class TensorSpec:
    """One argument or result tensor of an entry point, as the manifest lists it."""

    name: str
    role: str
    dtype: str
    shape: tuple  # int for a static dim, str (the symbolic variable's text) otherwise
    layout: str = "row_major"
    align_bytes: int | None = None
    operand_class: str | None = None
    device: str = "cuda"

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"unknown tensor role {self.role!r}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "role": self.role, "dtype": self.dtype,
                               "shape": list(self.shape), "layout": self.layout, "device": self.device}
        if self.align_bytes is not None:
            out["align_bytes"] = self.align_bytes
        if self.operand_class is not None:
            out["operand_class"] = self.operand_class
        return out


@dataclass(frozen=True)
class ConstantSpec:
    """A constant bound inside an offloaded function: the caller binds its value once with
    ``byocc_set_constant(name, tensor)`` before the first call; ``key`` names it in the
    sidecar ``npz`` file."""

    name: str
    dtype: str
    shape: tuple
    npz: str = ""  # filled in by the writer: the manifest's ``constants_file``
    key: str = ""  # the npz key; defaults to ``name``

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "npz": self.npz or None, "key": self.key or self.name}


@dataclass(frozen=True)
class Variant:
    """One compiled implementation of an entry point (tried in order at run time)."""

    arch: str
    impl: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"arch": self.arch, "impl": self.impl, **dict(self.params)}


@dataclass(frozen=True)
class EntryPoint:
    """One exported symbol: ``int32_t <symbol>(const DLTensor* const* args, int32_t num_args,
    void* scratch, uint64_t scratch_bytes, cudaStream_t stream)`` plus its scratch query."""

    symbol: str
    backend: str
    composites: tuple[str, ...]
    source_file: str
    args: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    kernel_sources: tuple[str, ...] = ()
    pattern_ranks: tuple = ()
    symbols: Mapping[str, tuple] = field(default_factory=dict)  # dim name -> ((arg, axis), ...)
    attrs: Mapping[str, Any] = field(default_factory=dict)
    scratch_bytes: int | None = 0
    scratch_expr: str | None = None
    variants: tuple[Variant, ...] = ()
    constants: tuple[ConstantSpec, ...] = ()
    steps: tuple[Mapping[str, Any], ...] = ()  # per composite, in call order (merge path)

    @property
    def num_args(self) -> int:
        return len(self.args) + len(self.outputs)

    @property
    def c_signature(self) -> str:
        return (f'extern "C" int32_t {self.symbol}(const DLTensor* const* args, int32_t num_args, '
                "void* scratch, uint64_t scratch_bytes, cudaStream_t stream);")

    @property
    def scratch_signature(self) -> str:
        return (f'extern "C" uint64_t byocc_scratch_bytes_{self.symbol}(const DLTensor* const* args, '
                "int32_t num_args);")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "symbol": self.symbol,
            "backend": self.backend,
            "composites": list(self.composites),
            "composite": self.composites[0] if len(self.composites) == 1 else None,
            "pattern_ranks": list(self.pattern_ranks),
            "source_file": self.source_file,
            "kernel_sources": list(self.kernel_sources),
            "args": [a.to_json() for a in self.args],
            "outputs": [o.to_json() for o in self.outputs],
            "num_args": self.num_args,
            "symbols": {k: [list(p) for p in v] for k, v in sorted(self.symbols.items())},
            "attrs": dict(self.attrs),
            "scratch_bytes": self.scratch_bytes,
            "scratch_expr": self.scratch_expr,
            "variants": [v.to_json() for v in self.variants],
            "constants": [c.to_json() for c in self.constants],
            "steps": [dict(s) for s in self.steps],
            "c_signature": self.c_signature,
            "scratch_signature": self.scratch_signature,
        }
        return out


@dataclass(frozen=True)
class SourceFile:
    """A generated file, ``path`` relative to the output folder (``src/...``)."""

    path: str
    text: str
    unit: str  # one of UNIT_KINDS

    def __post_init__(self):
        if self.unit not in UNIT_KINDS:
            raise ValueError(f"unknown build unit kind {self.unit!r}")
        if self.path.startswith("/") or ".." in self.path.split("/"):
            raise ValueError(f"source path must be relative and inside the output folder: {self.path!r}")


@dataclass(frozen=True)
class GeneratedModule:
    """What one codegen call produced (a runtime-module stand-in for ``external_mods``)."""

    backend: str
    entries: tuple[EntryPoint, ...]
    sources: tuple[SourceFile, ...]
    needs_cutlass: bool = False
    needs_cublaslt: bool = False
    kind: str = "cuda"
    options: Mapping[str, Any] = field(default_factory=dict)
    """The codegen options it was generated with, defaults filled in, as JSON (the
    manifest's ``codegen_options[backend]``)."""

    is_runtime_module: ClassVar[bool] = True

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(e.symbol for e in self.entries)


__all__ = [
    "ABI_VERSION", "CODEGEN_VERSION", "CodegenError", "ConstantSpec", "EntryPoint",
    "GeneratedModule", "ROLES", "SourceFile", "TensorSpec", "UNIT_KINDS", "Variant",
]
