"""MergeCompositeFunctions against TVM 0.27's goldens (spec/partitioning-examples).

* ``p2_fuse.txt`` parsed and merged must print as ``p2_merge.txt``;
* the whole merge path from ``input.txt`` (``partition(..., path="merge")``) likewise;
* where TVM fails through its own defect (E24: a second function with a dataflow block),
  byocc's output is well formed and partitions both functions.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path

from byocc.backends import load_pattern_file
from byocc.ir import structural_equal
from byocc.ir.well_formed import well_formed
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform import MergeCompositeFunctions
from byocc.transform import partition

EXAMPLES = Path(__file__).parents[1] / "data" / "partitioning-examples"
if not EXAMPLES.is_dir():
    EXAMPLES = shared_path("spec", "partitioning-examples") or EXAMPLES

# tensor constants of the inputs (all np.ones): the golden texts only show metadata references
CONST_SHAPES = {"10": (4, 3), "11": (4, 3), "12": (4, 3), "30": (4, 4)}
# TVM prints distinct variables that share an actual name as lv, lv_1...; parsing that text
# gives them the printed names, which then show up as merged-function parameter names
NAME_LOSSY = {"05_diamond_two_backends", "07_interleaved_backends"}
BIND_FALSE = {"11", "26", "27"}


def constants(case: str):
    shape = CONST_SHAPES.get(case[:2])
    return {"ir.GenericConst/0": np.ones(shape, "float32")} if shape else None


def cases_with(*files: str) -> list[str]:
    out = []
    for d in sorted(EXAMPLES.iterdir()):
        if d.is_dir() and all((d / f).exists() for f in files):
            if not any((d / f).read_text().startswith("ERROR") for f in files):
                out.append(d.name)
    return out


def assert_same_text(actual: str, expected: str) -> None:
    a, e = actual.rstrip().splitlines(), expected.rstrip().splitlines()
    if [x.rstrip() for x in a] != [x.rstrip() for x in e]:
        diff = "\n".join(difflib.unified_diff(e, a, "expected", "byocc", lineterm=""))
        pytest.fail("printed module differs:\n" + diff)


@pytest.mark.parametrize("case", cases_with("p2_fuse.txt", "p2_merge.txt"))
def test_merge_from_p2_fuse(case):
    d = EXAMPLES / case
    mod = parse_module((d / "p2_fuse.txt").read_text(), constants=constants(case))
    out = MergeCompositeFunctions()(mod)
    expected_text = (d / "p2_merge.txt").read_text()
    if case not in NAME_LOSSY:
        assert_same_text(print_module(out), expected_text)
    assert well_formed(out) == []
    # same functions, equal up to variable names
    expected = parse_module(expected_text, constants=constants(case))
    assert sorted(out.names()) == sorted(expected.names())
    for name in expected.names():
        assert structural_equal(out[name], expected[name]), name


@pytest.mark.parametrize("case", cases_with("input.txt", "patterns.py", "p2_merge.txt"))
def test_merge_path_from_input(case):
    d = EXAMPLES / case
    src = d / "input_canonicalized.txt"
    if not src.exists():
        src = d / "input.txt"
    mod = parse_module(src.read_text(), constants=constants(case))
    patterns = load_pattern_file(str(d / "patterns.py"))
    out = partition(mod, patterns, path="merge", bind_constants=case[:2] not in BIND_FALSE)
    assert_same_text(print_module(out), (d / "p2_merge.txt").read_text())


def test_tvm_defect_merge_non_main_function():
    """E24: TVM raises "Variable lv could not be found in any group"; byocc merges both
    functions and the result is well formed."""
    d = EXAMPLES / "24_two_functions_names"
    assert (d / "p2_merge.txt").read_text().startswith("ERROR InternalError")
    out = MergeCompositeFunctions()(parse_module((d / "p2_fuse.txt").read_text()))
    assert well_formed(out) == []
    assert sorted(out.names()) == [
        "fused_relax_matmul1_cutlass", "fused_relax_matmul_relax_multiply_cutlass",
        "fused_relax_multiply1_cutlass", "helper", "main"]
    text = print_module(out)
    # helper's matmul + multiply became one external function, main's two stay apart
    assert "cls.fused_relax_matmul_relax_multiply_cutlass(x, y)" in text
    assert "cls.fused_relax_matmul1_cutlass(x, y)" in text
    assert "cls.fused_relax_multiply1_cutlass(b, y)" in text
    # no composite is left to call from outside an external function
    assert all("Composite" not in f.attrs for f in out.functions.values())


def test_tvm_defect_merge_without_main():
    """TVM needs a function called main; byocc merges whatever functions exist."""
    text = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_multiply(x: R.Tensor((4, 4), dtype="float32"), y: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        R.func_attr({"Composite": "cutlass.multiply", "Primitive": True})
        with R.dataflow():
            gv: R.Tensor((4, 4), dtype="float32") = R.multiply(x, y)
            R.output(gv)
        return gv

    @R.function
    def forward(x: R.Tensor((4, 4), dtype="float32"), y: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((4, 4), dtype="float32") = cls.fused_relax_multiply(x, y)
            gv: R.Tensor((4, 4), dtype="float32") = cls.fused_relax_multiply(lv, y)
            R.output(gv)
        return gv
"""
    out = MergeCompositeFunctions()(parse_module(text))
    assert well_formed(out) == []
    assert sorted(out.names()) == ["forward", "fused_relax_multiply_relax_multiply_cutlass"]
    merged = out["fused_relax_multiply_relax_multiply_cutlass"]
    assert merged.attrs == {"Codegen": "cutlass", "global_symbol": "fused_relax_multiply_relax_multiply_cutlass"}


def test_tvm_defect_merge_private_helper_with_dataflow_block():
    """A private function with a dataflow block called from a composite: TVM fails, byocc
    keeps the helper (still referenced by the inlined composite) and stays well formed."""
    text = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def fused_prep_relax_matmul(x: R.Tensor((16, 64), dtype="float16"), w: R.Tensor((64, 64), dtype="float16")) -> R.Tensor((16, 64), dtype="float16"):
        R.func_attr({"Composite": "acc.prep_matmul", "Primitive": True})
        cls = Module
        with R.dataflow():
            a: R.Tensor((16, 64), dtype="float16") = cls.prep(x)
            gv: R.Tensor((16, 64), dtype="float16") = R.matmul(a, w, out_dtype=None)
            R.output(gv)
        return gv

    @R.function(private=True)
    def prep(x: R.Tensor((16, 64), dtype="float16")) -> R.Tensor((16, 64), dtype="float16"):
        with R.dataflow():
            y: R.Tensor((16, 64), dtype="float16") = R.exp(x)
            R.output(y)
        return y

    @R.function
    def main(x: R.Tensor((16, 64), dtype="float16"), w: R.Tensor((64, 64), dtype="float16")) -> R.Tensor((16, 64), dtype="float16"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((16, 64), dtype="float16") = cls.fused_prep_relax_matmul(x, w)
            R.output(gv)
        return gv
"""
    out = MergeCompositeFunctions()(parse_module(text))
    assert well_formed(out) == []
    assert sorted(out.names()) == ["fused_prep_relax_matmul1_acc", "main", "prep"]


def test_pattern_name_without_backend_is_an_error():
    from byocc.ir import PassError

    text = (EXAMPLES / "01_seed" / "p2_fuse.txt").read_text().replace('"cutlass.multiply"', '"multiply"')
    with pytest.raises(PassError, match="compiler name followed by period"):
        MergeCompositeFunctions()(parse_module(text))
