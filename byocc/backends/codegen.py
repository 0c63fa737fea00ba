"""The codegen contract: what a backend's codegen returns to RunCodegen, and the build plan
derived from it.

A codegen is a callable ``codegen(functions, options, constant_names) -> list[GeneratedModule]``:

* ``functions``: ``[(symbol, Function), ...]``, every function of the module carrying
  ``Codegen == backend`` (annotate path: a wrapper calling one ``Composite`` local function;
  merge path: a wrapper calling several, in order); ``symbol`` is the C symbol to export: the
  function's ``global_symbol`` when that is a usable C identifier, else RunCodegen's short
  form of it (:mod:`byocc.transform.c_symbols`; the function keeps the Relax name);
* ``options``: ``target_options[backend]`` (plain values: ``arch``, ``exact_gelu``, ...),
  read through the backend's :class:`~byocc.backends.options.OptionSchema`;
* ``constant_names``: :class:`~byocc.ir.Constant` -> the name RunCodegen gave it.

A :class:`GeneratedModule` holds the source files (paths relative to the output folder) and
one :class:`EntryPoint` per exported symbol: the manifest entry, the exact C signature and the
build units its symbol needs. Nothing here knows a particular backend; a backend's codegen
is named by its record (:mod:`byocc.backends.record`).

:class:`BuildPlan` is what the build needs from codegen, typed: one :class:`BuildUnit` per
source file (its kind, the ``--arch`` selections that compile it, the ``src/`` headers it
includes, whether it needs CUTLASS or cuBLASLt), the library and the archs it has kernels
for. :meth:`BuildPlan.of` derives it from the modules' :class:`SourceFile` s and needs; the
manifest records it (``build``), and ``build.ninja``, ``config.ninja`` and ``CMakeLists.txt``
are written from it (:mod:`byocc.backends.build_files`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar

from byocc.ir import InputError

#: Version of the exported C ABI (``byocc_abi_version()``), docs/codegen.md#c-abi.
ABI_VERSION = 1
#: Bumped whenever generated code changes for the same input (part of the object-cache key).
CODEGEN_VERSION = "1"

#: Build units a source file belongs to: the compile rule ``byocc build`` and the generated
#: ``build.ninja``/``CMakeLists.txt`` use for it (docs/codegen.md#build-units).
UNIT_KINDS = ("sm90", "sm80", "light", "header")
#: The archs a build can be asked for (``byocc build --arch``).
ARCHS = ("sm_90a", "sm_80")
#: Unit kind -> the ``--arch`` selections whose build compiles it (light units: every build;
#: a header: none, it is never compiled).
UNIT_ARCHS: Mapping[str, tuple[str, ...]] = {
    "sm90": ("sm_90a",), "sm80": ("sm_80",), "light": ("sm_80", "sm_90a"), "header": (),
}

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
    global_symbol: str = ""
    """The function's Relax name; ``symbol`` when empty. It differs from ``symbol`` when it is
    no usable C identifier (:func:`byocc.transform.c_symbols.export_symbols`)."""
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
            "global_symbol": self.global_symbol or self.symbol,
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
        _check_relative(self.path)


def _check_relative(path: str) -> None:
    if path.startswith("/") or ".." in path.split("/"):
        raise ValueError(f"source path must be relative and inside the output folder: {path!r}")


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


# --------------------------------------------------------------------------- the build plan
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
_CUTLASS_HEADERS = ("cutlass/", "cute/")
_CUBLASLT_HEADERS = ("cublasLt.h",)


@dataclass(frozen=True)
class BuildUnit:
    """One file of the build: a compiled translation unit, or a header (never compiled)."""

    path: str  # relative to the output folder: src/...
    kind: str  # one of UNIT_KINDS
    archs: tuple[str, ...] = ()  # the --arch selections that compile it (UNIT_ARCHS)
    headers: tuple[str, ...] = ()  # the src/ headers it includes, transitively (sorted)
    needs_cutlass: bool = False
    needs_cublaslt: bool = False

    def __post_init__(self):
        if self.kind not in UNIT_KINDS:
            raise ValueError(f"unknown build unit kind {self.kind!r}")
        _check_relative(self.path)
        for h in self.headers:
            _check_relative(h)

    @property
    def compiled(self) -> bool:
        return self.kind != "header"

    @property
    def object(self) -> str | None:
        """``obj/<path under src, .o>``; None for a header."""
        if not self.compiled:
            return None
        rel = self.path[4:] if self.path.startswith("src/") else self.path
        return "obj/" + os.path.splitext(rel)[0] + ".o"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "archs": list(self.archs),
                "headers": list(self.headers), "object": self.object,
                "needs_cutlass": self.needs_cutlass, "needs_cublaslt": self.needs_cublaslt}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BuildUnit:
        return cls(str(data["path"]), str(data["kind"]), tuple(data.get("archs") or ()),
                   tuple(data.get("headers") or ()), bool(data.get("needs_cutlass")),
                   bool(data.get("needs_cublaslt")))


@dataclass(frozen=True)
class BuildPlan:
    """Everything the build of one output folder needs to know from codegen."""

    stem: str
    units: tuple[BuildUnit, ...]  # sorted by path; headers included
    archs: tuple[str, ...]  # the archs the library has kernels for (the manifest's ``archs``)

    @property
    def library(self) -> str:
        return f"lib/libbyocc_{self.stem}.so"

    @property
    def needs_cutlass(self) -> bool:
        return any(u.needs_cutlass for u in self.units)

    @property
    def needs_cublaslt(self) -> bool:
        return any(u.needs_cublaslt for u in self.units)

    def compiled(self, archs: Sequence[str] = ARCHS) -> tuple[BuildUnit, ...]:
        """The units a build for ``archs`` compiles, in path order."""
        return tuple(u for u in self.units if u.compiled and set(u.archs) & set(archs))

    def files(self, archs: Sequence[str] = ARCHS) -> tuple[str, ...]:
        """Every file a build for ``archs`` reads: its units and the headers they include."""
        out: dict[str, None] = {}
        for u in self.compiled(archs):
            out[u.path] = None
            out.update(dict.fromkeys(u.headers))
        return tuple(sorted(out))

    def select(self, archs: Sequence[str]) -> BuildPlan:
        """The plan a build for ``archs`` runs: its compiled units and the headers they read."""
        keep = set(self.files(archs))
        return BuildPlan(self.stem, tuple(u for u in self.units if u.path in keep), self.archs)

    def to_json(self) -> dict[str, Any]:
        return {"stem": self.stem, "library": self.library, "archs": list(self.archs),
                "needs_cutlass": self.needs_cutlass, "needs_cublaslt": self.needs_cublaslt,
                "units": [u.to_json() for u in self.units]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BuildPlan:
        """The plan a manifest's ``build`` section records (KeyError/TypeError/ValueError
        when it is malformed)."""
        units = tuple(BuildUnit.from_json(u) for u in data["units"])
        return cls(str(data["stem"]), units, tuple(data.get("archs") or ()))

    @classmethod
    def of(cls, stem: str, modules: Iterable[GeneratedModule],
           common: Iterable[SourceFile] = ()) -> BuildPlan:
        """The plan of ``modules`` plus the ``common`` sources every library has (runtime,
        headers). A unit needs CUTLASS when it includes a CUTLASS header (through ``src/``
        headers too) or is a kernel unit of a module that needs CUTLASS; it needs cuBLASLt
        when it includes ``cublasLt.h`` or is compiled from a module that needs cuBLASLt."""
        owner: dict[str, GeneratedModule | None] = {}
        by_path: dict[str, SourceFile] = {}
        for src in common:
            by_path[src.path], owner[src.path] = src, None
        for m in modules:
            for src in m.sources:
                by_path[src.path] = src
                owner[src.path] = m if owner.get(src.path) is None else owner[src.path]
        units = []
        for path in sorted(by_path):
            src = by_path[path]
            headers, system = _includes(src, by_path)
            mod = owner[path]
            compiled = src.unit != "header"
            cutlass = any(name.startswith(_CUTLASS_HEADERS) for name in system)
            cublaslt = any(name in _CUBLASLT_HEADERS for name in system)
            if mod is not None and compiled:
                cutlass = cutlass or (mod.needs_cutlass and src.unit in ("sm90", "sm80"))
                cublaslt = cublaslt or mod.needs_cublaslt
            units.append(BuildUnit(path, src.unit, UNIT_ARCHS[src.unit], headers,
                                   compiled and cutlass, compiled and cublaslt))
        archs = ("sm_80", "sm_90a") if any(u.kind == "sm90" for u in units) else ("sm_80",)
        return cls(stem, tuple(units), archs)


def _includes(src: SourceFile, by_path: Mapping[str, SourceFile]) -> tuple[tuple[str, ...], set[str]]:
    """The ``src/`` files ``src`` includes, transitively (sorted), and the other names it and
    they include (system, CUDA, CUTLASS headers)."""
    def resolve(name: str, including: str) -> str | None:
        for base in (os.path.dirname(including), "src"):
            cand = os.path.normpath(f"{base}/{name}")
            if cand in by_path:
                return cand
        return None

    seen: dict[str, None] = {}
    other: set[str] = set()
    stack = [src.path]
    while stack:
        cur = stack.pop()
        for name in _INCLUDE.findall(by_path[cur].text):
            dep = resolve(name, cur)
            if dep is None:
                other.add(name)
            elif dep not in seen and dep != src.path:
                seen[dep] = None
                stack.append(dep)
    return tuple(sorted(seen)), other


__all__ = [
    "ABI_VERSION", "ARCHS", "BuildPlan", "BuildUnit", "CODEGEN_VERSION", "CodegenError",
    "ConstantSpec", "EntryPoint", "GeneratedModule", "ROLES", "SourceFile", "TensorSpec",
    "UNIT_ARCHS", "UNIT_KINDS", "Variant",
]
