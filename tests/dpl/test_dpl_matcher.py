"""The pattern matcher (spec/partitioning.md section 3.2), on IR built with constructors."""

from __future__ import annotations

import pytest

from byocc import dpl
from byocc.dpl import ExternFuncPattern
from byocc.dpl import TuplePattern
from byocc.dpl import explain_no_match
from byocc.dpl import has_attr
from byocc.dpl import has_dtype
from byocc.dpl import is_const
from byocc.dpl import is_dfv
from byocc.dpl import is_expr
from byocc.dpl import is_gv
from byocc.dpl import is_op
from byocc.dpl import is_shape
from byocc.dpl import is_tuple
from byocc.dpl import is_tuple_get_item
from byocc.dpl import is_var
from byocc.dpl import make_fused_bias_activation_pattern
from byocc.dpl import match_expr
from byocc.dpl import match_with_trace
from byocc.dpl import pattern_root_ops
from byocc.dpl import reject
from byocc.dpl import wildcard
from byocc.ir import Attrs
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import ExternFunc
from byocc.ir import GlobalVar
from byocc.ir import Op
from byocc.ir import PatternError
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import tensor


def op(name: str) -> Op:
    return Op.get(name, create=True)


class Block:
    """Builds bindings ``name = op(args)`` and the var2val map the matcher needs."""

    def __init__(self):
        self.var2val: dict = {}

    def param(self, name: str, shape=(4, 4), dtype="float32") -> Var:
        return Var(name, tensor(shape, dtype))

    def call(self, opname: str, *args, shape=(4, 4), dtype="float32", attrs=None, name="lv",
             dataflow=True):
        si = tensor(shape, dtype) if shape is not None else None
        value = Call(op(opname), tuple(args), Attrs(tuple(attrs.items())) if attrs else None, (), si)
        var = (DataflowVar if dataflow else Var)(name, si)
        self.var2val[var] = value
        return var, value


def test_matches_call_through_var2val_and_memo_holds_unwrapped_values():
    b = Block()
    x, w = b.param("x"), b.param("w")
    mm, mm_val = b.call("relax.matmul", x, w, name="mm")
    _, add_val = b.call("relax.add", mm, b.param("bias", (4,)))
    inner = is_op("relax.matmul")(wildcard(), wildcard())
    p = is_op("relax.add")(inner, wildcard())
    memo = match_expr(p, add_val, b.var2val)
    assert memo is not None
    assert memo[inner] is mm_val  # the call, not the variable mm
    assert memo[p] is add_val
    assert memo[inner.args[0]] is x
    # children are recorded before their parents
    order = list(memo)
    assert order.index(inner) < order.index(p)
    # without var2val the argument is just a variable
    assert match_expr(p, add_val) is None


def test_alias_chains_and_empty_seq_expr_are_unwrapped():
    b = Block()
    x = b.param("x")
    _, relu_val = b.call("relax.nn.relu", x, name="r")
    r = [v for v, val in b.var2val.items() if val is relu_val][0]
    alias1 = DataflowVar("a1", relu_val.struct_info)
    alias2 = DataflowVar("a2", relu_val.struct_info)
    b.var2val[alias1] = r
    b.var2val[alias2] = SeqExpr((), alias1)
    _, neg_val = b.call("relax.negative", alias2)
    relu = is_op("relax.nn.relu")(wildcard())
    memo = match_expr(is_op("relax.negative")(relu), neg_val, b.var2val)
    assert memo is not None and memo[relu] is relu_val


def test_commutative_retry_only_for_add_and_multiply():
    b = Block()
    x, y = b.param("x"), b.param("y")
    mm, _ = b.call("relax.matmul", x, y, name="mm")
    c = Constant(None, tensor((4, 4), "float32"))
    for name in ("relax.add", "relax.multiply"):
        _, value = b.call(name, c, mm)  # constant first, call second
        p = is_op(name)(is_op("relax.matmul")(wildcard(), wildcard()), is_const())
        assert match_expr(p, value, b.var2val) is not None, name
    _, sub = b.call("relax.subtract", c, mm)
    p = is_op("relax.subtract")(is_op("relax.matmul")(wildcard(), wildcard()), is_const())
    assert match_expr(p, sub, b.var2val) is None


def test_same_pattern_node_must_match_the_same_object():
    b = Block()
    x, y = b.param("x"), b.param("y")
    _, same = b.call("relax.add", x, x)
    _, different = b.call("relax.add", x, y)
    v = wildcard()
    p = is_op("relax.add")(v, v)
    assert match_expr(p, same) is not None
    assert match_expr(p, different) is None


def test_memo_sharing_sees_through_aliases():
    b = Block()
    x = b.param("x")
    alias = DataflowVar("x1", x.struct_info)
    b.var2val[alias] = x  # x1 = x
    _, value = b.call("relax.add", x, alias)
    v = wildcard()
    assert match_expr(is_op("relax.add")(v, v), value, b.var2val) is not None


def test_failed_branch_rolls_back_memo_entries():
    b = Block()
    x, y = b.param("x"), b.param("y")
    relu, relu_val = b.call("relax.nn.relu", x, name="relu")
    _, value = b.call("relax.add", relu, y)
    shared = wildcard()
    # left alternative binds `shared` to x inside relu(x) and then fails on its 2nd arg;
    # its memo entries must be gone when the right alternative binds `shared` to y.
    left = is_op("relax.add")(is_op("relax.nn.relu")(shared), is_op("relax.exp")(wildcard()))
    right = is_op("relax.add")(wildcard(), shared)
    memo = match_expr(left | right, value, b.var2val)
    assert memo is not None
    assert memo[shared] is y
    assert left not in memo and right in memo
    # a node whose children matched but whose own test failed (attributes) rolls back too
    shared = wildcard()
    relu_p = is_op("relax.nn.relu")(shared)
    left = is_op("relax.add")(relu_p.has_attr({"foo": 1}), wildcard())
    right = is_op("relax.add")(wildcard(), shared)
    memo = match_expr(left | right, value, b.var2val)
    assert memo is not None and memo[shared] is y and relu_p not in memo


def test_or_first_alternative_wins():
    b = Block()
    x = b.param("x")
    _, value = b.call("relax.nn.relu", x)
    first, second = is_op("relax.nn.relu")(wildcard()), is_op("relax.nn.relu")(wildcard())
    memo = match_expr(first | second, value)
    assert first in memo and second not in memo


def test_not_pattern_and_rollback():
    b = Block()
    x = b.param("x")
    c = Constant(None, tensor((4, 4), "float32"))
    _, with_var = b.call("relax.add", x, x)
    _, with_const = b.call("relax.add", c, c)
    inner = is_const()
    p = is_op("relax.add")(reject(inner), wildcard())
    memo = match_expr(p, with_var)
    assert memo is not None and inner not in memo
    assert match_expr(p, with_const) is None
    assert match_expr(~is_const(), c) is None
    # the inner pattern matched (so Not failed): its entries are discarded
    inner = is_const()
    memo = match_expr(reject(inner) | wildcard(), c)
    assert memo is not None and inner not in memo


def test_and_pattern_needs_both():
    b = Block()
    _, value = b.call("relax.nn.relu", b.param("x"))
    p = is_op("relax.nn.relu")(wildcard())
    assert match_expr(p & has_dtype("float32"), value) is not None
    assert match_expr(p & has_dtype("float16"), value) is None


def test_tuple_get_item_index_and_any_index():
    b = Block()
    x = b.param("x", (8, 4))
    split_si = TupleStructInfo((tensor((4, 4), "float32"), tensor((4, 4), "float32")))
    split = Call(op("relax.split"), (x,), Attrs((("indices_or_sections", 2), ("axis", 0))), (), split_si)
    sv = DataflowVar("s", split_si)
    b.var2val[sv] = split
    item1 = TupleGetItem(sv, 1, tensor((4, 4), "float32"))
    iv = DataflowVar("i", item1.struct_info)
    b.var2val[iv] = item1
    _, relu = b.call("relax.nn.relu", iv)
    split_p = is_op("relax.split")(wildcard())
    for index, ok in ((1, True), (None, True), (0, False)):
        tgi = is_tuple_get_item(split_p, index)
        memo = match_expr(is_op("relax.nn.relu")(tgi), relu, b.var2val)
        assert (memo is not None) is ok, index
        if ok:
            assert memo[tgi] is item1 and memo[split_p] is split
    assert TuplePattern([wildcard(), wildcard()])[-1].index == 1


def test_tuple_pattern_arity_and_order():
    b = Block()
    x, y = b.param("x"), b.param("y")
    concat = Call(op("relax.concat"), (Tuple((x, y)),), Attrs((("axis", 0),)), (), tensor((8, 4), "float32"))
    p = is_op("relax.concat")(is_tuple([is_var("x"), is_var("y")]))
    assert match_expr(p, concat) is not None
    assert match_expr(is_op("relax.concat")(is_tuple([is_var("y"), is_var("x")])), concat) is None
    assert match_expr(is_op("relax.concat")(is_tuple([is_var("y"), is_var("x")], unordered=True)), concat)
    assert match_expr(is_op("relax.concat")(is_tuple([wildcard()])), concat) is None


def test_has_attr_compares_call_attributes():
    b = Block()
    x = b.param("x")
    _, soft = b.call("relax.nn.softmax", x, attrs={"axis": -1})
    _, mm = b.call("relax.matmul", x, x, attrs={"out_dtype": "float16"})
    _, conv = b.call("relax.nn.conv2d", x, x, attrs={"strides": (3, 3), "data_layout": "NHWC"})
    assert match_expr(is_op("relax.nn.softmax")(wildcard()).has_attr({"axis": -1}), soft)
    assert match_expr(is_op("relax.nn.softmax")(wildcard()).has_attr({"axis": 1}), soft) is None
    assert match_expr(has_attr({"axis": -1.0}), soft) is None  # int vs float
    assert match_expr(has_attr({"keepdims": True}), soft) is None  # missing field
    assert match_expr(has_attr({"strides": [3, 3], "data_layout": "NHWC"}), conv)
    assert match_expr(has_attr({"strides": [4, 3]}), conv) is None
    # a string never equals a dtype-typed attribute
    assert match_expr(has_attr({"out_dtype": "float16"}), mm) is None
    assert match_expr(has_attr({}), mm) is not None


def test_dtype_and_shape_predicates():
    n = TirVar("n")
    b = Block()
    x = b.param("x", (n, 4), "float16")
    _, relu = b.call("relax.nn.relu", x, shape=(n, 4), dtype="float16")
    p = is_op("relax.nn.relu")(wildcard())
    assert match_expr(p.has_dtype("float16"), relu) is not None
    assert match_expr(p.has_dtype("float32"), relu) is None
    assert match_expr(p.has_shape([n, 4]), relu) is not None
    assert match_expr(p.has_shape([n * 1 + 0, 2 * 2]), relu) is not None
    assert match_expr(p.has_shape([TirVar("n"), 4]), relu) is None  # another variable
    assert match_expr(p.has_shape([n]), relu) is None
    shape = ShapeExpr((n, 4))
    assert match_expr(is_shape([n, 4]), shape) is not None
    assert match_expr(is_shape([n, 5]), shape) is None
    with pytest.raises(PatternError):
        p.has_shape(4)


def test_var_patterns_only_match_unbound_variables():
    b = Block()
    x = b.param("x")
    lv, _ = b.call("relax.nn.relu", x, name="lv")
    _, value = b.call("relax.exp", lv)
    assert match_expr(is_op("relax.exp")(is_var()), value, b.var2val) is None  # lv unwraps
    assert match_expr(is_op("relax.exp")(is_dfv()), value) is not None  # no var2val
    assert match_expr(is_op("relax.exp")(is_dfv("lv")), value) is not None
    assert match_expr(is_op("relax.exp")(is_dfv("other")), value) is None
    _, on_param = b.call("relax.exp", x)
    assert match_expr(is_op("relax.exp")(is_var("x")), on_param, b.var2val) is not None
    assert match_expr(is_op("relax.exp")(is_dfv()), on_param, b.var2val) is None


def test_is_const_matches_variable_bound_to_constant():
    b = Block()
    c = Constant(None, tensor((4,), "float32"))
    cv = DataflowVar("c", c.struct_info)
    b.var2val[cv] = c
    _, value = b.call("relax.add", b.param("x"), cv)
    memo = match_expr(is_op("relax.add")(wildcard(), is_const()), value, b.var2val)
    assert memo is not None and c in memo.values()


def test_global_var_pattern_matches_by_substring_and_extern_func():
    gv = GlobalVar("fused_rms_norm_kernel")
    x = Var("x", tensor((4,), "float32"))
    call = Call(op("relax.call_tir"), (gv, Tuple((x, x))), None, (), tensor((4,), "float32"))
    assert match_expr(is_op("relax.call_tir")(is_gv("rms_norm"), wildcard()), call) is not None
    assert match_expr(is_op("relax.call_tir")(is_gv(), wildcard()), call) is not None
    assert match_expr(is_op("relax.call_tir")(is_gv("decode"), wildcard()), call) is None
    assert match_expr(is_gv("rms")(wildcard()), Call(gv, (x,), None, (), None)) is not None
    assert match_expr(ExternFuncPattern("f"), ExternFunc("f")) is not None
    assert match_expr(ExternFuncPattern("g"), ExternFunc("f")) is None


def test_variadic_call_pattern():
    b = Block()
    x = b.param("x")
    _, value = b.call("relax.strided_slice", x, x, x, x)
    assert match_expr(is_op("relax.strided_slice")(wildcard()), value) is None
    assert match_expr(is_op("relax.strided_slice")(wildcard(), varg_default_wildcard=True), value)
    assert match_expr(is_op("relax.strided_slice")(*[wildcard()] * 5, varg_default_wildcard=True), value) is None


def test_divide_multiply_reassociation():
    # divide(multiply(a, b), c) matches multiply(a, divide(b, c)) when the divide is inline
    a, bb, c = (Var(n, tensor((4,), "float32")) for n in "abc")
    si = tensor((4,), "float32")
    expr = Call(op("relax.multiply"), (a, Call(op("relax.divide"), (bb, c), None, (), si)), None, (), si)
    pa, pb, pc = is_var("a"), is_var("b"), is_var("c")
    p = is_op("relax.divide")(is_op("relax.multiply")(pa, pb), pc)
    memo = match_expr(p, expr)
    assert memo is not None and memo[pb] is bb and memo[pc] is c
    # and the other way round
    expr2 = Call(op("relax.divide"), (Call(op("relax.multiply"), (a, bb), None, (), si), c), None, (), si)
    p2 = is_op("relax.multiply")(pa, is_op("relax.divide")(pb, pc))
    assert match_expr(p2, expr2) is not None
    assert op("relax.multiply") in pattern_root_ops(p)


def test_expr_pattern_structural_equality():
    x = Var("x", tensor((4,), "float32"))
    assert match_expr(is_expr(ShapeExpr((2, 3))), ShapeExpr((2, 3))) is not None
    assert match_expr(is_expr(ShapeExpr((2, 3))), ShapeExpr((3, 2))) is None
    assert match_expr(is_expr(x), x) is not None
    assert match_expr(is_expr(x), Var("x", x.struct_info)) is None


def test_one_name_per_equality():
    # dpl's equality compares variables by identity; ir.structural_equal is alpha equivalence
    from byocc import ir

    x, y = Var("x", tensor((4,), "float32")), Var("y", tensor((4,), "float32"))
    relu = op("relax.nn.relu")
    a, b = Call(relu, (x,), None, (), x.struct_info), Call(relu, (y,), None, (), y.struct_info)
    assert not hasattr(dpl, "structural_equal")
    assert not dpl.expr_equal_same_vars(a, b) and ir.structural_equal(a, b, map_free_vars=True)
    assert dpl.expr_equal_same_vars(a, Call(relu, (x,), None, (), x.struct_info))


def test_pattern_api_sugar_and_errors():
    p = is_op("relax.add")(wildcard(), wildcard())
    assert isinstance(p, dpl.CallPattern) and p.op.expr is op("relax.add")
    assert isinstance(p | p, dpl.OrPattern) and isinstance(p & p, dpl.AndPattern)
    assert isinstance(~p, dpl.NotPattern)
    seq = wildcard() ^ p
    assert isinstance(seq, dpl.PatternSeq) and isinstance(wildcard() >> p, dpl.PatternSeq)
    copy = p.dup()
    assert copy is not p and isinstance(copy, dpl.CallPattern) and copy.args[0] is not p.args[0]
    shared = wildcard()
    dup2 = is_op("relax.add")(shared, shared).dup()
    assert dup2.args[0] is dup2.args[1]
    with pytest.raises(PatternError):
        is_op("relax.add")(wildcard(), 3)
    with pytest.raises(PatternError):
        is_tuple(wildcard())
    x = Var("x", tensor((4,), "float32"))
    assert p.match(Call(op("relax.add"), (x, x), None, (), x.struct_info))
    assert p.extract_matched_expr(x) is None


def test_make_fused_bias_activation_pattern_shape():
    p = make_fused_bias_activation_pattern("relax.matmul", with_bias=True, activation="relax.nn.relu")
    assert repr(p) == 'is_op("relax.nn.relu")(is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard()))'
    assert repr(make_fused_bias_activation_pattern("relax.nn.conv2d")) == 'is_op("relax.nn.conv2d")(wildcard(), wildcard())'


def test_one_fused_bias_activation_pattern_for_both_spellings():
    from byocc.backends import patterns as backend_patterns

    p = make_fused_bias_activation_pattern("relax.matmul", with_bias=True, allow_reshape=True)
    pattern, annotations = p
    assert pattern is p and set(annotations) == {"lhs", "rhs", "root", "bias"}
    assert p.args[0] is annotations["root"] and annotations["root"].args == (annotations["lhs"], annotations["rhs"])
    assert p.varg_default_wildcard and p.args[1].args[0] is annotations["bias"]
    plain = make_fused_bias_activation_pattern("relax.nn.conv2d")
    assert plain.annotations["root"] is plain
    pair = backend_patterns.make_fused_bias_activation_pattern("relax.matmul", True, "relax.nn.relu")
    assert type(pair) is tuple and repr(pair[0]) == repr(make_fused_bias_activation_pattern(
        "relax.matmul", True, "relax.nn.relu"))
    assert pair[1] is pair[0].annotations


def test_pattern_root_ops():
    relu, gelu = is_op("relax.nn.relu")(wildcard()), is_op("relax.nn.gelu")(wildcard())
    assert pattern_root_ops(relu | gelu) == {op("relax.nn.relu"), op("relax.nn.gelu")}
    assert pattern_root_ops(relu & wildcard()) == {op("relax.nn.relu")}
    assert pattern_root_ops(wildcard()) is None
    assert pattern_root_ops(is_gv("f")(wildcard())) is None
    assert pattern_root_ops(is_tuple([wildcard()])) == frozenset()
    assert pattern_root_ops(relu.has_dtype("float16")) == {op("relax.nn.relu")}
    either = (is_op("relax.add") | is_op("relax.multiply"))(wildcard(), wildcard())
    assert pattern_root_ops(either) == {op("relax.add"), op("relax.multiply")}
    assert pattern_root_ops(reject(relu)) is None


def test_trace_reports_deepest_failure_with_path():
    b = Block()
    x, w = b.param("x"), b.param("w")
    mm, mm_val = b.call("relax.matmul", x, w, name="mm")
    p = is_op("relax.matmul")(wildcard(), is_op("relax.permute_dims")(wildcard()))
    memo, failure = match_with_trace(p, mm_val, b.var2val)
    assert memo is None
    assert str(failure) == ("argument 1 of R.matmul: expected a call to R.permute_dims, "
                            "got w (a variable without a visible binding)")
    _, relu_val = b.call("relax.nn.relu", mm)
    _, failure = match_with_trace(is_op("relax.nn.relu")(is_op("relax.nn.conv2d")(wildcard(), wildcard())),
                                  relu_val, b.var2val)
    assert str(failure) == "argument 0 of R.nn.relu: expected a call to R.nn.conv2d, got mm = R.matmul(x, w)"


def test_explain_no_match_prefers_check_reason_over_structural_failure():
    b = Block()
    x, w = b.param("x", dtype="bfloat16"), b.param("w", dtype="bfloat16")
    _, mm_val = b.call("relax.matmul", x, w, dtype="bfloat16")
    transposed = is_op("relax.matmul")(wildcard(), is_op("relax.permute_dims")(wildcard()))
    lhs = wildcard()
    plain = is_op("relax.matmul")(lhs, wildcard())

    def only_fp16(ctx):
        return dpl.CheckResult(ctx.annotated_expr["lhs"].ty.dtype == "float16", "lhs is not float16")

    patterns = [("t.relu", is_op("relax.nn.relu")(wildcard())), ("t.transposed", transposed),
                ("t.plain", plain, {"lhs": lhs}, only_fp16)]

    def factory(entry, memo):
        return dpl.make_check_context(entry, mm_val, memo, {}, {})

    assert explain_no_match(patterns, mm_val, b.var2val, factory) == ("t.plain", "lhs is not float16")
    name, reason = explain_no_match(patterns[:2], mm_val, b.var2val)
    assert name == "t.transposed" and "expected a call to R.permute_dims" in reason
    assert explain_no_match(patterns[:1], mm_val, b.var2val) == (None, "no pattern has R.matmul at its root")
