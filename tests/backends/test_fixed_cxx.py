"""The fixed C++ of the code-generation layer (``byocc/backends/<package>/csrc/``), on its own:

* every file compiles alone with nvcc (compile only; a header through a unit that includes it
  twice, so it is self-contained and include-guarded), warnings as errors, with the include
  folders a build uses (the output folder's ``src/``, cuBLASLt's headers for the cuBLAS files);
* the generated libraries get these files byte for byte: every library the common ones, a
  CUTLASS library ``byocc_generic.cuh``, one that uses the norm kernels ``byocc_norm.cuh``, a
  cuBLAS one the cuBLASLt files;
* the tables the Python side reads from them agree with the C++: the return codes (the enum
  of ``byocc_abi.h`` is the one table; the runner's error names come from it), the ABI
  version, the generic kernels' limits and the cuBLASLt workspace.
"""

from __future__ import annotations

import re
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from byocc.backends.codegen import ABI_VERSION
from byocc.backends.cublas import codegen as cublas_codegen
from byocc.backends.cublas.runtime import WORKSPACE_BYTES
from byocc.backends.cublas.runtime import runtime_sources
from byocc.backends.cuda import elementwise_map
from byocc.backends.cuda import generic
from byocc.backends.cuda import norm
from byocc.backends.cuda.common import common_sources
from byocc.backends.cuda.common import fixed_constant
from byocc.backends.cuda.common import return_codes
from byocc.backends.cuda.templates import fixed_source
from byocc.backends.cutlass.attention_step import header_sources as attention_headers
from byocc.backends.toolchain import find_cutlass
from byocc.backends.toolchain import find_optional_cublaslt
from byocc.backends.toolchain import find_optional_nvcc
from byocc.runtime.native import ByoccRuntimeError
from byocc.runtime.native import error_name

PACKAGES = ("cuda", "cublas")
NVCC = find_optional_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found (CUDACXX, CUDA_HOME or PATH): "
                                "the fixed C++ is not compiled")
# The build's language flags, one arch (compile only), host and device warnings as errors.
FLAGS = ("-std=c++17", "--expt-relaxed-constexpr", "-Xcompiler=-fPIC", "-arch=sm_80",
         "-Werror", "all-warnings", "-Xcompiler=-Wall,-Wextra,-Werror")


def _csrc(package: str) -> Path:
    return Path(str(resources.files(f"byocc.backends.{package}") / "csrc"))


FIXED = sorted(f"{pkg}/{p.name}" for pkg in PACKAGES for p in _csrc(pkg).iterdir() if p.is_file())


def test_the_fixed_files_are_what_every_library_gets():
    """Every fixed file reaches a library (the common files always, the others when used),
    byte for byte."""
    files = {s.path: s.text for s in (*common_sources(), generic.header_source(), generic.aux_header_source(),
                                       norm.header_source(),
                                       *generic.conv_header_sources(), *runtime_sources(),
                                       *attention_headers(fused=True), elementwise_map.header_source())}
    assert sorted(Path(p).name for p in files) == sorted(name.split("/")[1] for name in FIXED)
    for path, text in files.items():
        package = "cublas" if "cublaslt" in path else "cuda"
        assert (_csrc(package) / Path(path).name).read_text(encoding="utf-8") == text, path


def test_the_gemm_aux_header_comes_with_a_split_k_or_padding_unit_only():
    from byocc.backends.codegen import SourceFile

    for unit in (generic.splitk_unit("float16"), generic.pad_unit("bfloat16")):
        assert generic.uses_aux([unit.path]) and unit.unit == "light"
        assert '#include "byocc_gemm_aux.cuh"' in unit.text
    assert not generic.uses_aux([generic.header_source().path, SourceFile("src/kernels/generic_gemm_f16_f16_f16.cu", "", "light").path])


def test_the_norm_header_comes_with_a_norm_unit_only():
    from byocc.backends.codegen import SourceFile

    unit = norm.norm_unit("float16")
    assert norm.uses_norm([unit]) and unit.unit == "light"
    assert '#include "byocc_norm.cuh"' in unit.text and "BYOCC_NORM_ENTRY_POINTS(f16, __half)" in unit.text
    assert not norm.uses_norm([generic.header_source(), SourceFile("src/kernels/ew_1.cu", "", "light")])


@needs_nvcc
@pytest.mark.parametrize("name", FIXED)
def test_fixed_file_compiles_on_its_own(name, tmp_path):
    package, file = name.split("/")
    src = tmp_path / "src"  # the output folder's src/: every fixed file beside the others
    src.mkdir()
    for pkg in PACKAGES:
        for p in _csrc(pkg).iterdir():
            (src / p.name).write_bytes(p.read_bytes())
    include = [f"-I{src}"]
    flags = list(FLAGS)
    if file == "byocc_attention_sm90.cuh":  # CUTLASS's Hopper FMHA: its headers, sm_90a
        dirs = find_cutlass()
        if dirs is None:
            pytest.skip("CUTLASS headers not found (the nvidia-cutlass wheel)")
        include += [w for d in dirs for w in ("-isystem", d)]
        flags = [f if f != "-arch=sm_80" else "-arch=sm_90a" for f in flags]
    if package == "cublas":
        cublaslt = find_optional_cublaslt()
        if cublaslt is None:
            pytest.skip("cuBLASLt headers not found (CUDA toolkit or the nvidia-cublas wheel)")
        include += list(cublaslt.include_flags)
    unit = src / file
    if not file.endswith(".cu"):
        unit = tmp_path / f"include_{Path(file).stem}.cu"
        unit.write_text(f'#include "{file}"\n#include "{file}"\n')
    proc = subprocess.run([NVCC, *flags, *include, "-c", str(unit), "-o", str(tmp_path / "unit.o")],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------------------- return codes
def test_return_codes_come_from_the_abi_header():
    codes = return_codes()
    assert codes[0] == "OK" and codes[3] == "E_SHAPE" and codes[12] == "E_CONSTANT"
    assert sorted(codes) == list(range(len(codes)))  # dense, from 0
    header = fixed_source("cuda/byocc_abi.h")
    for value, name in codes.items():
        assert re.search(rf"^\s*BYOCC_{name} = {value}\b", header, re.M), name
    # the runner's names are the header's
    for value, name in codes.items():
        assert error_name(value) == name
        assert ByoccRuntimeError(value, "why", "f").name == name
    assert str(ByoccRuntimeError(3, "bad dim", "f")) == "f: E_SHAPE (3): bad dim"
    assert error_name(99) == "E_99"


def test_every_code_the_cxx_uses_has_a_python_name():
    """The other direction: each ``BYOCC_E_*`` the fixed files, the templates or the Python
    emitters write is an enumerator the runner can name."""
    names = {f"BYOCC_{n}" for n in return_codes().values()}
    root = Path(generic.__file__).resolve().parents[1]  # byocc/backends
    used: set[str] = set()
    for path in [*root.glob("*/csrc/*"), *root.glob("*/templates/*.j2"), *root.glob("**/*.py")]:
        used |= set(re.findall(r"\bBYOCC_(?:E_[A-Z_]+|OK)\b", path.read_text(encoding="utf-8")))
    assert used and used <= names, sorted(used - names)


def test_return_code_parser_rejects_a_line_it_cannot_read(monkeypatch):
    from byocc.backends.cuda import common

    header = fixed_source("cuda/byocc_abi.h").replace("  BYOCC_E_ARCH = 6,", "  BYOCC_E_ARCH = BYOCC_E_X,")
    monkeypatch.setattr(common, "fixed_source", lambda name: header)
    common.return_codes.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="unreadable return-code line"):
            common.return_codes()
    finally:
        monkeypatch.undo()
        common.return_codes.cache_clear()
    assert common.return_codes()[6] == "E_ARCH"


@needs_nvcc
def test_the_compiler_agrees_with_the_parsed_return_codes(tmp_path):
    (tmp_path / "byocc_abi.h").write_text(fixed_source("cuda/byocc_abi.h"))
    prints = "".join(f'  printf("%d {name}\\n", static_cast<int>(BYOCC_{name}));\n'
                     for name in return_codes().values())
    (tmp_path / "codes.cu").write_text(f'#include <stdio.h>\n#include "byocc_abi.h"\nint main() {{\n{prints}}}\n')
    exe = tmp_path / "codes"
    build = subprocess.run([NVCC, "-std=c++17", f"-I{tmp_path}", str(tmp_path / "codes.cu"), "-o", str(exe)],
                           capture_output=True, text=True, check=False, timeout=300)
    assert build.returncode == 0, build.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60).stdout
    assert {int(v): n for v, n in (line.split() for line in out.splitlines())} == return_codes()


# --------------------------------------------------------------------------- other constants
def test_abi_version_of_the_fixed_files():
    assert f"(ABI version {ABI_VERSION})." in fixed_source("cuda/byocc_abi.h").splitlines()[0]
    assert f"byocc_abi_version(void) {{ return {ABI_VERSION}; }}" in fixed_source("cuda/runtime.cu")


def test_python_limits_are_read_from_the_headers():
    assert (generic.MAX_RANK, generic.MAX_EW_INPUTS) == (8, 16)
    assert generic.MAX_RANK == fixed_constant("cuda/byocc_generic.cuh", "kMaxRank")
    assert cublas_codegen.MAX_PERMUTE_RANK == fixed_constant("cublas/byocc_cublaslt.h", "kCublasLtMaxRank")
    with pytest.raises(RuntimeError, match="defines no constexpr int kNothing"):
        fixed_constant("cuda/byocc_generic.cuh", "kNothing")
    shift = re.search(r"kCublasLtWorkspaceBytes = uint64_t\((\d+)\) << (\d+);", fixed_source("cublas/byocc_cublaslt.h"))
    assert shift and int(shift.group(1)) << int(shift.group(2)) == WORKSPACE_BYTES
