"""The build plan (byocc.backends.codegen.BuildPlan), the build.ninja / config.ninja /
CMakeLists.txt written from it, the toolchain's commands (the same as ninja's), and the
object-cache launcher (byocc.runtime.objcache) driven by a fake compiler."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from byocc.backends.build_files import build_files
from byocc.backends.build_files import build_ninja
from byocc.backends.build_files import config_ninja
from byocc.backends.codegen import BuildPlan
from byocc.backends.codegen import GeneratedModule
from byocc.backends.codegen import SourceFile
from byocc.backends.cuda import common_sources
from byocc.backends.toolchain import NO_ARCH_MACRO
from byocc.backends.toolchain import NVCC_ARCH_FLAGS
from byocc.backends.toolchain import NVCC_COMMON_FLAGS
from byocc.backends.toolchain import CublasLtPaths
from byocc.backends.toolchain import Toolchain
from byocc.backends.toolchain import commands
from byocc.backends.toolchain import find_cutlass
from byocc.backends.toolchain import find_ninja
from byocc.backends.toolchain import find_optional_nvcc
from byocc.runtime import objcache

KERNEL = SourceFile("src/kernels/k_ab12.cu", '#include "byocc_gemm.h"\n#include "cutlass/cutlass.h"\n', "sm90")
KERNEL80 = SourceFile("src/kernels/k_cd34.cu", '#include "../byocc_gemm.h"\n', "sm80")
WRAPPER = SourceFile("src/funcs/fused_matmul_cutlass.cu",
                     '#include "byocc_internal.h"\n#include "byocc_gemm.h"\n', "light")
SOURCES = [KERNEL80, WRAPPER, KERNEL]
WHEEL = "/site/nvidia/cu13"
TOOLCHAIN = Toolchain(nvcc="/opt/cuda/bin/nvcc", cutlass_include_dirs=("/site/cutlass/include",),
                      cublaslt=CublasLtPaths(f"{WHEEL}/include", f"{WHEEL}/lib", "libcublasLt.so.13", "wheel"),
                      cuda_lib_dir="/opt/cuda/lib64",
                      cache_dir="/cache/byocc", python="/usr/bin/python3", cutlass_version="4.2.0",
                      heavy_depth=3)


def plan_of(sources=SOURCES, needs_cutlass: bool = True, needs_cublaslt: bool = True, stem: str = "model"):
    """The plan of one module of ``sources`` plus the common sources."""
    module = GeneratedModule("test", (), tuple(sources), needs_cutlass=needs_cutlass, needs_cublaslt=needs_cublaslt)
    return BuildPlan.of(stem, [module], common_sources())


def files(needs_cublaslt: bool = True, sources=SOURCES, toolchain=TOOLCHAIN, archs=("sm_80", "sm_90a")):
    return build_files(plan_of(sources, needs_cublaslt=needs_cublaslt), toolchain, archs)


def test_build_ninja_rules_pool_edges_and_link():
    text = files()["build.ninja"]
    assert "include config.ninja\n" in text
    assert "pool heavy\n  depth = $heavy_depth\n" in text
    assert ("rule nvcc_sm90\n  command = $launcher $nvcc $common_flags $cutlass_cflags $cublaslt_cflags "
            "$sm90_flags -c $in -o $out\n  description = sm90 $in\n  pool = heavy\n") in text
    assert text.startswith("# build.ninja: builds lib/libbyocc_model.so for sm_80, sm_90a;")
    assert ("rule nvcc_light\n  command = $launcher $nvcc $common_flags $cutlass_cflags $cublaslt_cflags "
            "$defines $light_flags -c $in -o $out\n") in text
    assert "rule nvcc_sm80\n" in text and "  description = sm80 $in\n  pool = heavy\n" in text
    assert "rule nvcc_light\n" in text and "description = light $in\n\n" in text  # no pool
    assert "sm90_flags = -gencode=arch=compute_90a,code=sm_90a\n" in text
    assert "sm80_flags = -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_80,code=sm_90\n" in text
    assert ("common_flags = -std=c++17 -O3 -DNDEBUG --expt-relaxed-constexpr -Xcompiler=-fPIC "
            "-Xcompiler=-fvisibility=hidden -Isrc\n") in text
    assert "--use_fast_math" not in text
    edges = [line for line in text.splitlines() if line.startswith("build ")]
    assert edges == [
        "build obj/funcs/fused_matmul_cutlass.o: nvcc_light src/funcs/fused_matmul_cutlass.cu"
        " | src/byocc_abi.h src/byocc_gemm.h src/byocc_internal.h",
        "build obj/kernels/k_ab12.o: nvcc_sm90 src/kernels/k_ab12.cu | src/byocc_gemm.h",
        "build obj/kernels/k_cd34.o: nvcc_sm80 src/kernels/k_cd34.cu | src/byocc_gemm.h",
        "build obj/runtime.o: nvcc_light src/runtime.cu | src/byocc_abi.h src/byocc_internal.h",
        "build lib/libbyocc_model.so: link obj/funcs/fused_matmul_cutlass.o obj/kernels/k_ab12.o "
        "obj/kernels/k_cd34.o obj/runtime.o",
    ]
    assert "command = $nvcc -shared -cudart shared $ldflags -o $out $in $link_libs\n" in text
    assert "link_libs = $cublaslt_libs\n" in text and "defines =\n" in text
    assert text.endswith("default lib/libbyocc_model.so\n")
    assert ".h:" not in text  # headers are never compiled


def test_build_ninja_is_deterministic_and_machine_independent():
    a = files()["build.ninja"]
    other = Toolchain(nvcc="/elsewhere/nvcc", heavy_depth=9)
    assert files(toolchain=other)["build.ninja"] == a
    assert files(sources=list(reversed(SOURCES)))["build.ninja"] == a
    assert "byocc_needs" not in a  # what the build needs is in the plan, nothing reads it back here
    for machine_path in ("/opt/cuda", "/site/", "/cache/", "python"):
        assert machine_path not in a


def test_no_cublaslt_means_no_link_library():
    text = files(needs_cublaslt=False)["build.ninja"]
    assert "link_libs =\n" in text


def test_config_ninja_variables():
    text = files()["config.ninja"]
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert body == [
        "nvcc = /opt/cuda/bin/nvcc",
        "launcher = /usr/bin/python3 -m byocc.runtime.objcache --cache-dir /cache/byocc "
        "--salt codegen=1 --salt cutlass=4.2.0 --",
        "cutlass_cflags = -I/site/cutlass/include",
        "cublaslt_cflags = -I/site/nvidia/cu13/include",
        "cublaslt_libs = -L/site/nvidia/cu13/lib -l:libcublasLt.so.13 -Xlinker -rpath,/site/nvidia/cu13/lib",
        "ldflags = -Xlinker -rpath,/opt/cuda/lib64",
        "heavy_depth = 3",
    ]


def test_config_ninja_launcher_inside_cache_and_without_cache():
    with_both = Toolchain(cache_dir="/c", python="py", launcher="ccache")
    text = config_ninja(with_both)
    assert "launcher = py -m byocc.runtime.objcache --cache-dir /c --salt codegen=1 --launcher ccache --\n" in text
    assert "cublaslt_libs = -lcublasLt\n" in text  # toolkit cuBLAS
    assert "launcher = sccache\n" in config_ninja(Toolchain(launcher="sccache"))
    assert "launcher =\n" in config_ninja(Toolchain())


def test_a_one_arch_build_file_names_only_its_units():
    text = build_ninja(plan_of(), archs=("sm_80",))
    assert "k_ab12" not in text  # the sm_90a unit
    assert "build lib/libbyocc_model.so: link obj/funcs/fused_matmul_cutlass.o obj/kernels/k_cd34.o obj/runtime.o\n" in text
    assert "defines = -DBYOCC_NO_SM90\n" in text
    assert text.startswith("# build.ninja: builds lib/libbyocc_model.so for sm_80;")
    assert NO_ARCH_MACRO == {"sm90": "BYOCC_NO_SM90", "sm80": "BYOCC_NO_SM80"}
    only90 = build_ninja(plan_of(), archs=("sm_90a",))
    assert "k_cd34" not in only90 and "k_ab12" in only90 and "defines = -DBYOCC_NO_SM80\n" in only90


def test_plan_units_kinds_archs_headers_and_needs():
    plan = plan_of()
    units = {u.path: u for u in plan.units}
    assert list(units) == sorted(units)
    assert units["src/kernels/k_ab12.cu"].archs == ("sm_90a",)
    assert units["src/kernels/k_cd34.cu"].archs == ("sm_80",)
    assert units["src/funcs/fused_matmul_cutlass.cu"].archs == ("sm_80", "sm_90a")
    assert units["src/byocc_abi.h"].kind == "header" and units["src/byocc_abi.h"].archs == ()
    assert units["src/byocc_abi.h"].object is None
    assert units["src/kernels/k_cd34.cu"].headers == ("src/byocc_gemm.h",)  # "../byocc_gemm.h"
    assert units["src/kernels/k_ab12.cu"].needs_cutlass  # includes cutlass/cutlass.h
    assert not units["src/funcs/fused_matmul_cutlass.cu"].needs_cutlass  # a wrapper
    assert units["src/funcs/fused_matmul_cutlass.cu"].needs_cublaslt  # its module needs cuBLASLt
    assert not units["src/runtime.cu"].needs_cublaslt  # a common source
    assert plan.archs == ("sm_80", "sm_90a") and plan.library == "lib/libbyocc_model.so"
    assert [u.path for u in plan.compiled(("sm_80",))] == [
        "src/funcs/fused_matmul_cutlass.cu", "src/kernels/k_cd34.cu", "src/runtime.cu"]
    assert BuildPlan.from_json(plan.to_json()) == plan
    no90 = plan_of([KERNEL80, WRAPPER], needs_cutlass=False, needs_cublaslt=False)
    assert no90.archs == ("sm_80",) and not no90.needs_cutlass and not no90.needs_cublaslt
    # a unit that includes cublasLt.h through a src/ header needs cuBLASLt without a module flag
    lt = plan_of([SourceFile("src/lt.h", "#include <cublasLt.h>\n", "header"),
                  SourceFile("src/funcs/g.cu", '#include "../lt.h"\n', "light")], False, False)
    assert [u.path for u in lt.units if u.needs_cublaslt] == ["src/funcs/g.cu"]


def test_units_follow_includes_through_headers():
    srcs = [SourceFile("src/a.h", '#include "b.h"\n', "header"), SourceFile("src/b.h", "", "header"),
            SourceFile("src/c.h", "", "header"), SourceFile("src/funcs/x.cu", '#include "a.h"\n', "light")]
    plan = BuildPlan.of("m", [GeneratedModule("t", (), tuple(srcs))])
    assert [(u.path, u.kind, u.headers, u.object) for u in plan.compiled()] == [
        ("src/funcs/x.cu", "light", ("src/a.h", "src/b.h"), "obj/funcs/x.o")]
    assert plan.files() == ("src/a.h", "src/b.h", "src/funcs/x.cu")  # c.h is read by no unit


def test_cmake_lists_targets_archs_and_cublas():
    text = files()["CMakeLists.txt"]
    assert "project(byocc_model LANGUAGES CXX CUDA)\n" in text
    assert 'byocc_units(byocc_model_sm90 "90a" src/kernels/k_ab12.cu)' in text
    assert 'byocc_units(byocc_model_sm80 "80;90" src/kernels/k_cd34.cu)\n' in text
    assert 'byocc_units(byocc_model_light "80;90" src/funcs/fused_matmul_cutlass.cu src/runtime.cu)\n' in text
    assert "src/byocc_abi.h" not in text
    assert ("add_library(byocc_model SHARED ${_byocc_sm90_objects} $<TARGET_OBJECTS:byocc_model_sm80> "
            "$<TARGET_OBJECTS:byocc_model_light>)\n") in text
    assert 'CUDA_ARCHITECTURES "80;90;90a"' in text
    assert 'set(BYOCC_CUTLASS_INCLUDE_DIRS "/site/cutlass/include" CACHE STRING' in text
    assert 'set(BYOCC_CUBLASLT_LIBRARY "/site/nvidia/cu13/lib/libcublasLt.so.13" CACHE FILEPATH' in text
    assert "  target_link_libraries(byocc_model PRIVATE CUDA::cublasLt)\n" in text
    assert "list(APPEND _byocc_defines BYOCC_NO_SM90)" in text
    assert "CMAKE_CUDA_COMPILER_LAUNCHER" in text  # documented; CMake applies it per target
    assert "cublas" not in files(needs_cublaslt=False)["CMakeLists.txt"].lower()


def test_flags_are_spec_13s():
    assert NVCC_COMMON_FLAGS[:4] == ("-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr")
    assert NVCC_ARCH_FLAGS["sm90"] == ("-gencode=arch=compute_90a,code=sm_90a",)


def test_find_cutlass_accepts_a_checkout_or_its_include(tmp_path):
    inc = tmp_path / "cutlass" / "include"
    (inc / "cutlass").mkdir(parents=True)
    (inc / "cutlass" / "cutlass.h").write_text("")
    (tmp_path / "cutlass" / "tools" / "util" / "include").mkdir(parents=True)
    both = (str(inc), str(tmp_path / "cutlass" / "tools" / "util" / "include"))
    assert find_cutlass(str(tmp_path / "cutlass")) == both
    assert find_cutlass(str(inc)) == both
    assert find_cutlass(str(tmp_path)) is None


def test_find_cutlass_adds_the_hopper_fmha_example_folder(tmp_path):
    """A CUTLASS root with examples/88_hopper_fmha gets it as a third include directory
    (the sm_90a attention units include its kernel/ headers); one without it does not."""
    root = tmp_path / "cutlass"
    (root / "include" / "cutlass").mkdir(parents=True)
    (root / "include" / "cutlass" / "cutlass.h").write_text("")
    (root / "tools" / "util" / "include").mkdir(parents=True)
    (root / "examples" / "88_hopper_fmha" / "kernel").mkdir(parents=True)
    dirs = find_cutlass(str(root))
    assert dirs == (str(root / "include"), str(root / "tools" / "util" / "include"),
                    str(root / "examples" / "88_hopper_fmha"))
    flags = Toolchain(cutlass_include_dirs=dirs).variables()["cutlass_cflags"].split()
    assert flags[-1] == f"-I{root / 'examples' / '88_hopper_fmha'}"


def test_pool_commands_expand_the_rules_like_ninja():
    steps = commands(plan_of(), TOOLCHAIN)
    sm90 = next(s for s in steps if s.unit == "src/kernels/k_ab12.cu")
    assert sm90.heavy and sm90.description == "sm90 src/kernels/k_ab12.cu"
    assert sm90.command.split() == (
        "/usr/bin/python3 -m byocc.runtime.objcache --cache-dir /cache/byocc --salt codegen=1 "
        "--salt cutlass=4.2.0 -- /opt/cuda/bin/nvcc " + " ".join(NVCC_COMMON_FLAGS) + " -Isrc "
        "-I/site/cutlass/include -I/site/nvidia/cu13/include -gencode=arch=compute_90a,code=sm_90a "
        "-c src/kernels/k_ab12.cu -o obj/kernels/k_ab12.o").split()
    link = steps[-1]
    assert link.output == "lib/libbyocc_model.so" and link.unit is None
    assert link.command.endswith("obj/runtime.o -L/site/nvidia/cu13/lib -l:libcublasLt.so.13 "
                                 "-Xlinker -rpath,/site/nvidia/cu13/lib")


@pytest.mark.skipif(find_ninja() is None, reason="needs ninja")
@pytest.mark.parametrize("archs", [("sm_80", "sm_90a"), ("sm_80",), ("sm_90a",)])
def test_ninja_runs_exactly_the_pools_commands(tmp_path, archs):
    """`ninja -t commands` of the written files (a dry run: nothing is compiled) is the
    internal pool's command list, for every arch selection."""
    plan = plan_of()
    for name, text in build_files(plan, TOOLCHAIN, archs).items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([find_ninja(), "-C", str(tmp_path), "-t", "commands"], capture_output=True,
                          text=True, check=True)
    ninja_cmds = sorted(line.split() for line in proc.stdout.splitlines())
    assert ninja_cmds == sorted(s.command.split() for s in commands(plan, TOOLCHAIN, archs))
    assert len(ninja_cmds) == len(plan.compiled(archs)) + 1


# --------------------------------------------------------------------------- objcache
# A stand-in for nvcc: logs its arguments, "compiles" a unit into a file naming its flags,
# fails on a unit containing #error, links anything (also used by tests/cli/test_build_cli.py).
FAKE_NVCC = """#!{python}
import os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("fake nvcc " + os.environ.get("FAKE_NVCC_VERSION", "1"))
    sys.exit(0)
if "--dryrun" in args:
    sys.exit(0)
with open(os.environ["FAKE_NVCC_LOG"], "a") as f:
    f.write(" ".join(args) + "\\n")
out = args[args.index("-o") + 1]
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
if "-c" in args:
    src = args[args.index("-c") + 1]
    if "#error" in open(src).read():
        sys.stderr.write(src + "(3): error: this unit does not compile\\n")
        sys.exit(2)
open(out, "w").write(" ".join(args))
"""


def install_fake_nvcc(tmp_path: Path, monkeypatch, script: str = FAKE_NVCC) -> tuple[Path, Path]:
    """``tmp_path/fakebin/nvcc`` (first on PATH) and the log file it appends its calls to."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    nvcc = bin_dir / "nvcc"
    nvcc.write_text(script.format(python=sys.executable))
    nvcc.chmod(0o755)
    log = tmp_path / "nvcc.log"
    log.write_text("")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_NVCC_LOG", str(log))
    return nvcc, log


@pytest.fixture
def fake_tree(tmp_path, monkeypatch):
    nvcc, log = install_fake_nvcc(tmp_path, monkeypatch)
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "obj").mkdir()
    (work / "src" / "h.h").write_text("int h;\n")
    (work / "src" / "u.cu").write_text('#include "h.h"\nint u;\n')
    monkeypatch.setenv("BYOCC_OBJCACHE_LOG", str(tmp_path / "hits.log"))
    monkeypatch.chdir(work)
    return tmp_path, str(nvcc), log


def launch(cache, nvcc, *flags, extra=()):
    argv = ["--cache-dir", str(cache), "--salt", "codegen=1", *extra, "--", nvcc, "-Isrc", *flags,
            "-c", "src/u.cu", "-o", "obj/u.o"]
    return objcache.run(argv)


def test_cache_miss_compiles_then_hit_copies(fake_tree):
    tmp, nvcc, log = fake_tree
    cache = tmp / "cache"
    assert launch(cache, nvcc) == 0
    assert log.read_text().count("-c src/u.cu") == 1
    first = Path("obj/u.o").read_text()
    Path("obj/u.o").unlink()
    assert launch(cache, nvcc) == 0
    assert log.read_text().count("-c src/u.cu") == 1  # not compiled again
    assert Path("obj/u.o").read_text() == first
    assert (tmp / "hits.log").read_text() == "miss obj/u.o\nhit obj/u.o\n"
    entries = sorted(p.name for p in (cache / "obj").iterdir())
    assert len(entries) == 1 and entries[0].endswith(".o") and len(entries[0]) == 64 + 2
    assert not list(cache.rglob("*.tmp"))  # atomic writes leave nothing behind


def test_cache_key_changes_with_flags_text_headers_salts_and_compiler(fake_tree, monkeypatch):
    tmp, nvcc, _ = fake_tree

    def key(*flags, salts=("codegen=1",)):
        inv = objcache.parse_invocation([*sum((["--salt", s] for s in salts), []), "--", nvcc, "-Isrc",
                                         *flags, "-c", "src/u.cu", "-o", "obj/u.o"])
        return objcache.cache_key(inv, objcache.compiler_identity(nvcc, None))

    base = key()
    assert key() == base
    assert key("-DX") != base
    assert key(salts=("codegen=2",)) != base
    Path("src/h.h").write_text("int h2;\n")
    changed_header = key()
    assert changed_header != base
    Path("src/u.cu").write_text('#include "h.h"\nint u2;\n')
    assert key() != changed_header
    again = key()
    monkeypatch.setenv("FAKE_NVCC_VERSION", "2")
    assert key() != again
    monkeypatch.setenv("FAKE_NVCC_VERSION", "1")
    # the output path is not part of the key
    inv = objcache.parse_invocation(["--salt", "codegen=1", "--", nvcc, "-Isrc", "-c", "src/u.cu",
                                     "-o", "obj/other.o"])
    assert objcache.cache_key(inv, objcache.compiler_identity(nvcc, None)) == again


def test_a_cache_entry_that_fails_its_check_is_compiled_again(fake_tree, monkeypatch, capsys):
    tmp, nvcc, log = fake_tree
    cache = tmp / "cache"
    assert launch(cache, nvcc) == 0
    (entry,) = (cache / "obj").glob("*.o")
    good = entry.read_bytes()
    assert objcache.unpack_entry(good) == Path("obj/u.o").read_bytes()  # header + the object
    for damaged in (good[:-3], good[:20], b"", good.replace(b"-c", b"-C")):
        entry.write_bytes(damaged)
        Path("obj/u.o").unlink()
        compiles = log.read_text().count("-c src/u.cu")
        assert launch(cache, nvcc) == 0
        assert log.read_text().count("-c src/u.cu") == compiles + 1  # compiled again
        assert objcache.unpack_entry(entry.read_bytes()) is not None  # and stored whole
    assert (tmp / "hits.log").read_text().splitlines()[-2:] == ["rejected obj/u.o", "miss obj/u.o"]
    monkeypatch.delenv("BYOCC_OBJCACHE_LOG")  # a hand-run ninja: said on stderr
    entry.write_bytes(good[:10])
    assert launch(cache, nvcc) == 0
    assert capsys.readouterr().err == "byocc: the cached object for obj/u.o failed its check; compiling it again\n"


def test_launcher_runs_inside_the_cache(fake_tree):
    tmp, nvcc, log = fake_tree
    wrapper = tmp / "fakebin" / "mylauncher"
    wrapper.write_text(f"#!/bin/sh\necho launched >> {tmp}/launcher.log\nexec \"$@\"\n")
    wrapper.chmod(0o755)
    assert launch(tmp / "cache", nvcc, extra=("--launcher", str(wrapper))) == 0
    assert (tmp / "launcher.log").read_text() == "launched\n"
    Path("obj/u.o").unlink()
    assert launch(tmp / "cache", nvcc, extra=("--launcher", str(wrapper))) == 0  # a hit: not launched
    assert (tmp / "launcher.log").read_text() == "launched\n"


def test_failed_compile_is_not_cached(fake_tree):
    tmp, nvcc, _ = fake_tree
    Path("src/u.cu").write_text("#error no\n")
    assert launch(tmp / "cache", nvcc) == 2
    assert not (tmp / "cache" / "obj").exists() or not list((tmp / "cache" / "obj").iterdir())


def test_objcache_command_line(fake_tree):
    tmp, nvcc, _ = fake_tree
    proc = subprocess.run([sys.executable, "-m", "byocc.runtime.objcache", "--cache-dir", str(tmp / "c"),
                           "--", nvcc, "-c", "src/u.cu", "-o", "obj/u.o"], capture_output=True, text=True,
                          env=dict(os.environ), check=False)
    assert proc.returncode == 0 and Path("obj/u.o").is_file()
    bad = subprocess.run([sys.executable, "-m", "byocc.runtime.objcache", nvcc], capture_output=True,
                         text=True, check=False)
    assert bad.returncode == 2
    assert bad.stderr == "byocc.runtime.objcache: expected `--` before the compile command\n"


@pytest.mark.skipif(shutil.which("cmake") is None or find_optional_nvcc() is None, reason="needs cmake and nvcc")
def test_cmake_configures_the_generated_project(tmp_path):
    srcs = [*common_sources(), SourceFile("src/kernels/k_1.cu", "// sm90\n", "sm90"),
            SourceFile("src/funcs/f.cu", "// light\n", "light")]
    for s in srcs:
        (tmp_path / s.path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / s.path).write_text(s.text)
    plan = BuildPlan.of("m", [GeneratedModule("t", (), tuple(srcs[len(common_sources()):]))], common_sources())
    (tmp_path / "CMakeLists.txt").write_text(build_files(plan)["CMakeLists.txt"])
    proc = subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "cb"),
                           f"-DCMAKE_CUDA_COMPILER={os.path.realpath(str(find_optional_nvcc()))}"],
                          capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0 and "No CMAKE_CUDA_COMPILER could be found" in proc.stderr:
        pytest.skip("cmake cannot use this nvcc")
    assert proc.returncode == 0, proc.stderr
    flags = (tmp_path / "cb" / "CMakeFiles" / "byocc_m_sm90.dir" / "flags.make").read_text()
    assert "--generate-code=arch=compute_90a,code=[compute_90a,sm_90a]" in flags
    light = (tmp_path / "cb" / "CMakeFiles" / "byocc_m_light.dir" / "flags.make").read_text()
    assert "compute_80" in light and "90a" not in light
