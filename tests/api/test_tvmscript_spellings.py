"""TVMScript spellings TVM accepts in decorated scripts and byocc reads the same way (issue 11):
dotted decorators resolved through the caller's names, ``I.ir_module(s_tir=True)``, infix
arithmetic on tensors, ``relax.op.X`` calls, Python values of the enclosing code.

Each script is a small module a user would write; the assertion is the text byocc prints
(what TVM 0.27 prints for the same script)."""

from __future__ import annotations

import numpy as np
import pytest

import byocc
import byocc.script
from byocc import relax
from byocc import relax as rx
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import ParseError
from byocc.ir import TypeInferenceError
from byocc.script import ir as I
from byocc.script import relax as R
from byocc.script import tirx as T


def body(mod: IRModule, name: str = "main") -> str:
    """The lines of function ``name`` after its signature, as printed."""
    text = str(mod[name])
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    return "\n".join(line.strip() for line in lines[start + 1:] if line.strip())


# --------------------------------------------------------------------------- decorators
def test_dotted_ir_module_decorator_resolves_through_the_callers_names() -> None:
    @byocc.script.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.nn.relu(x)
            return y

    assert isinstance(Mod, IRModule)
    assert body(Mod) == 'y: R.Tensor((4,), dtype="float32") = R.nn.relu(x)\nreturn y'


def test_ir_module_decorator_through_an_alias_and_a_submodule() -> None:
    script = byocc.script  # any name bound to the same module

    @script.ir.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            return x

    assert body(Mod) == "return x"


def test_ir_module_with_options() -> None:
    @I.ir_module(s_tir=True, check_well_formed=False)
    class Mod:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            return x

    assert body(Mod) == "return x"


def test_a_decorator_that_resolves_elsewhere_is_an_error() -> None:
    text = "@np.asarray\nclass Mod:\n    pass\n"
    with pytest.raises(ParseError, match="needs the @I.ir_module decorator") as info:
        byocc.script.from_source(text, {"np": np})
    assert (info.value.span.line, info.value.span.column) == (2, 7)


def test_from_source_with_extra_vars_resolves_dotted_decorators() -> None:
    text = ("@tvm.script.ir_module\nclass Mod:\n    @R.function\n"
            "    def main(x: R.Tensor((2,), \"float32\")):\n        return x\n")
    mod = byocc.script.from_source(text, {"tvm": byocc})
    assert isinstance(mod, IRModule) and body(mod) == "return x"


# --------------------------------------------------------------------------- infix arithmetic
def test_infix_operators_on_tensors_are_the_operators_tvm_maps_them_to() -> None:
    @I.ir_module
    class Mod:
        @R.function
        def main(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32")):
            c = a + b
            d = a - b
            e = a * b
            f = a / b
            g = a // b
            h = a % b
            i = -a
            return (c, d, e, f, g, h, i)

    t = 'R.Tensor((2, 3), dtype="float32")'
    assert body(Mod) == "\n".join([
        f"c: {t} = R.add(a, b)", f"d: {t} = R.subtract(a, b)", f"e: {t} = R.multiply(a, b)",
        f"f: {t} = R.divide(a, b)", f"g: {t} = R.floor_divide(a, b)", f"h: {t} = R.mod(a, b)",
        f"i: {t} = R.negative(a)", "return (c, d, e, f, g, h, i)"])


def test_nested_infix_binds_the_inner_value_first() -> None:
    @I.ir_module
    class Mod:
        @R.function
        def main(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32")):
            k = (a + b) * -a
            return k

    t = 'R.Tensor((2, 3), dtype="float32")'
    assert body(Mod) == f"gv: {t} = R.add(a, b)\ngv1: {t} = R.negative(a)\nk: {t} = R.multiply(gv, gv1)\nreturn k"


def test_infix_with_a_python_number_asks_for_a_constant() -> None:
    with pytest.raises(TypeInferenceError, match=r"1 is not a Relax value: convert it with R.const"):
        @I.ir_module
        class Mod:
            @R.function
            def main(a: R.Tensor((2, 3), "float32")):
                k = a + 1
                return k


def test_dimension_arithmetic_is_unchanged() -> None:
    @I.ir_module
    class Mod:
        @R.function
        def main(a: R.Tensor(("n", 3), "float32")):
            n = T.int64()
            k = R.reshape(a, (n * 3,))
            return k

    assert body(Mod).split("\n")[-2] == 'k: R.Tensor((n * 3,), dtype="float32") = R.reshape(a, R.shape([n * 3]))'


# --------------------------------------------------------------------------- relax.op calls
def test_relax_op_calls_through_any_bound_name() -> None:
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((1, 8, 8, 4), "float32"), w: R.Tensor((4, 3, 3, 4), "float32")):
            with R.dataflow():
                c = relax.op.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="OHWI")
                d = rx.op.add(c, c)
                R.output(d)
            return d

    lines = body(Mod).split("\n")
    assert lines[1].startswith('c: R.Tensor((1, 8, 8, 4), dtype="float32") = R.nn.conv2d(x, w, strides=[1, 1], '
                               "padding=[1, 1, 1, 1],")
    assert lines[2] == 'd: R.Tensor((1, 8, 8, 4), dtype="float32") = R.add(c, c)'


def test_functions_type_the_same_either_way() -> None:
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y = relax.op.multiply(x, x)
        return y

    assert isinstance(f, Function)
    assert body(_wrap(f), "f").startswith(
        'y: R.Tensor((2,), dtype="float32") = R.multiply(x, x)')


def _wrap(f: Function) -> IRModule:
    from byocc.ir import GlobalVar

    return IRModule({GlobalVar("f", f.struct_info): f})


# --------------------------------------------------------------------------- from_source
def test_from_source_of_one_function_returns_the_function() -> None:
    f = byocc.script.from_source('@R.function\ndef f(x: R.Tensor((2,), "float32")):\n    return x\n')
    assert isinstance(f, Function)
    assert [p.name_hint for p in f.params] == ["x"]
    assert "global_symbol" in f.attrs


# --------------------------------------------------------------------------- Python values
WEIGHT = np.arange(6, dtype="float16").reshape(2, 3)


def test_const_of_a_global_numpy_array_keeps_its_values_and_dtype() -> None:
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3), "float16")):
            y = R.add(x, R.const(WEIGHT))
            return y

    const = Mod["main"].body.blocks[0].bindings[0].value.args[1]
    assert const.data.dtype == np.float16 and const.data.tolist() == WEIGHT.tolist()
    assert body(Mod).startswith('y: R.Tensor((2, 3), dtype="float16") = R.add(x, metadata["')


def test_closure_values_as_shapes_and_attributes() -> None:
    def build(shape: tuple[int, int], axis: int) -> IRModule:
        @I.ir_module
        class Mod:
            @R.function
            def main(x: R.Tensor((2, 3), "float32")):
                y = R.reshape(x, shape)
                z = R.sum(y, axis=[axis])
                return z

        return Mod

    lines = body(build((3, 2), 1)).split("\n")
    assert lines[0] == 'y: R.Tensor((3, 2), dtype="float32") = R.reshape(x, R.shape([3, 2]))'
    assert lines[1] == 'z: R.Tensor((3,), dtype="float32") = R.sum(y, axis=[1], keepdims=False)'


def test_a_python_value_a_script_cannot_use_is_a_located_error() -> None:
    handle = object()
    with pytest.raises(ParseError, match=r"the Python value of 'handle' \(object\) cannot be used in a script"):
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            y = R.add(x, handle)
            return y


def test_script_names_shadow_python_names() -> None:
    x = 5  # noqa: F841  (the parameter of the script is meant)

    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y = R.add(x, x)
        return y

    assert body(_wrap(f), "f").startswith('y: R.Tensor((2,), dtype="float32") = R.add(x, x)')


# --------------------------------------------------------------------------- tuple assignment
def test_tuple_assignment_declares_dimensions() -> None:
    @R.function
    def f(x: R.Tensor):
        m, n = T.int64(), T.int64()
        z = R.match_cast(x, R.Tensor((m, n)))
        return z

    assert body(_wrap(f), "f") == "m = T.int64()\nn = T.int64()\nz: R.Tensor((m, n)) = R.match_cast(x, R.Tensor((m, n)))\nreturn z"


def test_tuple_assignment_binds_each_value() -> None:
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y, z, = x, R.add(x, x)
        return (y, z)

    t = 'R.Tensor((2,), dtype="float32")'
    assert body(_wrap(f), "f") == f"y: {t} = x\nz: {t} = R.add(x, x)\nreturn (y, z)"


def test_unpacking_a_relax_value_is_an_error() -> None:
    with pytest.raises(ParseError, match=r"cannot unpack this value into 2 names") as info:
        byocc.script.from_source('@R.function\ndef f(x: R.Tensor((4,), "float32")):\n'
                                 "    a, b = R.split(x, 2)\n    return a\n")
    assert (info.value.span.line, info.value.span.column) == (3, 12)
    with pytest.raises(ParseError, match="2 names but 3 values"):
        byocc.script.from_source('@R.function\ndef f(x: R.Tensor((4,), "float32")):\n'
                                 "    a, b = x, x, x\n    return a\n")


# --------------------------------------------------------------------------- R.TupleGetItem
def test_tuple_get_item_constructor_is_an_index() -> None:
    @R.function
    def f(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            t = R.split(x, 2)
            a = R.TupleGetItem(t, 1)
            R.output(a)
        return a

    assert body(_wrap(f), "f").split("\n")[2] == 'a: R.Tensor((2,), dtype="float32") = t[1]'


# --------------------------------------------------------------------------- TIR kept as text
def _tir_module() -> IRModule:
    @I.ir_module
    class Mod:
        @T.prim_func(private=True)
        def relu(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.sblock("compute"):
                    b[i] = T.max(a[i], T.float32(0))  # a TIR body byocc keeps as written

        @R.function
        def main(x: R.Tensor((4,), "float32")):
            cls = Mod
            with R.dataflow():
                y = R.call_tir(cls.relu, (x,), out_ty=R.Tensor((4,), "float32"))
                R.output(y)
            return y

    return Mod


def test_prim_func_members_of_a_script_are_kept_as_text() -> None:
    from byocc.ir.tir import PrimFunc

    mod = _tir_module()
    assert isinstance(mod["relu"], PrimFunc)
    assert "global_symbol" not in mod["relu"].attrs  # private
    text = str(mod)
    assert '            y = R.call_tir(cls.relu, (x,), out_ty=R.Tensor((4,), dtype="float32"))\n' in text
    assert "    @T.prim_func(private=True)\n    def relu(a: T.Buffer((4,), \"float32\"), b: T.Buffer((4,), \"float32\")):\n" \
        "        for i in range(4):\n" in text
    assert "# from tvm.script import tirx as T" in text


def test_prim_funcs_written_alike_are_structurally_equal() -> None:
    from byocc.ir import structural_equal

    assert structural_equal(_tir_module(), _tir_module())


def test_prim_funcs_in_text_files_are_still_refused() -> None:
    from byocc.ir import UnsupportedError
    from byocc.text import parse_module

    text = ("@I.ir_module\nclass M:\n    @T.prim_func\n    def f(a: T.Buffer((4,), \"float32\")):\n"
            "        for i in range(4):\n            a[i] = 0.0\n")
    with pytest.raises(UnsupportedError, match="TIR functions"):
        parse_module(text)


# --------------------------------------------------------------------------- more Python values
def test_a_global_var_defined_in_python_is_callable() -> None:
    from byocc.ir import FuncStructInfo
    from byocc.ir import GlobalVar
    from byocc.ir import TensorStructInfo

    helper = GlobalVar("helper", FuncStructInfo((TensorStructInfo((2,), "float32"),), TensorStructInfo((2,), "float32")))

    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y = helper(x)
        return y

    call = f.body.blocks[0].bindings[0].value
    assert call.op is helper and call.struct_info == TensorStructInfo((2,), "float32")


def test_a_scripts_return_annotation_is_not_checked_against_its_body() -> None:
    # TVM's parser keeps the annotation as written; the text reader of .relax files checks it
    @R.function
    def f(x: R.Tensor((2,), "float32")) -> R.Tuple:
        y = (x, x)
        return y

    from byocc.ir import TupleStructInfo

    assert f.ret_struct_info == TupleStructInfo(())
    with pytest.raises(TypeInferenceError, match="the returned value does not match the return type"):
        byocc.script.from_source('@R.function\ndef f(x: R.Tensor((2,), "float32")) -> R.Tuple:\n    return (x, x)\n')


def test_the_type_of_a_value_as_an_annotation() -> None:
    @R.function
    def f(s: R.Tensor((3,), "int32")):
        with R.dataflow():
            c = R.call_dps_packed("my_scan", s, out_ty=s.ty)
            R.output(c)
        return c

    assert body(_wrap(f), "f").split("\n")[1] == 'c = R.call_dps_packed("my_scan", (s,), out_ty=R.Tensor((3,), dtype="int32"))'


def test_an_unknown_attribute_of_a_value_is_an_error() -> None:
    with pytest.raises(ParseError, match=r"expected a type \(R.Tensor, .*\), found 's.shapes'"):
        byocc.script.from_source('@R.function\ndef f(s: R.Tensor((3,), "int32")):\n'
                                 '    c = R.call_dps_packed("g", s, out_ty=s.shapes)\n    return c\n')


def test_comparisons_and_power_on_tensors() -> None:
    @R.function
    def f(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32")):
        c = a < b
        d = a >= b
        e = a ** b
        g = a * b ** a  # ** binds tighter, from the right
        return (c, d, e, g)

    t = 'R.Tensor((2, 3), dtype="float32")'
    tb = 'R.Tensor((2, 3), dtype="bool")'
    assert body(_wrap(f), "f").split("\n")[:5] == [
        f"c: {tb} = R.less(a, b)", f"d: {tb} = R.greater_equal(a, b)", f"e: {t} = R.power(a, b)",
        f"gv3: {t} = R.power(b, a)", f"g: {t} = R.multiply(a, gv3)"]


@pytest.mark.parametrize(("line", "message"), [
    ("k = a == b", r"'==' is not defined on Relax values: write R.equal\(a, b\)"),
    ("k = a < b < a", r"chained comparisons \(a < b < c\) are not supported"),
    ("k = -a ** b", r"write -\(a \*\* b\) or \(-a\) \*\* b"),
    ("k = R.reshape(a, (n < 2, 3))", "'<' is not supported on dimensions"),
])
def test_operator_errors_are_located(line: str, message: str) -> None:
    text = ('@R.function\ndef f(a: R.Tensor(("n", 3), "float32"), b: R.Tensor(("n", 3), "float32")):\n'
            f"    n = T.int64()\n    {line}\n    return k\n")
    with pytest.raises(ParseError, match=message) as info:
        byocc.script.from_source(text)
    assert info.value.span.line == 4


N_ROWS = 16


def test_python_ints_shapes_and_dtypes_in_annotations() -> None:
    def build(shape: tuple[int, int], dtype: str) -> Function:
        @R.function
        def f(x: R.Tensor((N_ROWS, 4), dtype), y: R.Tensor(shape, dtype)):
            return x

        return f

    f = build((2, 3), "float16")
    assert str(f.params[0].struct_info) == 'R.Tensor((16, 4), dtype="float16")'
    assert str(f.params[1].struct_info) == 'R.Tensor((2, 3), dtype="float16")'


def test_a_python_value_that_is_not_a_dimension() -> None:
    label = "rows"
    with pytest.raises(ParseError, match="'label' is a Python str, not a dimension"):
        @R.function
        def f(x: R.Tensor((label, 4), "float32")):
            return x
