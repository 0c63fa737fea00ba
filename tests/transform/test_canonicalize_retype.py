"""CanonicalizeBindings retypes what it rewrites, as TVM 0.27 does (issue 11).

* a binding whose value changed takes the value's re-inferred type (TVM's ReEmitBinding),
  and the function's return type follows;
* symbolic variables fixed by ``match_cast`` are known downstream: types use the value, but
  a prim value (a runtime argument) keeps the variable, and so does the match_cast that
  defines it;
* two match_casts that disagree are a ``ValueError``.

Every expected text here is what TVM 0.27 prints for the same input.
"""

from __future__ import annotations

import textwrap

import pytest

from byocc.ir import PassError
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform.canonicalize_bindings import CanonicalizeBindings

IMPORTS = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n"


def module(body: str, tvars: str = "", tir: bool = False) -> str:
    head = IMPORTS + ("# from tvm.script import tirx as T\n" if tir else "")
    return (head + "\n" + textwrap.dedent(tvars).lstrip("\n") + "@I.ir_module\nclass Module:\n"
            + textwrap.indent(textwrap.dedent(body).strip("\n"), "    "))


def canon(src: str) -> str:
    return print_module(CanonicalizeBindings()(parse_module(src)))


def printed(src: str) -> str:
    return print_module(parse_module(src))


def test_substituted_operands_retype_the_binding_and_the_return_type():
    # y = x; z = match_cast(x, (o, p)) with x: (m, n) -> o = m, p = n, z is x: q is (m, n)
    src = module('''
        @R.function
        def main(x: R.Tensor((m, n), dtype="float32")) -> R.Tensor(dtype="float32", ndim=2):
            o = T.int64()
            p = T.int64()
            y: R.Tensor((m, n), dtype="float32") = x
            z: R.Tensor((o, p), dtype="float32") = R.match_cast(y, R.Tensor((o, p), dtype="float32"))
            q: R.Tensor(dtype="float32", ndim=2) = R.add(z, y)
            return q
    ''', 'm = TypeVar("m")\nn = TypeVar("n")\n', tir=True)
    want = module('''
        @R.function
        def main(x: R.Tensor((m, n), dtype="float32")) -> R.Tensor((m, n), dtype="float32"):
            q: R.Tensor((m, n), dtype="float32") = R.add(x, x)
            return q
    ''', 'm = TypeVar("m")\nn = TypeVar("n")\n', tir=True)
    assert canon(src) == printed(want)


def test_a_less_precise_annotation_is_replaced_only_where_the_value_changed():
    src = module('''
        @R.function
        def main(A: R.Tensor((n, 16), dtype="int32")) -> R.Tuple(R.Tensor(dtype="int32", ndim=2), R.Tensor(dtype="int32", ndim=2)):
            B: R.Tensor((n, 16), dtype="int32") = A
            C: R.Tensor(dtype="int32", ndim=2) = R.add(B, B)
            D: R.Tensor(dtype="int32", ndim=2) = R.add(A, A)
            return (C, D)
    ''', 'n = TypeVar("n")\n')
    want = module('''
        @R.function
        def main(A: R.Tensor((n, 16), dtype="int32")) -> R.Tuple(R.Tensor((n, 16), dtype="int32"), R.Tensor(dtype="int32", ndim=2)):
            C: R.Tensor((n, 16), dtype="int32") = R.add(A, A)
            D: R.Tensor(dtype="int32", ndim=2) = R.add(A, A)
            return (C, D)
    ''', 'n = TypeVar("n")\n')
    assert canon(src) == printed(want)


def test_a_match_cast_defining_a_runtime_variable_stays_and_later_types_use_its_value():
    # match_cast(A, (N, M)) on a (16, 8) input: N is used by a prim value, so the cast keeps
    # (N, M); the strided_slice's type (T.min(N, 16), 8) becomes (16, 8)
    src = module('''
        @R.function
        def main(x: R.Tensor((16, 8), dtype="float32")) -> R.Tensor(dtype="float32", ndim=2):
            N = T.int64()
            M = T.int64()
            a: R.Tensor((N, M), dtype="float32") = R.match_cast(x, R.Tensor((N, M), dtype="float32"))
            b: R.Tensor((T.min(N, N), M), dtype="float32") = R.strided_slice(a, (0,), (0,), (N,), assume_inbound=False)
            c: R.Tensor((T.min(N, N), M), dtype="float32") = R.add(b, b)
            return c
    ''', tir=True)
    want = module('''
        @R.function
        def main(x: R.Tensor((16, 8), dtype="float32")) -> R.Tensor((16, 8), dtype="float32"):
            N = T.int64()
            M = T.int64()
            a: R.Tensor((N, M), dtype="float32") = R.match_cast(x, R.Tensor((N, M), dtype="float32"))
            b: R.Tensor((16, 8), dtype="float32") = R.strided_slice(a, (0,), (0,), (N,), assume_inbound=False)
            c: R.Tensor((16, 8), dtype="float32") = R.add(b, b)
            return c
    ''', tir=True)
    assert canon(src) == printed(want)


def test_a_match_cast_with_no_runtime_use_folds_into_shapes():
    src = module('''
        @R.function
        def main(x: R.Tensor((8, 4), dtype="float32")) -> R.Tensor(dtype="float32", ndim=1):
            N = T.int64()
            z: R.Tensor((N, 4), dtype="float32") = R.match_cast(x, R.Tensor((N, 4), dtype="float32"))
            w: R.Tensor((N * 4,), dtype="float32") = R.reshape(z, R.shape([N * 4]))
            return w
    ''', tir=True)
    want = module('''
        @R.function
        def main(x: R.Tensor((8, 4), dtype="float32")) -> R.Tensor((32,), dtype="float32"):
            w: R.Tensor((32,), dtype="float32") = R.reshape(x, R.shape([32]))
            return w
    ''')
    assert canon(src) == printed(want)


def test_match_casts_that_disagree_raise_a_value_error():
    src = module('''
        @R.function
        def main(x: R.Tensor((16, 8), dtype="float32"), y: R.Tensor((32, 8), dtype="float32")) -> R.Tuple(R.Tensor(dtype="float32", ndim=2), R.Tensor(dtype="float32", ndim=2)):
            N = T.int64()
            a: R.Tensor((N, 8), dtype="float32") = R.match_cast(x, R.Tensor((N, 8), dtype="float32"))
            b: R.Tensor((N, 8), dtype="float32") = R.match_cast(y, R.Tensor((N, 8), dtype="float32"))
            return (a, b)
    ''', tir=True)
    with pytest.raises(ValueError, match=r"MatchCast statements must be consistent: the match_cast of 'a' "
                                         r"implies that N is 16, while the later one of 'b' implies that it is 32"):
        CanonicalizeBindings()(parse_module(src))
    with pytest.raises(PassError):
        CanonicalizeBindings()(parse_module(src))


SIG = ('def main(state: R.Tensor((N,), dtype="float32"), A: R.Tensor((M, 16), dtype="float32"), '
       'B: R.Tensor((M, 32), dtype="float32"), scale: T.float32, c: T.bool) -> R.Tensor((M,), dtype="float32"):')
TVARS = 'M = TypeVar("M")\nN = TypeVar("N")\n'


def _branch(x: str, src: str, k: int, after: str, cast: bool) -> str:
    """``x1 = src * scale; x2 = match_cast(x1, (M, N)); x3 = x2 * scale`` typed (M, after);
    without ``cast`` the (then trivial) match_cast is gone."""
    mc = f'''
                {x}2: R.Tensor((M, N), dtype="float32") = R.match_cast({x}1, R.Tensor((M, N), dtype="float32"))'''
    return f'''
                {x}1: R.Tensor((M, {k}), dtype="float32") = R.multiply({src}, scale){mc if cast else ""}
                {x}3: R.Tensor((M, {after}), dtype="float32") = R.multiply({x}{2 if cast else 1}, scale)'''


def _branches(then: str, other: str) -> str:
    return module(f'''
        @R.function
        {SIG}
            if c:{then}
            else:{other}
            w4: R.Tensor((M, N), dtype="float32") = R.multiply(weights, scale)
            out: R.Tensor((M,), dtype="float32") = R.matmul(w4, state, out_dtype=None)
            return out
        ''', TVARS, tir=True)


_OUT = '\n                weights: R.Tensor((M, N), dtype="float32") = {0}3'
_BACK = ('\n                {0}_branch_with_dyn: R.Tensor((M, N), dtype="float32") = '
         'R.match_cast({1}3, R.Tensor((M, N), dtype="float32"))'
         '\n                weights: R.Tensor((M, N), dtype="float32") = {0}_branch_with_dyn')
BEFORE = _branches(_branch("w", "A", 16, "N", True) + _OUT.format("w"), _branch("v", "B", 32, "N", True) + _OUT.format("v"))


def test_each_branch_knows_its_own_value_and_casts_back_to_the_if_type():
    # N = 16 inside the then branch (from M x 16), N = 32 inside the else branch: each
    # branch's product is typed with its value, then cast back to (M, N) for the if
    want = _branches(_branch("w", "A", 16, "16", False) + _BACK.format("then", "w"),
                     _branch("v", "B", 32, "32", False) + _BACK.format("else", "v"))
    assert canon(BEFORE) == printed(want)


def test_a_condition_using_the_variable_keeps_the_branch_casts():
    # ``if N == 16:``: N is a run-time value of the condition, so the match_casts that
    # define it in each branch stay (as TVM 0.27 does)
    from byocc.ir import ExprMutator
    from byocc.ir import If
    from byocc.ir import PrimBinary
    from byocc.ir import PrimValue

    def on_n(mod):
        func = mod["main"]
        n = func.params[0].struct_info.shape[0]

        class _Cond(ExprMutator):
            def visit_if_(self, e):
                return If(PrimValue(PrimBinary("==", n, 16), "bool"), e.true_branch, e.false_branch,
                          e.struct_info, e.span)

        return mod.with_function("main", _Cond().visit_expr(func))

    want = _branches(_branch("w", "A", 16, "16", True) + _BACK.format("then", "w"),
                     _branch("v", "B", 32, "32", True) + _BACK.format("else", "v"))
    got = print_module(CanonicalizeBindings()(on_n(parse_module(BEFORE))))
    assert got == print_module(on_n(parse_module(want)))
    assert "if N == 16:" in got
