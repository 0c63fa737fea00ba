"""TVMScript's ``R`` and ``T`` names as Python values (issue 11): types outside a script are
real struct info, ``R.add`` & co. build calls, ``T.int64(2)`` is a typed int, and Python's
evaluation of a decorated def's annotations never raises."""

from __future__ import annotations

import pytest

from byocc import relax
from byocc.ir import Call
from byocc.ir import FuncStructInfo
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimStructInfo
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import TupleStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import UnsupportedError
from byocc.script import ir as I  # noqa: E741, N812
from byocc.script import relax as R  # noqa: N812
from byocc.script import tirx as T  # noqa: N812

n = T.int64()  # a module-level symbolic variable, as TVM tests write them


def test_types_outside_a_script_are_struct_info():
    assert R.Tensor((2, 3), "float32") == TensorStructInfo((2, 3), "float32")
    assert R.Tensor((2, 3)) == TensorStructInfo((2, 3), None)  # TVM: no dtype given, none known
    assert R.Tensor(ndim=2, dtype="float16") == TensorStructInfo(None, "float16", 2)
    assert R.Tensor("int32", ndim=1) == TensorStructInfo(None, "int32", 1)
    assert R.Tensor((n, 4), "float32").shape == (n, 4)
    assert R.Tuple(R.Tensor, R.Tensor((2,), "int32")) == TupleStructInfo(
        (TensorStructInfo(), TensorStructInfo((2,), "int32")))
    assert R.Tuple([R.Object]) == R.Tuple(R.Object()) == TupleStructInfo((ObjectStructInfo(),))
    assert R.Shape([2, n]) == ShapeStructInfo((2, n)) and R.Shape(ndim=3) == ShapeStructInfo(None, 3)
    assert R.Any() == R.Object() == ObjectStructInfo()
    assert R.Prim("int64") == PrimStructInfo("int64")
    assert R.Callable([R.Tensor((2,), "float32")], R.Tensor((2,), "float32")) == FuncStructInfo(
        (TensorStructInfo((2,), "float32"),), TensorStructInfo((2,), "float32"), True)
    assert R.Callable().params is None and R.Callable().purity is False  # opaque: impure


def test_a_string_dimension_is_an_annotation_not_a_type():
    proxy = R.Tensor(("m", 4), "float32")
    assert not isinstance(proxy, TensorStructInfo)
    with pytest.raises(ValueError, match=r"R.Tensor\(...\) is not a type outside a script: a dimension named by a string"):
        relax.Var("x", proxy)
    with pytest.raises(ValueError, match=r"R.Tuple\(...\) is not a type outside a script: field R.Tensor"):
        R.Tuple(R.Tensor(("m",))).as_struct_info()
    x = relax.Var("x", R.Tensor((2,), "float32"))
    with pytest.raises(ValueError, match="is not a type outside a script"):
        relax.Function([x], x, ret_struct_info=R.Tensor(("m",), "float32"))
    with pytest.raises(ValueError, match="is not a type outside a script"):
        relax.MatchCast(relax.Var("y"), x, R.Tensor(("m",)))
    assert relax.Function([x], x, ret_struct_info=R.Tensor((2,), "float32")).ret_struct_info == x.struct_info
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with pytest.raises(ValueError, match="is not a type outside a script"):
            bb.match_cast(x, R.Tensor(("m",), "float32"))
        bb.emit_func_output(bb.match_cast(x, R.Tensor((2,), "float32")))


@I.ir_module
class StringDims:  # Python evaluates R.Tensor(("m", "n")) here, before the parser reads it
    @R.function
    def main(x: R.Tensor(("m", "n"), "float32"), y: R.Tensor((n, 4), "float32")) -> R.Tensor(("m", "n"), "float32"):
        return x


def test_annotations_with_string_dims_still_parse():
    [x, y] = StringDims["main"].params
    assert [str(d) if isinstance(d, int) else d.name for d in x.struct_info.shape] == ["m", "n"]
    assert y.struct_info.shape[1] == 4


def test_expression_and_operator_constructors():
    x = relax.Var("x", R.Tensor((2, 3), "float32"))
    call = R.add(x, x)
    assert isinstance(call, Call) and call.op.name == "relax.add" and call.struct_info == x.struct_info
    assert R.nn.relu(x).op.name == "relax.nn.relu"
    s = R.shape([2, 3])
    assert isinstance(s, ShapeExpr) and s.values == (2, 3)
    c = R.const(1.5)
    assert c.struct_info == TensorStructInfo((), "float32")
    assert R.prim_value(3).dtype == "int64" and R.str("hi").value == "hi"
    assert list(R.tuple(x, x).fields) == [x, x]
    assert R.ExternFunc("f").global_symbol == "f"
    with pytest.raises(AttributeError, match="no attribute 'no_such_op'"):
        R.no_such_op  # noqa: B018


def test_tir_scalars_and_variables():
    two = T.int64(2)
    assert two == 2 and two.value == 2 and two.dtype == "int64" and isinstance(two, T.IntImm)
    assert T.IntImm("int32", 5).dtype == "int32"
    assert T.float32(0.5).dtype == "float32" and T.float32(0.5) == 0.5
    fresh = T.int64()
    assert isinstance(fresh, TirVar) and fresh is not T.int64()
    v = T.Var("k", "int64")
    assert T.Var("j", ty="int32").dtype == "int32"  # TVM 0.27's keyword
    assert v.name == "k" and isinstance(v, T.Var) and not isinstance(3, T.Var)
    assert T.min(2, 5) == 2 and T.max(v, 1).op == "max"
    assert repr(T.prim_func) == "<annotation T.prim_func>"  # TIR code in a class: inert


def test_relax_transform_transform_is_the_tvm_import_path():
    from byocc.relax.transform.transform import CanonicalizeBindings

    assert CanonicalizeBindings is relax.transform.CanonicalizeBindings


def test_an_operator_on_untyped_variables_builds_an_untyped_call():
    call = relax.op.add(relax.Var("a"), relax.Var("b"))
    assert call.op.name == "relax.add" and call.struct_info is None  # TVM infers on normalise
    with pytest.raises(TypeInferenceError, match="arguments must be tensors"):
        relax.op.add(relax.Var("a", R.Shape([2])), relax.Var("b", R.Shape([2])))


def test_get_shape_of():
    x = relax.Var("x", R.Tensor((2, n), "float32"))
    shape = relax.get_shape_of(x)
    assert isinstance(shape, ShapeExpr) and shape.values == (2, n)
    with pytest.raises(UnsupportedError, match="shape is unknown"):
        relax.get_shape_of(relax.Var("y", R.Tensor(ndim=2)))
