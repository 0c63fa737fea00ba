"""FuseOpsByPattern beyond the spec goldens: cycles TVM gets wrong, add_function naming and
de-duplication, errors, the candidate index, and cost (spec/partitioning.md sections 2, 5, 12)."""

from __future__ import annotations

import textwrap
import time

import pytest

from byocc.dpl import is_op
from byocc.dpl import wildcard
from byocc.ir import PassError
from byocc.ir import PatternError
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform import FuseOpsByPattern
from byocc.transform import pattern_partition

T = 'R.Tensor((4, 4), dtype="float32")'
HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
RELU = [("A.relu", is_op("relax.nn.relu")(wildcard()))]


def module(body: str) -> str:
    return HEADER + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")


def flat_main(params: str, ret: str, lines: list, out: str) -> str:
    """A module whose ``main`` is one dataflow block of ``lines`` (``name: type = value``)."""
    body = "\n".join(f"            {line}" for line in lines)
    return (HEADER + f"    @R.function\n    def main({params}) -> {ret}:\n        with R.dataflow():\n"
            f"{body}\n            R.output({out})\n        return {out}")


def well_formed(mod) -> bool:
    from byocc.ir.well_formed import well_formed as check

    return not check(mod)


def main_relu(extra: str = "") -> str:
    return module(f"""
        {extra}
        @R.function
        def main(x: {T}) -> {T}:
            with R.dataflow():
                a: {T} = R.nn.relu(x)
                R.output(a)
            return a
    """)


def test_tvm_defect_stolen_member_two_cycle_raises():
    """Quirk Q1 lets a later match steal ``q`` out of {p, q, r}; the two groups then depend on
    each other and TVM raises InternalError (cyclic dependency). byocc backs out the stealing
    match: {p, q, r} stays whole and ``q`` becomes its second output."""
    src = module(f"""
        @R.function
        def main(x: {T}) -> {T}:
            with R.dataflow():
                p: {T} = R.nn.relu(x)
                q: {T} = R.nn.gelu(p)
                r: {T} = R.tanh(q)
                s: {T} = R.exp(q)
                o: {T} = R.add(r, s)
                R.output(o)
            return o
    """)
    gelu = is_op("relax.nn.gelu")
    pat = is_op("relax.tanh")(gelu(is_op("relax.nn.relu")(wildcard()))) | is_op("relax.exp")(gelu(wildcard()))
    out = FuseOpsByPattern([("A.steal", pat)])(parse_module(src))
    got = print_module(out)
    assert sorted(out.names()) == ["fused_relax_nn_relu_relax_nn_gelu_relax_tanh", "main"]
    assert "R.output(gv, gv1)\n        return (gv, gv1)" in got
    assert "s: R.Tensor((4, 4), dtype=\"float32\") = R.exp(lv1)" in got
    assert well_formed(out)


def test_deduplicates_against_existing_function_smallest_name():
    existing = f"""
        @R.function(private=True)
        def b_relu(y: {T}) -> {T}:
            R.func_attr({{"Composite": "A.relu", "Primitive": True}})
            with R.dataflow():
                gv: {T} = R.nn.relu(y)
                R.output(gv)
            return gv

        @R.function(private=True)
        def a_relu(z: {T}) -> {T}:
            R.func_attr({{"Composite": "A.relu", "Primitive": True}})
            with R.dataflow():
                out: {T} = R.nn.relu(z)
                R.output(out)
            return out
    """
    out = FuseOpsByPattern(RELU)(parse_module(main_relu(existing)))
    assert sorted(out.names()) == ["a_relu", "b_relu", "main"]
    assert "gv: R.Tensor((4, 4), dtype=\"float32\") = cls.a_relu(x)" in print_module(out)


def test_fresh_name_skips_taken_globals():
    taken = f"""
        @R.function
        def fused_relax_nn_relu(y: {T}) -> {T}:
            return y
    """
    out = FuseOpsByPattern(RELU)(parse_module(main_relu(taken)))
    assert sorted(out.names()) == ["fused_relax_nn_relu", "fused_relax_nn_relu1", "main"]
    assert out["fused_relax_nn_relu1"].attrs["Composite"] == "A.relu"


def test_annotate_wrapper_names_and_removal():
    out = FuseOpsByPattern(RELU, annotate_codegen=True)(parse_module(main_relu()))
    assert sorted(out.names()) == ["fused_relax_nn_relu_A", "main"]
    wrapper = out["fused_relax_nn_relu_A"]
    assert wrapper.attrs == {"Codegen": "A", "global_symbol": "fused_relax_nn_relu_A"}
    local = wrapper.body.blocks[0].bindings[0]
    assert local.var.name_hint == "local_func"
    assert local.value.attrs == {"Composite": "A.relu"}
    assert wrapper.body.blocks[0].bindings[1].var.name_hint == "output"


def test_annotate_needs_a_backend_prefix():
    plain = [("relu", is_op("relax.nn.relu")(wildcard()))]
    fused = FuseOpsByPattern(plain)(parse_module(main_relu()))  # fine without annotation
    assert fused["fused_relax_nn_relu"].attrs["Composite"] == "relu"
    with pytest.raises(PatternError, match="no backend prefix"):
        FuseOpsByPattern(plain, annotate_codegen=True)(parse_module(main_relu()))


def test_check_that_raises_is_a_pattern_error():
    def bad(ctx):
        raise ValueError("boom")

    with pytest.raises(PatternError, match=r"check function of pattern 'A.relu' raised ValueError: boom"):
        FuseOpsByPattern([("A.relu", is_op("relax.nn.relu")(wildcard()), {}, bad)])(parse_module(main_relu()))


def test_bad_entries_and_entry_functions():
    with pytest.raises(PatternError):
        FuseOpsByPattern([("A.relu",)])(parse_module(main_relu()))
    with pytest.raises(PassError, match="'nope' is not in the module"):
        FuseOpsByPattern(RELU, entry_functions=["nope"])(parse_module(main_relu()))


def test_candidate_index_visits_only_possible_roots(monkeypatch):
    ops = ["R.nn.gelu(x)"] * 30 + ["R.nn.relu(x)"] * 3
    src = flat_main(f"x: {T}", T, [f"v{i}: {T} = {op}" for i, op in enumerate(ops)], "v32")
    calls = []
    real = pattern_partition.match_expr
    monkeypatch.setattr(pattern_partition, "match_expr", lambda p, e, v: calls.append(e) or real(p, e, v))
    FuseOpsByPattern(RELU)(parse_module(src))
    assert len(calls) == 3
    assert all(c.op.name == "relax.nn.relu" for c in calls)


def test_many_patterns_on_many_bindings_stay_linear():
    from byocc.backends import get_patterns_with_prefix

    t16 = 'R.Tensor((16, 16), dtype="float16")'

    def chain(n: int) -> str:
        lines, cur = [], "x"
        for i in range(n):
            op = ("R.matmul({}, w, out_dtype=None)", "R.add({}, b)", "R.nn.gelu({})", "R.nn.relu({})")[i % 4]
            lines.append(f"v{i}: {t16} = {op.format(cur)}")
            cur = f"v{i}"
        params = f'x: {t16}, w: {t16}, b: R.Tensor((16,), dtype="float16")'
        return flat_main(params, t16, lines, cur)

    pats = get_patterns_with_prefix("cutlass")
    cost = []
    for n in (1000, 4000):
        mod = parse_module(chain(n))
        t0 = time.process_time()
        out = FuseOpsByPattern(pats)(mod)
        cost.append(time.process_time() - t0)
    assert out["main"].body.blocks[0].bindings[0].value.op.name_hint == "fused_relax_matmul_relax_add_relax_nn_gelu"
    assert cost[1] < 8 * max(cost[0], 0.05)  # 4x the bindings: about 4x the time, never 16x
    assert cost[1] < 20


def test_many_cycles_are_backed_out_together(monkeypatch):
    """Each unit ``y = matmul; y1 = y; out = add(x, y1)`` would be a cyclic match (E22);
    all of them are backed out in one extra partition, not one partition per cycle."""
    lines, cur = [], "x"
    for i in range(6):
        lines += [f"y{i}: {T} = R.matmul({cur}, w, out_dtype=None)", f"z{i}: {T} = y{i}",
                  f"o{i}: {T} = R.add({cur}, z{i})"]
        cur = f"o{i}"
    src = flat_main(f"x: {T}, w: {T}", T, lines, cur)
    runs = []
    real = pattern_partition.partition
    import byocc.transform.fuse_ops_by_pattern as fobp

    monkeypatch.setattr(fobp, "partition", lambda *a: runs.append(1) or real(*a))
    pat = is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard())
    mod = parse_module(src)
    out = FuseOpsByPattern([("A.mm_add", pat)])(mod)
    assert print_module(out) == print_module(mod)
    assert len(runs) == 2


def test_tvm_defect_cycle_through_an_outside_binding_backs_out():
    """TVM's test_cyclic_dependency: ``add(relu(conv), wildcard)`` matches ``out = add(relu1,
    gelu1)`` where ``gelu1`` (outside the match) uses ``conv1`` (inside it). The group would
    both feed and consume ``gelu1``; TVM 0.27 raises "A cyclic dependency detected". byocc
    backs the match out and leaves the function as it was."""
    from byocc.dpl import make_fused_bias_activation_pattern

    t = 'R.Tensor((1, 8, 6, 6), dtype="float32")'
    src = module(f"""
        @R.function
        def main(data: R.Tensor((1, 8, 8, 8), dtype="float32"), weight: R.Tensor((8, 8, 3, 3), dtype="float32")) -> {t}:
            with R.dataflow():
                conv1: {t} = R.nn.conv2d(data, weight)
                relu1: {t} = R.nn.relu(conv1)
                gelu1: {t} = R.nn.gelu(conv1)
                out: {t} = R.add(relu1, gelu1)
                R.output(out)
            return out
    """)
    pat = is_op("relax.add")(is_op("relax.nn.relu")(make_fused_bias_activation_pattern("relax.nn.conv2d")),
                             wildcard())
    before = parse_module(src)
    out = FuseOpsByPattern([("compiler_A.conv2d_relu_add", pat)])(before)
    assert out.names() == ["main"]
    assert print_module(out) == print_module(before)
    assert well_formed(out)
