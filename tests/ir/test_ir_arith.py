"""byocc.ir.arith: the one module of symbolic-dimension arithmetic (folding, the polynomial
normal form, proofs, evaluation)."""

from __future__ import annotations

import importlib.util

import pytest

from byocc.ir import InterpretError
from byocc.ir import PrimBinary
from byocc.ir import PrimMinMax
from byocc.ir import TirVar
from byocc.ir import arith
from byocc.ir.prim import dim_text

n, m = TirVar("n"), TirVar("m")


def test_one_module_holds_dimension_arithmetic():
    for gone in ("byocc.ir.prim_simplify", "byocc.dpl.arith", "byocc.ops.dims"):
        assert importlib.util.find_spec(gone) is None, gone
    from byocc import dpl
    from byocc.runtime import symbolic

    assert dpl.can_prove_equal is arith.can_prove_equal and dpl.product is arith.product
    assert symbolic.eval_dim is arith.eval_dim


def test_folding_constructors_as_tvm_operators():
    assert arith.simplify_binary("*", 2, 3) == 6 and arith.simplify_binary("*", n, 1) == PrimBinary("*", n, 1)
    assert arith.mul(n, 1) is n and arith.mul(0, n) == 0 and arith.add(0, n) is n and arith.sub(n, 0) is n
    assert arith.floordiv(n, 1) is n and arith.floordiv(7, 2) == 3
    # TVM's reduce(mul, dims, 1): a left fold, no re-association of constants
    assert arith.product((2, n, 3)) == PrimBinary("*", PrimBinary("*", 2, n), 3)
    assert arith.product((1, n, 1)) is n and arith.product((n, 0)) == 0 and arith.product(()) == 1


@pytest.mark.parametrize("expr, want", [
    (PrimBinary("*", 4, n), "n * 4"),
    (PrimBinary("*", PrimBinary("+", n, 1), 2), "n * 2 + 2"),
    (PrimBinary("//", PrimBinary("*", n, 4), 2), "n * 2"),
    (PrimMinMax("max", 3, 5), "5"),
    (PrimMinMax("min", n, n), "n"),
    (PrimBinary("%", n, 1), "0"),
])
def test_simplify_dim_normal_form(expr, want):
    assert dim_text(arith.simplify_dim(expr)) == want


def test_proofs_patterns_and_inference():
    two_n = PrimBinary("*", 2, n)
    assert arith.can_prove_equal(two_n, PrimBinary("+", n, n))
    assert arith.provably_equal(two_n, PrimBinary("+", n, n))
    nm, mn = PrimBinary("*", n, m), PrimBinary("*", m, n)
    # pattern checks prove products commutative; op inference proves linear forms only
    assert arith.can_prove_equal(nm, mn) and not arith.provably_equal(nm, mn)
    square = PrimBinary("*", PrimBinary("+", n, 1), PrimBinary("+", n, 1))
    expanded = PrimBinary("+", PrimBinary("+", PrimBinary("*", n, n), two_n), 1)
    assert arith.can_prove_equal(square, expanded)
    assert arith.can_prove_equal(PrimMinMax("min", n, m), PrimMinMax("min", m, n))
    assert not arith.can_prove_equal(PrimBinary("//", n, 2), PrimBinary("//", m, 2))
    assert arith.provably_different(PrimBinary("+", n, 1), n) and not arith.provably_different(n, m)
    assert arith.as_int(PrimBinary("-", PrimBinary("+", n, 3), n)) == 3 and arith.as_int(n) is None


def test_eval_dim():
    scope = {n: 6, m: 4}
    assert arith.eval_dim(PrimMinMax("max", PrimBinary("//", n, 4), PrimBinary("%", m, 3)), scope) == 1
    with pytest.raises(InterpretError, match="symbolic dimension 'k' is not bound"):
        arith.eval_dim(TirVar("k"), scope)
    with pytest.raises(InterpretError, match=r"division by zero while evaluating a dimension \(6 // 0\)"):
        arith.eval_dim(PrimBinary("//", n, PrimBinary("-", m, 4)), scope)
