"""Composites that are not one GEMM nor one elementwise kernel: a body of matmuls and
elementwise ops runs as one step per piece (the GEMMs into scratch temporaries, then the
fused elementwise kernel); and the cuBLAS backend's elementwise composites (a pattern file's
``cublas.add``) take the elementwise kernel every backend shares."""

from __future__ import annotations

import re

import pytest

from byocc.backends import get_patterns_with_prefix
from byocc.backends.codegen import CodegenError
from byocc.backends.cublas.codegen import codegen as cublas_codegen
from byocc.backends.cublas.codegen import supports as cublas_supports
from byocc.backends.cutlass.codegen import codegen as cutlass_codegen
from byocc.dpl import is_op
from byocc.dpl import wildcard
from byocc.text import parse_module
from byocc.transform import partition

CODEGENS = {"cutlass": cutlass_codegen, "cublas": cublas_codegen}


def _module(params: str, body: list[str]) -> str:
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function", f"    def main({params}):",
             "        with R.dataflow():"]
    lines += [f"            {b}" for b in body] + ["            R.output(out)", "        return out", ""]
    return "\n".join(lines)


def _generate(text: str, patterns, backend: str):
    out = partition(parse_module(text), patterns, run_codegen=True, codegens={backend: CODEGENS[backend]})
    [gm] = out.attrs["external_mods"]
    [entry] = gm.entries
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    return gm, entry, wrapper


F16 = 'dtype="float16"'
SQUARE = _module(f"x: R.Tensor((16, 64), {F16}), w: R.Tensor((64, 32), {F16})",
                 ["lv = R.matmul(x, w)", "out = R.add(lv, lv)"])


def test_matmul_bias_of_the_product_itself_is_a_gemm_then_an_elementwise_step():
    """TVM's matmul_bias pattern matches add(matmul, matmul) of one product (random_p052)."""
    gm, entry, wrapper = _generate(SQUARE, get_patterns_with_prefix("cutlass"), "cutlass")
    assert entry.composites == ("cutlass.matmul_bias",)
    assert [s["kind"] for s in entry.steps] == ["gemm", "elementwise"]
    assert entry.steps[0]["formula"] == "matmul(x, w)"
    assert "v0 = add(x0, x0)" in entry.steps[1]["formula"]
    # the product is a float16 (16, 32) temporary in scratch, read by the elementwise kernel
    assert "uint64_t temp1;" in wrapper and re.search(r"off\.temp1 = uint64_t\(\d+\);  // float16 \(16, 32\)", wrapper)
    assert entry.scratch_bytes >= 16 * 32 * 2
    assert wrapper.count("static_cast<char*>(scratch) + off.temp1") >= 2
    assert any(s.path.startswith("src/kernels/ew_") for s in gm.sources)
    assert [a.role for a in entry.args] == ["lhs", "rhs"]


TWO = _module(f"x: R.Tensor((8, 32), {F16}), w1: R.Tensor((32, 16), {F16}), w2: R.Tensor((16, 32), {F16})",
              ["a = R.matmul(x, w1)", "w2t = R.permute_dims(w2, axes=None)", "b = R.matmul(x, w2t)",
               "s = R.add(a, b)", "out = R.nn.relu(s)"])
TWO_PATTERN = is_op("relax.nn.relu")(is_op("relax.add")(
    is_op("relax.matmul")(wildcard(), wildcard()),
    is_op("relax.matmul")(wildcard(), is_op("relax.permute_dims")(wildcard()))))


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
def test_two_matmuls_and_an_epilogue_are_two_gemms_and_one_fused_kernel(backend):
    gm, entry, wrapper = _generate(TWO, [(f"{backend}.two_mm", TWO_PATTERN)], backend)
    assert entry.composites == (f"{backend}.two_mm",)
    assert [s["kind"] for s in entry.steps] == ["gemm", "gemm", "elementwise"]
    assert entry.steps[1]["formula"] == "matmul(x, permute_dims(w))"  # the permute goes with its GEMM
    assert "v0 = add(x0, x1)" in entry.steps[2]["formula"] and "relu" in entry.steps[2]["formula"]
    assert "uint64_t temp1;" in wrapper and "uint64_t temp2;" in wrapper
    assert "byocc_generic.cuh" in wrapper


def test_a_body_with_another_op_is_not_split():
    text = _module(f"x: R.Tensor((8, 32), {F16}), w: R.Tensor((32, 16), {F16})",
                   ["a = R.matmul(x, w)", "out = R.nn.softmax(a, axis=-1)"])
    pattern = is_op("relax.nn.softmax")(is_op("relax.matmul")(wildcard(), wildcard()))
    with pytest.raises(CodegenError, match="cublas.mm_softmax"):
        _generate(text, [("cublas.mm_softmax", pattern)], "cublas")


ADD = _module(f"x: R.Tensor((4, 8), {F16}), y: R.Tensor((8,), {F16})", ["out = R.add(x, y)"])


def test_cublas_elementwise_composite_takes_the_shared_elementwise_kernel():
    """A pattern file's cublas.add (random_p074/p085/p132): one elementwise step."""
    patterns = [("cublas.add", is_op("relax.add")(wildcard(), wildcard()))]
    gm, entry, wrapper = _generate(ADD, patterns, "cublas")
    assert [s["kind"] for s in entry.steps] == ["elementwise"]
    assert [v.impl for v in entry.variants] == ["elementwise"]
    assert '#include "byocc_generic.cuh"' in wrapper and "ew_" in wrapper
    paths = {s.path for s in gm.sources}
    assert "src/byocc_generic.cuh" in paths and set(entry.kernel_sources) <= paths
    assert cublas_supports("cublas.add") and not cublas_supports("cublas.matmul_transposed_dequantize")


def test_cublas_gemm_wrappers_do_not_include_the_generic_header():
    text = _module(f"x: R.Tensor((8, 32), {F16}), w: R.Tensor((32, 16), {F16})", ["out = R.matmul(x, w)"])
    gm, entry, wrapper = _generate(text, get_patterns_with_prefix("cublas"), "cublas")
    assert "byocc_generic.cuh" not in wrapper
    assert "src/byocc_generic.cuh" not in {s.path for s in gm.sources}
