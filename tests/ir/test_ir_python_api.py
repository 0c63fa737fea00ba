"""TVM's Python API on byocc's IR nodes (issue 11): what TVM users call on expressions,
functions and modules, and the exception types TVM raises."""

from __future__ import annotations

import numpy as np
import pytest

from byocc import relax
from byocc.ir import ByoccError
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import PassError
from byocc.ir import PrimMinMax
from byocc.ir import ShapeExpr
from byocc.ir import TirVar
from byocc.ir import TupleGetItem
from byocc.ir import WellFormedError
from byocc.ir import arith
from byocc.ir import assert_structural_equal
from byocc.ir import substitute_dim
from byocc.ir.base import StructuralEqualError

T23 = relax.TensorStructInfo([2, 3], "float32")


def var(name: str = "x", si=T23):
    return relax.Var(name, si)


def test_var_name_and_same_as():
    x, y = var("x"), var("x")
    assert x.name == "x" and x.name_hint == "x"
    assert x.same_as(x) and not x.same_as(y)
    assert x == x and x != y  # identity, as TVM's ==


@pytest.mark.parametrize(("expr", "op"), [
    (lambda x, y: x + y, "relax.add"), (lambda x, y: x - y, "relax.subtract"),
    (lambda x, y: x * y, "relax.multiply"), (lambda x, y: x / y, "relax.divide"),
    (lambda x, y: x // y, "relax.floor_divide"), (lambda x, y: x % y, "relax.mod"),
    (lambda x, y: x ** y, "relax.power"), (lambda x, y: x < y, "relax.less"),
    (lambda x, y: x >= y, "relax.greater_equal"), (lambda x, y: -x, "relax.negative"),
])
def test_python_operators_build_typed_calls(expr, op):
    x, y = var("x"), var("y")
    call = expr(x, y)
    assert call.op.name == op
    assert call.args[0] is x
    assert call.struct_info.shape == (2, 3)


def test_an_operand_that_is_not_an_expression_needs_const():
    with pytest.raises(TypeError, match=r"Please convert 2 with `const` first"):
        var() * 2
    assert (var() * relax.const(2.0)).struct_info == T23


def test_astype_and_script():
    x = var()
    assert x.astype("float16").struct_info == relax.TensorStructInfo([2, 3], "float16")
    assert (x + x).script() == "R.add(x, x)"
    assert str(T23) == 'R.Tensor((2, 3), dtype="float32")'


def test_tuple_is_a_sequence_of_its_fields():
    x, y = var("x"), var("y")
    t = relax.Tuple([x, y])
    assert len(t) == 2 and t[0] is x and t[-1] is y and list(t) == [x, y]
    with pytest.raises(IndexError, match="Tuple index out of range"):
        t[2]
    assert relax.Tuple([])  # an empty tuple is still a value, not a false container


def test_indexing_a_tuple_typed_expression_gives_a_tuple_get_item():
    v = var("t", relax.TupleStructInfo([T23, relax.TensorStructInfo([4], "int32")]))
    item = v[-1]
    assert isinstance(item, TupleGetItem) and item.index == 1 and item.struct_info.dtype == "int32"
    assert [i.index for i in v] == [0, 1]
    with pytest.raises(IndexError):
        v[2]
    with pytest.raises(TypeError, match="only tuple-typed"):
        var()[0]


def test_function_attribute_api():
    x = var()
    f = relax.Function([x], x)
    g = f.with_attr("global_symbol", "g")
    assert g.attrs == {"global_symbol": "g"} and f.attrs == {}
    assert g.with_attrs({"Composite": "c"}).attrs == {"global_symbol": "g", "Composite": "c"}
    assert g.without_attr("global_symbol").attrs == {}
    assert f.with_attr({"Codegen": "x", "global_symbol": "y"}).attrs == {"Codegen": "x", "global_symbol": "y"}
    assert f.script().splitlines()[-2:] == [
        'def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):',
        "    return x"]


def test_module_functions_are_keyed_by_global_var():
    x = var()
    f = relax.Function([x], x)
    mod = IRModule({"main": f})
    gv = mod.get_global_var("main")
    funcs = mod.functions
    assert list(funcs) == [gv] and funcs[gv] is f
    assert [(k.name_hint, v) for k, v in funcs.items()] == [("main", f)]
    assert funcs["main"] is f and "main" in funcs and GlobalVar("main") in funcs  # by name too
    assert list(mod.items()) == [("main", f)]  # byocc's own view stays by name


def test_module_clone_and_item_assignment():
    x = var()
    f = relax.Function([x], x)
    mod = IRModule({"main": f})
    gv = mod.get_global_var("main")
    copy = mod.clone()
    copy["copy"] = f.with_attr("global_symbol", "copy")
    assert mod.names() == ["main"] and copy.names() == ["main", "copy"]
    copy["main"] = copy["copy"]
    assert copy.get_global_var("main") is gv  # rebinding keeps the name's GlobalVar
    del copy["copy"]
    assert copy.names() == ["main"]
    assert IRModule.from_expr(f).names() == ["main"]
    assert [gv.name_hint for gv, _ in copy.functions_items()] == ["main"]
    other = IRModule({"b": f, "a": f})
    copy.update(other)
    assert [gv.name_hint for gv, _ in copy.functions_items()] == ["a", "b", "main"]
    assert copy.with_attr("k", 1).get_attr("k") == 1 and copy.with_attr("k", 1).without_attr("k").attrs == {}
    with pytest.raises(TypeError, match="holds functions"):
        copy["x"] = x


def test_assert_structural_equal_raises_a_value_error_with_a_diff():
    a, b = var("x"), var("x", relax.TensorStructInfo([2, 4], "float32"))
    fa, fb = relax.Function([a], a), relax.Function([b], b)
    assert_structural_equal(relax.Function([var("p")], relax.const(1.0)),
                            relax.Function([var("q")], relax.const(1.0)))
    with pytest.raises(ValueError, match=r'(?s)StructuralEqual check failed:.*-def main\(x: R.Tensor\(\(2, 3\)') as err:
        assert_structural_equal(fa, fb)
    assert isinstance(err.value, StructuralEqualError) and isinstance(err.value, ByoccError)


def test_a_shape_compares_structurally_equal_to_its_shape_expr():
    from byocc.ir import structural_equal

    n = TirVar("n")
    si = relax.TensorStructInfo([n, 4], "float32")
    assert structural_equal(si.shape, ShapeExpr((n, 4)))
    assert not structural_equal(si.shape, ShapeExpr((n, 5)))
    assert_structural_equal(relax.Var("x", si).struct_info.shape, relax.ShapeExpr([n, 4]))


def test_errors_derive_from_the_types_tvm_raises():
    assert issubclass(ByoccError, RuntimeError)  # tvm.TVMError
    assert issubclass(PassError, ValueError)
    assert issubclass(WellFormedError, ValueError)  # TVM's well_formed raises ValueError


def test_substitution_folds_min_and_max_of_constants():
    n, m = TirVar("n"), TirVar("m")
    assert substitute_dim(PrimMinMax("min", n, n + m), {n: 16, m: 16}) == 16
    assert substitute_dim(PrimMinMax("max", n, 4), {n: 2}) == 4
    assert substitute_dim(PrimMinMax("max", n, 4), {}) == PrimMinMax("max", n, 4)


def test_provably_non_negative():
    n, m = TirVar("n"), TirVar("m")
    assert arith.provably_non_negative(n + m * 2 + 1)
    assert not arith.provably_non_negative(n - m)
    assert not arith.provably_non_negative(-1)
    assert arith.provably_non_negative(np.int64(3).item())


def test_constant_data_answers_numpy_like_a_tvm_tensor():
    import pickle

    c = relax.const([1.0, 2.0])
    values = c.data.numpy()
    assert type(values) is np.ndarray and values.tolist() == [1.0, 2.0]
    assert isinstance(c.data, np.ndarray) and float(c.data.sum()) == 3.0
    assert pickle.loads(pickle.dumps(c.data)).numpy().tolist() == [1.0, 2.0]
