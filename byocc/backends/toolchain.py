"""The toolchain of a generated library: everything the build knows about the tools, in one
place.

* the compile flags: :data:`NVCC_COMMON_FLAGS` for every unit, :data:`NVCC_ARCH_FLAGS` per
  unit kind (the gencode targets), the rule of each kind (:data:`RULES`, ``$name``
  templates that ``build.ninja`` holds verbatim and that :func:`commands` expands the same
  way for the internal process pool), the arch macros of a one-arch build
  (:data:`NO_ARCH_MACRO`) and the CMake architectures (:data:`CMAKE_ARCHS`);
* discovery, reading the file system when called (nothing is cached: a test may install a
  wheel): nvcc (``$CUDACXX``, ``$CUDA_HOME``/``$CUDA_PATH``, ``PATH``), the toolkit's
  ``include`` and ``libcudart`` folders, cuBLASLt (the toolkit first, else the
  ``nvidia-cublas`` wheel: ``nvidia/cu13/{include,lib}``, or ``nvidia/cublas/...`` for the
  cu12 wheel; the wheels ship only versioned objects, so :attr:`CublasLtPaths.link_flags`
  names the file and adds an rpath), ninja (the PyPI package, else ``PATH``), the CUTLASS
  headers (``--cutlass-dir`` or the ``nvidia-cutlass`` wheel's ``cutlass_library/source``,
  found without importing it) and their version;
* :class:`Toolchain`: the machine-specific half of a build (what ``config.ninja`` holds),
  and :func:`detect_toolchain`, which fills it in.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import string
import sys
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path

from byocc.ir import ExternalToolError

from .codegen import ARCHS
from .codegen import CODEGEN_VERSION
from .codegen import UNIT_ARCHS
from .codegen import BuildPlan
from .codegen import CodegenError

# =============================================================================== the flags
#: Flags of every CUDA unit. Never ``--use_fast_math`` (it changes erf and exp).
NVCC_COMMON_FLAGS: tuple[str, ...] = (
    "-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "-Xcompiler=-fPIC",
    "-Xcompiler=-fvisibility=hidden",
)
#: Code-generation flags per unit kind. The ``a`` of sm_90a is mandatory: WGMMA and TMA exist
#: only under __CUDA_ARCH_FEAT_SM90_ALL. sm_80 and light units carry sm_90 SASS too, so they
#: run natively on an H100/H200.
NVCC_ARCH_FLAGS: dict[str, tuple[str, ...]] = {
    "sm90": ("-gencode=arch=compute_90a,code=sm_90a",),
    "sm80": ("-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=sm_90"),
    "light": ("-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=sm_90"),
}
#: Unit kinds compiled in pool ``heavy`` (CUTLASS kernels: about 3.6 GB and 50 s each).
HEAVY_KINDS = ("sm90", "sm80")
COMPILED_KINDS = ("sm90", "sm80", "light")
#: ``--arch`` value -> the unit kinds only its build compiles (light units: every build).
ARCH_KINDS = {arch: tuple(k for k in HEAVY_KINDS if UNIT_ARCHS[k] == (arch,)) for arch in ARCHS}
#: The macro a light unit sees when the units of one kind are not built.
NO_ARCH_MACRO = {"sm90": "BYOCC_NO_SM90", "sm80": "BYOCC_NO_SM80"}
#: CUDA_ARCHITECTURES of each unit kind in the CMake project.
CMAKE_ARCHS = {"sm90": "90a", "sm80": "80;90", "light": "80;90"}

#: The command of each ninja rule, as a ``$name`` template. Light units see ``$defines`` (the
#: arch macros); kernel units do not, so a one-arch build keeps their cache keys.
RULES: dict[str, str] = {
    **{f"nvcc_{kind}": "$launcher $nvcc $common_flags $cutlass_cflags $cublaslt_cflags"
       + (" $defines" if kind == "light" else "") + f" ${kind}_flags -c $in -o $out"
       for kind in COMPILED_KINDS},
    "link": "$nvcc -shared -cudart shared $ldflags -o $out $in $link_libs",
}


def skipped_kinds(archs: Sequence[str]) -> tuple[str, ...]:
    """The kernel unit kinds a build for ``archs`` leaves out."""
    return tuple(k for a, kinds in ARCH_KINDS.items() if a not in archs for k in kinds)


def arch_defines(archs: Sequence[str]) -> tuple[str, ...]:
    """The macros the light units of a build for ``archs`` see (``BYOCC_NO_SM90`` ...)."""
    return tuple(NO_ARCH_MACRO[k] for k in skipped_kinds(archs))


# =========================================================================== discovery
def find_optional_nvcc() -> str | None:
    """The nvcc executable, or None."""
    candidates = [os.environ.get("CUDACXX")]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            candidates.append(str(Path(root) / "bin" / "nvcc"))
    candidates.append(shutil.which("nvcc"))
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


def find_nvcc() -> str:
    """The nvcc executable; :class:`ExternalToolError` (exit 3) when there is none."""
    nvcc = find_optional_nvcc()
    if nvcc is None:
        raise ExternalToolError("nvcc not found (set CUDACXX or CUDA_HOME, or put nvcc on PATH)")
    return nvcc


def find_ninja() -> str | None:
    """The PyPI ``ninja`` package's binary, else ``ninja`` on PATH."""
    try:
        import ninja  # the PyPI package: a tiny module with BIN_DIR

        cand = Path(getattr(ninja, "BIN_DIR", "")) / "ninja"
        if cand.is_file():
            return str(cand)
    except ImportError:
        pass
    return shutil.which("ninja")


def _toolkit_roots() -> list[Path]:
    roots: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(Path(os.environ[var]))
    nvcc = find_optional_nvcc()
    if nvcc is not None:
        roots.append(Path(os.path.realpath(nvcc)).parent.parent)
    # nvcc may be a wrapper script outside the toolkit; CMake's FindCUDAToolkit also falls back
    # to the conventional link.
    roots.append(Path("/usr/local/cuda"))
    out: list[Path] = []
    for r in roots:
        if r not in out:
            out.append(r)
    return out


def find_optional_cuda_include() -> str | None:
    """The toolkit folder holding ``cuda_runtime_api.h``, or None."""
    for root in _toolkit_roots():
        for inc in (root / "include", *sorted(root.glob("targets/*/include"))):
            if (inc / "cuda_runtime_api.h").is_file():
                return str(inc)
    return None


def cuda_lib_dir() -> str | None:
    """The toolkit folder holding ``libcudart.so`` (next to its ``include``), or None."""
    include = find_optional_cuda_include()
    if include is None:
        return None
    root = Path(include).resolve().parent
    for sub in ("lib64", "lib"):
        if (root / sub / "libcudart.so").exists() or list((root / sub).glob("libcudart.so.*")):
            return str(root / sub)
    return None


# ------------------------------------------------------------------------------ cuBLASLt
#: Wheel layouts: (folder under ``nvidia/``, shared-object names, newest first).
_WHEEL_LAYOUTS = (
    ("cu13", ("libcublasLt.so.13",)),
    ("cublas", ("libcublasLt.so.12", "libcublasLt.so.11")),
)
_TOOLKIT_LIBS = ("libcublasLt.so", "libcublasLt.so.13", "libcublasLt.so.12")


@dataclass(frozen=True)
class CublasLtPaths:
    """The cuBLASLt header folder and shared object one build uses."""

    include_dir: str
    """Folder holding ``cublasLt.h`` (and ``cublas_api.h``)."""
    lib_dir: str
    """Folder holding :attr:`lib_file`."""
    lib_file: str
    """The shared object's file name, e.g. ``libcublasLt.so.13``."""
    source: str
    """``"toolkit"`` or ``"wheel"``."""

    @property
    def include_flags(self) -> tuple[str, ...]:
        return (f"-I{self.include_dir}",)

    @property
    def link_flags(self) -> tuple[str, ...]:
        """nvcc link arguments: the exact file (no unversioned link is needed) plus an rpath,
        so the built library finds it at run time without ``LD_LIBRARY_PATH``."""
        return (f"-L{self.lib_dir}", f"-l:{self.lib_file}", "-Xlinker", f"-rpath,{self.lib_dir}")


def _toolkit_cublaslt() -> CublasLtPaths | None:
    for root in _toolkit_roots():
        includes = [root / "include", *sorted(root.glob("targets/*/include"))]
        libs = [root / "lib64", root / "lib", *sorted(root.glob("targets/*/lib"))]
        inc = next((i for i in includes if (i / "cublasLt.h").is_file()), None)
        if inc is None:
            continue
        for lib in libs:
            for name in _TOOLKIT_LIBS:
                if (lib / name).exists():
                    return CublasLtPaths(str(inc), str(lib), name, "toolkit")
    return None


def _wheel_cublaslt() -> CublasLtPaths | None:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        for folder, names in _WHEEL_LAYOUTS:
            inc = Path(base) / folder / "include"
            lib = Path(base) / folder / "lib"
            if not (inc / "cublasLt.h").is_file():
                continue
            for name in names:
                if (lib / name).exists():
                    return CublasLtPaths(str(inc), str(lib), name, "wheel")
    return None


def find_optional_cublaslt() -> CublasLtPaths | None:
    """cuBLASLt's header and library folders (toolkit first, then the wheel), or None."""
    return _toolkit_cublaslt() or _wheel_cublaslt()


def find_cublaslt() -> CublasLtPaths:
    """As :func:`find_optional_cublaslt`; :class:`ExternalToolError` (exit 3) when absent."""
    found = find_optional_cublaslt()
    if found is None:
        raise ExternalToolError(
            "cuBLASLt not found: neither the CUDA toolkit nor an installed nvidia-cublas wheel "
            "provides cublasLt.h and libcublasLt (pip install 'byocc[cuda]' or nvidia-cublas)")
    return found


# ------------------------------------------------------------------------------- CUTLASS
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


def optional_cutlass_version() -> str | None:
    """The installed CUTLASS headers' version, or None when there are none."""
    try:
        return cutlass_version()
    except (CodegenError, OSError):
        return None


#: CUTLASS's Hopper FMHA example (its ``collective/``, ``kernel/`` and ``device/`` headers),
#: relative to the CUTLASS root: the sm_90a fused attention units
#: (``csrc/byocc_attention_sm90.cuh``) include ``kernel/fmha_kernel_builder.hpp`` from it.
FMHA_EXAMPLE = "examples/88_hopper_fmha"


def find_cutlass(override: str | None = None) -> tuple[str, ...] | None:
    """CUTLASS include directories: ``--cutlass-dir`` (a CUTLASS checkout, the wheel's
    ``source`` folder, or their ``include``), else the ``nvidia-cutlass`` package; plus the
    root's :data:`FMHA_EXAMPLE` folder when it has one."""
    roots: list[str | None] = [override]
    if override is not None and (Path(override) / "cutlass" / "cutlass.h").is_file():
        roots = [str(Path(override).parent)]
    for root in roots:
        try:
            dirs = cutlass_include_dirs(root)
        except CodegenError:
            continue
        extra = [Path(dirs[0]).parent / FMHA_EXAMPLE]  # the sm_90a attention units include it
        return tuple(str(Path(d).resolve()) for d in [*dirs, *extra] if Path(d).is_dir())
    return None


def _cutlass_version_of(dirs: Sequence[str]) -> str:
    try:
        return cutlass_version(Path(dirs[0]).parent) if dirs else ""
    except (CodegenError, OSError):
        return ""


# ===================================================================== this machine's half
def default_cache_dir() -> str:
    """``$BYOCC_CACHE``, default ``~/.cache/byocc``."""
    return os.environ.get("BYOCC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "byocc")


def default_heavy_depth(memory_bytes: int) -> int:
    """``max(1, min(nproc, floor(GiB / 4)))``: an SM90 CUTLASS unit needs about 3.6 GB."""
    nproc = os.cpu_count() or 1
    return max(1, min(nproc, memory_bytes // (4 << 30)))


def total_memory() -> int:
    """Physical memory in bytes (what generated files assume: it does not change per run)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 4 << 30


@dataclass(frozen=True)
class Toolchain:
    """The machine-specific half of a build (what ``config.ninja`` holds)."""

    nvcc: str = "nvcc"
    cutlass_include_dirs: tuple[str, ...] = ()
    cublaslt: CublasLtPaths | None = None  # None: not needed (or not found: -lcublasLt)
    cuda_lib_dir: str | None = None
    launcher: str = ""  # ccache, sccache, distcc ... (inside the object cache)
    cache_dir: str | None = None  # None: no object cache
    python: str = sys.executable
    cutlass_version: str = ""
    codegen_version: str = CODEGEN_VERSION
    heavy_depth: int = 1

    def compile_prefix(self) -> str:
        """What precedes nvcc in a compile command: the object cache (running the launcher),
        the launcher alone, or nothing."""
        if self.cache_dir is None:
            return self.launcher
        words = [self.python, "-m", "byocc.runtime.objcache", "--cache-dir", self.cache_dir,
                 "--salt", f"codegen={self.codegen_version}"]
        if self.cutlass_version:
            words += ["--salt", f"cutlass={self.cutlass_version}"]
        if self.launcher:
            words += ["--launcher", self.launcher]
        return " ".join(shlex.quote(w) for w in words) + " --"

    def variables(self) -> dict[str, str]:
        """The values of ``config.ninja`` (shell words, not ninja-escaped)."""
        def q(words: Iterable[str]) -> str:
            return " ".join(shlex.quote(w) for w in words)

        return {
            "nvcc": q([self.nvcc]),
            "launcher": self.compile_prefix(),
            "cutlass_cflags": q(f"-I{d}" for d in self.cutlass_include_dirs),
            "cublaslt_cflags": q(self.cublaslt.include_flags) if self.cublaslt else "",
            "cublaslt_libs": q(self.cublaslt.link_flags) if self.cublaslt else "-lcublasLt",
            "ldflags": q(["-Xlinker", f"-rpath,{self.cuda_lib_dir}"]) if self.cuda_lib_dir else "",
            "heavy_depth": str(self.heavy_depth),
        }


def detect_toolchain(needs_cutlass: bool, needs_cublaslt: bool, *, strict: bool = False,
                     cutlass_dir: str | None = None, launcher: str = "",
                     cache_dir: str | None = None, heavy_depth: int | None = None) -> Toolchain:
    """The toolchain of this machine. ``strict``: a missing tool is an
    :class:`ExternalToolError` naming it (``byocc build``); otherwise a placeholder is
    written (``byocc partition -o`` on a machine without CUDA). Without ``heavy_depth`` the
    pool depth follows the physical memory, so that generated files do not change with the
    free memory of the moment (``byocc build`` passes one from the free memory)."""
    nvcc = find_nvcc() if strict else find_optional_nvcc()
    tc = Toolchain(nvcc=nvcc or "nvcc", cuda_lib_dir=cuda_lib_dir() if nvcc else None,
                   launcher=launcher, cache_dir=cache_dir)
    if needs_cutlass:
        dirs = find_cutlass(cutlass_dir)
        if dirs is None and strict:
            where = f" in {cutlass_dir}" if cutlass_dir else " (pip install nvidia-cutlass, or --cutlass-dir)"
            raise ExternalToolError(f"CUTLASS headers not found{where}")
        tc = replace(tc, cutlass_include_dirs=dirs or (), cutlass_version=_cutlass_version_of(dirs or ()))
    if needs_cublaslt:
        found = find_cublaslt() if strict else find_optional_cublaslt()
        if found is not None:
            tc = replace(tc, cublaslt=found)
    if heavy_depth is None:
        heavy_depth = default_heavy_depth(total_memory())
    return replace(tc, heavy_depth=max(1, int(heavy_depth)))


# ==================================================================== the build's variables
def plan_variables(plan: BuildPlan, archs: Sequence[str] = ARCHS) -> dict[str, str]:
    """The values ``build.ninja`` sets itself (they depend on the plan and the archs, not
    on the machine). ``link_libs`` refers to config.ninja's ``$cublaslt_libs`` when a unit
    of the build needs cuBLASLt."""
    needs_cublaslt = any(u.needs_cublaslt for u in plan.compiled(archs))
    return {
        "common_flags": " ".join(NVCC_COMMON_FLAGS + ("-Isrc",)),
        **{f"{kind}_flags": " ".join(NVCC_ARCH_FLAGS[kind]) for kind in COMPILED_KINDS},
        "defines": " ".join(f"-D{d}" for d in arch_defines(archs)),
        "link_libs": "$cublaslt_libs" if needs_cublaslt else "",
    }


@dataclass(frozen=True)
class Step:
    """One command of a build: a compile (``unit`` set) or the link."""

    output: str
    command: str  # a shell command line, run in the output folder
    description: str
    heavy: bool = False
    unit: str | None = None  # the source compiled


def commands(plan: BuildPlan, tc: Toolchain, archs: Sequence[str] = ARCHS) -> list[Step]:
    """The commands of a build for ``archs``: one compile per unit (path order), then the
    link; exactly what ninja runs from the files :mod:`byocc.backends.build_files` writes."""
    values: dict[str, str] = {**plan_variables(plan, archs), **tc.variables()}
    values["link_libs"] = string.Template(values["link_libs"]).substitute(values)
    steps = []
    for u in plan.compiled(archs):
        assert u.object is not None
        command = expand(RULES[f"nvcc_{u.kind}"], values, inputs=[u.path], output=u.object)
        steps.append(Step(u.object, command, f"{u.kind} {u.path}", u.kind in HEAVY_KINDS, u.path))
    objects = [s.output for s in steps]
    link = expand(RULES["link"], values, inputs=objects, output=plan.library)
    return [*steps, Step(plan.library, link, f"link {plan.library}")]


def expand(template: str, values: Mapping[str, str], *, inputs: Sequence[str], output: str) -> str:
    """A rule's command with ``values``, ``$in`` and ``$out`` filled in as ninja does (plain
    concatenation: an empty value leaves its spaces)."""
    return string.Template(template).substitute(values, **{"in": " ".join(inputs), "out": output})


__all__ = [
    "ARCHS", "ARCH_KINDS", "CMAKE_ARCHS", "COMPILED_KINDS", "CublasLtPaths", "FMHA_EXAMPLE", "HEAVY_KINDS",
    "NO_ARCH_MACRO", "NVCC_ARCH_FLAGS", "NVCC_COMMON_FLAGS", "RULES", "Step", "Toolchain",
    "arch_defines", "commands", "cuda_lib_dir", "cutlass_include_dirs", "cutlass_version",
    "default_cache_dir", "default_heavy_depth", "detect_toolchain", "expand", "find_cublaslt",
    "find_cutlass", "find_ninja", "find_nvcc", "find_optional_cublaslt",
    "find_optional_cuda_include", "find_optional_nvcc", "optional_cutlass_version",
    "plan_variables", "skipped_kinds", "total_memory",
]
