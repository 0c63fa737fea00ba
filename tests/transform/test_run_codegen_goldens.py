"""RunCodegen against TVM 0.27's goldens: ``p1_annotate.txt`` -> ``p1_codegen.txt`` and
``p2_merge.txt`` -> ``p2_codegen.txt``, with the goldens' stand-in codegens (one module per
backend call; one per function for ``cublas``), and the whole annotate path from the input."""

from __future__ import annotations

import pytest
from test_merge_goldens import BIND_FALSE
from test_merge_goldens import EXAMPLES
from test_merge_goldens import assert_same_text
from test_merge_goldens import cases_with
from test_merge_goldens import constants

from byocc.backends import load_pattern_file
from byocc.ir import structural_equal
from byocc.ir.well_formed import well_formed
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform import RunCodegen
from byocc.transform import partition
from byocc.transform import stub_codegen

BACKENDS = ("cutlass", "cublas", "compiler_A", "compiler_B", "A", "x")
CODEGENS = {b: stub_codegen(b, per_function=(b == "cublas")) for b in BACKENDS}


@pytest.mark.parametrize("src,dst", [("p1_annotate.txt", "p1_codegen.txt"), ("p2_merge.txt", "p2_codegen.txt")])
@pytest.mark.parametrize("case", sorted(set(cases_with("p1_annotate.txt", "p1_codegen.txt"))
                                        | set(cases_with("p2_merge.txt", "p2_codegen.txt"))))
def test_codegen_golden(case, src, dst):
    d = EXAMPLES / case
    if not (d / src).exists() or not (d / dst).exists() or (d / src).read_text().startswith("ERROR"):
        pytest.skip(f"{case} has no {src} -> {dst} step")
    mod = parse_module((d / src).read_text(), constants=constants(case))
    out = RunCodegen(codegens=CODEGENS)(mod)
    expected_text = (d / dst).read_text()
    assert_same_text(print_module(out), expected_text)
    assert well_formed(out) == []
    # the rewritten calls are the nodes the parser builds for R.call_dps_packed
    expected = parse_module(expected_text, constants=constants(case))
    assert structural_equal(out["main"], expected["main"])
    # every offloaded function is kept for interpreters, under its external symbol
    assert set(out.extras.get("offloaded", {})) == {
        f.attrs["global_symbol"] for f in mod.functions.values() if "Codegen" in getattr(f, "attrs", {})}


@pytest.mark.parametrize("case", cases_with("input.txt", "patterns.py", "p1_codegen.txt"))
def test_annotate_path_with_codegen_from_input(case):
    d = EXAMPLES / case
    src = d / "input_canonicalized.txt"
    if not src.exists():
        src = d / "input.txt"
    mod = parse_module(src.read_text(), constants=constants(case))
    patterns = load_pattern_file(str(d / "patterns.py"))
    out = partition(mod, patterns, path="annotate", bind_constants=case[:2] not in BIND_FALSE,
                    entry_functions=["main"] if case.startswith("25") else None,
                    run_codegen=True, codegens=CODEGENS)
    assert_same_text(print_module(out), (d / "p1_codegen.txt").read_text())
