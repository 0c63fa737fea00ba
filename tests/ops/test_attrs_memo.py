"""OpDef.make_attrs remembers completed attributes by op and typed values
(byocc/ops/registry.py, ``_ATTRS_MEMO``); what it gives never differs from completing them
afresh, and values Python hashes alike (1, 1.0, True; 0.0, -0.0) stay apart."""

from __future__ import annotations

import pytest

from byocc.ir import ByoccError
from byocc.ir import Expr
from byocc.ops import all_op_defs
from byocc.ops import get_op_def
from byocc.ops import registry


def plain_value(v):
    """A value as comparable data: an Expr (resize2d's roi) by its type, value and dtype."""
    if isinstance(v, Expr):
        return type(v).__name__, getattr(v, "value", None), getattr(v, "dtype", None)
    if isinstance(v, (tuple, list)):
        return type(v), [plain_value(x) for x in v]
    return type(v), v


def plain(attrs):
    return None if attrs is None else [(k, plain_value(v)) for k, v in attrs.items()]


def outcome(fn, *args):
    try:
        return ("ok", plain(fn(*args)))
    except ByoccError as err:
        return ("error", type(err).__name__, str(err))


def test_every_op_defaults_complete_the_same_memoised_or_not():
    registry._ATTRS_MEMO.clear()
    for opdef in all_op_defs():
        fresh = outcome(opdef._complete_attrs, {}, None)
        assert outcome(opdef.make_attrs, {}) == fresh, opdef.name
        assert outcome(opdef.make_attrs, {}) == fresh, opdef.name  # from the memo


@pytest.mark.parametrize(("op", "name", "values"), [
    ("relax.sum", "axis", [1, 1.0, True, [1], (1,), [1.0], None, -0.0, 0.0, 0]),
    ("relax.nn.leakyrelu", "alpha", [1, 1.0, True, 0.0, -0.0, "1", None]),
    ("relax.nn.conv2d", "padding", [[1, 1], (1, 1), [1, True], [1, 1.0], 1, [[1]], []]),
    ("relax.astype", "dtype", ["float16", "", "void", None, 16]),
])
def test_look_alike_values_stay_apart(op, name, values):
    opdef = get_op_def(op)
    registry._ATTRS_MEMO.clear()
    for first in values:  # the memo holds every look-alike before each check
        opdef_outcome = outcome(opdef.make_attrs, {name: first})
        assert opdef_outcome == outcome(opdef._complete_attrs, {name: first}, None)
    for v in values:
        expect = outcome(opdef._complete_attrs, {name: v}, None)
        assert outcome(opdef.make_attrs, {name: v}) == expect, v


@pytest.mark.parametrize("size", [1, 2, 5, 8, 17])
@pytest.mark.parametrize(("kernel", "pad", "stride", "dilation"),
                         [(1, 0, 1, 1), (3, 1, 1, 1), (3, 0, 2, 1), (3, 2, 3, 2), (5, 0, 1, 3), (2, 1, 4, 1)])
def test_conv2d_static_sizes_fold_as_arith_does(size, kernel, pad, stride, dilation):
    """conv2d's inference computes static output sizes with Python ints; they are what the
    dimension arithmetic (byocc.ir.arith) gives, including sizes that come out <= 0."""
    from byocc.ir import TensorStructInfo
    from byocc.ir import Var
    from byocc.ir import arith
    from byocc.ops import make_call

    x = Var("x", TensorStructInfo((1, 4, size, size + 1), "float32"))
    w = Var("w", TensorStructInfo((4, 4, kernel, kernel), "float32"))
    try:
        call = make_call("relax.nn.conv2d", [x, w], {"padding": [pad, pad + 1], "strides": [stride, 1],
                                                     "dilation": [dilation, 1]})
    except ByoccError:
        return
    want = []
    for d, p, s, dil in ((size, 2 * pad, stride, dilation), (size + 1, 2 * pad + 2, 1, 1)):
        num = arith.sub(arith.sub(arith.add(d, p), arith.mul(dil, arith.sub(kernel, 1))), 1)
        want.append(arith.simplify_dim(arith.add(arith.floordiv(num, s), 1)))
    assert list(call.struct_info.shape[2:]) == want
