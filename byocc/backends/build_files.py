"""The build files of a generated library, written from its :class:`~byocc.backends.codegen.BuildPlan`:
``build.ninja``, ``config.ninja`` and ``CMakeLists.txt`` (templates ``cuda/*.j2``).

``build.ninja`` depends only on the plan and the archs asked for, never on the machine: the
flags (:mod:`byocc.backends.toolchain`), one compile edge per unit of those archs (rules
``nvcc_sm90``, ``nvcc_sm80``, ``nvcc_light``; the first two in pool ``heavy``), objects under
``obj/``, one ``link`` edge to ``lib/libbyocc_<stem>.so``, and ``defines`` (the
``-DBYOCC_NO_SM90``/``-DBYOCC_NO_SM80`` light units see in a one-arch build). Everything that
depends on the machine is in ``config.ninja``, which it includes:

==================  ==================================================================
``nvcc``            the compiler
``launcher``        compile-command prefix: the object cache
                    (``python -m byocc.runtime.objcache ... --``), a user launcher
                    (``ccache``), both (the cache runs the launcher), or empty
``cutlass_cflags``  ``-I`` flags of the CUTLASS headers (empty when no unit needs them)
``cublaslt_cflags`` ``-I`` of ``cublasLt.h`` (the toolkit's, or the ``nvidia-cublas`` wheel's)
``cublaslt_libs``   ``-L<dir> -l:libcublasLt.so.13 -Xlinker -rpath,<dir>`` (or ``-lcublasLt``)
``ldflags``         extra link flags (an rpath to the toolkit's ``libcudart``)
``heavy_depth``     depth of pool ``heavy``
==================  ==================================================================

``byocc partition -o`` writes the three for every arch; ``byocc build DIR --arch ...``
rewrites them for the archs asked and this machine, so a later ``ninja -C DIR`` builds
exactly what it built. Nothing reads these files back.
"""

from __future__ import annotations

from collections.abc import Sequence

from .codegen import ARCHS
from .codegen import BuildPlan
from .cuda.templates import render
from .toolchain import CMAKE_ARCHS
from .toolchain import COMPILED_KINDS
from .toolchain import HEAVY_KINDS
from .toolchain import RULES
from .toolchain import Toolchain
from .toolchain import default_cache_dir
from .toolchain import detect_toolchain
from .toolchain import plan_variables

BUILD_NINJA = "build.ninja"
CONFIG_NINJA = "config.ninja"
CMAKE_LISTS = "CMakeLists.txt"


def ninja_path(path: str) -> str:
    """``path`` as a ninja path (``$``, space and ``:`` escaped)."""
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def build_ninja(plan: BuildPlan, archs: Sequence[str] = ARCHS) -> str:
    """The text of ``build.ninja`` for a build of ``archs`` (deterministic)."""
    edges = [{"object": ninja_path(u.object or ""), "kind": u.kind, "source": ninja_path(u.path),
              "headers": [ninja_path(h) for h in u.headers]} for u in plan.compiled(archs)]
    return render("cuda/build.ninja.j2", library=ninja_path(plan.library), archs=sorted(archs),
                  variables=plan_variables(plan, archs), kinds=COMPILED_KINDS,
                  heavy_kinds=HEAVY_KINDS, rules=RULES, edges=edges)


def config_ninja(tc: Toolchain) -> str:
    """The text of ``config.ninja`` for ``tc``."""
    return render("cuda/config.ninja.j2", variables=tc.variables())


def cmake_lists(plan: BuildPlan, tc: Toolchain) -> str:
    """The text of ``CMakeLists.txt``: target ``byocc_<stem>`` (SHARED) made of one OBJECT
    library per unit kind, so that each kind gets its CUDA_ARCHITECTURES."""
    units = plan.compiled()
    groups = [{"kind": k, "archs": CMAKE_ARCHS[k], "files": [u.path for u in units if u.kind == k]}
              for k in COMPILED_KINDS if any(u.kind == k for u in units)]
    archs = sorted({a for g in groups for a in g["archs"].split(";")}, key=lambda a: (a[:2], a))
    wheel = tc.cublaslt if tc.cublaslt and tc.cublaslt.source != "toolkit" else None
    return render("cuda/CMakeLists.txt.j2", target=f"byocc_{plan.stem}", groups=groups, archs=archs,
                  needs_cutlass=plan.needs_cutlass, needs_cublaslt=plan.needs_cublaslt,
                  cutlass_dirs=tc.cutlass_include_dirs,
                  cublaslt_library=f"{wheel.lib_dir}/{wheel.lib_file}" if wheel else "",
                  cublaslt_include=wheel.include_dir if wheel else "")


def build_files(plan: BuildPlan, toolchain: Toolchain | None = None,
                archs: Sequence[str] = ARCHS) -> dict[str, str]:
    """``build.ninja``, ``config.ninja`` and ``CMakeLists.txt`` of an output folder.
    ``toolchain`` defaults to this machine's (:func:`~byocc.backends.toolchain.detect_toolchain`,
    non-strict, with the default object cache); pass one to make ``config.ninja`` independent
    of the machine."""
    if toolchain is None:
        toolchain = detect_toolchain(plan.needs_cutlass, plan.needs_cublaslt, cache_dir=default_cache_dir())
    return {
        BUILD_NINJA: build_ninja(plan, archs),
        CONFIG_NINJA: config_ninja(toolchain),
        CMAKE_LISTS: cmake_lists(plan, toolchain),
    }


__all__ = ["BUILD_NINJA", "CMAKE_LISTS", "CONFIG_NINJA", "build_files", "build_ninja",
           "cmake_lists", "config_ninja", "ninja_path"]
