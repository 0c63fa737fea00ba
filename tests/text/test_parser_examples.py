"""The parser on spec/textual-ir.md's worked examples (E1-E18): the IR facts each one pins
down (names, types, Var versus DataflowVar, blocks, symbolic variables, constants), and
parse -> print giving the text back."""

from __future__ import annotations

import re

import pytest
from conftest import shared_path

from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import ExternFunc
from byocc.ir import FuncStructInfo
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import MatchCast
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimStructInfo
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir.prim import PrimBinary
from byocc.text import parse_module
from byocc.text import print_module

SPEC = shared_path("spec", "textual-ir.md")


def _examples() -> dict[int, str]:
    try:  # the printer's tests keep the texts verbatim
        from test_printer_spec_texts import EXAMPLES

        return dict(EXAMPLES)
    except ImportError:
        pass
    if SPEC is None:
        return {}
    found = re.findall(r"\*\*E(\d+)\..*?```python\n(.*?)```", SPEC.read_text(), re.S)
    return {int(n): text.rstrip("\n") for n, text in found}


EXAMPLES = _examples()
needs_examples = pytest.mark.skipif(not EXAMPLES, reason="spec examples not available")


def parse(n: int):
    return parse_module(EXAMPLES[n], f"E{n}")


def bindings(func: Function) -> list:
    return [b for block in func.body.blocks for b in block.bindings]


def binding(func: Function, name: str):
    found = [b for b in bindings(func) if b.var.name_hint == name]
    assert len(found) == 1, name
    return found[0]


@needs_examples
@pytest.mark.parametrize("n", range(1, 19), ids=[f"E{n}" for n in range(1, 19)])
def test_example_prints_back(n: int):
    mod = parse(n)
    assert print_module(mod, pep695=(n == 9)) == EXAMPLES[n].rstrip("\n")


@needs_examples
def test_e1_dataflow_output_is_var_and_global_symbol_is_added():
    mod = parse(1)
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["x", "y"]
    assert main.attrs == {"global_symbol": "main"}
    (block,) = main.body.blocks
    assert isinstance(block, DataflowBlock)
    (b,) = block.bindings
    assert type(b.var) is Var and b.var.name_hint == "gv"
    assert b.value.op.name == "relax.multiply" and b.value.args == tuple(main.params)
    assert b.var.struct_info == TensorStructInfo((10, 10), "float32")
    assert main.body.body is b.var


@needs_examples
def test_e2_local_function_and_member_calls():
    mod = parse(2)
    outer = mod["fused_relax_multiply_cutlass"]
    assert outer.attrs == {"Codegen": "cutlass", "global_symbol": "fused_relax_multiply_cutlass"}
    local = binding(outer, "local_func")
    assert isinstance(local.value, Function)
    assert local.value.attrs == {"Composite": "cutlass.multiply"}  # no global_symbol
    assert [p.name_hint for p in local.value.params] == ["x_1", "y_1"]
    out = binding(outer, "output").value
    assert out.op is local.var and out.args == tuple(outer.params)
    assert isinstance(local.var.struct_info, FuncStructInfo)
    call = binding(mod["main"], "gv").value
    assert isinstance(call.op, GlobalVar)
    assert call.op is mod.get_global_var("fused_relax_multiply_cutlass")
    assert call.struct_info == TensorStructInfo((10, 10), "float32")


@needs_examples
def test_e3_private_member_has_no_global_symbol():
    mod = parse(3)
    fused = mod["fused_relax_multiply"]
    assert fused.attrs == {"Composite": "cutlass.multiply", "Primitive": True}
    assert mod["main"].attrs["global_symbol"] == "main"


@needs_examples
def test_e8_symbolic_dims_are_one_variable_per_function():
    mod = parse(8)
    main = mod["main"]
    batch = main.params[0].struct_info.shape[0]
    assert isinstance(batch, TirVar) and batch.name == "batch"
    assert main.ret_struct_info.shape[0] == PrimBinary("*", batch, 2)
    assert main.ret_struct_info.shape[0].a is batch
    gv = binding(main, "gv")
    assert gv.value.args[1].values[0].a is batch  # R.shape([batch * 2, 64])
    assert binding(main, "lv").var.struct_info.shape[0] is batch


@needs_examples
def test_e9_pep695_type_parameters():
    mod = parse(9)
    batch = mod["main"].params[0].struct_info.shape[0]
    assert isinstance(batch, TirVar) and batch.name == "batch"


@needs_examples
def test_e10_members_and_local_functions_have_their_own_variables():
    mod = parse(10)
    fused = mod["fused_relax_matmul_relax_nn_relu1_cutlass"]
    main = mod["main"]
    b_fused = fused.params[0].struct_info.shape[0]
    b_main = main.params[0].struct_info.shape[0]
    assert b_fused.name == b_main.name == "batch" and b_fused is not b_main
    local = binding(fused, "gv").value
    b_local = local.params[0].struct_info.shape[0]
    assert b_local.name == "batch_1" and b_local is not b_fused
    # the call's type is the callee's return type with batch_1 replaced by the caller's batch
    assert binding(fused, "gv_1").value.struct_info == TensorStructInfo((b_fused, 128), "float16")


@needs_examples
def test_e11_blocks_outputs_tuples():
    mod = parse(11)
    main = mod["main"]
    kinds = [type(b) for b in main.body.blocks]
    assert kinds == [BindingBlock, DataflowBlock, BindingBlock]
    var_types = {b.var.name_hint: type(b.var) for b in bindings(main)}
    assert var_types == {"a": Var, "b": Var, "c": DataflowVar, "d": DataflowVar, "e": Var, "g": Var, "h": Var}
    d = binding(main, "d").value
    assert isinstance(d, Tuple) and [f.name_hint for f in d.fields] == ["b", "c"]
    e = binding(main, "e").value
    assert isinstance(e, TupleGetItem) and e.index == 1
    g = binding(main, "g")
    assert g.value.op.name == "relax.call_dps_packed"
    assert g.var.struct_info == TupleStructInfo((TensorStructInfo((2, 2), "float32"),) * 2)
    ret = main.body.body
    assert isinstance(ret, Tuple) and [f.name_hint for f in ret.fields] == ["h", "e"]


@needs_examples
def test_e12_metadata_constants_are_shared_by_index():
    mod = parse(12)
    main = mod["main"]
    c0 = binding(main, "lv").value.args[1]
    assert isinstance(c0, Constant) and c0.data is None and c0.source_index == 0
    assert binding(main, "lv1").value.args[1] is c0
    c1 = binding(main, "lv2").value.args[0]
    assert c1.source_index == 1 and c1 is not c0
    scalar = binding(main, "lv3").value.args[1]
    assert scalar.struct_info == TensorStructInfo((), "float32")
    assert float(scalar.data) == pytest.approx(0.1) and str(scalar.data.dtype) == "float32"


@needs_examples
def test_e13_module_attributes_with_metadata():
    mod = parse(13)
    consts = mod.attrs["const_name_to_constant"]
    (c,) = consts.values()
    assert isinstance(c, Constant) and c.source_index == 0
    (ext,) = mod.attrs["external_mods"]
    assert ext.is_runtime_module


@needs_examples
def test_e14_type_annotations():
    mod = parse(14)
    p = {v.name_hint: v.struct_info for v in mod["main"].params}
    assert p["b"] == TensorStructInfo(None, "float16", 2)
    assert p["c"] == TensorStructInfo(None, "bool", -1)
    assert p["d"] == TensorStructInfo((4,), None)
    assert p["e"] == TensorStructInfo(None, None, 3)
    assert p["f"] == TensorStructInfo()
    assert p["h"] == TupleStructInfo(())
    assert p["i"] == ShapeStructInfo((2, 3)) and p["j"] == ShapeStructInfo(None, 2)
    assert p["k"] == ShapeStructInfo(None, -1)
    assert p["l"] == ObjectStructInfo()
    assert p["o"] == FuncStructInfo((TensorStructInfo((2,), "float32"),), TensorStructInfo((2,), "float32"), True)
    n, m2 = p["p"].shape
    assert n.name == "n" and isinstance(m2, PrimBinary) and m2.a.name == "m" and m2.b == 2
    assert p["s"] == PrimStructInfo("int64")


@needs_examples
def test_e15_decorators_and_attributes():
    mod = parse(15)
    assert mod["A_func"].attrs == {} and mod["A_func"].is_pure
    assert not mod["_x"].is_pure and mod["_x"].attrs == {"global_symbol": "_x"}
    assert mod["a_func"].attrs == {"Alpha": "s", "beta": True, "gamma": 1.5, "list": (1, 2),
                                   "nested": {"a": "x", "b": 1}, "zeta": 1}
    assert mod["b_func"].attrs == {"global_symbol": "ext_sym"}


@needs_examples
def test_e16_names_are_kept_as_written():
    main = parse(16)["main"]
    assert [p.name_hint for p in main.params][7:9] == ["if", "a_b"]


@needs_examples
def test_e17_extern_functions_and_void_call():
    mod = parse(17)
    assert isinstance(mod["ext_global"], ExternFunc) and mod["ext_global"].global_symbol == "ext_sym"
    main = mod["main"]
    assert not main.is_pure
    void = [b for b in bindings(main) if b.var.struct_info == TupleStructInfo(())]
    assert len(void) == 1 and isinstance(void[0].value.op, ExternFunc)
    assert void[0].value.op.global_symbol == "log_it"
    assert isinstance(binding(main, "gv").value, ExternFunc)


@needs_examples
def test_e18_body_variables_and_match_cast():
    main = parse(18)["main"]
    y = binding(main, "y")
    assert isinstance(y, MatchCast)
    m, k = y.struct_info.shape
    assert (m.name, k.name) == ("m", "k")
    assert binding(main, "z").var.struct_info.shape[0] is m


MERGED = """\
@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    with R.dataflow():
        a: R.Tensor((4,), dtype="float32") = R.add(x, x)
        b: R.Tensor((4,), dtype="float32") = R.add(a, x)
        R.output(b)
    with R.dataflow():
        c: R.Tensor((4,), dtype="float32") = R.add(b, x)
        d: R.Tensor((4,), dtype="float32") = R.add(c, b)
        R.output(d)
    return d
"""


def test_adjacent_dataflow_blocks_merge():
    main = parse_module(MERGED)["main"]
    (block,) = main.body.blocks
    assert isinstance(block, DataflowBlock)
    assert [(b.var.name_hint, type(b.var)) for b in block.bindings] == [
        ("a", DataflowVar), ("b", Var), ("c", DataflowVar), ("d", Var)]


def test_non_output_names_leave_scope_after_the_block():
    text = MERGED.replace("d: R.Tensor((4,), dtype=\"float32\") = R.add(c, b)",
                          "d: R.Tensor((4,), dtype=\"float32\") = R.add(c, a)")
    with pytest.raises(Exception, match=r"<string>:9:55: undefined variable 'a'"):
        parse_module(text)


def test_standalone_function_becomes_module_member():
    mod = parse_module(MERGED)
    assert mod.names() == ["main"] and mod["main"].attrs == {"global_symbol": "main"}


def test_sidecar_constants_give_values_and_types(tmp_path):
    np = pytest.importorskip("numpy")
    text = EXAMPLES.get(12) if EXAMPLES else None
    if text is None:
        pytest.skip("spec examples not available")
    arrays = {"ir.GenericConst/0": np.arange(6, dtype="float32").reshape(2, 3),
              "ir.GenericConst/1": np.ones(3, "float16")}
    mod = parse_module(text, constants=arrays)
    c0 = binding(mod["main"], "lv").value.args[1]
    assert c0.struct_info == TensorStructInfo((2, 3), "float32")
    assert c0.data.tolist() == [[0, 1, 2], [3, 4, 5]]
    # read_file finds <stem>.npz beside the file
    (tmp_path / "model.relax").write_text(text)
    np.savez(tmp_path / "model.npz", **arrays)
    from byocc.text import read_file

    mod2 = read_file(str(tmp_path / "model.relax"))
    c1 = binding(mod2["main"], "lv2").value.args[0]
    assert c1.struct_info == TensorStructInfo((3,), "float16")
    assert print_module(mod2) == text.rstrip("\n")


def test_call_of_later_member_is_typed_and_shares_the_module_global_var():
    text = """\
@I.ir_module
class Anything:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        y = Anything.helper(x)
        return y

    @R.function(private=True)
    def helper(x: R.Tensor((4,), dtype="float32")):
        return x
"""
    mod = parse_module(text)
    call = mod["main"].body.blocks[0].bindings[0].value
    assert isinstance(call, Call) and call.op is mod.get_global_var("helper")
    assert call.struct_info == TensorStructInfo((4,), "float32")
    assert mod["main"].ret_struct_info == TensorStructInfo((4,), "float32")
    assert mod["helper"].attrs == {}
