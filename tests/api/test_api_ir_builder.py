"""``byocc.script.ir_builder``: TVM's IRBuilder (frames, statements, errors).

Expected texts are what TVM 0.27 prints for the same builder calls.
"""

from __future__ import annotations

import pytest

from byocc import relax
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import InputError
from byocc.ir import IRModule
from byocc.ir import TirVar
from byocc.ir import Var
from byocc.relax import op
from byocc.script import relax as R
from byocc.script.ir_builder import IRBuilder
from byocc.script.ir_builder import ir as ib
from byocc.script.ir_builder import relax as rb


def tensor(shape, dtype="float32"):
    return relax.TensorType(shape, dtype)


def body_of(func: Function, block: int = 0):
    return func.body.blocks[block].bindings


def test_function_with_a_dataflow_block_prints_as_tvm_builds_it():
    with IRBuilder() as builder:
        with rb.function():
            rb.func_name("main")
            x = rb.arg("x", tensor((2, 3)))
            y = rb.emit(op.add(x, x))
            with rb.dataflow() as frame:
                z = rb.emit(op.multiply(y, y))
                w = rb.emit(op.multiply(z, op.add(z, y)))  # the inner add is bound first
                rb.output(z, w)
            rb.func_ret_value(frame.output_vars[1])
    func = builder.get()
    assert isinstance(func, Function)
    assert func.attrs == {"global_symbol": "main"}
    assert str(func).splitlines()[2:] == [
        "@R.function",
        'def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):',
        '    gv: R.Tensor((2, 3), dtype="float32") = R.add(x, x)',
        "    with R.dataflow():",
        '        lv: R.Tensor((2, 3), dtype="float32") = R.multiply(gv, gv)',
        '        lv1: R.Tensor((2, 3), dtype="float32") = R.add(lv, gv)',
        '        lv2: R.Tensor((2, 3), dtype="float32") = R.multiply(lv, lv1)',
        "        R.output(lv, lv2)",
        "    return lv2",
    ]


def test_output_turns_dataflow_vars_into_vars_of_the_same_name_everywhere():
    with IRBuilder() as builder:
        with rb.function():
            rb.func_name("f")
            x = rb.arg("x", tensor((4,)))
            with rb.dataflow() as frame:
                a = rb.emit(op.exp(x))
                c = rb.emit(op.add(a, x))
                rb.output(a, c)
            assert isinstance(a, DataflowVar)
            out_a, out_c = frame.output_vars
            assert type(out_a) is Var and out_a.name_hint == "lv" and out_c.name_hint == "lv1"
            d = rb.emit(op.add(out_a, out_c))
            rb.func_ret_value(d)
    bindings = body_of(builder.get())
    assert bindings[0].var is out_a and bindings[1].var is out_c
    assert bindings[1].value.args[0] is out_a  # the use inside the block follows
    assert builder.get().body.blocks[1].bindings[0].value.args == (out_a, out_c)


def test_impure_function_with_match_cast_annotation_and_declared_return():
    n, m = TirVar("n"), TirVar("m")
    with IRBuilder() as builder:
        with rb.function(is_pure=False):
            rb.func_name("impure")
            rb.func_attr({"num_input": 1})
            x = rb.arg("x", relax.TensorType(None, "float32", ndim=2))
            y = rb.emit_match_cast(x, tensor((n, m)))
            z = rb.emit(op.add(y, y), relax.TensorType(None, "float32", ndim=2))
            rb.func_ret_ty(relax.ObjectType())  # the body's tuple type refines it
            rb.func_ret_value(relax.Tuple([z, y]))
    func = builder.get()
    assert not func.is_pure
    assert str(func).splitlines()[4:] == [
        "@R.function(pure=False)",
        'def impure(x: R.Tensor(dtype="float32", ndim=2)) -> '
        'R.Tuple(R.Tensor(dtype="float32", ndim=2), R.Tensor(dtype="float32", ndim=2)):',
        '    R.func_attr({"num_input": 1})',
        "    n = T.int64()",
        "    m = T.int64()",
        '    gv: R.Tensor((n, m), dtype="float32") = R.match_cast(x, R.Tensor((n, m), dtype="float32"))',
        '    gv1: R.Tensor(dtype="float32", ndim=2) = R.add(gv, gv)',
        "    return (gv1, gv)",
    ]


def test_private_or_unnamed_functions_get_no_global_symbol():
    for private, name in ((True, "main"), (False, None)):
        with IRBuilder() as builder:
            with rb.function(is_private=private):
                if name:
                    rb.func_name(name)
                rb.func_ret_value(rb.arg("x", tensor((2,))))
        assert "global_symbol" not in builder.get().attrs
        assert "@R.function(private=True)" in str(builder.get())


def test_ir_module_frame_collects_named_functions():
    with IRBuilder() as builder:
        with ib.ir_module():
            with rb.function():
                rb.func_name("main")
                x = rb.arg("x", tensor((4,)))
                with rb.dataflow() as frame:
                    a = rb.emit(op.exp(x))
                    rb.output(a)
                rb.func_ret_value(op.multiply(frame.output_vars[0], x))
            with rb.function(is_private=True):
                rb.func_name("helper")
                rb.func_ret_value(rb.arg("x", tensor((4,))))
    mod = builder.get()
    assert isinstance(mod, IRModule)
    assert [f.attrs.get("global_symbol") for f in mod.functions.values()] == ["main", None]
    text = str(mod)
    assert '    def main(x: R.Tensor((4,), dtype="float32"))' in text
    assert '        gv: R.Tensor((4,), dtype="float32") = R.multiply(lv, x)' in text
    assert "    @R.function(private=True)\n    def helper(" in text


def test_tvmscript_R_exports_the_builder_statements():
    assert R.emit is rb.emit and R.arg is rb.arg and R.output is rb.output
    assert R.dataflow is rb.dataflow and R.func_ret_value is rb.func_ret_value
    assert R.func_ret_ty is R.func_ret_struct_info


def test_struct_info_given_by_an_annotation_object_is_converted():
    class Annotation:  # what a TVMScript proxy such as R.Tensor(...) may return
        def as_struct_info(self):
            return tensor((3,))

    with IRBuilder() as builder:
        with rb.function():
            rb.func_ret_value(rb.arg("x", Annotation()))
    assert builder.get().params[0].struct_info == tensor((3,))


def _build(statements):
    with IRBuilder() as builder:
        with rb.function():
            rb.func_name("f")
            x = rb.arg("x", tensor((2,)))
            statements(x)
    return builder.get()


@pytest.mark.parametrize("statements, message", [
    (lambda x: None, r"needs a return value: call R.func_ret_value"),
    (lambda x: (rb.func_ret_value(x), rb.func_ret_value(x)), r"already called: a Relax function has one"),
    (lambda x: (rb.func_ret_value(x), rb.emit(op.exp(x))), r"R.emit after R.func_ret_value"),
    (lambda x: rb.output(x), r"R.output must be called inside a `with R.dataflow\(\)` block"),
    (lambda x: rb.func_name("g"), r"already named 'f'"),
    (lambda x: rb.arg("y", 3), r"R.arg\('y'\): expected struct info such as R.Tensor"),
    (lambda x: rb.emit(op.exp(x), tensor((3,))), r"the annotation .* does not describe the value's type"),
    (lambda x: rb.func_attr(["a"]), r"R.func_attr: expected a dict, got list"),
])
def test_misuse_is_a_clear_error(statements, message):
    with pytest.raises(InputError, match=message):
        _build(statements)


def _dataflow(statements):
    def run(x):
        with rb.dataflow() as frame:
            statements(x, frame)
        rb.func_ret_value(x)
    return run


@pytest.mark.parametrize("statements, message", [
    (lambda x, f: rb.output(x), r"R.output: 'x' was not emitted in this dataflow block"),
    (lambda x, f: (rb.output(rb.emit(op.exp(x))), rb.emit(op.exp(x))),
     r"no new binding is allowed after the dataflow block's R.output"),
    (lambda x, f: rb.dataflow().__enter__(), r"R.dataflow\(\) blocks cannot be nested"),
    (lambda x, f: rb.func_ret_value(x), r"must come after the `with R.dataflow\(\)` block is closed"),
])
def test_dataflow_misuse_is_a_clear_error(statements, message):
    with pytest.raises(InputError, match=message):
        _build(_dataflow(statements))


def test_returning_the_dataflow_var_instead_of_the_output_var_is_an_error():
    def statements(x):
        with rb.dataflow():
            y = rb.emit(op.exp(x))
            rb.output(y)
        rb.func_ret_value(y)
    with pytest.raises(InputError, match=r"'lv' is a dataflow variable used outside its dataflow "
                                         r"block; return the block's frame.output_vars\[i\]"):
        _build(statements)


def test_builder_scope_errors():
    with pytest.raises(InputError, match=r"no IRBuilder in scope"):
        rb.emit(relax.const(1.0))
    with IRBuilder() as builder:
        assert IRBuilder.current() is builder and IRBuilder.is_in_scope()
        with pytest.raises(InputError, match=r"R.emit must be called inside a relax_builder.function"):
            rb.emit(relax.const(1.0))
        with pytest.raises(InputError, match=r"has no result yet"):
            builder.get()
        with rb.function():
            with pytest.raises(InputError, match=r"frames cannot be nested"):
                rb.function().__enter__()
            rb.func_ret_value(rb.arg("x", tensor((2,))))
        assert builder.get().params[0].name_hint == "x"
    assert not IRBuilder.is_in_scope()


def test_a_failed_frame_leaves_the_builder_usable():
    with IRBuilder() as builder:
        with pytest.raises(ZeroDivisionError), rb.function():
            rb.arg("x", tensor((2,)))
            1 / 0  # noqa: B018
        with rb.function():
            rb.func_name("g")
            rb.func_ret_value(rb.arg("y", tensor((2,))))
    assert [p.name_hint for p in builder.get().params] == ["y"]
    assert relax.BlockBuilder.current() is None


def test_ir_module_frame_needs_function_names():
    with pytest.raises(InputError, match=r"needs a name: call R.func_name"), IRBuilder():
        with ib.ir_module(), rb.function():
            rb.func_ret_value(rb.arg("x", tensor((2,))))


def test_irbuilder_name_renames_params_emitted_and_output_variables():
    with IRBuilder() as builder:
        with rb.function():
            rb.func_name("foo")
            x = rb.arg("x", tensor((4,)))
            IRBuilder.name("data", x)
            with rb.dataflow() as frame:
                lv = rb.emit(rb.call_dps_packed("extern_func", x, tensor((4,))))
                IRBuilder.name("lv0", lv)
                gv = rb.emit(lv)
                IRBuilder.name("gv", gv)
                rb.output(gv)
            (out,) = frame.output_vars
            assert out.name_hint == "gv"
            assert IRBuilder.name("result", out) is out
            rb.func_ret_value(out)
    func = builder.get()
    [binding0, binding1] = body_of(func)
    assert [p.name_hint for p in func.params] == ["data"]
    assert binding0.var.name_hint == "lv0" and binding0.value.args[1].fields[0] is func.params[0]
    assert binding1.var.name_hint == "result" and binding1.value is binding0.var
    assert func.body.body is binding1.var
    with pytest.raises(InputError, match=r"IRBuilder.name: expected a relax variable, got int"):
        _build(lambda x: IRBuilder.name("y", 3))
    with pytest.raises(InputError, match=r"IRBuilder.name_many: 2 names for 1 values"):
        _build(lambda x: IRBuilder.name_many(["a", "b"], [x]))


def test_the_builder_module_holds_the_op_constructors():
    assert rb.add is op.add and rb.nn is op.nn and rb.call_dps_packed is op.call_dps_packed
    with pytest.raises(AttributeError, match=r"has no attribute 'not_an_op'"):
        rb.not_an_op  # noqa: B018


def test_a_function_built_with_tvmscript_R_spellings():
    with IRBuilder() as builder:
        with rb.function():
            R.func_name("main")
            x = R.arg("x", R.Tensor((2, 4), "float32"))
            with R.dataflow() as frame:
                y = R.emit(x + x)
                z = R.emit(R.nn.relu(y))
                R.output(z)
            R.func_ret_value(frame.output_vars[0])
    assert str(builder.get()).splitlines()[-5:] == [
        "    with R.dataflow():",
        '        lv: R.Tensor((2, 4), dtype="float32") = R.add(x, x)',
        '        lv1: R.Tensor((2, 4), dtype="float32") = R.nn.relu(lv)',
        "        R.output(lv1)",
        "    return lv1",
    ]
