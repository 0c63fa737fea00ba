"""``FunctionPattern``, ``has_ty`` with shape variables, ``pattern.match(expr, var2val)`` with
``relax.analysis.get_var2val``, and ``rewrite_call`` trying the next ``|`` alternative."""

from __future__ import annotations

import pytest

from byocc import relax
from byocc.dpl import pattern_root_ops
from byocc.ir import Call
from byocc.ir import Function
from byocc.ir import PatternError
from byocc.ir import TirVar
from byocc.ir import Var
from byocc.ir import tensor
from byocc.ir.structural import structural_equal
from byocc.relax.analysis import get_var2val
from byocc.relax.dpl import FunctionPattern
from byocc.relax.dpl import is_op
from byocc.relax.dpl import is_var
from byocc.relax.dpl import rewrite_call
from byocc.relax.dpl import wildcard
from byocc.script import from_source

T4 = 'R.Tensor((4, 4), dtype="float32")'


def main(params: str, body: str, out: str) -> Function:
    lines = ["@I.ir_module", "class Module:", "    @R.function", f"    def main({params}):",
             "        with R.dataflow():"]
    lines += ["            " + b.strip() for b in body.strip().splitlines()]
    lines += [f"            R.output({out})", f"        return {out}"]
    return from_source("\n".join(lines) + "\n")["main"]


# ---------------------------------------------------------------------------- FunctionPattern
def _fn(op: str) -> Function:
    x, y = Var("x", tensor((4,), "float32")), Var("y", tensor((4,), "float32"))
    return Function((x, y), getattr(relax.op, op)(x, y), tensor((4,), "float32"))


def test_function_pattern_matches_parameters_and_body():
    a, b = is_var("x"), is_var("y")
    pat = FunctionPattern([a, b], is_op("relax.add")(a, b))
    assert pat.params == (a, b) and pat.body.args == (a, b)
    assert pat.match(_fn("add"))
    assert not pat.match(_fn("multiply"))
    assert not FunctionPattern([wildcard()], wildcard()).match(_fn("add"))  # arity
    assert FunctionPattern(None, is_op("relax.add")(wildcard(), wildcard())).match(_fn("add"))
    assert not pat.match(_fn("add").body)  # not a function


def test_function_pattern_with_attributes():
    f = _fn("add")
    f = Function(f.params, f.body, f.ret_struct_info, f.is_pure, {"Codegen": "cutlass"})
    pat = FunctionPattern(None, wildcard())
    assert pat.has_attr({"Codegen": "cutlass"}).match(f)
    assert not pat.has_attr({"Codegen": "cublas"}).match(f)


def test_function_pattern_checks_its_arguments():
    with pytest.raises(PatternError, match="list or tuple"):
        FunctionPattern(wildcard(), wildcard())
    with pytest.raises(PatternError, match="body"):
        FunctionPattern([], "x")


def test_function_pattern_dup_and_repr():
    a = wildcard()
    pat = FunctionPattern([a], is_op("relax.nn.relu")(a))
    copy = pat.dup()
    assert copy.params[0] is copy.body.args[0] and copy.params[0] is not a
    assert repr(pat).startswith("FunctionPattern([wildcard()]")
    assert pattern_root_ops(pat) == frozenset()  # no call is ever a function


# ---------------------------------------------------------------------------- var2val
def test_match_sees_through_get_var2val():
    func = main(f"x: {T4}, w: {T4}", "a = R.matmul(x, w)\nb = R.nn.relu(a)", "b")
    var2val = get_var2val(func)
    assert [v.name_hint for v in var2val] == ["a", "b"]
    value = func.body.blocks[0].bindings[1].value
    pat = is_op("relax.nn.relu")(is_op("relax.matmul")(wildcard(), wildcard()))
    assert not pat.match(value)  # `a` stays a variable without the bindings
    assert pat.match(value, var2val)
    matched = pat.extract_matched_expr(value, var2val)
    assert matched[pat.args[0]].op.name == "relax.matmul"


# ---------------------------------------------------------------------------- has_ty
def test_has_ty_rejects_what_is_not_struct_info():
    with pytest.raises(PatternError, match="struct info"):
        wildcard().has_ty("R.Tensor((2, 3))")
    with pytest.raises(PatternError, match="struct info"):
        wildcard().has_struct_info((2, 3))


def test_has_ty_shape_variables_must_agree_across_the_match():
    m, n = TirVar("m"), TirVar("n")
    lhs = wildcard().has_ty(tensor((m, n), None))
    rhs = wildcard().has_ty(tensor((m, n), None))
    pat = is_op("relax.add")(lhs, rhs)
    func = main('a: R.Tensor((8, 4), "int32"), b: R.Tensor((8, 4), "int32"), c: R.Tensor((1, 4), "int32")',
                "d = R.add(a, b)\ne = R.add(a, c)\nf = (d, e)", "f")
    d, e = (b.value for b in func.body.blocks[0].bindings[:2])
    assert pat.match(d)
    assert not pat.match(e)  # m would be both 8 and 1
    assert wildcard().has_ty(tensor((m, n), None)).match(e.args[1])  # each match starts afresh
    # a failed alternative forgets what it fixed
    first = is_op("relax.add")(wildcard().has_ty(tensor((m, 4), None)), wildcard().has_ty(tensor((5, 4), None)))
    second = is_op("relax.add")(wildcard().has_ty(tensor((m, 4), None)), wildcard().has_ty(tensor((m, 4), None)))
    assert (first | second).match(d)


# ---------------------------------------------------------------------------- rewrite_call and |
def test_rewrite_call_tries_the_next_alternative_when_the_rewriter_declines():
    func = main("", 'a = R.ones(R.shape([2, 3]), "int32")\nb = R.zeros(R.shape([2, 3]), "int32")\n'
                    "c = R.add(a, b)", "c")
    any_add = is_op("relax.add")(wildcard(), wildcard())
    arg = wildcard()
    add_zeros = is_op("relax.add")(arg, is_op("relax.zeros")(wildcard()))
    pat = any_add | add_zeros
    seen = []

    def rewriter(expr, matches):
        assert isinstance(matches[pat], Call)  # the '|' itself maps to the matched value
        seen.append(any_add in matches)
        return expr if any_add in matches else matches[arg]

    out = rewrite_call(pat, rewriter, func)
    assert seen == [True, False]
    expected = main("", 'c = R.ones(R.shape([2, 3]), "int32")', "c")
    assert structural_equal(out, expected), out.script()


def test_rewrite_call_alternatives_do_not_rewrite_a_binding_twice():
    func = main(f"x: {T4}", "a = R.add(x, x)\nb = R.nn.relu(a)", "b")
    first, second = is_op("relax.add")(wildcard(), wildcard()), is_op("relax.add")(wildcard(), wildcard())
    calls = []

    def rewriter(expr, matches):
        calls.append(first in matches)
        return relax.op.multiply(expr.args[0], expr.args[1])

    rewrite_call(first | second, rewriter, func)
    assert calls == [True]  # `second` never sees the rewritten binding


def test_has_attr_compares_an_int_subclass_as_an_int():
    """``T.int64(2)`` is an int subclass: it equals the attribute 2 (never the float 2.0)."""

    class Int64(int):
        pass

    func = main(f"x: {T4}", "a = R.split(x, 2, axis=0)", "a")
    split = func.body.blocks[0].bindings[0].value
    pat = is_op("relax.split")(wildcard())
    assert pat.has_attr({"indices_or_sections": Int64(2), "axis": 0}).match(split)
    assert not pat.has_attr({"indices_or_sections": 2.0}).match(split)


def test_has_ty_dimension_expressions_use_the_fixed_shape_variables():
    from byocc.ir import arith

    m = TirVar("m")
    pat = wildcard().has_ty(tensor((m, arith.mul(m, 2)), None))
    func = main('a: R.Tensor((4, 8), "float32"), b: R.Tensor((4, 9), "float32")', "c = (a, b)", "c")
    a, b = func.params
    assert pat.match(a)
    assert not pat.match(b)  # m = 4 makes the second dimension 8


def test_has_ty_dimension_without_an_integer_solution_does_not_match():
    from byocc.ir import arith

    m = TirVar("m")
    pat = wildcard().has_ty(tensor((arith.mul(m, 2), 4), None))
    func = main('a: R.Tensor((6, 4), "float32"), b: R.Tensor((1, 4), "float32")', "c = (a, b)", "c")
    a, b = func.params
    assert pat.match(a)  # m = 3
    assert not pat.match(b)  # 2 * m == 1 has no integer m (as TVM's simplifier decides)
