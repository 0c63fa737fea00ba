"""Five spec/partitioning-examples scenarios written with the Python API: inputs built with
``relax.BlockBuilder`` (name hints as the example's source spelled them), pattern lists in
Python, outputs compared byte for byte with TVM 0.27's goldens (input.txt,
p1_annotate.txt = FuseOpsByPattern(annotate_codegen=True), p2_merge.txt =
FuseOpsByPattern(annotate_codegen=False) then MergeCompositeFunctions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from byocc import relax
from byocc.relax.dpl.pattern import is_op
from byocc.relax.dpl.pattern import make_fused_bias_activation_pattern
from byocc.relax.dpl.pattern import wildcard

EXAMPLES = Path(__file__).parents[1] / "data" / "partitioning-examples"


def golden(case: str, name: str) -> str:
    return (EXAMPLES / case / name).read_text(encoding="utf-8")


def tensor(*shape: int, dtype: str = "float32"):
    return relax.TensorStructInfo(list(shape), dtype)


# ----------------------------------------------------------------------------- inputs
def build_02():
    x = relax.Var("x", tensor(8, 16, dtype="float16"))
    w = relax.Var("w", tensor(16, 32, dtype="float16"))
    b = relax.Var("b", tensor(32, dtype="float16"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            mm = bb.emit(relax.op.matmul(x, w), "mm")
            biased = bb.emit(relax.op.add(mm, b), "biased")
            act = bb.emit_output(relax.op.nn.relu(biased), "act")
        bb.emit_func_output(act)
    pat = make_fused_bias_activation_pattern("relax.matmul", with_bias=True, activation="relax.nn.relu")
    return bb.get(), [("cutlass.matmul_bias_relu", pat)]


def build_03():
    x, y, z = (relax.Var(n, tensor(4, 4)) for n in "xyz")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y, z]):
        with bb.dataflow():
            a = bb.emit(relax.op.matmul(x, y), "a")
            b = bb.emit(relax.op.matmul(y, z), "b")
            c = bb.emit_output(relax.op.subtract(a, b), "c")
        bb.emit_func_output(c)
    return bb.get(), [("cutlass.matmul", is_op("relax.matmul")(wildcard(), wildcard()))]


def build_06():
    x, w = relax.Var("x", tensor(4, 4)), relax.Var("w", tensor(4, 4))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            a = bb.emit(relax.op.matmul(x, w), "a")
            b = bb.emit(relax.op.nn.relu(a), "b")
            c = bb.emit_output(relax.op.matmul(b, w), "c")
        bb.emit_func_output(c)
    patterns = [
        ("cutlass.matmul", is_op("relax.matmul")(wildcard(), wildcard())),
        ("cutlass.relu", is_op("relax.nn.relu")(wildcard())),
    ]
    return bb.get(), patterns


def build_16():
    x = relax.Var("x", tensor(4, 4))
    y = relax.Var("y", tensor(4, 4, dtype="float16"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit_output(relax.op.matmul(x, x), "a")
            b = bb.emit_output(relax.op.matmul(y, y), "b")
        bb.emit_func_output((a, b))
    lhs, rhs = wildcard(), wildcard()
    root = is_op("relax.matmul")(lhs, rhs)

    def only_fp16(ctx):
        return ctx.annotated_expr["lhs"].ty.dtype == "float16"

    return bb.get(), [("cutlass.matmul", root, {"lhs": lhs, "rhs": rhs, "root": root}, only_fp16)]


def build_29():
    x = relax.Var("x", tensor(4, 4))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            p = bb.emit(relax.op.nn.relu(x), "p")
            q = bb.emit_output(relax.op.nn.gelu(p), "q")
            s = bb.emit_output(relax.op.multiply(p, x), "s")
        bb.emit_func_output((q, s))
    return bb.get(), [("A.relu_gelu", is_op("relax.nn.gelu")(is_op("relax.nn.relu")(wildcard())))]


CASES = {
    "02_matmul_bias_relu": build_02,
    "03_two_independent_matmuls": build_03,
    "06_chain_of_three_cutlass_ops": build_06,
    "16_check_rejects": build_16,
    "29_tuple_output_order": build_29,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_builder_input_prints_as_the_example_source(case):
    mod, _ = CASES[case]()
    assert mod.script() + "\n" == golden(case, "input.txt")
    assert relax.analysis.well_formed(mod)


@pytest.mark.parametrize("case", sorted(CASES))
def test_annotate_path_matches_tvm(case):
    mod, patterns = CASES[case]()
    out = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(mod)
    assert out.script() + "\n" == golden(case, "p1_annotate.txt")
    assert relax.analysis.well_formed(out)


@pytest.mark.parametrize("case", sorted(CASES))
def test_merge_path_matches_tvm(case):
    mod, patterns = CASES[case]()
    fused = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False)(mod)
    out = relax.transform.MergeCompositeFunctions()(fused)
    assert out.script() + "\n" == golden(case, "p2_merge.txt")
    assert relax.analysis.well_formed(out)


def test_sequential_runs_the_merge_path_in_one_call():
    mod, patterns = build_06()
    seq = relax.transform.Sequential([
        relax.transform.FuseOpsByPattern(patterns, annotate_codegen=False),
        relax.transform.MergeCompositeFunctions(),
    ])
    assert seq(mod).script() + "\n" == golden("06_chain_of_three_cutlass_ops", "p2_merge.txt")


def test_passes_leave_their_input_module_unchanged():
    mod, patterns = build_02()
    before = mod.script()
    relax.transform.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)
    assert mod.script() == before
