"""Fusion with symbolic dims against TVM 0.27 (tests/data/symbolic_fusion): the order of the
``tir_vars`` parameter, and call-site types in TVM's simplified form."""

from __future__ import annotations

from pathlib import Path

import pytest

from byocc.backends import get_patterns_with_prefix
from byocc.ir.arith import simplify_dim
from byocc.ir.prim import PrimBinary as B
from byocc.ir.prim import TirVar
from byocc.ir.prim import dim_text
from byocc.script import from_source
from byocc.transform import partition

DATA = Path(__file__).parents[1] / "data" / "symbolic_fusion"
CASES = sorted(p.stem for p in DATA.glob("*.relax") if not p.stem.startswith("pfc_"))
PFC_CASES = sorted(p.stem for p in DATA.glob("pfc_*.relax"))


@pytest.mark.parametrize("path", ["annotate", "merge"])
@pytest.mark.parametrize("case", CASES)
def test_matches_tvm(case, path):
    mod = from_source((DATA / f"{case}.relax").read_text())
    out = partition(mod, get_patterns_with_prefix("cutlass"), path=path, bind_constants=False)
    assert out.script() + "\n" == (DATA / f"{case}.{path}.txt").read_text()


@pytest.mark.parametrize("annotate", [True, False], ids=["annotate", "composite"])
@pytest.mark.parametrize("case", PFC_CASES)
def test_partition_for_cutlass_matches_tvm(case, annotate):
    """Random attention modules (tools/tvm_diff_attention.py) whose `4 * n` dims TVM
    simplifies at fused call sites and in every binding re-inferred downstream of them,
    including a tuple return type."""
    from byocc.relax.backend.cuda.cutlass import partition_for_cutlass

    mod = from_source((DATA / f"{case}.relax").read_text())
    out = partition_for_cutlass(mod, annotate_codegen=annotate).script()
    want = (DATA / f"{case}.pfc_{'annotate' if annotate else 'composite'}.txt").read_text()
    assert out.rstrip("\n") == want.rstrip("\n")


N, M = TirVar("n"), TirVar("m")


@pytest.mark.parametrize("expr,want", [
    (B("*", 4, N), "n * 4"), (B("*", N, 4), "n * 4"), (B("+", 2, N), "n + 2"),
    (B("*", B("*", N, 2), 3), "n * 6"), (B("*", B("+", N, 1), 2), "n * 2 + 2"),
    (B("*", M, N), "m * n"), (B("*", N, M), "n * m"), (B("*", B("*", 4, N), M), "n * m * 4"),
    (B("+", M, N), "m + n"), (B("+", B("*", 2, N), 1), "n * 2 + 1"), (B("-", N, 1), "n - 1"),
    (B("//", B("*", N, 4), 2), "n * 2"), (B("*", 3, B("*", N, M)), "n * m * 3"),
    (B("*", 1, N), "n"), (B("+", N, 0), "n"), (B("//", N, 2), "n // 2"), (B("%", N, 2), "n % 2"),
])
def test_simplify_dim_as_tvm_analyzer(expr, want):
    """Each pair was measured with TVM 0.27's Analyzer.simplify."""
    assert dim_text(simplify_dim(expr)) == want
