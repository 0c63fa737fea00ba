"""``byocc build DIR``: a real build of a small library made of light units with nvcc, and
the driver's logic (the plan from the manifest, missing tools and files, a failing unit,
--arch and what `ninja -C DIR` builds afterwards, -j, the process pool, the object cache's
check, concurrent builds) with a fake compiler."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_build_files import install_fake_nvcc

from byocc.backends.build_files import build_files
from byocc.backends.codegen import BuildPlan
from byocc.backends.codegen import GeneratedModule
from byocc.backends.codegen import SourceFile
from byocc.backends.cuda import common_sources
from byocc.backends.toolchain import find_ninja
from byocc.cli import cli

# A trivial entry point with the ABI signature: copies x (float32[n]) into out.
TINY_FUNC = r"""// f.cu: y = x for float32[n] (a test fixture with byocc's exported ABI).
#include "byocc_internal.h"

namespace {
__global__ void copy_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = x[i];
  }
}
}  // namespace

BYOCC_EXPORT uint64_t byocc_scratch_bytes_f(const DLTensor* const* args, int32_t num_args) {
  (void)args;
  (void)num_args;
  return 0;
}

BYOCC_EXPORT int32_t f(const DLTensor* const* args, int32_t num_args, void* scratch,
                       uint64_t scratch_bytes, cudaStream_t stream) {
  byocc::clear_error();
  (void)scratch;
  (void)scratch_bytes;
  if (num_args != 2) return byocc::fail(BYOCC_E_NARGS, "f: expected 2 arguments, got %d", num_args);
  int device = args[0]->device.device_id;
  int rc = byocc::check_tensor(args[0], 0, "x", device, kDLFloat, 32, 1);
  if (rc != BYOCC_OK) return rc;
  rc = byocc::check_tensor(args[1], 1, "out", device, kDLFloat, 32, 1);
  if (rc != BYOCC_OK) return rc;
  int64_t n = -1;
  if ((rc = byocc::bind_dim(args[0], 0, "x", 0, "n", &n)) != BYOCC_OK) return rc;
  if ((rc = byocc::bind_dim(args[1], 1, "out", 0, "n", &n)) != BYOCC_OK) return rc;
  unsigned blocks = static_cast<unsigned>(n > 0 ? (n + 255) / 256 : 1);
  copy_kernel<<<blocks, 256, 0, stream>>>(static_cast<const float*>(byocc::data_of(args[0])),
                                          static_cast<float*>(byocc::data_of(args[1])), n);
  return byocc::check_launch("f");
}

// g: f with a scratch buffer of 4 bytes per element (exercises the runner's scratch).
BYOCC_EXPORT uint64_t byocc_scratch_bytes_g(const DLTensor* const* args, int32_t num_args) {
  if (num_args < 1 || args[0] == nullptr || args[0]->ndim < 1) return 0;
  return static_cast<uint64_t>(args[0]->shape[0]) * 4u;
}

BYOCC_EXPORT int32_t g(const DLTensor* const* args, int32_t num_args, void* scratch,
                       uint64_t scratch_bytes, cudaStream_t stream) {
  byocc::clear_error();
  uint64_t need = byocc_scratch_bytes_g(args, num_args);
  if (scratch == nullptr || scratch_bytes < need) {
    return byocc::fail(BYOCC_E_SCRATCH, "g: scratch of %llu bytes, need %llu",
                       static_cast<unsigned long long>(scratch_bytes),
                       static_cast<unsigned long long>(need));
  }
  return f(args, num_args, nullptr, 0, stream);
}
"""


def tiny_entry(symbol: str = "f", constants=()) -> dict:
    return {
        "symbol": symbol, "backend": "test", "num_args": 2,
        "args": [{"name": "x", "role": "input", "dtype": "float32", "shape": ["n"]}],
        "outputs": [{"name": "out", "role": "output", "dtype": "float32", "shape": ["n"]}],
        "symbols": {"n": [[0, 0], [1, 0]]}, "scratch_bytes": 0, "constants": list(constants),
    }


def write_library(directory: Path, sources, *, stem: str = "tiny", needs_cutlass: bool = False,
                  needs_cublaslt: bool = False, functions=None, **manifest_extra) -> Path:
    """A folder shaped like `byocc partition -o`'s output: sources, build files (from the
    plan), manifest (with the plan)."""
    module = GeneratedModule("test", (), tuple(sources), needs_cutlass=needs_cutlass, needs_cublaslt=needs_cublaslt)
    plan = BuildPlan.of(stem, [module], common_sources())
    files = {s.path: s.text for s in [*common_sources(), *sources]}
    files.update(build_files(plan))
    manifest = {"byocc_version": "0.1.0", "abi_version": 1, "codegen_version": "1", "archs": list(plan.archs),
                "library": plan.library, "build_file": "build.ninja",
                "uses_cutlass": needs_cutlass, "uses_cublaslt": needs_cublaslt, "build": plan.to_json(),
                "functions": functions if functions is not None else [tiny_entry()], **manifest_extra}
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    for path, text in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return directory


def write_tiny_library(directory: Path, **kw) -> Path:
    """The tiny library: ``f`` (no scratch) and ``g`` (scratch depends on the shape)."""
    kw.setdefault("functions", [tiny_entry("f"), dict(tiny_entry("g"), scratch_bytes=None)])
    return write_library(directory, [SourceFile("src/funcs/f.cu", TINY_FUNC, "light")], **kw)


def run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)


requires_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not os.path.exists("/usr/local/cuda/bin/nvcc"),
                                   reason="needs nvcc")


@requires_nvcc
def test_real_build_of_a_light_library(tmp_path, monkeypatch):
    monkeypatch.setenv("BYOCC_CACHE", str(tmp_path / "cache"))
    lib_dir = write_tiny_library(tmp_path / "out")
    result = run("build", lib_dir)
    assert result.exit_code == 0, result.stderr
    library = lib_dir / "lib" / "libbyocc_tiny.so"
    assert result.stdout == f"{library}\n"
    assert library.read_bytes()[:4] == b"\x7fELF"
    lines = result.stderr.splitlines()
    assert sorted(line[6:] for line in lines[:2]) == ["light src/funcs/f.cu", "light src/runtime.cu"]
    assert [line[:6] for line in lines[:2]] == ["[1/3] ", "[2/3] "]  # in the order they finished
    assert lines[2] == "[3/3] link lib/libbyocc_tiny.so"
    how = "ninja" if find_ninja() else "process pool"  # ninja is optional
    assert lines[-1].startswith(f"built {library} (2 units; {how}, heavy ")
    assert len(list((tmp_path / "cache" / "obj").glob("*.o"))) == 2
    # the same commands through the internal pool: both units come from the cache
    library.unlink()
    again = run("build", lib_dir, "--no-ninja")
    assert again.exit_code == 0, again.stderr
    assert library.is_file()
    assert ", 2 from the cache; process pool," in again.stderr.splitlines()[-1]


# --------------------------------------------------------------------------- fake tools
KINDS = [SourceFile("src/kernels/k_90.cu", '#include "byocc_gemm.h"\n', "sm90"),
         SourceFile("src/kernels/k_80.cu", '#include "byocc_gemm.h"\n', "sm80"),
         SourceFile("src/funcs/f.cu", '#include "byocc_internal.h"\n', "light")]


@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    _, log = install_fake_nvcc(tmp_path, monkeypatch)
    monkeypatch.setenv("BYOCC_CACHE", str(tmp_path / "cache"))
    return log


def compiled(log: Path) -> list[str]:
    return sorted(line.split(" -c ")[1].split(" ")[0] for line in log.read_text().splitlines() if " -c " in line)


@pytest.mark.parametrize("ninja", ["--ninja", "--no-ninja"])
def test_all_units_and_the_link(tmp_path, fake_nvcc, ninja):
    lib_dir = write_library(tmp_path / "out", KINDS, needs_cutlass=True)
    result = run("build", lib_dir, ninja, "-j", "2", "--cutlass-dir", _fake_cutlass(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert compiled(fake_nvcc) == ["src/funcs/f.cu", "src/kernels/k_80.cu", "src/kernels/k_90.cu",
                                   "src/runtime.cu"]
    link = [line for line in fake_nvcc.read_text().splitlines() if "-shared" in line]
    assert len(link) == 1 and link[0].startswith("-shared -cudart shared")
    assert "heavy_depth = 2\n" in (lib_dir / "config.ninja").read_text()
    assert f"-I{tmp_path / 'cutlass' / 'include'}" in fake_nvcc.read_text()
    assert (lib_dir / "lib" / "libbyocc_tiny.so").is_file()
    assert "-DBYOCC_NO_SM90" not in fake_nvcc.read_text()


def _fake_cutlass(tmp_path: Path) -> str:
    inc = tmp_path / "cutlass" / "include" / "cutlass"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "cutlass.h").write_text("")
    (inc / "version.h").write_text("#define CUTLASS_MAJOR 9\n#define CUTLASS_MINOR 8\n#define CUTLASS_PATCH 7\n")
    return str(tmp_path / "cutlass")


def test_arch_sm80_skips_sm90_units_and_defines_the_macro(tmp_path, fake_nvcc):
    lib_dir = write_library(tmp_path / "out", KINDS, needs_cutlass=True)
    result = run("build", lib_dir, "--arch", "sm_80", "--cutlass-dir", _fake_cutlass(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert compiled(fake_nvcc) == ["src/funcs/f.cu", "src/kernels/k_80.cu", "src/runtime.cu"]
    light = [line for line in fake_nvcc.read_text().splitlines() if "-c src/funcs/f.cu" in line]
    assert "-DBYOCC_NO_SM90" in light[0].split()
    kernel = [line for line in fake_nvcc.read_text().splitlines() if "-c src/kernels/k_80.cu" in line]
    assert "-DBYOCC_NO_SM90" not in kernel[0].split()  # kernel units keep their cache key
    assert ", skipped sm90 units;" in result.stderr.splitlines()[-1]
    assert "--salt cutlass=9.8.7" in (lib_dir / "config.ninja").read_text()
    # the build files now say what this build did: `ninja -C DIR` builds exactly that
    assert "k_90" not in (lib_dir / "build.ninja").read_text()
    assert not list(lib_dir.glob("build.*.ninja"))
    ninja = find_ninja()
    if ninja is not None:
        import subprocess

        dry = subprocess.run([ninja, "-C", str(lib_dir), "-t", "commands"], capture_output=True, text=True,
                             check=True).stdout.splitlines()
        dry_args = sorted(" ".join(c.split()).split("/fakebin/nvcc ", 1)[1] for c in dry)  # after the launcher
        assert dry_args == sorted(fake_nvcc.read_text().splitlines())  # the same command lines
        # and it is all up to date: ninja has nothing to do
        assert "no work to do" in subprocess.run([ninja, "-C", str(lib_dir), "-n"], capture_output=True,
                                                 text=True, check=True).stdout


@pytest.mark.parametrize("ninja", ["--ninja", "--no-ninja"])
def test_a_failing_unit_is_one_line_and_build_log(tmp_path, fake_nvcc, ninja):
    bad = SourceFile("src/funcs/bad.cu", "#error no\n", "light")
    lib_dir = write_library(tmp_path / "out", [bad])
    result = run("build", lib_dir, ninja)
    assert result.exit_code == 3
    log = lib_dir / "build.log"
    assert result.stderr.splitlines()[-1] == (
        f"{lib_dir}: error: src/funcs/bad.cu: compilation failed; the compiler output is in {log}")
    assert "src/funcs/bad.cu(3): error: this unit does not compile" in log.read_text()
    assert "FAILED: [code=2] obj/funcs/bad.o" in log.read_text()
    assert not (lib_dir / "lib" / "libbyocc_tiny.so").exists()


def test_missing_nvcc_is_exit_3_with_one_line(tmp_path, monkeypatch):
    lib_dir = write_tiny_library(tmp_path / "out")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("CUDA_HOME", str(empty))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("CUDACXX", raising=False)
    result = run("build", lib_dir)
    assert result.exit_code == 3
    assert result.stderr == f"{lib_dir}: error: nvcc not found (set CUDACXX or CUDA_HOME, or put nvcc on PATH)\n"
    assert result.stdout == ""


def test_missing_cutlass_and_cublaslt_and_launcher(tmp_path, fake_nvcc, monkeypatch):
    lib_dir = write_library(tmp_path / "out", KINDS, needs_cutlass=True, needs_cublaslt=True)
    empty = tmp_path / "nocutlass"
    empty.mkdir()
    result = run("build", lib_dir, "--cutlass-dir", empty)
    assert result.exit_code == 3
    assert result.stderr == f"{lib_dir}: error: CUTLASS headers not found in {empty}\n"
    import byocc.backends.toolchain as toolchain

    monkeypatch.setattr(toolchain, "find_optional_cublaslt", lambda: None)
    result = run("build", lib_dir, "--cutlass-dir", _fake_cutlass(tmp_path))
    assert result.exit_code == 3
    assert result.stderr.startswith(f"{lib_dir}: error: cuBLASLt not found: neither the CUDA toolkit nor")
    assert result.stderr.count("\n") == 1
    result = run("build", lib_dir, "--launcher", "no-such-launcher-xyz")
    assert result.exit_code == 3
    assert result.stderr == f"{lib_dir}: error: launcher 'no-such-launcher-xyz' not found\n"


def test_cublaslt_from_the_wheel_is_linked_by_soname(tmp_path, fake_nvcc):
    from byocc.backends.toolchain import find_optional_cublaslt

    found = find_optional_cublaslt()
    if found is None:
        pytest.skip("no cuBLASLt")
    lib_dir = write_library(tmp_path / "out", KINDS[2:], needs_cublaslt=True)
    result = run("build", lib_dir)
    assert result.exit_code == 0, result.stderr
    link = [line for line in fake_nvcc.read_text().splitlines() if "-shared" in line][0]
    assert link.endswith(f"-L{found.lib_dir} -l:{found.lib_file} -Xlinker -rpath,{found.lib_dir}")


def test_no_cache_bypasses_the_cache(tmp_path, fake_nvcc):
    lib_dir = write_library(tmp_path / "out", KINDS[2:])
    assert run("build", lib_dir, "--no-cache").exit_code == 0
    assert not (tmp_path / "cache").exists()
    assert "launcher =\n" in (lib_dir / "config.ninja").read_text()
    assert run("build", lib_dir).exit_code == 0
    assert len(list((tmp_path / "cache" / "obj").glob("*.o"))) == 2
    (lib_dir / "lib" / "libbyocc_tiny.so").unlink()
    (lib_dir / "obj" / "runtime.o").unlink()
    before = compiled(fake_nvcc)
    result = run("build", lib_dir)
    assert result.exit_code == 0
    assert compiled(fake_nvcc) == before  # the object came from the cache
    assert ", 1 from the cache;" in result.stderr.splitlines()[-1]


def test_missing_manifest_is_an_input_error(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run("build", tmp_path / "empty")
    assert result.exit_code == 1
    assert "no manifest" in result.stderr


SLOW_NVCC = """#!{python}
import os, sys, time
args = sys.argv[1:]
if args == ["--version"] or "--dryrun" in args:
    sys.exit(0)
out = args[args.index("-o") + 1]
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
start = time.time()
if "-c" in args:
    time.sleep(0.4)
with open(os.environ["FAKE_NVCC_LOG"], "a") as f:
    f.write("%s %f %f\\n" % (out, start, time.time()))
open(out, "w").write("")
"""


@pytest.mark.parametrize("ninja", ["--ninja", "--no-ninja"])
def test_heavy_units_respect_the_pool_depth(tmp_path, fake_nvcc, ninja):
    (tmp_path / "fakebin" / "nvcc").write_text(SLOW_NVCC.format(python=sys.executable))
    heavy = [SourceFile(f"src/kernels/k_{i}.cu", f"// {i}\n", "sm90" if i % 2 else "sm80") for i in range(3)]
    lib_dir = write_library(tmp_path / "out", heavy + [SourceFile("src/funcs/f.cu", "\n", "light")])
    result = run("build", lib_dir, ninja, "-j", "1", "--no-cache")
    assert result.exit_code == 0, result.stderr
    spans = {}
    for line in fake_nvcc.read_text().splitlines():
        out, start, end = line.split()
        spans[out] = (float(start), float(end))
    kernels = sorted(v for k, v in spans.items() if k.startswith("obj/kernels/"))
    assert len(kernels) == 3
    for (_, end), (start, _) in zip(kernels, kernels[1:]):
        assert start >= end - 0.05  # one heavy unit at a time
    assert "heavy 1, jobs " in result.stderr.splitlines()[-1]


def test_config_ninja_is_written_through_a_symlink(tmp_path, fake_nvcc):
    lib_dir = write_library(tmp_path / "out", KINDS[2:])
    real = tmp_path / "my-config.ninja"
    real.write_text("# mine\n")
    real.chmod(0o640)
    (lib_dir / "config.ninja").unlink()
    (lib_dir / "config.ninja").symlink_to(real)
    assert run("build", lib_dir, "-j", "3").exit_code == 0
    assert (lib_dir / "config.ninja").is_symlink()
    assert "heavy_depth = 3\n" in real.read_text()
    assert real.stat().st_mode & 0o777 == 0o640


def test_a_failing_link_names_the_library(tmp_path, fake_nvcc):
    lib_dir = write_library(tmp_path / "out", KINDS[2:])
    nvcc = tmp_path / "fakebin" / "nvcc"
    nvcc.write_text(nvcc.read_text().replace('open(out, "w")', 'sys.exit(1) if "-shared" in args else open(out, "w")'))
    result = run("build", lib_dir, "--no-ninja")
    assert result.exit_code == 3
    assert result.stderr.splitlines()[-1] == (f"{lib_dir}: error: lib/libbyocc_tiny.so: linking failed; "
                                              f"the output is in {lib_dir / 'build.log'}")


def test_arch_sm90a_skips_sm80_units_and_defines_the_macro(tmp_path, fake_nvcc):
    lib_dir = write_library(tmp_path / "out", KINDS, needs_cutlass=True)
    result = run("build", lib_dir, "--arch", "sm_90a", "--no-ninja", "--cutlass-dir", _fake_cutlass(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert compiled(fake_nvcc) == ["src/funcs/f.cu", "src/kernels/k_90.cu", "src/runtime.cu"]
    light = [line for line in fake_nvcc.read_text().splitlines() if "-c src/funcs/f.cu" in line]
    assert "-DBYOCC_NO_SM80" in light[0].split() and "-DBYOCC_NO_SM90" not in light[0].split()
    assert "k_80" not in (lib_dir / "build.ninja").read_text()
    both = run("build", lib_dir, "--arch", "sm_90a", "--arch", "sm_80", "--cutlass-dir", _fake_cutlass(tmp_path))
    assert both.exit_code == 0 and "skipped" not in both.stderr


# --------------------------------------------------------------------------- the plan's checks
def test_a_missing_or_unreadable_generated_file_is_named(tmp_path, fake_nvcc):
    lib_dir = write_library(tmp_path / "out", KINDS, needs_cutlass=True)
    (lib_dir / "src" / "funcs" / "f.cu").unlink()
    result = run("build", lib_dir, "--cutlass-dir", _fake_cutlass(tmp_path))
    assert result.exit_code == 1
    assert result.stderr == (f"{lib_dir}: error: src/funcs/f.cu: generated file missing "
                             f"(re-run `byocc partition -o {lib_dir}`)\n")
    assert compiled(fake_nvcc) == []  # checked before anything runs
    (lib_dir / "src" / "funcs" / "f.cu").mkdir()
    result = run("build", lib_dir, "--cutlass-dir", _fake_cutlass(tmp_path))
    assert result.exit_code == 1
    assert result.stderr == f"{lib_dir}: error: src/funcs/f.cu: is a folder, not a generated file\n"
    (lib_dir / "src" / "funcs" / "f.cu").rmdir()
    (lib_dir / "src" / "funcs" / "f.cu").write_text(KINDS[2].text)
    (lib_dir / "src" / "byocc_gemm.h").unlink()  # a header a unit includes
    result = run("build", lib_dir, "--cutlass-dir", _fake_cutlass(tmp_path))
    assert result.stderr == (f"{lib_dir}: error: src/byocc_gemm.h: generated file missing "
                             f"(re-run `byocc partition -o {lib_dir}`)\n")


def test_only_the_files_of_the_archs_asked_are_needed(tmp_path, fake_nvcc):
    lib_dir = write_library(tmp_path / "out", KINDS, needs_cutlass=True)
    (lib_dir / "src" / "kernels" / "k_90.cu").unlink()
    result = run("build", lib_dir, "--arch", "sm_80", "--cutlass-dir", _fake_cutlass(tmp_path))
    assert result.exit_code == 0, result.stderr


def test_a_manifest_without_a_build_plan(tmp_path):
    lib_dir = write_tiny_library(tmp_path / "out")
    manifest = json.loads((lib_dir / "manifest.json").read_text())
    del manifest["build"]
    (lib_dir / "manifest.json").write_text(json.dumps(manifest))
    result = run("build", lib_dir)
    assert result.exit_code == 1
    assert result.stderr == (f"{lib_dir / 'manifest.json'}: error: no build plan (field 'build'); "
                             f"re-run `byocc partition -o {lib_dir}`\n")  # the manifest named once
    manifest["build"] = {"stem": "tiny", "units": [{"path": "../x.cu", "kind": "light"}]}
    (lib_dir / "manifest.json").write_text(json.dumps(manifest))
    assert "malformed build plan" in run("build", lib_dir).stderr


def test_the_first_progress_report_carries_the_plans_total(tmp_path, fake_nvcc):
    from byocc.cli.build import _RichReporter
    from byocc.runtime.build import Progress
    from byocc.runtime.build import build

    lib_dir = write_library(tmp_path / "out", KINDS[2:])
    reports: list = []
    build(lib_dir, on_progress=reports.append, use_ninja=False)
    assert reports[0] == Progress(0, 3, "")  # f.cu, runtime.cu and the link, before anything ran
    assert compiled(fake_nvcc) == ["src/funcs/f.cu", "src/runtime.cu"]
    assert [r.done for r in reports] == [0, 1, 2, 3] and {r.total for r in reports} == {3}
    bar = _RichReporter()
    bar.update(reports[0])
    assert [(t.total, t.completed) for t in bar._progress.tasks] == [(3, 0)]  # never "0/?"
    bar.close()


# --------------------------------------------------------------------------- the object cache
def test_a_damaged_cache_is_noticed_and_compiled_again(tmp_path, fake_nvcc):
    from byocc.runtime.objcache import unpack_entry

    first = write_library(tmp_path / "a", KINDS[2:])
    assert run("build", first).exit_code == 0
    entries = sorted((tmp_path / "cache" / "obj").glob("*.o"))
    assert len(entries) == 2
    for e in entries:  # a full disk, a killed copy: the objects are cut short
        data = e.read_bytes()
        e.write_bytes(data[:len(data) // 2])
    before = len(compiled(fake_nvcc))
    second = write_library(tmp_path / "b", KINDS[2:])  # a fresh folder of the same model
    result = run("build", second)
    assert result.exit_code == 0, result.stderr
    assert len(compiled(fake_nvcc)) == before + 2  # both compiled again
    assert result.stderr.count("failed their check") == 1
    assert "warning: 2 cached objects failed their check (a damaged cache entry) and compiled again\n" in result.stderr
    assert ", 2 from the cache" not in result.stderr
    assert (second / "lib" / "libbyocc_tiny.so").read_text().startswith("-shared -cudart shared")
    assert all(unpack_entry(e.read_bytes()) is not None for e in entries)  # rewritten whole
    third = write_library(tmp_path / "c", KINDS[2:])
    again = run("build", third)
    assert ", 2 from the cache;" in again.stderr and "failed" not in again.stderr


def _build_process(lib_dir: Path, *extra: str):
    import subprocess

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.Popen([sys.executable, "-m", "byocc", "build", str(lib_dir), "--no-ninja", *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_builds_of_one_folder_at_once(tmp_path, fake_nvcc):
    (tmp_path / "fakebin" / "nvcc").write_text(SLOW_NVCC.format(python=sys.executable))
    lib_dir = write_library(tmp_path / "out", KINDS[2:])
    procs = [_build_process(lib_dir), _build_process(lib_dir)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum("waiting for another build of" in err for _, err in outs) <= 1
    assert (lib_dir / "lib" / "libbyocc_tiny.so").is_file()
    # one compiled, the other found the cache (or waited and found everything there)
    assert len([line for line in fake_nvcc.read_text().splitlines() if line.startswith("obj/")]) == 2


def test_builds_of_two_folders_sharing_one_cache(tmp_path, fake_nvcc):
    from byocc.runtime.objcache import unpack_entry

    (tmp_path / "fakebin" / "nvcc").write_text(SLOW_NVCC.format(python=sys.executable))
    dirs = [write_library(tmp_path / name, KINDS[2:]) for name in ("a", "b")]
    procs = [_build_process(d) for d in dirs]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    for d in dirs:
        assert (d / "lib" / "libbyocc_tiny.so").is_file()
        assert sorted(p.name for p in (d / "obj").rglob("*.o")) == ["f.o", "runtime.o"]
    entries = list((tmp_path / "cache" / "obj").glob("*.o"))
    assert len(entries) == 2 and all(unpack_entry(e.read_bytes()) is not None for e in entries)
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_a_build_without_sm80_units_warns_about_steps_left_to_their_generic_kernel(tmp_path, fake_nvcc):
    """`--arch sm_90a` alone skips the sm_80 units, which are the only CUTLASS kernel of some
    steps on Hopper too (an fp32 conv, a C = 3 stem): ResNet-50's stem ran its direct conv,
    5.2 ms instead of 0.24, on the H200. The build says which steps, once."""
    samples = Path(__file__).resolve().parents[2] / "samples"
    out = tmp_path / "cnn"
    part = run("partition", samples / "small_cnn.onnx", "--layout", "NHWC", "--fold-batch-norm", "--backend",
               "cutlass", "-o", out)
    assert part.exit_code == 0, part.stderr
    only90 = run("build", out, "--arch", "sm_90a")
    assert only90.exit_code == 0, only90.stderr
    warning = [line for line in only90.stderr.splitlines() if line.startswith("warning: without the sm_80 units")]
    # 4 of its 5 fp32 conv/GEMM steps: its 1x1 stride-1 conv is a GEMM step with an sm_90a TF32 unit
    assert len(warning) == 1 and "4 steps" in warning[0] and "fused_relax_nn_conv2d_cutlass (cutlass.conv2d)" in warning[0]
    both = run("build", out)
    assert both.exit_code == 0 and "warning: without the sm_80 units" not in both.stderr
    also80 = run("build", out, "--arch", "sm_80")
    assert also80.exit_code == 0 and "warning: without the sm_80 units" not in also80.stderr
