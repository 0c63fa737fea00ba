"""RunCodegen's codegen lookup (the backend records) and module attributes, on hand-built IR (spec section 7)."""

from __future__ import annotations

import numpy as np
import pytest

from byocc.backends import get_codegen
from byocc.backends import register_codegen
from byocc.backends import registered_codegens
from byocc.backends import unregister_codegen
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import PassError
from byocc.ir import SeqExpr
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.ir.well_formed import well_formed
from byocc.transform import CodegenModule
from byocc.transform import RunCodegen
from byocc.transform import codegen_module
from byocc.transform import run_codegen
from byocc.transform import stub_codegen

T4 = tensor((4, 4), "float32")


def external(name: str, backend: str, const=None, ret=T4) -> Function:
    """A ``Codegen`` function computing ``multiply(x, y)`` (plus a constant when given)."""
    x, y = Var("x", T4), Var("y", T4)
    m = Var("m", T4)
    mul = Call(Op.get("relax.multiply", create=True), (x, y), None, (), T4)
    bindings = [VarBinding(m, mul)]
    out = m
    if const is not None:
        out = Var("o", T4)
        bindings.append(VarBinding(out, Call(Op.get("relax.add", create=True), (m, const), None, (), T4)))
    return Function((x, y), SeqExpr((BindingBlock(tuple(bindings)),), out), ret, True,
                    {"Codegen": backend, "global_symbol": name})


def caller(*callees: str) -> Function:
    x, y = Var("x", T4), Var("y", T4)
    bindings = []
    prev = x
    for i, name in enumerate(callees):
        v = Var(f"gv{i}", T4)
        bindings.append(VarBinding(v, Call(GlobalVar(name), (prev, y), None, (), T4)))
        prev = v
    return Function((x, y), SeqExpr((DataflowBlock(tuple(bindings)),), prev), T4, True,
                    {"global_symbol": "main"})


def test_missing_codegen_is_a_pass_error():
    mod = IRModule({"main": caller("f_nobackend"), "f_nobackend": external("f_nobackend", "nobackend")})
    with pytest.raises(PassError, match="no codegen registered for backend 'nobackend'"):
        run_codegen(mod)


def test_registry_decorator_lazy_string_and_override():
    calls = []

    @register_codegen("testbe")
    def codegen(functions, options, constant_names):
        calls.append(([s for s, _ in functions], options))
        return [CodegenModule("testbe", tuple(s for s, _ in functions))]

    try:
        with pytest.raises(ValueError, match="already registered"):
            register_codegen("testbe", codegen)
        mod = IRModule({"main": caller("a", "b"), "a": external("a", "testbe"), "b": external("b", "testbe")})
        out = RunCodegen(target_options={"testbe": {"arch": 90}})(mod)
        assert calls == [(["a", "b"], {"arch": 90})]
        assert out.names() == ["main"]
        assert len(out.attrs["external_mods"]) == 1
        assert set(out.extras["offloaded"]) == {"a", "b"}
        register_codegen("testbe", "byocc.backends.record:registered_codegens", override=True)
        assert get_codegen("testbe")() == registered_codegens()
    finally:
        unregister_codegen("testbe")


def test_call_rewritten_to_call_dps_packed_and_function_dropped():
    mod = IRModule({"main": caller("f"), "f": external("f", "cutlass")})
    out = run_codegen(mod, codegens={"cutlass": stub_codegen("cutlass")})
    call = out["main"].body.blocks[0].bindings[0].value
    assert call.op is Op.get("relax.call_dps_packed")
    assert call.args[0].global_symbol == "f"
    assert list(call.args[1].fields) == list(mod["main"].params)
    assert call.sinfo_args == (T4,) and call.struct_info == T4
    assert out.names() == ["main"]
    assert out.extras["offloaded"]["f"] is mod["f"]
    assert well_formed(out) == []


def test_a_codegen_sees_the_module_it_was_called_for():
    mod = IRModule({"main": caller("f"), "f": external("f", "cutlass")})
    seen = []

    def spy(functions, options, constant_names):
        seen.append(codegen_module())
        return stub_codegen("cutlass")(functions, options, constant_names)

    assert codegen_module() is None
    run_codegen(mod, codegens={"cutlass": spy})
    assert len(seen) == 1 and seen[0] is mod and codegen_module() is None

    def failing(functions, options, constant_names):
        raise PassError("no")

    with pytest.raises(PassError):
        run_codegen(mod, codegens={"cutlass": failing})
    assert codegen_module() is None  # reset after a failing codegen too


def test_module_count_per_call_or_per_function_and_existing_mods_kept():
    old = CodegenModule("old", ("x",))
    mod = IRModule({"main": caller("a", "b", "c"), "a": external("a", "cutlass"),
                    "b": external("b", "cublas"), "c": external("c", "cublas")},
                   attrs={"external_mods": [old]})
    out = run_codegen(mod, codegens={"cutlass": stub_codegen("cutlass"),
                                     "cublas": stub_codegen("cublas", per_function=True)})
    mods = out.attrs["external_mods"]
    assert mods[0] is old
    assert sorted((m.backend, m.symbols) for m in mods[1:]) == [
        ("cublas", ("b",)), ("cublas", ("c",)), ("cutlass", ("a",))]


def test_constants_named_per_function():
    c0 = Constant(np.ones((4, 4), "float32"), T4)
    c1 = Constant(np.zeros((4, 4), "float32"), T4)
    seen = {}

    def codegen(functions, options, constant_names):
        seen.update(constant_names)
        return [CodegenModule("cutlass", tuple(s for s, _ in functions))]

    mod = IRModule({"main": caller("f", "g"), "f": external("f", "cutlass", c0),
                    "g": external("g", "cutlass", c1)})
    out = run_codegen(mod, codegens={"cutlass": codegen})
    assert out.attrs["const_name_to_constant"] == {"f_cutlass_const_0": c0, "g_cutlass_const_0": c1}
    assert seen == {c0: "f_cutlass_const_0", c1: "g_cutlass_const_0"}


def test_tuple_result_and_codegen_function_without_symbol():
    pair = TupleStructInfo((T4, T4))
    f = external("f", "cutlass")
    x, y = Var("x", T4), Var("y", T4)
    lv = Var("lv", pair)
    main = Function((x, y), SeqExpr((DataflowBlock((VarBinding(lv, Call(GlobalVar("f"), (x, y), None, (), pair)),)),), lv),
                    pair, True, {"global_symbol": "main"})
    out = run_codegen(IRModule({"main": main, "f": f}), codegens={"cutlass": stub_codegen("cutlass")})
    call = out["main"].body.blocks[0].bindings[0].value
    assert call.sinfo_args == (pair,) and call.struct_info == pair
    nosym = f.with_attrs(global_symbol=None)
    with pytest.raises(PassError, match="no global_symbol"):
        run_codegen(IRModule({"main": caller("f"), "f": nosym}), codegens={"cutlass": stub_codegen("cutlass")})


def test_runtime_module_check():
    mod = IRModule({"main": caller("f"), "f": external("f", "cutlass")})
    with pytest.raises(PassError, match="not a runtime module"):
        run_codegen(mod, codegens={"cutlass": lambda fs, o, c: ["source text"]})
