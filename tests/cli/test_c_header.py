"""The library's C headers (issue 22, item 1): ``byocc_abi.h`` and the generated
``src/byocc_<stem>.h`` are valid C and C++, the generated one declares every exported
function and its scratch query under a comment that describes it, and a C program compiled
with a C compiler links against a library ``byocc build`` made from a real model (cuBLAS, no
CUTLASS unit) and calls through the header. The calls that run need no GPU: an argument
check fails before anything reaches the device."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from byocc.backends.codegen import ConstantSpec
from byocc.backends.codegen import EntryPoint
from byocc.backends.codegen import TensorSpec
from byocc.backends.cuda.library_header import LIBRARY_FUNCTIONS
from byocc.backends.cuda.library_header import header_name
from byocc.backends.cuda.library_header import library_header
from byocc.backends.cuda.templates import fixed_source
from byocc.backends.toolchain import find_optional_cublaslt
from byocc.backends.toolchain import find_optional_cuda_include
from byocc.backends.toolchain import find_optional_nvcc
from byocc.cli import cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
CC = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc") or shutil.which("clang")
CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (CC, gcc, cc or clang)")
C_FLAGS = ("-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def compile_c(source: Path, *flags: str, compiler: str | None = None, lang: tuple[str, ...] = C_FLAGS) -> None:
    cmd = [compiler or CC, *lang, *flags, "-c", str(source), "-o", str(source.with_suffix(".o"))]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, (cmd, done.stderr)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> Path:
    """``byocc partition samples/mlp_fp16.relax --backend cublas --path merge -o DIR``."""
    out = tmp_path_factory.mktemp("header") / "mlp"
    result = run("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cublas", "--path", "merge", "-o", out)
    assert result.exit_code == 0, result.output
    return out


def manifest_of(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def consumer_source(functions: list[dict]) -> str:
    """A C file that includes the generated header and names every function it declares with
    the type it must have (a mismatch is a compile error)."""
    lines = ['#include "byocc_mlp_fp16.h"', "",
             "typedef int32_t (*entry_fn)(const DLTensor* const*, int32_t, void*, uint64_t, cudaStream_t);",
             "typedef uint64_t (*scratch_fn)(const DLTensor* const*, int32_t);", "",
             "int use_all(void) {",
             "  int32_t (*version)(void) = byocc_abi_version;",
             "  const char* (*last_error)(void) = byocc_last_error;",
             "  int32_t (*set_constant)(const char*, const DLTensor*) = byocc_set_constant;"]
    for i, f in enumerate(functions):
        lines += [f"  entry_fn e{i} = {f['symbol']};", f"  scratch_fn s{i} = byocc_scratch_bytes_{f['symbol']};",
                  f"  (void)e{i};", f"  (void)s{i};"]
    lines += ["  return version != 0 && last_error != 0 && set_constant != 0 && BYOCC_E_NARGS == 1;", "}", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- byocc_abi.h
@needs_cc
@pytest.mark.parametrize("cuda_headers", [False, True], ids=["plain C", "with the CUDA headers"])
def test_the_abi_header_is_c(tmp_path, cuda_headers):
    (tmp_path / "byocc_abi.h").write_text(fixed_source("cuda/byocc_abi.h"))
    (tmp_path / "t.c").write_text('#include "byocc_abi.h"\n#include "byocc_abi.h"\n\n'
                                  "int f(const DLTensor* t, cudaStream_t s) {\n"
                                  "  return (int)byocc_abi_version() + t->ndim + (s == 0) + BYOCC_E_CONSTANT;\n}\n")
    flags = []
    if cuda_headers:
        include = find_optional_cuda_include()
        if include is None:
            pytest.skip("no CUDA toolkit headers")
        flags = [f"-I{include}"]
    compile_c(tmp_path / "t.c", *flags)
    for std in ("-std=c99", "-std=c17"):
        compile_c(tmp_path / "t.c", *flags, lang=(std, "-Wall", "-Werror"))
    if CXX is not None:  # and C++, where the declarations are extern "C"
        compile_c(tmp_path / "t.c", *flags, compiler=CXX, lang=("-x", "c++", "-std=c++17", "-Wall", "-Werror"))
        symbols = subprocess.run(["nm", str(tmp_path / "t.o")], capture_output=True, text=True).stdout
        assert re.search(r"U byocc_abi_version$", symbols, re.M), symbols  # not mangled


def test_the_library_functions_are_what_the_runtime_exports():
    exported = re.findall(r"^BYOCC_EXPORT [^(]*?\b(\w+)\(", fixed_source("cuda/runtime.cu"), re.M)
    assert sorted(exported) == sorted(LIBRARY_FUNCTIONS)
    abi = fixed_source("cuda/byocc_abi.h")
    for name in LIBRARY_FUNCTIONS:
        assert re.search(rf"^BYOCC_EXPORT .*\b{name}\(", abi, re.M), name
    assert re.search(r'^#ifdef __cplusplus\n#define BYOCC_EXTERN_C extern "C"\n#else', abi, re.M)


# --------------------------------------------------------------------------- the generated header
def test_the_generated_header_declares_every_function(mlp):
    manifest = manifest_of(mlp)
    assert manifest["header"] == "src/byocc_mlp_fp16.h"
    assert "src/byocc_mlp_fp16.h" in manifest["files"]
    assert "src/byocc_mlp_fp16.h" not in [u["path"] for u in manifest["build"]["units"]]  # not a build input
    text = (mlp / manifest["header"]).read_text(encoding="utf-8")
    assert text.count("#ifdef __cplusplus") == 2 and 'extern "C" {' in text
    assert '#include "byocc_abi.h"' in text and text.startswith("// byocc_mlp_fp16.h: the functions of "
                                                               "lib/libbyocc_mlp_fp16.so")
    assert "#ifndef BYOCC_MLP_FP16_H_\n#define BYOCC_MLP_FP16_H_\n" in text
    flat = " ".join(text.split())
    for f in manifest["functions"]:
        # the declarations are the manifest's signatures, without the C++-only extern "C"
        for signature in (f["c_signature"], f["scratch_signature"]):
            assert signature.startswith('extern "C" ')
            assert signature[len('extern "C" '):] in flat, signature
        comment = text.split(f"// {f['symbol']}: ", 1)[1].split("\nint32_t ", 1)[0]
        assert comment.startswith("an offloaded Relax function (backend cublas); composites in call order:")
        for name in f["composites"]:
            assert f"//   {name} (pattern table rank " in comment
        assert f"// args (num_args = {f['num_args']}):" in comment
        tensors = f["args"] + f["outputs"]
        for i, t in enumerate(tensors):
            kind = "output" if i >= len(f["args"]) else "input"
            shape = "(" + ", ".join(str(d) for d in t["shape"]) + ")"
            assert re.search(rf"^//   \[{i}\] {t['name']}: {t['dtype']} {re.escape(shape)}, {kind}\b", comment, re.M)
        assert f"// scratch: {f['scratch_bytes']} bytes" in comment


def test_a_symbolic_scratch_and_constants_are_described(tmp_path):
    entry = EntryPoint(
        "f", "cutlass", ("cutlass.matmul_bias", "cutlass.matmul"), "src/funcs/f.cu",
        (TensorSpec("x", "lhs", "float16", ("n", 64)), TensorSpec("param_0", "const", "float16", (64,))),
        (TensorSpec("out", "output", "float16", ("n", 64)),), pattern_ranks=(3, 9),
        scratch_bytes=None, scratch_expr="n * 128", constants=(ConstantSpec("param_0", "float16", (64,)),))
    text = library_header("src/byocc_m-1.h", "m-1", "lib/libbyocc_m-1.so", [entry])
    assert "#ifndef BYOCC_M_1_H_" in text
    assert "//   cutlass.matmul_bias (pattern table rank 3, counted from 0)\n//   cutlass.matmul (pattern" in text
    assert "//   [0] x: float16 (n, 64), input (lhs)\n//   [1] param_0: float16 (64), input (const)\n" in text
    assert "//   [2] out: float16 (n, 64), output\n" in text
    assert "// constants (bind each once with byocc_set_constant before the first call):\n" \
           "//   param_0: float16 (64)\n" in text
    assert "// scratch: depends on the shapes: n * 128 bytes\n" in text
    if CC is not None:
        (tmp_path / "byocc_abi.h").write_text(fixed_source("cuda/byocc_abi.h"))
        (tmp_path / "byocc_m-1.h").write_text(text)
        (tmp_path / "t.c").write_text('#include "byocc_m-1.h"\nint g(void) { return f(0, 0, 0, 0, 0); }\n')
        compile_c(tmp_path / "t.c")


@needs_cc
def test_a_c_consumer_compiles_against_the_generated_header(mlp):
    consumer = mlp / "consumer.c"
    consumer.write_text(consumer_source(manifest_of(mlp)["functions"]))
    compile_c(consumer, f"-I{mlp / 'src'}")
    if CXX is not None:
        compile_c(consumer, f"-I{mlp / 'src'}", compiler=CXX, lang=("-x", "c++", "-std=c++17", "-Wall", "-Werror"))


def test_a_model_named_like_a_byocc_header_gets_its_own_name(tmp_path):
    assert header_name("mlp", ["src/byocc_abi.h"]) == "src/byocc_mlp.h"
    model = tmp_path / "gemm.relax"
    shutil.copy(SAMPLES / "mlp_fp16.relax", model)
    result = run("partition", model, "--backend", "cublas", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    manifest = manifest_of(tmp_path / "out")
    assert manifest["header"] == "src/byocc_gemm_lib.h"
    assert (tmp_path / "out" / "src" / "byocc_gemm.h").read_text(encoding="utf-8") == fixed_source("cuda/byocc_gemm.h")
    assert "#ifndef BYOCC_GEMM_LIB_H_" in (tmp_path / "out" / manifest["header"]).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- link and call
CALLER = r"""#include <stdio.h>
#include <string.h>

#include "byocc_mlp_fp16.h"

int main(void) {
  const DLTensor* args[1] = {NULL};
  uint64_t need = byocc_scratch_bytes_SYM(args, 1);
  int32_t rc = SYM(args, 1, NULL, 0, (cudaStream_t)0);
  const char* why = byocc_last_error();
  printf("abi=%d rc=%d need=%llu error=%s\n", (int)byocc_abi_version(), (int)rc,
         (unsigned long long)need, why);
  return rc == BYOCC_E_NARGS && strstr(why, "expected NUM_ARGS arguments") != NULL ? 0 : 1;
}
"""


@needs_cc
@pytest.mark.skipif(find_optional_nvcc() is None or find_optional_cublaslt() is None,
                    reason="needs nvcc and cuBLASLt to build the library")
def test_a_c_program_links_and_calls_through_the_header(mlp, tmp_path, monkeypatch):
    monkeypatch.setenv("BYOCC_CACHE", str(tmp_path / "cache"))
    result = run("build", mlp)
    assert result.exit_code == 0, result.output
    manifest = manifest_of(mlp)
    library = mlp / manifest["library"]
    (f,) = manifest["functions"]
    # every symbol the library exports is declared by the header (or byocc_abi.h, which it includes)
    nm = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    exported = {line.split()[-1] for line in nm.stdout.splitlines() if " T " in line}
    declared = set(re.findall(r"^(?:int32_t|uint64_t) (\w+)\(", (mlp / manifest["header"]).read_text(), re.M))
    assert exported == declared | set(LIBRARY_FUNCTIONS)
    caller = tmp_path / "caller.c"
    caller.write_text(CALLER.replace("SYM", f["symbol"]).replace("NUM_ARGS", str(f["num_args"])))
    compile_c(caller, f"-I{mlp / 'src'}")
    exe = tmp_path / "caller"
    link = subprocess.run([CC, str(caller.with_suffix(".o")), f"-L{library.parent}", "-lbyocc_mlp_fp16",
                           f"-Wl,-rpath,{library.parent}", "-o", str(exe)], capture_output=True, text=True)
    assert link.returncode == 0, link.stderr
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.startswith("abi=1 rc=1 need=0 error=")


@needs_cc
def test_the_readme_c_snippet_compiles(tmp_path):
    include = find_optional_cuda_include()
    if include is None:
        pytest.skip("no CUDA toolkit headers (the snippet calls cudaMalloc)")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("Calling the library from C"):]
    snippet = section[section.index("```c\n") + 5:section.index("\n```\n")]
    out = tmp_path / "out"
    result = run("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cublas", "-o", out)  # as the README's
    assert result.exit_code == 0, result.output
    (tmp_path / "app.c").write_text(snippet + "\n")
    compile_c(tmp_path / "app.c", f"-I{out / 'src'}", f"-I{include}")
