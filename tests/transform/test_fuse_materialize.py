"""materialize_groups, the group materialisation FuseOpsByPattern and MergeCompositeFunctions
share (spec/partitioning.md 5.3, 5.4, 6.2), driven directly with hand-made groups."""

from __future__ import annotations

import pytest

from byocc.ir import NameSupply
from byocc.ir import PassError
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform.function_table import FunctionTable
from byocc.transform.materialize import find_group_cycle
from byocc.transform.materialize import fused_name_hint
from byocc.transform.materialize import materialize_groups

T = 'R.Tensor((4, 4), dtype="float32")'
SRC = f"""# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: {T}) -> {T}:
        with R.dataflow():
            a: {T} = R.nn.relu(x)
            b: {T} = R.add(a, R.const(1.0, "float32"))
            c: {T} = R.nn.gelu(b)
            d: {T} = R.multiply(c, a)
            R.output(d)
        return d"""


def bindings(mod):
    return {b.var.name_hint: b for b in mod["main"].body.blocks[0].bindings}


def test_groups_by_integer_key_with_lifted_constants():
    mod = parse_module(SRC)
    bs = bindings(mod)
    group_of = {bs["b"].var: 7, bs["c"].var: 7}
    out = materialize_groups(mod, ["main"], group_of, {7: {"Codegen": "X"}}, lift_constants=True)
    got = print_module(out)
    assert sorted(out.names()) == ["fused_relax_add_relax_nn_gelu", "main"]
    f = out["fused_relax_add_relax_nn_gelu"]
    assert f.attrs == {"Codegen": "X", "Primitive": True}
    assert [p.name_hint for p in f.params] == ["a", "param_0"]
    assert 'lv: R.Tensor((4, 4), dtype="float32") = cls.fused_relax_add_relax_nn_gelu(a, R.const(1.0, "float32"))' in got
    assert "d: R.Tensor((4, 4), dtype=\"float32\") = R.multiply(lv, a)" in got


def test_constants_stay_inline_without_lifting_and_supply_is_shared():
    mod = parse_module(SRC)
    bs = bindings(mod)
    supply = NameSupply()
    supply.fresh("lv")  # a caller-provided supply continues where it stands
    out = materialize_groups(mod, ["main"], {bs["b"].var: 1, bs["c"].var: 1}, {1: {"Composite": "X.y"}},
                             lift_constants=False, supply=supply)
    f = out["fused_relax_add_relax_nn_gelu"]
    assert [p.name_hint for p in f.params] == ["a"]
    assert "lv1: R.Tensor" in print_module(out)


def test_cycle_is_refused_with_a_pass_error():
    mod = parse_module(SRC)
    bs = bindings(mod)
    group_of = {bs["a"].var: 1, bs["d"].var: 1}  # b, c sit between a and d
    assert find_group_cycle(mod["main"], group_of, {1: {"Codegen": "X"}}) is not None
    with pytest.raises(PassError, match="cyclic dependency"):
        materialize_groups(mod, ["main"], group_of, {1: {"Codegen": "X"}}, lift_constants=True)


def test_function_table_deduplicates_and_names_fresh():
    mod = parse_module(SRC)
    bs = bindings(mod)
    out = materialize_groups(mod, ["main"], {bs["a"].var: 1, bs["c"].var: 2},
                             {1: {"Composite": "X.u"}, 2: {"Composite": "X.u"}}, lift_constants=False)
    assert sorted(out.names()) == ["fused_relax_nn_gelu", "fused_relax_nn_relu", "main"]
    table = FunctionTable(out)
    supply = NameSupply()
    relu = out["fused_relax_nn_relu"]
    copy = parse_module(print_module(out))["fused_relax_nn_relu"]  # equal, other objects
    assert copy is not relu
    assert table.add(copy, "anything", supply) == "fused_relax_nn_relu"
    gelu = out["fused_relax_nn_gelu"].with_attrs(Composite="X.other")  # not equal: attributes
    assert table.add(gelu, "fused_relax_nn_gelu", supply) == "fused_relax_nn_gelu1"
    assert fused_name_hint([bs["a"], bs["b"], bs["c"]]) == "fused_relax.nn.relu_relax.add_relax.nn.gelu"
