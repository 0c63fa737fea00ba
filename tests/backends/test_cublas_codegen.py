"""The cuBLAS codegen (spec/backends.md sections 11, 12, 14, 16): what a user checks in the
generated wrapper (the epilogue, OP_T for a transposed weight, the exact-GELU kernel, the
batch mode, the cuBLASLt types), the manifest entry, CodegenError for deferred composites,
determinism, and, when nvcc and the cuBLASLt headers are present, a real compile of every
wrapper plus the runtime units, linked into one library against the installed libcublasLt
and loaded with ctypes (host-side checks only: nothing touches a GPU)."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import byocc.text
import byocc.transform
from byocc.backends import get_patterns_with_prefix
from byocc.backends import make_matmul_pattern
from byocc.backends.codegen import CodegenError
from byocc.backends.codegen import GeneratedModule
from byocc.backends.cublas.codegen import codegen
from byocc.backends.cublas.codegen import generate_function
from byocc.backends.cublas.codegen import parse_options
from byocc.backends.cublas.runtime import WORKSPACE_BYTES
from byocc.backends.cublas.runtime import runtime_text
from byocc.backends.cuda import common_sources
from byocc.backends.toolchain import find_optional_cublaslt
from byocc.backends.toolchain import find_optional_cuda_include
from byocc.backends.toolchain import find_optional_nvcc

REPO = Path(__file__).resolve().parents[2]
MIB32 = 32 << 20


# --------------------------------------------------------------------------- module text
def _shape(s) -> str:
    return "(" + ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def _function(name, lhs, rhs, dtype="float16", transposed=False, axes=None, bias=None, act=None,
              out_dtype=None) -> str:
    """``[permute_dims(w, axes)] -> matmul -> [+ b] -> [act]``; ``rhs`` is the stored shape."""
    syms = sorted({d for s in (lhs, rhs, bias or ()) for d in s if isinstance(d, str)})
    od = out_dtype or dtype
    params = [f'x: R.Tensor({_shape(lhs)}, dtype="{dtype}")', f'w: R.Tensor({_shape(rhs)}, dtype="{dtype}")']
    if bias is not None:
        params.append(f'b: R.Tensor({_shape(bias)}, dtype="{od}")')
    body, wv, cur = [], "w", "h"
    if transposed:
        body.append(f"wt = R.permute_dims(w, axes={list(axes) if axes is not None else None})")
        wv = "wt"
    body.append(f'h = R.matmul(x, {wv}, out_dtype="{out_dtype or "void"}")')
    if bias is not None:
        body.append(f"hb = R.add({cur}, b)")
        cur = "hb"
    if act:
        body.append(f"y = R.nn.{act}({cur})")
        cur = "y"
    body.append(f"R.output({cur})")
    return (f"    @R.function\n    def {name}({', '.join(params)}):\n"
            + "".join(f"        {s} = T.int64()\n" for s in syms)
            + "        with R.dataflow():\n" + "".join(f"            {b}\n" for b in body)
            + f"        return {cur}\n")


def _module(**functions) -> str:
    return ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n"
            "# from tvm.script import tir as T\n\n@I.ir_module\nclass Module:\n"
            + "\n".join(_function(name, **kw) for name, kw in functions.items()))


#: The cases, by graph shape (spec section 15's B1-B3 plus the batch and layout paths).
CASES = {
    "f16_bias_relu": dict(lhs=(16, 64), rhs=(64, 128), bias=(128,), act="relu"),
    "f32_transposed": dict(lhs=(4, 16), rhs=(128, 16), dtype="float32", transposed=True, axes=(1, 0)),
    "int8": dict(lhs=(35, 16), rhs=(16, 128), dtype="int8", out_dtype="int32"),
    "int8_transposed": dict(lhs=(6, 32, 8), rhs=(6, 12, 8), dtype="int8", out_dtype="int32",
                            transposed=True, axes=(0, 2, 1)),
    "int8_symbolic_batch": dict(lhs=("a", 32, 8), rhs=("a", 8, 12), dtype="int8", out_dtype="int32"),
    "bf16_to_f32": dict(lhs=(2, 10, 32), rhs=(2, 64, 32), dtype="bfloat16", out_dtype="float32",
                        transposed=True, axes=(0, 2, 1)),
    "batched_bias": dict(lhs=(6, 32, 8), rhs=(6, 8, 10), bias=(10,)),
    "flatten": dict(lhs=(5, 3, 32, 8), rhs=(8, 10)),
    "broadcast_lhs": dict(lhs=(32, 8), rhs=("a", 8, 10)),
    "symbolic_m": dict(lhs=("a", 6), rhs=(6, 16), bias=(16,)),
    "gelu_symbolic_batch": dict(lhs=("a", 32, 8), rhs=("a", 10, 8), transposed=True, axes=(0, 2, 1),
                                bias=(10,), act="gelu"),
    "runtime_batch": dict(lhs=("a", 1, 32, 8), rhs=("a", 3, 8, 10)),
    # swaps two batch axes: the weight is copied into scratch first (the check reads the
    # stored shape, so the batch product must match before the permute too)
    "vector_lhs": dict(lhs=(8,), rhs=(8, 16), bias=(16,), act="relu"),
    "vector_rhs_int8": dict(lhs=(3, 4, 8), rhs=(8,), dtype="int8", out_dtype="int32"),
    "bias_scalar": dict(lhs=(4, 8), rhs=(8, "n"), dtype="float32", bias=(1,), act="relu"),
    "permuted": dict(lhs=(2, 3, 32, 8), rhs=(3, 2, 8, 10), transposed=True, axes=(1, 0, 2, 3)),
}


def generate(text: str, options=None, path="annotate") -> list[GeneratedModule]:
    mod = byocc.text.parse_module(text)
    out = byocc.transform.partition(mod, get_patterns_with_prefix("cublas"), path=path, bind_constants=False,
                                    run_codegen=True, target_options={"cublas": options or {}},
                                    codegens={"cublas": codegen})
    return list(out.attrs["external_mods"])


def one(case: str, options=None):
    """(wrapper text, manifest entry JSON) of the single function of ``case``."""
    [module] = generate(_module(main=CASES[case]), options)
    [entry] = module.entries
    [wrapper] = [s for s in module.sources if s.path.startswith("src/funcs/")]
    return wrapper.text, entry.to_json()


# --------------------------------------------------------------------------- text tests
def test_mlp_sample_gets_one_light_wrapper_per_function():
    mod = byocc.text.read_file(str(REPO / "samples" / "mlp_fp16.relax"))
    out = byocc.transform.partition(mod, get_patterns_with_prefix("cublas"), run_codegen=True,
                                    codegens={"cublas": codegen})
    modules = list(out.attrs["external_mods"])
    assert len(modules) == 3 and all(m.needs_cublaslt and m.backend == "cublas" for m in modules)
    by_symbol = {m.entries[0].symbol: m for m in modules}
    relu = by_symbol["fused_relax_matmul_relax_add_relax_nn_relu_cublas"]
    assert sorted(s.path for s in relu.sources) == [
        "src/byocc_cublaslt.h", "src/cublaslt_runtime.cu",
        "src/funcs/fused_relax_matmul_relax_add_relax_nn_relu_cublas.cu"]
    assert {s.path: s.unit for s in relu.sources}["src/cublaslt_runtime.cu"] == "light"
    text = relu.sources[0].text
    assert '#include "byocc_cublaslt.h"' in text
    assert "p.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;" in text
    # the mapping of spec 11: A = weight (args[1]), B = x (args[0]), m = N, n = M, k = K
    assert "p.a = byocc::data_of(args[1]);" in text and "p.b = byocc::data_of(args[0]);" in text
    assert "p.m = static_cast<uint64_t>(N);" in text and "p.n = static_cast<uint64_t>(rows);" in text
    assert "p.op_a = CUBLAS_OP_N;" in text and "p.lda = N;" in text
    assert "//   cuBLASLt column-major D^T = op(A) B: A = weight (CUBLAS_OP_N, N x K, lda = 128)" in text
    entry = relu.entries[0].to_json()
    assert [(a["name"], a["role"], a["layout"]) for a in entry["args"]] == [
        ("x", "lhs", "row_major"), ("w1", "rhs", "row_major"), ("b1", "bias", "row_major")]
    assert entry["args"][2]["operand_class"] == "per_column"
    assert entry["composite"] == "cublas.matmul_bias_relu" and entry["pattern_ranks"] == [7]
    assert entry["attrs"] == {"activation": "relu", "transposed_rhs": False, "accumulator": "float32", "gelu": None,
                              "epilogue": "CUBLASLT_EPILOGUE_RELU_BIAS", "compute_type": "CUBLAS_COMPUTE_32F",
                              "op_a": "CUBLAS_OP_N", "weight_prep": None}
    assert entry["scratch_bytes"] == MIB32 and entry["scratch_expr"] is None
    assert entry["variants"] == [{"arch": "sm_80", "impl": "cublaslt", "runs_on": ["8.x", "9.x"],
                                  "workspace_bytes": MIB32}]
    assert entry["steps"][0]["m"] == "128" and entry["steps"][0]["n"] == "16" and entry["steps"][0]["k"] == "64"
    last = by_symbol["fused_relax_matmul_relax_add_cublas"]
    assert "p.epilogue = CUBLASLT_EPILOGUE_BIAS;" in last.sources[0].text
    assert last.entries[0].pattern_ranks == (8,)


def test_transposed_weight_is_op_t_with_lda_k():
    text, entry = one("f32_transposed")
    assert "p.op_a = CUBLAS_OP_T;" in text and "p.lda = K;  // A = weight: K x N column-major" in text
    assert "cublaslt_permute" not in text
    assert "p.compute = CUBLAS_COMPUTE_32F;" in text  # full fp32 by default (TVM parity)
    assert entry["attrs"]["transposed_rhs"] is True and entry["attrs"]["fp32_math"] == "ieee"
    assert [(a["name"], a["layout"]) for a in entry["args"]] == [("w", "col_major_nk"), ("x", "row_major")]
    tf32, entry = one("f32_transposed", {"fp32_math": "tf32"})
    assert "p.compute = CUBLAS_COMPUTE_32F_FAST_TF32;" in tf32 and entry["attrs"]["fp32_math"] == "tf32"


def test_gelu_is_exact_by_default_and_tanh_with_fast_gelu():
    text, entry = one("gelu_symbolic_batch")
    assert "p.epilogue = CUBLASLT_EPILOGUE_BIAS;" in text
    assert "rc = byocc::cublaslt_gelu_erf_inplace(device, p.d, CUDA_R_16F, batch * rows * N, stream);" in text
    assert entry["attrs"]["gelu"] == "erf" and entry["steps"][0]["gelu_kernel"] is True
    assert "erff(x * 0.70710678118654752440f)" in runtime_text()
    fast, entry = one("gelu_symbolic_batch", {"fast_gelu": True})
    assert "p.epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;" in fast and "cublaslt_gelu_erf_inplace" not in fast
    assert entry["attrs"]["gelu"] == "tanh" and entry["steps"][0]["gelu_kernel"] is False
    assert one("gelu_symbolic_batch", {"exact_gelu": False})[0] == fast


def test_int8_always_runs_tn_and_transposes_a_row_major_weight_first():
    text, entry = one("int8")
    assert "p.ab_type = CUDA_R_8I;" in text and "p.d_type = CUDA_R_32I;" in text
    assert "p.compute = CUBLAS_COMPUTE_32I;" in text and "p.scale_type = CUDA_R_32I;" in text
    assert "p.epilogue = CUBLASLT_EPILOGUE_DEFAULT;" in text
    assert "const int w_axes[2] = {1, 0};" in text
    assert "rc = byocc::cublaslt_permute(device, byocc::data_of(args[1]), weight, 1, 2, w_shape, w_axes, stream);" in text
    assert "p.a = weight;" in text and "p.op_a = CUBLAS_OP_T;" in text and "p.lda = K;" in text
    assert entry["attrs"]["weight_prep"] == "transpose" and entry["attrs"]["accumulator"] == "int32"
    assert entry["scratch_bytes"] == MIB32 + 16 * 128  # workspace + the (N, K) copy (2048 bytes, 256-aligned)
    text, entry = one("int8_transposed")
    assert "p.op_a = CUBLAS_OP_T;" in text and "cublaslt_permute" not in text
    assert "p.a = byocc::data_of(args[0]);" in text and entry["attrs"]["weight_prep"] is None
    text, entry = one("int8_symbolic_batch")
    assert entry["scratch_bytes"] is None
    assert entry["scratch_expr"] == "33554432 + round_up(a * 8 * 12 * 1)"


def test_bf16_inputs_with_f32_output():
    text, entry = one("bf16_to_f32")
    assert "p.ab_type = CUDA_R_16BF;" in text and "p.d_type = CUDA_R_32F;" in text
    assert "p.compute = CUBLAS_COMPUTE_32F;" in text and "batch = int64_t(2);" in text
    assert entry["outputs"][0]["dtype"] == "float32" and entry["pattern_ranks"] == [5]


@pytest.mark.parametrize("case, mode, lines", [
    ("batched_bias", "strided", ["batch = int64_t(6);", "p.stride_b = batch > 1 ? stride_x : 0;"]),
    ("flatten", "flatten", ["rows = int64_t(5) * int64_t(3) * M;"]),
    ("broadcast_lhs", "broadcast_lhs", ["batch = d.s0;", "stride_x = 0;  // one lhs matrix for every batch"]),
    ("symbolic_m", "none", ["const int64_t M = d.s0;"]),
    ("runtime_batch", "runtime", ["const int64_t batch_w = d.s0 * int64_t(3);", "if (int64_t(1) != int64_t(3)) {",
                                  "return byocc::fail(BYOCC_E_SHAPE, "]),
])
def test_batch_modes(case, mode, lines):
    text, entry = one(case)
    assert entry["steps"][0]["batch"] == mode
    for line in lines:
        assert line in text


def test_bias_is_typed_and_the_workspace_bounded_in_the_runtime():
    for needle in ("CUBLASLT_MATMUL_DESC_BIAS_POINTER", "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE",
                   "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES", "CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT",
                   "CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET", "cublasLtGetStatusString",
                   "cublasLtCreate", "std::lock_guard<std::mutex> lock(g_handle_mutex);"):
        assert needle in runtime_text(), needle
    assert "cudaMalloc" not in runtime_text()
    assert WORKSPACE_BYTES == MIB32
    assert "has no algorithm for this problem" in runtime_text()  # zero heuristic results -> E_CUBLAS


def test_symbolic_dims_are_read_at_run_time():
    text, entry = one("symbolic_m")
    assert entry["symbols"] == {"a": [[0, 0], [3, 0]]}
    assert entry["args"][0]["shape"] == ["a", 6] and entry["outputs"][0]["shape"] == ["a", 16]
    assert entry["scratch_bytes"] == MIB32  # the workspace does not depend on a


def test_permuted_weight_is_copied_then_used_as_row_major():
    text, entry = one("permuted")
    assert "const int w_axes[4] = {1, 0, 2, 3};" in text and "p.op_a = CUBLAS_OP_N;" in text
    assert "batch = int64_t(2) * int64_t(3);" in text
    assert entry["attrs"]["weight_prep"] == "permute" and entry["args"][0]["layout"] == "row_major"
    assert entry["scratch_bytes"] == MIB32 + 1024  # 6 * 8 * 10 float16 = 960 bytes, 256-aligned


def test_vector_operands():
    text, entry = one("vector_lhs")  # (K,) x (K, N): M = 1, the output is (N,)
    assert "const int64_t M = int64_t(1);" in text and entry["outputs"][0]["shape"] == [16]
    text, entry = one("vector_rhs_int8")  # (..., M, K) x (K,): N = 1; (K,) is also the stored (1, K)
    assert "const int64_t N = int64_t(1);" in text and "p.op_a = CUBLAS_OP_T;" in text
    assert "cublaslt_permute" not in text and entry["steps"][0]["batch"] == "flatten"


def test_a_one_element_bias_is_repeated_into_the_vector_the_epilogue_reads():
    text, entry = one("bias_scalar")
    assert "rc = byocc::cublaslt_broadcast(device, byocc::data_of(args[2]), bias_vector, 4, N, stream);" in text
    assert "p.bias = bias_vector;" in text and "p.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;" in text
    assert entry["steps"][0]["bias_broadcast"] is True
    assert entry["scratch_bytes"] is None and entry["scratch_expr"] == "33554432 + round_up(n * 4)"


SCALAR_BIAS = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float16"), w: R.Tensor((8, 16), dtype="float16")):
        with R.dataflow():
            h = R.matmul(x, w, out_dtype="void")
            y = R.add(h, R.const(0.5, "float16"))
            R.output(y)
        return y
"""


@pytest.mark.parametrize("bind", [True, False])
def test_a_scalar_constant_bias_is_bound_or_passed_and_broadcast(bind):
    out = byocc.transform.partition(byocc.text.parse_module(SCALAR_BIAS), get_patterns_with_prefix("cublas"),
                                    bind_constants=bind, run_codegen=True, codegens={"cublas": codegen})
    [module] = out.attrs["external_mods"]
    [entry] = module.entries
    text = module.sources[0].text
    source = "const_cast<void*>(c0)" if bind else "byocc::data_of(args[2])"
    assert f"rc = byocc::cublaslt_broadcast(device, {source}, bias_vector, 2, N, stream);" in text
    assert [c.name for c in entry.constants] == (["fused_relax_matmul_relax_add_cublas_cublas_const_0"] if bind else [])
    assert entry.scratch_bytes == MIB32 + 256


def test_merged_function_runs_the_steps_in_order_through_scratch():
    mod = byocc.text.read_file(str(REPO / "samples" / "mlp_fp16.relax"))
    out = byocc.transform.partition(mod, get_patterns_with_prefix("cublas"), path="merge", run_codegen=True,
                                    codegens={"cublas": codegen})
    [module] = out.attrs["external_mods"]
    [entry] = module.entries
    assert entry.composites == ("cublas.matmul_bias_relu", "cublas.matmul_bias_relu", "cublas.matmul_bias")
    assert entry.pattern_ranks == (7, 7, 8) and entry.attrs == {}
    assert [s["epilogue"] for s in entry.steps] == ["CUBLASLT_EPILOGUE_RELU_BIAS"] * 2 + ["CUBLASLT_EPILOGUE_BIAS"]
    assert entry.scratch_bytes == MIB32 + 2 * 16 * 128 * 2  # two float16 temporaries + the workspace
    text = module.sources[0].text
    assert text.index("p.d = static_cast<void*>(static_cast<char*>(scratch) + off.temp0);") < \
        text.index("p.b = static_cast<void*>(static_cast<char*>(scratch) + off.temp0);")


DEQUANTIZE = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 32), dtype="float8_e4m3fn"), w: R.Tensor((64, 32), dtype="float8_e4m3fn")):
        with R.dataflow():
            wt = R.permute_dims(w, axes=None)
            h = R.matmul(x, wt, out_dtype="float32")
            y = R.dequantize(h, R.const(0.34786, "float32"), R.const(0, "float16"), axis=1, out_dtype="float16")
            R.output(y)
        return y
"""

MULTIPLY = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 32), dtype="float8_e4m3fn"), w: R.Tensor((64, 32), dtype="float8_e4m3fn"), sa: R.Tensor((1,), dtype="float32"), sb: R.Tensor((1,), dtype="float32")):
        with R.dataflow():
            wt = R.permute_dims(w, axes=None)
            h = R.matmul(x, wt, out_dtype="float32")
            s = R.multiply(sa, sb)
            m = R.multiply(h, s)
            y = R.astype(m, "float16")
            R.output(y)
        return y
"""


def test_deferred_composites_are_a_codegen_error_naming_function_and_composite():
    with pytest.raises(CodegenError, match=r"function fused_relax_permute_dims_relax_matmul_relax_dequantize_cublas "
                                           r"\(composite cublas\.matmul_transposed_dequantize\): the fp8 dequantize "
                                           r"epilogue is deferred \(docs/codegen.md#deferred-composites"):
        generate(DEQUANTIZE)
    with pytest.raises(CodegenError, match=r"\(composite cublas\.matmul_transposed_multiply\): the fp8 scaled matmul"):
        generate(MULTIPLY)
    assert CodegenError.exit_code == 1


def test_other_unsupported_graphs_say_why():
    int8_out = _module(main=dict(lhs=(8, 8), rhs=(8, 8), dtype="int8"))
    with pytest.raises(CodegenError, match=r"\(composite cublas\.matmul\): int8 inputs with a int8 output are not "
                                           r"supported \(outputs: int32\)"):
        generate(int8_out)
    [(_, func)] = _offloaded(_module(main=CASES["f16_bias_relu"]))
    with pytest.raises(CodegenError, match=r'global symbol "bad-name" is not a valid C identifier'):
        generate_function("bad-name", func, parse_options({}))
    with pytest.raises(CodegenError, match="fp32_math must be 'ieee' or 'tf32'"):
        parse_options({"fp32_math": "fast"})
    with pytest.raises(CodegenError, match="fast_gelu and exact_gelu are both set"):
        parse_options({"fast_gelu": True, "exact_gelu": True})


def test_fp8_matmul_is_deferred():
    fp8 = DEQUANTIZE.replace('            y = R.dequantize(h, R.const(0.34786, "float32"), R.const(0, "float16"), axis=1, '
                             'out_dtype="float16")\n', "").replace('out_dtype="float32"', 'out_dtype="float16"')
    fp8 = fp8.replace("R.output(y)", "R.output(h)").replace("return y", "return h")
    with pytest.raises(CodegenError, match=r"\(composite cublas\.matmul_transposed\): fp8 \(float8_e4m3fn\) matmul "
                                           r"codegen is deferred"):
        generate(fp8)


def test_model_derived_names_reach_cpp_escaped():
    pattern, annotations = make_matmul_pattern(with_bias=True, activation="relax.nn.relu")
    name = 'cublas.evil"\n);system("x");//\\'
    mod = byocc.text.parse_module(_module(main=CASES["f16_bias_relu"]))
    out = byocc.transform.partition(mod, [(name, pattern, annotations)], run_codegen=True,
                                    codegens={"cublas": codegen})
    [module] = out.attrs["external_mods"]
    text = module.sources[0].text
    assert '"cublas.evil\\"\\012);system(\\"x\\");//\\\\"' in text  # a C literal, escaped
    for line in text.splitlines():  # outside string literals the name only appears in comments
        if 'system(' in line and '\\012' not in line:
            assert line.lstrip().startswith("//") or "//" in line.split("system(")[0], line
            assert "\\" not in line.split("//", 1)[1]  # no line splice
    assert module.entries[0].pattern_ranks == (None,)  # not a name of the cublas table


def _offloaded(text: str):
    mod = byocc.transform.partition(byocc.text.parse_module(text), get_patterns_with_prefix("cublas"))
    return [(name, f) for name, f in sorted(mod.items()) if "Codegen" in getattr(f, "attrs", {})]


def test_generation_is_deterministic():
    text = _module(**CASES_AS_FUNCTIONS)
    first = [(s.path, s.text) for m in generate(text) for s in m.sources]
    second = [(s.path, s.text) for m in generate(text) for s in m.sources]
    assert first == second
    manifests = [json.dumps([e.to_json() for m in generate(text) for e in m.entries], sort_keys=True)
                 for _ in range(2)]
    assert manifests[0] == manifests[1]


def test_toolchain_finds_the_cublaslt_wheel_layout():
    found = find_optional_cublaslt()
    if found is None:
        pytest.skip("no cuBLASLt (toolkit or nvidia-cublas wheel) installed")
    assert (Path(found.include_dir) / "cublasLt.h").is_file()
    assert (Path(found.lib_dir) / found.lib_file).exists()
    assert found.link_flags == (f"-L{found.lib_dir}", f"-l:{found.lib_file}", "-Xlinker", f"-rpath,{found.lib_dir}")


# --------------------------------------------------------------------------- compile + link
CASES_AS_FUNCTIONS = {f"f_{name}": kw for name, kw in CASES.items()}
#: Compiled for real (one wrapper TU each, ~5 s apiece): every type, the weight copy, the
#: erf-GELU call, symbolic dims, every batch mode and vector operands.
COMPILED = ("f16_bias_relu", "f32_transposed", "int8", "int8_symbolic_batch", "bf16_to_f32", "batched_bias",
            "symbolic_m", "gelu_symbolic_batch", "runtime_batch", "permuted", "bias_scalar", "int8_transposed",
            "flatten", "broadcast_lhs", "vector_lhs", "vector_rhs_int8")
NVCC = find_optional_nvcc()
CUBLASLT = find_optional_cublaslt()
needs_toolchain = pytest.mark.skipif(
    NVCC is None or CUBLASLT is None,
    reason="the compile test needs nvcc and the cuBLASLt headers (CUDA toolkit or the nvidia-cublas wheel: "
           "pip install 'byocc[cuda]')")


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DL = {"float16": (2, 16), "bfloat16": (4, 16), "float32": (2, 32), "int8": (0, 8), "int32": (0, 32)}


def _tensors(entry: dict, dims: dict):
    """Descriptors of CUDA tensors (fake, 256-aligned addresses that are never read)."""
    keep, ptrs = [], []
    for i, spec in enumerate(entry["args"] + entry["outputs"]):
        shape = [d if isinstance(d, int) else dims[d] for d in spec["shape"]]
        arr = (ctypes.c_int64 * len(shape))(*shape)
        code, bits = _DL[spec["dtype"]]
        t = DLTensor(ctypes.c_void_p(0x10000 * (i + 1)), DLDevice(2, 0), len(shape), DLDataType(code, bits, 1),
                     arr, None, 0)
        keep += [arr, t]
        ptrs.append(ctypes.pointer(t))
    return keep, (ctypes.POINTER(DLTensor) * len(ptrs))(*ptrs)



# A host stand-in for src/cublaslt_runtime.cu with cuBLASLt's documented semantics (column-major
# D = epilogue(op(A) B + bias), leading dims, strided batches with stride 0 broadcasting), so
# the generated wrappers can be run on numpy buffers without a GPU: it checks the mapping the
# wrappers pass (op, m/n/k, lds, batch strides, pointers, the kernels they call), not cuBLASLt.
EMULATED_CUBLASLT = r"""
#include <math.h>
#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "byocc_internal.h"
#include "byocc_cublaslt.h"

namespace byocc {
namespace {
double load(const void* p, cudaDataType_t t, int64_t i) {
  switch (t) {
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(p)[i]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_8I: return static_cast<const int8_t*>(p)[i];
    case CUDA_R_32I: return static_cast<const int32_t*>(p)[i];
    default: return NAN;
  }
}
void store(void* p, cudaDataType_t t, int64_t i, double v) {
  switch (t) {
    case CUDA_R_16F: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v)); break;
    case CUDA_R_32F: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case CUDA_R_32I: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    default: break;
  }
}
}  // namespace

int cublaslt_matmul(const CublasLtMatmul& p, cudaStream_t) {
  const uint32_t e = static_cast<uint32_t>(p.epilogue);
  const bool bias = (e & CUBLASLT_EPILOGUE_BIAS) != 0, relu = (e & CUBLASLT_EPILOGUE_RELU) != 0,
             gelu = (e & CUBLASLT_EPILOGUE_GELU) != 0;
  if (p.batch < 1 || (bias && p.bias == nullptr) || p.workspace_bytes != kCublasLtWorkspaceBytes ||
      p.lda < (p.op_a == CUBLAS_OP_N ? int64_t(p.m) : int64_t(p.k)) || p.ldb < int64_t(p.k) ||
      p.ldd < int64_t(p.m)) {
    return fail(BYOCC_E_CUBLAS, "emulated cuBLASLt: invalid parameters");
  }
  for (int64_t l = 0; l < p.batch; ++l) {
    for (uint64_t j = 0; j < p.n; ++j) {
      for (uint64_t i = 0; i < p.m; ++i) {
        double acc = 0;
        for (uint64_t q = 0; q < p.k; ++q) {
          const int64_t a = l * p.stride_a + (p.op_a == CUBLAS_OP_N ? i + q * p.lda : q + i * p.lda);
          acc += load(p.a, p.ab_type, a) * load(p.b, p.ab_type, l * p.stride_b + q + j * p.ldb);
        }
        if (bias) acc += load(p.bias, p.d_type, i);
        if (relu) acc = acc > 0 ? acc : 0;
        if (gelu) acc = 0.5 * acc * (1 + tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
        store(p.d, p.d_type, l * p.stride_d + i + j * p.ldd, acc);
      }
    }
  }
  return BYOCC_OK;
}

int cublaslt_gelu_erf_inplace(int, void* data, cudaDataType_t type, int64_t n, cudaStream_t) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = load(data, type, i);
    store(data, type, i, 0.5 * x * (1 + erf(x / sqrt(2.0))));
  }
  return BYOCC_OK;
}

int cublaslt_permute(int, const void* in, void* out, int elem_bytes, int ndim, const int64_t* in_shape,
                     const int* axes, cudaStream_t) {
  int64_t stride[kCublasLtMaxRank], numel = 1;
  for (int i = ndim - 1; i >= 0; --i) { stride[i] = numel; numel *= in_shape[i]; }
  for (int64_t o = 0; o < numel; ++o) {
    int64_t rest = o, src = 0;
    for (int axis = ndim - 1; axis >= 0; --axis) {
      const int64_t size = in_shape[axes[axis]];
      src += (rest % size) * stride[axes[axis]];
      rest /= size;
    }
    memcpy(static_cast<char*>(out) + o * elem_bytes, static_cast<const char*>(in) + src * elem_bytes, elem_bytes);
  }
  return BYOCC_OK;
}

int cublaslt_broadcast(int, const void* value, void* out, int elem_bytes, int64_t n, cudaStream_t) {
  for (int64_t i = 0; i < n; ++i) memcpy(static_cast<char*>(out) + i * elem_bytes, value, elem_bytes);
  return BYOCC_OK;
}
}  // namespace byocc
"""

# runtime.cu asks the device for its compute capability; here it is told 9.0.
FAKE_DEVICE = r"""
#include <cuda_runtime_api.h>
static inline cudaError_t byocc_fake_attribute(int* value, cudaDeviceAttr attr, int) {
  *value = attr == cudaDevAttrComputeCapabilityMajor ? 9 : attr == cudaDevAttrComputeCapabilityMinor ? 0 : 132;
  return cudaSuccess;
}
#define cudaDeviceGetAttribute byocc_fake_attribute
"""


def _symbol_of(partitioned, function: str) -> str:
    [call] = [b.value for block in partitioned.functions[function].body.blocks for b in block.bindings
              if getattr(getattr(b.value, "op", None), "name_hint", "").endswith("_cublas")]
    return call.op.name_hint


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every COMPILED case's wrapper, the runtime units, and the emulated stand-ins, compiled."""
    if NVCC is None or CUBLASLT is None:
        pytest.skip("the compile test needs nvcc and the cuBLASLt headers (CUDA toolkit or the nvidia-cublas "
                    "wheel: pip install 'byocc[cuda]')")
    root = tmp_path_factory.mktemp("cublas_build")
    text = _module(**{f"f_{name}": CASES[name] for name in COMPILED})
    partitioned = byocc.transform.partition(byocc.text.parse_module(text), get_patterns_with_prefix("cublas"),
                                            bind_constants=False)
    out = byocc.transform.run_codegen(partitioned, {"cublas": {}}, (), {"cublas": codegen})
    modules = list(out.attrs["external_mods"])
    entries = {e.symbol: e.to_json() for m in modules for e in m.entries}
    symbols = {name: _symbol_of(partitioned, f"f_{name}") for name in COMPILED}
    assert sorted(symbols.values()) == sorted(entries)
    sources = {s.path: s for m in modules for s in m.sources}
    for s in list(sources.values()) + list(common_sources()):
        (root / s.path).parent.mkdir(parents=True, exist_ok=True)
        (root / s.path).write_text(s.text)
    (root / "src" / "emulated_cublaslt.cu").write_text(EMULATED_CUBLASLT)
    (root / "src" / "fake_device.h").write_text(FAKE_DEVICE)
    light = sorted(p for p, s in sources.items() if s.unit == "light")
    assert "src/cublaslt_runtime.cu" in light
    flags = ["-std=c++17", "-O1", "-Xcompiler=-fPIC", "-Xcompiler=-fvisibility=hidden", "-Werror", "all-warnings",
             "-gencode=arch=compute_80,code=sm_80", f"-I{root / 'src'}", *CUBLASLT.include_flags]
    jobs = [(p, Path(p).stem, ()) for p in light + ["src/runtime.cu", "src/emulated_cublaslt.cu"]]
    jobs.append(("src/runtime.cu", "runtime_fake_device", ("-include", str(root / "src" / "fake_device.h"))))
    (root / "obj").mkdir()

    def compile_unit(job):
        path, stem, extra = job
        obj = root / "obj" / f"{stem}.o"
        proc = subprocess.run([NVCC, *flags, *extra, "-c", str(root / path), "-o", str(obj)], capture_output=True,
                              text=True)
        return stem, proc.returncode, proc.stderr, obj

    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        results = list(pool.map(compile_unit, jobs))
    for stem, rc, err, _ in results:
        assert rc == 0, f"{stem}:\n{err}"
    objects = {stem: obj for stem, _, _, obj in results}
    wrappers = [objects[Path(p).stem] for p in light if p.startswith("src/funcs/")]
    return dict(root=root, entries=entries, symbols=symbols, objects=objects, wrappers=wrappers)


def _link(built, name: str, objects, extra=()) -> Path:
    lib = built["root"] / name
    rpath = []
    cuda_include = find_optional_cuda_include()
    if cuda_include is not None:
        for d in (Path(cuda_include).parent / "lib64", Path(cuda_include).parent / "lib"):
            if d.is_dir():
                rpath += ["-Xlinker", f"-rpath,{d}"]
    proc = subprocess.run([NVCC, "-shared", "-cudart", "shared", "-o", str(lib), *map(str, objects), *extra, *rpath],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return lib


def _load(lib: Path):
    try:
        so = ctypes.CDLL(str(lib))
    except OSError as exc:  # the CUDA runtime is not on the loader path here: the link itself passed
        pytest.skip(f"built, but cannot load it on this machine: {exc}")
    so.byocc_last_error.restype = ctypes.c_char_p
    return so


def test_wrappers_and_runtime_units_compile_and_link_against_libcublaslt(built):
    entries = built["entries"]
    lib = _link(built, "libbyocc_cublas_test.so",
                built["wrappers"] + [built["objects"]["cublaslt_runtime"], built["objects"]["runtime"]],
                CUBLASLT.link_flags)
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
    exported = sorted(line.split()[-1] for line in nm.splitlines() if line.split()[-1].startswith(("f", "byocc_")))
    assert exported == sorted(["byocc_abi_version", "byocc_last_error", "byocc_set_constant"]
                              + [s for s in entries] + [f"byocc_scratch_bytes_{s}" for s in entries])
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    assert f"[{CUBLASLT.lib_file}]" in needed and f"{CUBLASLT.lib_dir}" in needed  # NEEDED + RUNPATH

    so = _load(lib)
    assert so.byocc_abi_version() == 1

    def scratch(case: str, dims: dict) -> int:
        symbol = built["symbols"][case]
        keep, arr = _tensors(entries[symbol], dims)
        fn = getattr(so, f"byocc_scratch_bytes_{symbol}")
        fn.restype = ctypes.c_uint64
        return fn(arr, len(entries[symbol]["args"]) + len(entries[symbol]["outputs"]))

    assert scratch("int8_symbolic_batch", {"a": 11}) == MIB32 + 1280  # 11 * 96 = 1056 bytes, 256-aligned
    assert scratch("permuted", {}) == MIB32 + 1024
    assert scratch("bias_scalar", {"n": 100}) == MIB32 + 512  # 100 float32 = 400 bytes, 256-aligned
    # a wrong argument count and a wrong dtype are caught on the host, before any CUDA call
    symbol = built["symbols"]["permuted"]
    fn = getattr(so, symbol)
    fn.restype = ctypes.c_int32
    keep, arr = _tensors(entries[symbol], {})
    assert fn(arr, 2, None, 0, None) == 1
    assert b"expected 3 arguments (2 inputs, 1 output), got 2" in so.byocc_last_error()
    arr[1].contents.dtype = DLDataType(2, 32, 1)
    assert fn(arr, 3, None, 0, None) == 2
    assert b"argument 1 (x) has dtype (code 2, bits 32, lanes 1)" in so.byocc_last_error()


# --------------------------------------------------------------------------- emulated run
DIMS = {"a": 3, "n": 5}


def _storage(values, dtype: str):
    """``values`` (exact in ``dtype``) as the bytes a tensor of ``dtype`` holds (bfloat16: the
    upper half of the float32 bits; numpy has no bfloat16)."""
    import numpy as np

    if dtype == "bfloat16":
        return (np.asarray(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.asarray(values).astype({"float16": np.float16, "float32": np.float32, "int8": np.int8,
                                      "int32": np.int32}[dtype])


def _values(array, dtype: str):
    import numpy as np

    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)


def _inputs(case: str, dims: dict, rng):
    """x, w, bias (storage arrays), the float64 reference and the output dtype of ``case``."""
    import numpy as np

    kw = CASES[case]
    dtype = kw.get("dtype", "float16")
    out_dtype = kw.get("out_dtype") or dtype

    def rand(s):  # small dyadic values: exact in every dtype, so only the output rounding differs
        shape = tuple(dims[d] if isinstance(d, str) else d for d in s)
        return rng.integers(-4, 5, size=shape) / (1 if dtype == "int8" else 4)

    x, w = rand(kw["lhs"]), rand(kw["rhs"])
    bias = rand(kw["bias"]) if kw.get("bias") else None
    wl = np.transpose(w, kw["axes"]) if kw.get("transposed") else w
    ref = np.matmul(x, wl)
    if bias is not None:
        ref = ref + bias
    if kw.get("act") == "relu":
        ref = np.maximum(ref, 0)
    elif kw.get("act") == "gelu":
        from math import erf
        from math import sqrt

        ref = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / sqrt(2))))(ref)
    return (_storage(x, dtype), _storage(w, dtype), None if bias is None else _storage(bias, out_dtype), ref,
            out_dtype)


def _dl(array, code_bits) -> tuple:
    shape = (ctypes.c_int64 * max(1, array.ndim))(*array.shape)
    t = DLTensor(ctypes.c_void_p(array.ctypes.data), DLDevice(2, 0), array.ndim, DLDataType(*code_bits, 1), shape,
                 None, 0)
    return t, shape


def _run_emulated(so, built, case: str, dims: dict, rng):
    import numpy as np

    symbol = built["symbols"][case]
    entry = built["entries"][symbol]
    x, w, bias, ref, out_dtype = _inputs(case, dims, rng)
    by_role = {"lhs": x, "rhs": w, "bias": bias}
    arrays = [by_role[a["role"]] for a in entry["args"]]
    out = _storage(np.zeros(ref.shape), out_dtype)
    specs = entry["args"] + entry["outputs"]
    tensors = [_dl(a, _DL[s["dtype"]]) for a, s in zip(arrays + [out], specs)]
    arr = (ctypes.POINTER(DLTensor) * len(tensors))(*[ctypes.pointer(t) for t, _ in tensors])
    size_fn = getattr(so, f"byocc_scratch_bytes_{symbol}")
    size_fn.restype = ctypes.c_uint64
    size = size_fn(arr, len(tensors))
    assert size >= MIB32, so.byocc_last_error()
    raw = np.zeros(size + 256, dtype=np.uint8)
    scratch = raw[(-raw.ctypes.data) % 256:][:size]
    fn = getattr(so, symbol)
    fn.restype = ctypes.c_int32
    rc = fn(arr, len(tensors), ctypes.c_void_p(scratch.ctypes.data), ctypes.c_uint64(size), None)
    return rc, _values(out, out_dtype), ref, out_dtype


@pytest.mark.parametrize("case", COMPILED)
def test_generated_wrappers_compute_the_matmul_through_the_emulated_cublaslt(built, case):
    import numpy as np

    lib = built["root"] / "libbyocc_cublas_emulated.so"
    if not lib.exists():
        _link(built, lib.name, built["wrappers"] + [built["objects"]["emulated_cublaslt"],
                                                     built["objects"]["runtime_fake_device"]])
    so = _load(lib)
    dims = dict(DIMS, a=1) if case == "runtime_batch" else DIMS
    rc, got, ref, out_dtype = _run_emulated(so, built, case, dims, np.random.default_rng(0))
    assert rc == 0, so.byocc_last_error()
    if out_dtype in ("int32", "float32"):
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    else:  # only the final rounding to float16/bfloat16
        np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2)
    if case == "runtime_batch":  # a = 2: lhs batch (2, 1) against (2, 3) has no single batch stride
        rc, _, _, _ = _run_emulated(so, built, case, dict(DIMS, a=2), np.random.default_rng(0))
        assert rc == 3
        assert b"the batch dims of lhs and rhs differ" in so.byocc_last_error()
