"""The codegen contract shared by the backends: program extraction from both partition
paths, GEMM steps read from composite bodies, the safe C++ text helpers, the wrapper TU's
argument checks (compiled with nvcc when it is installed) and the manifest schema."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from byocc.backends import get_patterns_with_prefix
from byocc.backends.codegen import CodegenError
from byocc.backends.codegen import EntryPoint
from byocc.backends.codegen import GeneratedModule
from byocc.backends.codegen import SourceFile
from byocc.backends.codegen import TensorSpec
from byocc.backends.cuda import common_sources
from byocc.backends.cuda.cxx import c_comment
from byocc.backends.cuda.cxx import c_identifier
from byocc.backends.cuda.cxx import c_string
from byocc.backends.cuda.cxx import is_c_identifier
from byocc.backends.cuda.function import FunctionCodegen
from byocc.backends.cuda.function import generate_function
from byocc.backends.cuda.step import Step
from byocc.backends.manifest import build_manifest
from byocc.backends.manifest import dumps
from byocc.backends.manifest import load_manifest
from byocc.backends.program import gemm_step
from byocc.backends.program import offloaded_program
from byocc.ir import InputError
from byocc.text import parse_module
from byocc.transform import partition

ROOT = Path(__file__).resolve().parents[2]

MODULE = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 64), dtype="float16"), w: R.Tensor((128, 64), dtype="float16"), b: R.Tensor((128,), dtype="float16"), w2: R.Tensor((128, 32), dtype="float16"), r: R.Tensor(("n", 32), dtype="float16")) -> R.Tensor(("n", 32), dtype="float16"):
        n = T.int64()
        with R.dataflow():
            wt: R.Tensor((64, 128), dtype="float16") = R.permute_dims(w, axes=None)
            h: R.Tensor((n, 128), dtype="float16") = R.matmul(x, wt, out_dtype="void")
            hb: R.Tensor((n, 128), dtype="float16") = R.add(b, h)
            a: R.Tensor((n, 128), dtype="float16") = R.nn.gelu(hb)
            y: R.Tensor((n, 32), dtype="float16") = R.matmul(a, w2, out_dtype="void")
            z: R.Tensor((n, 32), dtype="float16") = R.multiply(y, r)
            o: R.Tensor((n, 32), dtype="float16") = R.nn.relu(z)
            R.output(o)
        return o
'''


def offloaded(path: str):
    mod = parse_module(MODULE, "<test>")
    part = partition(mod, get_patterns_with_prefix("cutlass"), path=path, bind_constants=True)
    return [(f.attrs["global_symbol"] if "global_symbol" in f.attrs else name, f)
            for name, f in part.items() if "Codegen" in getattr(f, "attrs", {})]


def test_annotate_path_gives_one_composite_call_per_function():
    funcs = offloaded("annotate")
    programs = [offloaded_program(sym, f) for sym, f in funcs]
    assert sorted(len(p.calls) for p in programs) == [1, 1]
    comps = sorted(p.composites[0] for p in programs)
    assert comps == ["cutlass.matmul_transposed_bias_gelu", "cutlass.matmul"] or \
        "cutlass.matmul_transposed_bias_gelu" in comps


def test_merge_path_chains_calls_through_a_temporary():
    [(sym, func)] = offloaded("merge")
    program = offloaded_program(sym, func)
    assert len(program.calls) == 2
    first, second = program.calls
    assert first.composite == "cutlass.matmul_transposed_bias_gelu"
    # the second call reads the first call's result (a temporary in scratch)
    assert second.args[0].kind == "temp" and second.args[0].index == first.result
    assert program.outputs == (program.calls[-1].args[0].__class__("temp", second.result),)


def test_gemm_step_reads_bias_first_add_and_transposed_weight():
    [(sym, func)] = offloaded("merge")
    program = offloaded_program(sym, func)
    step = gemm_step(program.calls[0].func)
    assert step is not None
    assert step.transposed and step.last_two_swapped
    assert step.act == "gelu" and step.bias is not None and step.residual_op is None
    # add(b, h): the bias is found on either side of the add
    assert step.describe() == "matmul(x, permute_dims(w)) -> + bias -> gelu"


def test_gemm_step_rejects_a_non_gemm_composite():
    mod = parse_module(MODULE, "<test>")
    part = partition(mod, [("t.relu", __import__("byocc.dpl", fromlist=["is_op"]).is_op("relax.nn.relu")(
        __import__("byocc.dpl", fromlist=["wildcard"]).wildcard()))], path="annotate")
    [func] = [f for f in part.functions.values() if "Codegen" in getattr(f, "attrs", {})] if hasattr(part, "functions") \
        else [f for _, f in part.items() if "Codegen" in getattr(f, "attrs", {})]
    program = offloaded_program("s", func)
    assert gemm_step(program.calls[0].func) is None


@pytest.mark.parametrize("name", ["fused_x", "_a1", "A"])
def test_c_identifier_accepts_plain_names(name):
    assert c_identifier(name) == name


@pytest.mark.parametrize("name", ["a b", "x*/y", "1abc", "int", "a\nb", "__reserved", "x;system(1)", "é", "a" * 201])
def test_c_identifier_rejects_anything_else(name):
    assert not is_c_identifier(name)
    with pytest.raises(CodegenError, match="not a valid C identifier"):
        c_identifier(name)


def test_c_string_and_comment_cannot_break_out():
    s = c_string('a"b\\c\n*/??=é')
    assert "\n" not in s and s.startswith('"') and s.endswith('"')
    assert '\\"' in s and "\\\\" in s and "\\?\\?=" in s
    c = c_comment("x */ y\nz\\")
    assert "\n" not in c and "\\" not in c


def wrapper_text(sym, func, code, title="two steps") -> str:
    """The wrapper of ``func`` whose steps run ``code(index, call, ctx)`` and need no scratch."""
    skeleton = FunctionCodegen("cutlass", lambda p, i, c, ctx: Step(c.composite, code(i, c, ctx)), lambda n: title)
    return generate_function(skeleton, sym, func).source.text


def test_wrapper_checks_every_argument_and_symbolic_dim():
    [(sym, func)] = offloaded("merge")
    text = wrapper_text(sym, func, lambda i, c, ctx: f"// step {i}\n")
    # parameters in first-use order (w, x, b, w2), then the output; the multiply and relu
    # stay on the host (a residual needs a bias in the cutlass table)
    assert "constexpr int32_t kNumArgs = 5;" in text
    assert text.count("byocc::check_tensor(") == 5
    # n is bound from x (axis 0) and checked on the output
    assert text.count('"n", &d.s0') == 2
    # the temporary between the two GEMMs lives in scratch: (n, 128) float16
    assert "off.temp0 = uint64_t(0);  // float16 (n, 128), round_up(n * 128 * 2) bytes" in text
    assert f"BYOCC_EXPORT int32_t {sym}(" in text
    assert f"BYOCC_EXPORT uint64_t byocc_scratch_bytes_{sym}(" in text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_wrapper_and_runtime_compile_with_nvcc(tmp_path):
    [(sym, func)] = offloaded("merge")
    text = wrapper_text(sym, func, lambda i, c, ctx: f"(void){ctx.ptr(c.args[0])};\n")
    (tmp_path / "src" / "funcs").mkdir(parents=True)
    for f in common_sources():
        (tmp_path / f.path).write_text(f.text)
    (tmp_path / "src" / "funcs" / "f.cu").write_text(text)
    for name in ("funcs/f.cu", "runtime.cu"):
        proc = subprocess.run(["nvcc", "-std=c++17", "-O1", "-Xcompiler=-fPIC", "-Werror", "all-warnings",
                               "-I", str(tmp_path / "src"), "-c", str(tmp_path / "src" / name),
                               "-o", str(tmp_path / (Path(name).stem + ".o"))],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def entry(symbol="f"):
    return EntryPoint(symbol=symbol, backend="cutlass", composites=("cutlass.matmul",),
                      source_file=f"src/funcs/{symbol}.cu",
                      args=(TensorSpec("x", "lhs", "float16", (4, 8)), TensorSpec("w", "rhs", "float16", (8, 2))),
                      outputs=(TensorSpec("output0", "output", "float16", (4, 2)),))


def test_manifest_round_trip_and_validation(tmp_path):
    module = GeneratedModule("cutlass", (entry("b"), entry("a")), (SourceFile("src/funcs/a.cu", "", "light"),),
                             needs_cutlass=True)
    manifest = build_manifest("m", [module], cutlass_version="4.2.0", archs={"sm_90a", "sm_80"})
    assert [f["symbol"] for f in manifest["functions"]] == ["a", "b"]
    assert manifest["library"] == "lib/libbyocc_m.so" and manifest["archs"] == ["sm_80", "sm_90a"]
    assert manifest["functions"][0]["num_args"] == 3
    assert "int32_t a(const DLTensor* const* args" in manifest["functions"][0]["c_signature"]
    (tmp_path / "manifest.json").write_text(dumps(manifest))
    assert load_manifest(tmp_path) == json.loads(dumps(manifest))
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(InputError, match="missing field 'abi_version'"):
        load_manifest(tmp_path)
    with pytest.raises(InputError, match="no manifest"):
        load_manifest(tmp_path / "nowhere")


def test_source_paths_stay_inside_the_output_folder():
    with pytest.raises(ValueError):
        SourceFile("../evil.cu", "", "light")
    with pytest.raises(ValueError):
        SourceFile("/etc/x.cu", "", "light")
