"""``relax.dpl.rewrite_call`` against TVM 0.27 (goldens from tools/gen_rewrite_call_goldens.py,
which runs the same three rewriters with TVM's API on tests/data/rewrite_call/probe.relax)."""

from __future__ import annotations

from pathlib import Path

import pytest

from byocc import relax
from byocc.ir import Function
from byocc.relax.dpl import is_op
from byocc.relax.dpl import rewrite_call
from byocc.relax.dpl import wildcard
from byocc.script import from_source

DATA = Path(__file__).parents[1] / "data" / "rewrite_call"


def add_to_multiply():
    a, b = wildcard(), wildcard()
    return is_op("relax.add")(a, b), lambda e, m: relax.op.multiply(m[a], m[b])


def relu_to_nested():
    x = wildcard()
    return is_op("relax.nn.relu")(x), lambda e, m: relax.op.maximum(relax.op.multiply(m[x], m[x]), m[x])


def never():
    x = wildcard()
    return is_op("relax.nn.softmax")(x), lambda e, m: None


def _apply(make):
    mod = from_source((DATA / "probe.relax").read_text())
    pattern, rewriter = make()
    for name in mod.names():
        mod = mod.with_function(name, rewrite_call(pattern, rewriter, mod[name]), mod.get_global_var(name))
    return mod


@pytest.mark.parametrize("make", [add_to_multiply, relu_to_nested, never], ids=lambda f: f.__name__)
def test_matches_tvm(make):
    """Rewritten values, nested calls bound to fresh lv/gv names, and TVM's clean-up
    (common subexpressions and dead bindings go, also in a function where nothing matched
    but that has a plain binding block)."""
    assert _apply(make).script() + "\n" == (DATA / f"probe.{make.__name__}.txt").read_text()


def test_no_match_in_a_dataflow_only_function_returns_the_same_function():
    mod = from_source((DATA / "probe.relax").read_text())
    pattern, rewriter = never()
    assert rewrite_call(pattern, rewriter, mod["main"]) is mod["main"]


def test_rewriter_sees_unwrapped_bindings():
    """Matches map pattern nodes to bound values (a variable bound earlier in the block
    is seen through), as TVM's matcher does."""
    mod = from_source((DATA / "probe.relax").read_text())
    x = wildcard()
    seen = []
    rewrite_call(is_op("relax.nn.relu")(x), lambda e, m: seen.append(m[x]), mod["main"])
    assert [type(v).__name__ for v in seen] == ["Call", "Call"]
    assert [v.op.name for v in seen] == ["relax.add", "relax.add"]


def test_rejects_a_module():
    x = wildcard()
    mod = from_source((DATA / "probe.relax").read_text())
    with pytest.raises(TypeError, match="Function"):
        rewrite_call(is_op("relax.add")(x, x), lambda e, m: None, mod)


def test_long_function_is_linear_enough():
    """20 000 bindings, every other one rewritten: no recursion limit, one pass each."""
    n = 20000
    lines = ["@I.ir_module", "class Module:", "    @R.function",
             '    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
             "        with R.dataflow():", "            v0 = R.add(x, x)"]
    for i in range(1, n):
        op = "R.nn.relu" if i % 2 else "R.exp"
        lines.append(f"            v{i} = {op}(v{i - 1})")
    lines += [f"            R.output(v{n - 1})", f"        return v{n - 1}"]
    mod = from_source("\n".join(lines) + "\n")
    x = wildcard()
    out = rewrite_call(is_op("relax.nn.relu")(x), lambda e, m: relax.op.abs(e.args[0]), mod["main"])
    assert isinstance(out, Function)
    body = out.body.blocks[0].bindings
    assert len(body) == n
    assert sum(1 for b in body if b.value.op.name == "relax.abs") == n // 2
