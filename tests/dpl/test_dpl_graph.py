"""Graph-level patterns: ``PatternContext``, ``match_dfb``, ``rewrite_bindings`` (TVM's names)."""

from __future__ import annotations

import pytest

from byocc import relax
from byocc.dpl import PatternContext
from byocc.dpl import PatternSeq
from byocc.dpl import is_op
from byocc.dpl import is_var
from byocc.dpl import wildcard
from byocc.ir import PatternError
from byocc.ir.structural import structural_equal
from byocc.relax.dpl import rewrite_bindings
from byocc.script import from_source

HEAD = "@I.ir_module\nclass Module:\n    @R.function\n"


def block(params: str, body: str, out: str):
    """The dataflow block of ``main(params)`` whose bindings are ``body`` (one a line)."""
    lines = [HEAD + f"    def main({params}):", "        with R.dataflow():"]
    lines += ["            " + b.strip() for b in body.strip().splitlines()]
    lines += [f"            R.output({out})", f"        return {out}"]
    func = from_source("\n".join(lines) + "\n")["main"]
    return func, func.body.blocks[0]


T4 = 'R.Tensor((4, 4), dtype="float32")'
DIAMOND = """
a = R.matmul(x, w)
b = R.nn.relu(a)
c = R.sigmoid(a)
d = R.add(b, c)
"""


def names(matched):
    return {k: v.name_hint for k, v in matched.items()}


def mm():
    return is_op("relax.matmul")(wildcard(), wildcard(), add_constraint=False)


def unary(name):
    return is_op(name)(wildcard(), add_constraint=False)


def test_used_by_finds_producer_and_consumer():
    _, dfb = block(f"x: {T4}, w: {T4}", DIAMOND, "d")
    with PatternContext() as ctx:
        m, r = mm(), unary("relax.nn.relu")
        seq = m ^ r
        assert isinstance(seq, PatternSeq) and seq.patterns == (m, r)
        assert names(ctx.match_dfb(dfb)) == {m: "a", r: "b"}


def test_only_used_by_rejects_a_producer_with_two_users():
    _, dfb = block(f"x: {T4}, w: {T4}", DIAMOND, "d")
    with PatternContext() as ctx:
        mm() >> unary("relax.nn.relu")
        assert ctx.match_dfb(dfb) is None
    with PatternContext() as ctx:
        r = unary("relax.nn.relu")
        r >> is_op("relax.add")(wildcard(), wildcard(), add_constraint=False)
        assert ctx.match_dfb(dfb) is not None


def test_fork_to_describes_a_diamond():
    _, dfb = block(f"x: {T4}, w: {T4}", DIAMOND, "d")
    with PatternContext() as ctx:
        m, r, s = mm(), unary("relax.nn.relu"), unary("relax.sigmoid")
        add = is_op("relax.add")(wildcard(), wildcard(), add_constraint=False)
        m.fork_to(r, s)
        r >> add
        s >> add
        assert names(ctx.match_dfb(dfb)) == {m: "a", r: "b", s: "c", add: "d"}
    with PatternContext() as ctx:  # a third branch the block does not have
        m = mm()
        m.fork_to(unary("relax.nn.relu"), unary("relax.sigmoid"), unary("relax.exp"))
        assert ctx.match_dfb(dfb) is None


def test_index_distinguishes_one_producer_used_twice_from_two_producers():
    _, same = block(f"x: {T4}", "a = R.nn.relu(x)\nb = R.add(a, a)", "b")
    _, two = block(f"x: {T4}", "a = R.nn.relu(x)\nc = R.nn.relu(x)\nb = R.add(a, c)", "b")
    with PatternContext() as ctx:
        fork = unary("relax.nn.relu")
        join = is_op("relax.add")(wildcard(), wildcard(), add_constraint=False)
        fork.only_used_by(join, index=0)
        fork.only_used_by(join, index=1)
        assert ctx.match_dfb(same) is not None
        assert ctx.match_dfb(two) is None
    with PatternContext() as ctx:
        join = is_op("relax.add")(wildcard(), wildcard(), add_constraint=False)
        unary("relax.nn.relu") >> join
        unary("relax.nn.relu") >> join  # a second, distinct producer
        assert ctx.match_dfb(two) is not None
        assert ctx.match_dfb(same) is None


def test_call_patterns_built_in_a_context_record_their_argument_edges():
    func, dfb = block(f"x: {T4}, w0: {T4}, w1: {T4}", "a = R.matmul(x, w0)\nb = R.matmul(x, w1)\nc = (a, b)", "c")
    with PatternContext() as ctx:
        inp, wa, wb = wildcard(), wildcard(), wildcard()
        ma = is_op("relax.matmul")(inp, wa)
        mb = is_op("relax.matmul")(inp, wb)
        got = names(ctx.match_dfb(dfb))
    assert got == {inp: "x", wa: "w0", wb: "w1", ma: "a", mb: "b"}
    _, apart = block(f"x: {T4}, y: {T4}, w0: {T4}, w1: {T4}", "a = R.matmul(x, w0)\nb = R.matmul(y, w1)\nc = (a, b)",
                     "c")
    assert ctx.match_dfb(apart) is None  # the two matmuls do not share their input


def test_outside_a_context_edges_are_not_recorded():
    m, r = mm(), unary("relax.nn.relu")
    assert isinstance(m ^ r, PatternSeq)
    _, dfb = block(f"x: {T4}, w: {T4}", DIAMOND, "d")
    with PatternContext() as ctx:
        assert ctx.match_dfb(dfb) is None  # no edges: nothing to match


def test_nested_and_incremental_contexts():
    _, dfb = block(f"x: {T4}", "a = R.nn.relu(x)\nb = R.sigmoid(a)\nc = R.exp(b)", "c")
    relu, sig, exp = unary("relax.nn.relu"), unary("relax.sigmoid"), unary("relax.exp")
    assert PatternContext.current() is None
    with PatternContext() as outer:
        relu >> sig
        with PatternContext(incremental=True) as inc:
            assert PatternContext.current() is inc
            sig >> exp
            assert len(inc.match_dfb(dfb)) == 3  # relu >> sig >> exp
        with PatternContext() as fresh:
            sig >> exp
            assert len(fresh.match_dfb(dfb)) == 2
        assert PatternContext.current() is outer
        assert len(outer.match_dfb(dfb)) == 2  # the inner edges did not leak out
    assert PatternContext.current() is None


def test_incremental_needs_an_enclosing_context():
    with pytest.raises(PatternError, match="incremental"):
        PatternContext(incremental=True)


def test_a_repeated_constraint_is_an_error():
    with PatternContext():
        a, b = wildcard(), wildcard()
        a.used_by(b, 0)
        a.only_used_by(b, 0)  # another kind: fine
        with pytest.raises(PatternError, match="already exists"):
            a.used_by(b, 0)


def test_contexts_exit_innermost_first():
    outer, inner = PatternContext(), PatternContext()
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(PatternError, match="reverse order"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert PatternContext.current() is None


def test_dup_of_a_sequence_is_a_second_chain():
    body = """
    a = R.matmul(x, w0)
    b = R.nn.relu(a)
    c = R.matmul(x, w1)
    d = R.nn.relu(c)
    e = R.add(b, d)
    """
    _, dfb = block(f"x: {T4}, w0: {T4}, w1: {T4}", body, "e")
    _, once = block(f"x: {T4}, w0: {T4}", "a = R.matmul(x, w0)\nb = R.nn.relu(a)", "b")
    with PatternContext() as ctx:
        first = mm() >> unary("relax.nn.relu")
        second = first.dup()
        assert all(p is not q for p, q in zip(first.patterns, second.patterns))
        is_var("x").fork_to(first, second)
        got = names(ctx.match_dfb(dfb))
        assert sorted(got.values()) == ["a", "b", "c", "d", "x"]
        assert ctx.match_dfb(once) is None


@pytest.mark.parametrize(("lhs", "rhs", "ok"), [
    ("(8, 4)", "(8, 4)", True), ("(8, 4)", "(1, 4)", False),
    ('("n", 4)', '("n", 4)', True), ('("n", 4)', '("m", 4)', False),
])
def test_same_shape_as(lhs, rhs, ok):
    _, dfb = block(f'a: R.Tensor({lhs}, "float32"), b: R.Tensor({rhs}, "float32")',
                   "c = R.multiply(a, R.const(2.0, \"float32\"))\nd = R.add(b, c)", "d")
    with PatternContext() as ctx:
        left, right = wildcard(), wildcard()
        is_op("relax.add")(left, right)
        left.same_shape_as(right)
    assert (ctx.match_dfb(dfb) is not None) is ok


def test_same_shape_as_needs_patterns_of_the_graph():
    _, dfb = block(f"x: {T4}", "a = R.nn.relu(x)", "a")
    with PatternContext() as ctx:
        p = wildcard()
        p ^ unary("relax.nn.relu")
        p.same_shape_as(wildcard())
    with pytest.raises(PatternError, match="same_shape_as"):
        ctx.match_dfb(dfb)


# ---------------------------------------------------------------------------- rewrite_bindings
def _qkv_context():
    with PatternContext() as ctx:
        inp, wq, wk = wildcard(), wildcard(), wildcard()
        mq = is_op("relax.matmul")(inp, wq)
        mk = is_op("relax.matmul")(inp, wk)

    def rewriter(m, bindings):
        assert all(v in bindings for v in (m[mq], m[mk]))
        both = relax.op.matmul(m[inp], relax.op.concat([m[wq], m[wk]], axis=1))
        return {m[mq]: relax.op.strided_slice(both, axes=[1], begin=[0], end=[4]),
                m[mk]: relax.op.strided_slice(both, axes=[1], begin=[4], end=[8])}

    return ctx, rewriter


def test_rewrite_bindings_combines_two_matmuls_and_repeats_until_done():
    t = 'R.Tensor((2, 4), dtype="float32")'
    func, _ = block(f"x: {t}, y: {t}, w0: {T4}, w1: {T4}, w2: {T4}, w3: {T4}",
                    "a = R.matmul(x, w0)\nb = R.matmul(x, w1)\nc = R.matmul(y, w2)\nd = R.matmul(y, w3)\n"
                    "e = (a, b, c, d)", "e")
    expected, _ = block(f"x: {t}, y: {t}, w0: {T4}, w1: {T4}, w2: {T4}, w3: {T4}", """
        p = R.concat((w0, w1), axis=1)
        q = R.matmul(x, p)
        a = R.strided_slice(q, axes=[1], begin=[0], end=[4])
        b = R.strided_slice(q, axes=[1], begin=[4], end=[8])
        r = R.concat((w2, w3), axis=1)
        s = R.matmul(y, r)
        c = R.strided_slice(s, axes=[1], begin=[0], end=[4])
        d = R.strided_slice(s, axes=[1], begin=[4], end=[8])
        e = (a, b, c, d)
        """, "e")
    ctx, rewriter = _qkv_context()
    out = rewrite_bindings(ctx, rewriter, func)
    assert structural_equal(out, expected), out.script()


def test_rewrite_bindings_without_a_match_returns_the_function():
    func, _ = block(f"x: {T4}, w0: {T4}", "a = R.matmul(x, w0)", "a")
    ctx, rewriter = _qkv_context()
    assert rewrite_bindings(ctx, rewriter, func) is func


def test_rewrite_bindings_rejects_a_new_value_for_an_unbound_variable():
    func, _ = block(f"x: {T4}", "a = R.nn.relu(x)", "a")
    with PatternContext() as ctx:
        p = wildcard()
        p ^ unary("relax.nn.relu")

    with pytest.raises(ValueError, match="not a variable bound"):
        rewrite_bindings(ctx, lambda m, b: {m[p]: relax.op.abs(m[p])}, func)  # p matched the parameter x


def test_rewrite_bindings_checks_its_arguments():
    func, _ = block(f"x: {T4}", "a = R.nn.relu(x)", "a")
    with pytest.raises(TypeError, match="PatternContext"):
        rewrite_bindings(wildcard(), lambda m, b: {}, func)


def test_a_long_block_is_matched_without_deep_recursion():
    """5 000 bindings, a chain pattern that never matches and one that matches at the end:
    one expression match per (pattern, candidate), no recursion over the block."""
    n = 5000
    body = ["v0 = R.add(x, x)"] + [f"v{i} = {'R.nn.relu' if i % 2 else 'R.exp'}(v{i - 1})" for i in range(1, n)]
    body.append(f"last = R.sigmoid(v{n - 1})")
    _, dfb = block(f"x: {T4}", "\n".join(body), "last")
    with PatternContext() as ctx:
        wildcard() >> unary("relax.nn.relu") >> unary("relax.exp") >> unary("relax.exp")
        assert ctx.match_dfb(dfb) is None
    with PatternContext() as ctx:
        r, s = unary("relax.nn.relu"), unary("relax.sigmoid")
        r >> s
        assert names(ctx.match_dfb(dfb)) == {r: f"v{n - 1}", s: "last"}


def test_rewrite_bindings_matches_again_among_the_bindings_not_rewritten():
    """Within one block the graph is matched again without the bindings already rewritten,
    before any clean-up: the rewriter's second call sees the rest of the block only."""
    func, _ = block(f"x: {T4}, y: {T4}, w0: {T4}, w1: {T4}, w2: {T4}, w3: {T4}",
                    "a = R.matmul(x, w0)\nb = R.matmul(y, w1)\nc = R.matmul(x, w2)\nd = R.matmul(y, w3)\n"
                    "e = (a, b, c, d)", "e")
    with PatternContext() as ctx:
        inp, wa, wb = wildcard(), wildcard(), wildcard()
        ma, mb = is_op("relax.matmul")(inp, wa), is_op("relax.matmul")(inp, wb)
    calls = []

    def rewriter(m, bindings):
        calls.append(([m[ma].name_hint, m[mb].name_hint], sorted(v.name_hint for v in bindings)))
        return {m[ma]: relax.op.add(m[inp], m[wa]), m[mb]: relax.op.add(m[inp], m[wb])}

    out = rewrite_bindings(ctx, rewriter, func)
    assert calls == [(["a", "c"], ["a", "b", "c", "d", "e"]), (["b", "d"], ["b", "d", "e"])]
    assert [b.value.op.name for b in out.body.blocks[0].bindings[:4]] == ["relax.add"] * 4


def test_a_pattern_chain_longer_than_the_recursion_limit():
    n = 1200
    body = ["v0 = R.nn.relu(x)"] + [f"v{i} = R.nn.relu(v{i - 1})" for i in range(1, n)]
    _, dfb = block(f"x: {T4}", "\n".join(body), f"v{n - 1}")
    with PatternContext() as ctx:
        seq = unary("relax.nn.relu")
        for _ in range(n - 1):
            seq = seq >> unary("relax.nn.relu")
        got = ctx.match_dfb(dfb)
    assert [got[p].name_hint for p in seq.patterns] == [f"v{i}" for i in range(n)]


def test_tvm_module_paths_of_the_graph_api():
    from byocc.relax import dpl
    from byocc.relax.dpl.context import PatternContext as FromContext
    from byocc.relax.dpl.rewrite import rewrite_bindings as from_rewrite
    from byocc.relax.dpl.rewrite import rewrite_call

    assert FromContext is PatternContext is dpl.PatternContext
    assert from_rewrite is rewrite_bindings and rewrite_call is dpl.rewrite_call
