"""Where the CUDA toolkit and cuBLASLt live on this machine (spec/backends.md section 13).

* :func:`find_optional_nvcc` / :func:`find_nvcc`: ``$CUDACXX``, ``$CUDA_HOME/bin/nvcc``
  (``$CUDA_PATH``), then ``nvcc`` on ``PATH``;
* :func:`find_optional_cuda_include`: the toolkit's ``include`` folder (``cuda_runtime_api.h``):
  ``$CUDA_HOME``, the folder above the nvcc found, then ``/usr/local/cuda``;
* :func:`find_optional_cublaslt` / :func:`find_cublaslt`: ``cublasLt.h`` and the
  ``libcublasLt`` shared object: the toolkit's ``include``/``lib64`` first, else the PyPI
  wheel, found through the installed ``nvidia`` namespace package (``nvidia-cublas`` 13.x:
  ``nvidia/cu13/{include,lib}``; ``nvidia-cublas-cu12``: ``nvidia/cublas/{include,lib}``).

The wheels ship only versioned objects (``libcublasLt.so.13``), so :attr:`CublasLtPaths.link_flags`
names the file (``-l:libcublasLt.so.13``) and adds an rpath. Nothing runs at import time;
every lookup reads the file system when called (no caching: a test may install a wheel).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from byocc.ir import ExternalToolError

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


__all__ = [
    "CublasLtPaths", "find_cublaslt", "find_nvcc", "find_optional_cublaslt",
    "find_optional_cuda_include", "find_optional_nvcc",
]
