"""FuseOpsByPattern against the TVM 0.27 goldens of spec/partitioning-examples: every
``p1_annotate.txt`` (annotate_codegen=True) and ``p2_fuse.txt`` (annotate_codegen=False) is
reproduced byte for byte from the example's input and pattern file. Where TVM 0.27 is wrong
(E22 raises on an alias cycle, E34 emits ill-formed IR) byocc's correct result is asserted
instead, in tests named after the defect."""

from __future__ import annotations

from pathlib import Path

import pytest

from byocc.backends import load_pattern_file
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform.fuse_ops_by_pattern import FuseOpsByPattern

EXAMPLES = Path(__file__).parents[1] / "data" / "partitioning-examples"

# generate.py's per-example options
BIND_FALSE = {"11_constant_bind_false", "26_cutlass_table", "27_cublas_table"}
ENTRY = {"25_entry_functions": ["main"]}
TVM_DEFECTS = {"22_alias_without_canonicalize", "34_long_cycle_ill_formed"}


# generate.py's constants (TVM prints them as metadata references; values come from here)
CONSTANTS = {
    "10_constant_bind_true": (4, 3), "11_constant_bind_false": (4, 3),
    "12_constant_bound_to_var": (4, 3), "30_codegen_constants": (4, 4),
}


def _input(case: Path):
    canon = case / "input_canonicalized.txt"
    consts = None
    if case.name in CONSTANTS:
        import numpy as np

        consts = {"ir.GenericConst/0": np.ones(CONSTANTS[case.name], "float32")}
    text = (canon if canon.exists() else case / "input.txt").read_text()
    return parse_module(text, str(case), consts)


def _fuse(case: Path, annotate: bool, warnings: list | None = None):
    patterns = load_pattern_file(case / "patterns.py")
    p = FuseOpsByPattern(patterns, bind_constants=case.name not in BIND_FALSE,
                         annotate_codegen=annotate, entry_functions=ENTRY.get(case.name),
                         warn=(warnings.append if warnings is not None else None))
    return p(_input(case))


def _cases(step: str) -> list:
    out = []
    for case in sorted(EXAMPLES.iterdir()):
        if (case / f"{step}.txt").exists() and case.name not in TVM_DEFECTS:
            out.append(pytest.param(case, id=case.name))
    return out


def _norm(s: str) -> str:
    return "\n".join(line.rstrip() for line in s.rstrip("\n").splitlines())


@pytest.mark.parametrize("case", _cases("p1_annotate"))
def test_p1_annotate(case: Path):
    want = (case / "p1_annotate.txt").read_text()
    got = print_module(_fuse(case, annotate=True))
    assert _norm(got) == _norm(want)


@pytest.mark.parametrize("case", _cases("p2_fuse"))
def test_p2_fuse(case: Path):
    want = (case / "p2_fuse.txt").read_text()
    got = print_module(_fuse(case, annotate=False))
    assert _norm(got) == _norm(want)


def test_annotate_is_idempotent():
    case = EXAMPLES / "04_two_producers_one_consumer"
    once = _fuse(case, annotate=True)
    patterns = load_pattern_file(case / "patterns.py")
    twice = FuseOpsByPattern(patterns, annotate_codegen=True)(once)
    assert print_module(twice) == print_module(once)


def test_dead_matched_binding_warns():
    warnings: list = []
    _fuse(EXAMPLES / "28_dead_matched_binding", annotate=False, warnings=warnings)
    assert warnings == ["There are dead codes in the current IRModule, please run the "
                        "DeadCodeElimination Pass before FuseOps"]


def _well_formed(mod) -> bool:
    from byocc.ir.well_formed import well_formed

    return not well_formed(mod)


def test_tvm_defect_alias_cycle_raises():
    """E22: TVM raises 'cyclic dependency' on ``y1 = y`` between matched ops. byocc backs the
    match out (it would make the group depend on itself) and leaves the module unchanged."""
    case = EXAMPLES / "22_alias_without_canonicalize"
    assert (case / "p2_fuse.txt").read_text().startswith("ERROR InternalError")
    got = _fuse(case, annotate=False)
    assert print_module(got) == (case / "input.txt").read_text().rstrip("\n")
    assert _well_formed(got)


def test_tvm_defect_long_cycle_ill_formed():
    """E34: the group {a, c} depends on d -> b -> a; TVM only detects 2-cycles and prints a
    module using ``a`` before its definition. byocc backs the match out: the module is
    unchanged and well formed."""
    case = EXAMPLES / "34_long_cycle_ill_formed"
    assert "check_well_formed=False" in (case / "notes.txt").read_text()
    got = _fuse(case, annotate=False)
    assert print_module(got) == (case / "input.txt").read_text().rstrip("\n")
    assert _well_formed(got)


@pytest.mark.parametrize("case", [c for c in _cases("p2_fuse")])
def test_p2_fuse_output_is_well_formed(case: Path):
    assert _well_formed(_fuse(case, annotate=False))
