"""The build files of a generated library: ``build.ninja``, ``config.ninja`` and
``CMakeLists.txt`` (spec/backends.md sections 13, 17.2, 17.3).

``build.ninja`` is machine-independent and byte-deterministic: the flags of spec 13, one
compile edge per translation unit (rules ``nvcc_sm90``, ``nvcc_sm80``, ``nvcc_light``; the
first two in pool ``heavy``), objects under ``obj/``, one ``link`` edge to
``lib/libbyocc_<stem>.so``. Everything that depends on the machine is in ``config.ninja``,
which it includes:

==================  ==================================================================
``nvcc``            the compiler
``launcher``        compile-command prefix: the object cache
                    (``python -m byocc.runtime.objcache ... --``), a user launcher
                    (``ccache``), both (the cache runs the launcher), or empty
``cutlass_cflags``  ``-I`` flags of the CUTLASS headers (empty when no unit needs them)
``cublaslt_cflags`` ``-I`` of ``cublasLt.h`` (the toolkit's, or the ``nvidia-cublas`` wheel's)
``cublaslt_libs``   ``-L<dir> -l:libcublasLt.so.13 -Xlinker -rpath,<dir>`` (or ``-lcublasLt``)
``ldflags``         extra link flags (an rpath to the toolkit's ``libcudart``)
``defines``         ``-DBYOCC_NO_SM90`` / ``-DBYOCC_NO_SM80`` for a one-arch build (light
                    units only: the kernel units stay cache hits)
``heavy_depth``     depth of pool ``heavy``
==================  ==================================================================

``byocc build`` rewrites ``config.ninja`` for the machine it runs on; ``ninja`` in the
folder builds with whatever it holds. A header (``unit == "header"``) is never compiled;
each edge lists the headers of ``src/`` its unit includes as implicit dependencies.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path

from byocc.ir import ExternalToolError

from .codegen import CODEGEN_VERSION
from .codegen import CodegenError
from .codegen import SourceFile
from .cuda.cuda_paths import CublasLtPaths
from .cuda.cuda_paths import find_cublaslt
from .cuda.cuda_paths import find_nvcc
from .cuda.cuda_paths import find_optional_cublaslt
from .cuda.cuda_paths import find_optional_cuda_include
from .cuda.cuda_paths import find_optional_nvcc
from .cutlass.kernels import NVCC_ARCH_FLAGS
from .cutlass.kernels import NVCC_COMMON_FLAGS
from .cutlass.kernels import cutlass_include_dirs
from .cutlass.kernels import cutlass_version

#: Unit kinds compiled in pool ``heavy``.
HEAVY_KINDS = ("sm90", "sm80")
COMPILED_KINDS = ("sm90", "sm80", "light")
#: ``byocc build --arch`` values -> the unit kinds they build (light units always).
ARCH_KINDS = {"sm_90a": ("sm90",), "sm_80": ("sm80",)}
#: The macro a wrapper sees when the units of one arch are not built.
NO_ARCH_MACRO = {"sm90": "BYOCC_NO_SM90", "sm80": "BYOCC_NO_SM80"}
#: CUDA_ARCHITECTURES of each unit kind in the CMake project.
CMAKE_ARCHS = {"sm90": "90a", "sm80": "80;90", "light": "80;90"}

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


@dataclass(frozen=True)
class Unit:
    """One translation unit of the build: its source, kind and the ``src/`` headers it
    includes (transitively), which are its implicit dependencies."""

    source: str
    kind: str
    headers: tuple[str, ...] = ()

    @property
    def object(self) -> str:
        rel = self.source[4:] if self.source.startswith("src/") else self.source
        return "obj/" + str(Path(rel).with_suffix(".o"))


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
    defines: tuple[str, ...] = ()

    def compile_prefix(self) -> str:
        if self.cache_dir is None:
            return self.launcher
        words = [self.python, "-m", "byocc.runtime.objcache", "--cache-dir", self.cache_dir,
                 "--salt", f"codegen={self.codegen_version}"]
        if self.cutlass_version:
            words += ["--salt", f"cutlass={self.cutlass_version}"]
        if self.launcher:
            words += ["--launcher", self.launcher]
        return " ".join(shlex.quote(w) for w in words) + " --"



# --------------------------------------------------------------------------- discovery
# nvcc and cuBLASLt come from backends.cuda.cuda_paths, the CUTLASS headers and the flags from
# backends.cutlass.kernels (one lookup each); ninja and the toolkit's libcudart from here.
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


def find_cutlass(override: str | None = None) -> tuple[str, ...] | None:
    """CUTLASS include directories: ``--cutlass-dir`` (a CUTLASS checkout, the wheel's
    ``source`` folder, or their ``include``), else the ``nvidia-cutlass`` package."""
    roots: list[str | None] = [override]
    if override is not None and (Path(override) / "cutlass" / "cutlass.h").is_file():
        roots = [str(Path(override).parent)]
    for root in roots:
        try:
            dirs = cutlass_include_dirs(root)
        except CodegenError:
            continue
        return tuple(str(Path(d).resolve()) for d in dirs if Path(d).is_dir())
    return None


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


def detect_toolchain(needs_cutlass: bool, needs_cublaslt: bool, *, strict: bool = False,
                     cutlass_dir: str | None = None, launcher: str = "",
                     cache_dir: str | None = None, heavy_depth: int | None = None,
                     defines: Sequence[str] = ()) -> Toolchain:
    """The toolchain of this machine. ``strict``: a missing tool is an
    :class:`ExternalToolError` naming it (``byocc build``); otherwise a placeholder is
    written (``byocc partition -o`` on a machine without CUDA). Without ``heavy_depth`` the
    pool depth follows the physical memory, so that generated files do not change with the
    free memory of the moment (``byocc build`` passes one from the free memory)."""
    nvcc = find_nvcc() if strict else find_optional_nvcc()
    tc = Toolchain(nvcc=nvcc or "nvcc", cuda_lib_dir=cuda_lib_dir() if nvcc else None,
                   launcher=launcher, cache_dir=cache_dir, defines=tuple(defines))
    if needs_cutlass:
        dirs = find_cutlass(cutlass_dir)
        if dirs is None and strict:
            where = f" in {cutlass_dir}" if cutlass_dir else " (pip install nvidia-cutlass, or --cutlass-dir)"
            raise ExternalToolError(f"CUTLASS headers not found{where}")
        tc = replace(tc, cutlass_include_dirs=dirs or (), cutlass_version=_cutlass_version(dirs or ()))
    if needs_cublaslt:
        found = find_cublaslt() if strict else find_optional_cublaslt()
        if found is not None:
            tc = replace(tc, cublaslt=found)
    if heavy_depth is None:
        heavy_depth = default_heavy_depth(total_memory())
    return replace(tc, heavy_depth=max(1, int(heavy_depth)))


def _cutlass_version(dirs: Sequence[str]) -> str:
    try:
        return cutlass_version(Path(dirs[0]).parent) if dirs else ""
    except (CodegenError, OSError):
        return ""


# --------------------------------------------------------------------------- the files
def units_of(sources: Iterable[SourceFile]) -> tuple[Unit, ...]:
    """The compiled units of ``sources`` (sorted by path), each with the headers of
    ``sources`` it includes, directly or through other headers."""
    srcs = sorted(sources, key=lambda s: s.path)
    by_path = {s.path: s for s in srcs}

    def resolve(name: str, including: str) -> str | None:
        for base in (str(Path(including).parent), "src"):
            cand = os.path.normpath(f"{base}/{name}")
            if cand in by_path:
                return cand
        return None

    units = []
    for s in srcs:
        if s.unit == "header":
            continue
        seen: dict[str, None] = {}
        stack = [s.path]
        while stack:
            cur = stack.pop()
            for name in _INCLUDE.findall(by_path[cur].text):
                dep = resolve(name, cur)
                if dep is not None and dep not in seen and dep != s.path:
                    seen[dep] = None
                    stack.append(dep)
        units.append(Unit(s.path, s.unit, tuple(sorted(seen))))
    return tuple(units)


def _esc(path: str) -> str:
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def build_ninja(stem: str, units: Sequence[Unit], needs_cutlass: bool, needs_cublaslt: bool,
                skip_kinds: Sequence[str] = ()) -> str:
    """The text of ``build.ninja`` (deterministic). ``skip_kinds``: unit kinds left out
    (a one-arch build; the wrappers then see ``-DBYOCC_NO_SM<xx>`` from ``defines``)."""
    lines = [
        f"# build.ninja: builds lib/libbyocc_{stem}.so; written by byocc (spec/backends.md 13).",
        "# Machine-specific settings are in config.ninja (`byocc build DIR` rewrites it for the",
        "# machine it runs on); `ninja` in this folder builds with the settings it holds.",
        "ninja_required_version = 1.5",
        "",
        "include config.ninja",
        "",
        f"byocc_stem = {stem}",
        f"byocc_needs_cutlass = {int(needs_cutlass)}",
        f"byocc_needs_cublaslt = {int(needs_cublaslt)}",
        "common_flags = " + " ".join(NVCC_COMMON_FLAGS + ("-Isrc",)),
    ]
    lines += [f"{kind}_flags = " + " ".join(NVCC_ARCH_FLAGS[kind]) for kind in COMPILED_KINDS]
    lines += ["", "pool heavy", "  depth = $heavy_depth", ""]
    for kind in COMPILED_KINDS:
        # the arch macros are for the wrappers: a one-arch build must not recompile kernels
        defines = " $defines" if kind == "light" else ""
        lines += [
            f"rule nvcc_{kind}",
            f"  command = $launcher $nvcc $common_flags $cutlass_cflags $cublaslt_cflags{defines} "
            f"${kind}_flags -c $in -o $out",
            f"  description = {kind} $in",
        ]
        if kind in HEAVY_KINDS:
            lines.append("  pool = heavy")
        lines.append("")
    link_libs = " $cublaslt_libs" if needs_cublaslt else ""
    lines += ["rule link",
              f"  command = $nvcc -shared -cudart shared $ldflags -o $out $in{link_libs}",
              "  description = link $out", ""]
    objects = []
    for u in units:
        if u.kind in skip_kinds or u.kind not in COMPILED_KINDS:
            continue
        implicit = (" | " + " ".join(_esc(h) for h in u.headers)) if u.headers else ""
        lines.append(f"build {_esc(u.object)}: nvcc_{u.kind} {_esc(u.source)}{implicit}")
        objects.append(_esc(u.object))
    lib = f"lib/libbyocc_{stem}.so"
    lines += ["", f"build {lib}: link " + " ".join(objects), "", f"default {lib}", ""]
    return "\n".join(lines)


def config_ninja(tc: Toolchain) -> str:
    """The text of ``config.ninja`` for ``tc``."""
    def q(words: Iterable[str]) -> str:
        return " ".join(shlex.quote(w).replace("$", "$$") for w in words)

    cutlass = q(f"-I{d}" for d in tc.cutlass_include_dirs)
    cublas = q(tc.cublaslt.include_flags) if tc.cublaslt else ""
    ldflags = q(["-Xlinker", f"-rpath,{tc.cuda_lib_dir}"]) if tc.cuda_lib_dir else ""
    values = {
        "nvcc": q([tc.nvcc]),
        "launcher": tc.compile_prefix().replace("$", "$$"),
        "cutlass_cflags": cutlass,
        "cublaslt_cflags": cublas,
        "cublaslt_libs": q(tc.cublaslt.link_flags) if tc.cublaslt else "-lcublasLt",
        "ldflags": ldflags,
        "defines": q(f"-D{d}" for d in tc.defines),
        "heavy_depth": str(tc.heavy_depth),
    }
    lines = ["# config.ninja: machine-specific settings of build.ninja, written by byocc",
             "# (`byocc build DIR` rewrites it; edit freely for a hand-run `ninja`)."]
    lines += [f"{k} = {v}".rstrip() for k, v in values.items()]
    return "\n".join(lines) + "\n"


def cmake_lists(stem: str, units: Sequence[Unit], needs_cutlass: bool, needs_cublaslt: bool,
                tc: Toolchain) -> str:
    """The text of ``CMakeLists.txt`` (spec 17.3): target ``byocc_<stem>`` (SHARED) made
    of one OBJECT library per unit kind, so that each kind gets its CUDA_ARCHITECTURES."""
    target = f"byocc_{stem}"
    kinds = [k for k in COMPILED_KINDS if any(u.kind == k for u in units)]
    archs = sorted({a for k in kinds for a in CMAKE_ARCHS[k].split(";")}, key=lambda a: (a[:2], a))
    out = [
        f"# CMakeLists.txt: builds the target {target} (lib{target}.so); written by byocc",
        "# (spec/backends.md 17.3). Use it from a project with",
        f"#   add_subdirectory(<this folder>)  and  target_link_libraries(app PRIVATE {target})",
        "# byocc_abi.h (src/) is its public header. CMAKE_CUDA_COMPILER_LAUNCHER (ccache, sccache)",
        "# applies to every unit. -DBYOCC_SM90=OFF builds the sm_80 units only.",
        "cmake_minimum_required(VERSION 3.24)",
        f"project({target} LANGUAGES CXX CUDA)",
        "find_package(CUDAToolkit REQUIRED)",
        "",
        'option(BYOCC_SM90 "Build the sm_90a units" ON)',
    ]
    if needs_cutlass:
        out.append(f'set(BYOCC_CUTLASS_INCLUDE_DIRS "{";".join(tc.cutlass_include_dirs)}" CACHE STRING '
                   '"CUTLASS include directories")')
    if needs_cublaslt:
        wheel = tc.cublaslt if tc.cublaslt and tc.cublaslt.source != "toolkit" else None
        lib = f"{wheel.lib_dir}/{wheel.lib_file}" if wheel else ""
        out += [
            f'set(BYOCC_CUBLASLT_LIBRARY "{lib}" CACHE FILEPATH '
            '"libcublasLt outside the toolkit (empty: CUDA::cublasLt)")',
            f'set(BYOCC_CUBLASLT_INCLUDE_DIR "{wheel.include_dir if wheel else ""}" CACHE PATH '
            '"Directory of cublasLt.h outside the toolkit")',
        ]
    out += [
        "",
        "set(_byocc_defines NDEBUG)",
        "if(NOT BYOCC_SM90)",
        "  list(APPEND _byocc_defines BYOCC_NO_SM90)",
        "endif()",
        "function(byocc_units name archs)",
        "  add_library(${name} OBJECT ${ARGN})",
        "  set_target_properties(${name} PROPERTIES CUDA_ARCHITECTURES \"${archs}\" CUDA_STANDARD 17",
        "    CUDA_STANDARD_REQUIRED ON POSITION_INDEPENDENT_CODE ON CUDA_VISIBILITY_PRESET hidden",
        "    CUDA_RUNTIME_LIBRARY Shared)",
        "  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-O3 --expt-relaxed-constexpr>)",
        "  target_compile_definitions(${name} PRIVATE ${_byocc_defines})",
        "  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src"
        + (" ${BYOCC_CUTLASS_INCLUDE_DIRS}" if needs_cutlass else "")
        + (" ${BYOCC_CUBLASLT_INCLUDE_DIR}" if needs_cublaslt else "") + ")",
        "endfunction()",
        "",
    ]
    objects = []
    for kind in kinds:
        files = " ".join(u.source for u in units if u.kind == kind)
        call = f'byocc_units({target}_{kind} "{CMAKE_ARCHS[kind]}" {files})'
        if kind == "sm90":
            out += ["if(BYOCC_SM90)", "  " + call,
                    f"  set(_byocc_sm90_objects $<TARGET_OBJECTS:{target}_sm90>)", "endif()"]
            objects.append("${_byocc_sm90_objects}")
        else:
            out.append(call)
            objects.append(f"$<TARGET_OBJECTS:{target}_{kind}>")
    out += [
        "",
        f"add_library({target} SHARED {' '.join(objects)})",
        f'set_target_properties({target} PROPERTIES LINKER_LANGUAGE CUDA CUDA_ARCHITECTURES "{";".join(archs)}"',
        "  CUDA_RUNTIME_LIBRARY Shared LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/lib)",
        f"target_include_directories({target} PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}}/src)",
        f"target_link_libraries({target} PUBLIC CUDA::cudart)",
    ]
    if needs_cublaslt:
        out += [
            "if(BYOCC_CUBLASLT_LIBRARY)",
            f"  target_link_libraries({target} PRIVATE ${{BYOCC_CUBLASLT_LIBRARY}})",
            "  get_filename_component(_byocc_cublaslt_dir ${BYOCC_CUBLASLT_LIBRARY} DIRECTORY)",
            f"  set_property(TARGET {target} APPEND PROPERTY BUILD_RPATH ${{_byocc_cublaslt_dir}})",
            f"  set_property(TARGET {target} APPEND PROPERTY INSTALL_RPATH ${{_byocc_cublaslt_dir}})",
            "else()",
            f"  target_link_libraries({target} PRIVATE CUDA::cublasLt)",
            "endif()",
        ]
    return "\n".join(out) + "\n"


def build_files(stem: str, sources: Iterable[SourceFile], needs_cutlass: bool,
                needs_cublaslt: bool, toolchain: Toolchain | None = None) -> dict[str, str]:
    """``build.ninja``, ``config.ninja`` and ``CMakeLists.txt`` of an output folder.
    ``toolchain`` defaults to this machine's (:func:`detect_toolchain`, non-strict, with the
    default object cache); pass one to make ``config.ninja`` independent of the machine."""
    units = units_of(sources)
    if toolchain is None:
        toolchain = detect_toolchain(needs_cutlass, needs_cublaslt, cache_dir=default_cache_dir())
    return {
        "build.ninja": build_ninja(stem, units, needs_cutlass, needs_cublaslt),
        "config.ninja": config_ninja(toolchain),
        "CMakeLists.txt": cmake_lists(stem, units, needs_cutlass, needs_cublaslt, toolchain),
    }


def default_cache_dir() -> str:
    """``$BYOCC_CACHE``, default ``~/.cache/byocc``."""
    return os.environ.get("BYOCC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "byocc")


__all__ = [
    "ARCH_KINDS", "CMAKE_ARCHS", "COMPILED_KINDS", "HEAVY_KINDS", "NO_ARCH_MACRO", "NVCC_ARCH_FLAGS",
    "NVCC_COMMON_FLAGS", "Toolchain", "Unit", "build_files", "build_ninja", "cmake_lists",
    "config_ninja", "cuda_lib_dir", "default_cache_dir", "default_heavy_depth", "detect_toolchain",
    "find_cutlass", "find_ninja", "total_memory", "units_of",
]
