"""FuseOpsByPattern's pre-filters never reject a call the matcher accepts: for every pattern
of the cutlass and cublas tables and of every pattern file at hand, and every call binding
of random partitionable graphs and of the corpus inputs, a rejection by
``deep_prefilter`` means ``match_expr`` finds no match."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_glob
from randgraph import RandomChooser
from randgraph import random_partition_module

from byocc.backends import get_patterns_with_prefix
from byocc.backends import load_pattern_file
from byocc.dpl import is_op
from byocc.dpl import match_expr
from byocc.dpl import wildcard
from byocc.ir import Call
from byocc.ir import Function
from byocc.ir import TensorStructInfo
from byocc.ir import Var
from byocc.ops import make_call
from byocc.text import parse_module
from byocc.transform.pattern_partition import FunctionIndex
from byocc.transform.pattern_partition import deep_prefilter

DATA = Path(__file__).parents[1] / "data"


def _patterns() -> list:
    entries = list(get_patterns_with_prefix("cutlass")) + list(get_patterns_with_prefix("cublas"))
    files = sorted(DATA.rglob("patterns.py")) + shared_glob("conformance/cases/*/patterns.py")
    for path in files:
        try:
            entries += load_pattern_file(str(path))
        except Exception:  # noqa: BLE001  (files that are meant to fail to load)
            continue
    # a re-association case the matcher accepts with a different root operator
    entries.append(("t.divmul", is_op("relax.divide")(is_op("relax.multiply")(wildcard(), wildcard()),
                                                      wildcard())))
    return [e if not isinstance(e, tuple) else _Entry(e[1]) for e in entries]


class _Entry:
    def __init__(self, pattern):
        self.pattern = pattern


def _functions():
    for seed in range(30):
        mod = random_partition_module(RandomChooser(seed))
        yield from (f for _, f in mod.functions.items() if isinstance(f, Function))
    inputs = sorted(DATA.rglob("input.relax")) + shared_glob("conformance/cases/*/input.relax")
    for path in inputs[:60]:
        try:
            mod = parse_module(path.read_text(), str(path))
        except Exception:  # noqa: BLE001
            continue
        yield from (f for _, f in mod.functions.items() if isinstance(f, Function))


@pytest.fixture(scope="module")
def patterns():
    return [(e.pattern, deep_prefilter(e.pattern)) for e in _patterns()]


def test_deep_prefilter_never_rejects_a_match(patterns):
    rejected = accepted = matched = 0
    for func in _functions():
        index = FunctionIndex(func)
        for binding, _ in index.calls:
            call = binding.value
            assert isinstance(call, Call)
            for pattern, deep in patterns:
                if deep is None:
                    continue
                ok = deep(call, index.var2val)
                memo = match_expr(pattern, call, index.var2val)
                if memo is not None:
                    matched += 1
                    assert ok, (binding.var.name_hint, pattern)
                elif ok:
                    accepted += 1
                else:
                    rejected += 1
    assert matched > 500 and rejected > 3 * accepted  # exact, and it matters


def test_reassociation_is_not_prefiltered_away():
    """divide(multiply(a, b), c) matches multiply(x, divide(y, z)) (TVM's re-association):
    the call's operator differs from the pattern's, and the pre-filter lets it through."""
    t = TensorStructInfo((4,), "float32")
    a, b, c = (Var(n, t) for n in "abc")
    call = make_call("relax.multiply", (a, make_call("relax.divide", (b, c))))
    pattern = is_op("relax.divide")(is_op("relax.multiply")(wildcard(), wildcard()), wildcard())
    assert match_expr(pattern, call, {}) is not None
    assert deep_prefilter(pattern)(call, {})


def test_signature_prefilter_never_rejects_a_match():
    """The same for ``prefilter`` over ``FunctionIndex.signature`` (three levels of calls)."""
    from byocc.transform.pattern_partition import prefilter

    quick = [(e.pattern, prefilter(e.pattern)) for e in _patterns()]
    rejected = matched = 0
    for func in _functions():
        index = FunctionIndex(func)
        for pos, (binding, _) in enumerate(index.calls):
            sig = index.signature(pos)
            for pattern, check in quick:
                if check is None:
                    continue
                ok = check(sig)
                if match_expr(pattern, binding.value, index.var2val) is not None:
                    matched += 1
                    assert ok, (binding.var.name_hint, pattern)
                elif not ok:
                    rejected += 1
    assert matched > 500 and rejected > 1000


def test_signature_prefilter_leaves_reassociation_to_the_matcher():
    """An argument pattern divide(multiply(a, b), c) matches the nested call
    multiply(x, divide(y, z)) (TVM's re-association): the signature pre-filter lets the
    enclosing call through."""
    from byocc.ir import DataflowBlock
    from byocc.ir import SeqExpr
    from byocc.ir import VarBinding
    from byocc.transform.pattern_partition import prefilter

    t = TensorStructInfo((4,), "float32")
    a, b, c, d = (Var(n, t) for n in "abcd")
    call = make_call("relax.add", (make_call("relax.multiply", (a, make_call("relax.divide", (b, c)))), d))
    out = Var("out", t)
    func = Function((a, b, c, d), SeqExpr((DataflowBlock((VarBinding(out, call),)),), out), t)
    pattern = is_op("relax.add")(
        is_op("relax.divide")(is_op("relax.multiply")(wildcard(), wildcard()), wildcard()), wildcard())
    assert match_expr(pattern, call, {}) is not None
    index = FunctionIndex(func)
    check = prefilter(pattern)
    assert check is None or check(index.signature(0))
