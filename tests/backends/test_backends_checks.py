"""Backend check functions on hand-built dataflow blocks (spec/backends.md sections 2-4).

``Graph`` builds a block binding by binding; ``decide`` mimics FuseOpsByPattern's choice
for one root binding: the highest-priority table entry that matches and whose check
accepts (overlap and cycles are not modelled here).
"""

from __future__ import annotations

import pytest

from byocc.backends import get_patterns_with_prefix
from byocc.backends import is_shape_valid_for_cutlass_matmul
from byocc.backends.utils import has_leaking_intermediate_variables
from byocc.dpl import make_check_context
from byocc.dpl import match_expr
from byocc.ir import Attrs
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import GlobalVar
from byocc.ir import Op
from byocc.ir import PatternError
from byocc.ir import PrimValue
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import tensor


class Graph:
    def __init__(self):
        self.bindings: list = []  # (var, value)
        self.outputs: list = []

    def param(self, name, shape, dtype="float16"):
        return Var(name, tensor(shape, dtype))

    def bind(self, value, name, output=False):
        var = (Var if output else DataflowVar)(name, value.struct_info)
        self.bindings.append((var, value))
        if output:
            self.outputs.append(var)
        return var

    def call(self, opname, *args, shape, dtype="float16", attrs=None, name="lv", output=False, sinfo=None):
        si = sinfo if sinfo is not None else tensor(shape, dtype)
        value = Call(Op.get(opname, create=True), tuple(args), Attrs(tuple((attrs or {}).items())) or None,
                     (), si)
        return self.bind(value, name, output)

    # analyses FuseOpsByPattern computes
    def var2val(self):
        return {v: val for v, val in self.bindings}

    def value_to_bound_var(self):
        return {val: v for v, val in self.bindings}

    def var_usages(self):
        usages: dict = {}
        for var, value in self.bindings:
            usages.setdefault(var, [])
            for used in _used_vars(value):
                users = usages.setdefault(used, [])
                if var not in users:
                    users.append(var)
        return usages

    def value_of(self, var):
        return self.var2val()[var]

    def context(self, entry, root_var):
        root = self.value_of(root_var)
        memo = match_expr(entry.pattern, root, self.var2val())
        assert memo is not None, f"{entry.name} does not match"
        return make_check_context(entry, root, memo, self.value_to_bound_var(), self.var_usages())

    def decide(self, prefix, root_var):
        """(name, check result) of the first entry that matches, trying lower priorities
        after a rejection; (None, None) when nothing is accepted."""
        root = self.value_of(root_var)
        last = (None, None)
        for entry in get_patterns_with_prefix(prefix):
            memo = match_expr(entry.pattern, root, self.var2val())
            if memo is None:
                continue
            ctx = make_check_context(entry, root, memo, self.value_to_bound_var(), self.var_usages())
            result = entry.check(ctx) if entry.check else True
            if result:
                return entry.name, result
            if last[0] is None:
                last = (entry.name, result)
        return None, last


def _used_vars(expr):
    stack, out = [expr], []
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out.append(e)
        elif isinstance(e, Call):
            stack.extend(reversed(e.args))
        elif isinstance(e, Tuple):
            stack.extend(reversed(e.fields))
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
    return out


def entry(name):
    matches = [e for e in get_patterns_with_prefix(name.split(".")[0]) if e.name == name]
    return matches[-1]


# ---------------------------------------------------------------------------- cutlass matmul
def matmul_chain(dtype="float16", lhs=(16, 32), rhs=(32, 8), out=(16, 8), relu=True):
    g = Graph()
    x, w, b = g.param("x", lhs, dtype), g.param("w", rhs, dtype), g.param("b", (out[-1],), dtype)
    mm = g.call("relax.matmul", x, w, shape=out, dtype=dtype, name="mm")
    add = g.call("relax.add", mm, b, shape=out, dtype=dtype, name="add")
    if not relu:
        return g, mm, add, None
    relu = g.call("relax.nn.relu", add, shape=out, dtype=dtype, name="relu", output=True)
    return g, mm, add, relu


def test_fp16_chain_picks_the_largest_pattern():
    g, mm, add, relu = matmul_chain()
    assert g.decide("cutlass", relu)[0] == "cutlass.matmul_bias_relu"
    assert g.decide("cutlass", add)[0] == "cutlass.matmul_bias"
    assert g.decide("cutlass", mm)[0] == "cutlass.matmul"
    assert g.decide("cublas", relu)[0] == "cublas.matmul_bias_relu"


def test_dtype_rules_with_reasons():
    g, mm, _, _ = matmul_chain("bfloat16")
    result = entry("cutlass.matmul").check(g.context(entry("cutlass.matmul"), mm))
    assert not result
    assert result.reason == "lhs dtype bfloat16 not in {float16, float32, int8, uint8}"
    assert g.decide("cublas", mm)[0] == "cublas.matmul"  # cuBLAS takes bf16
    g, mm, _, _ = matmul_chain("int8")
    assert g.decide("cutlass", mm)[0] == "cutlass.matmul"
    # mixed int8 x uint8 is fine for CUTLASS
    g = Graph()
    mm = g.call("relax.matmul", g.param("x", (4, 4), "int8"), g.param("w", (4, 4), "uint8"),
                shape=(4, 4), dtype="int32", name="mm")
    assert g.decide("cutlass", mm)[0] == "cutlass.matmul"
    # output dtype is not checked (f16 x f16 -> f32)
    g = Graph()
    mm = g.call("relax.matmul", g.param("x", (4, 4)), g.param("w", (4, 4)), shape=(4, 4),
                dtype="float32", attrs={"out_dtype": "float32"}, name="mm")
    assert g.decide("cutlass", mm)[0] == "cutlass.matmul"


def test_leak_rule_intermediate_used_outside_the_match():
    g, mm, add, relu = matmul_chain()
    g.call("relax.exp", mm, shape=(16, 8), name="other", output=True)
    e = entry("cutlass.matmul_bias_relu")
    ctx = g.context(e, relu)
    assert has_leaking_intermediate_variables(ctx)
    result = e.check(ctx)
    assert not result and result.reason == "intermediate mm is used outside the match (by other)"
    # falls back: relu alone is not a cutlass pattern, bias-add is rejected too, matmul is fine
    assert g.decide("cutlass", relu)[0] is None
    assert g.decide("cutlass", add)[0] is None
    assert g.decide("cutlass", mm)[0] == "cutlass.matmul"


def test_leak_rule_non_dataflow_intermediate():
    g = Graph()
    x, w, b = g.param("x", (4, 4)), g.param("w", (4, 4)), g.param("b", (4,))
    mm = g.call("relax.matmul", x, w, shape=(4, 4), name="mm", output=True)
    add = g.call("relax.add", mm, b, shape=(4, 4), name="add")
    result = entry("cutlass.matmul_bias").check(g.context(entry("cutlass.matmul_bias"), add))
    assert not result and "mm is not a dataflow variable" in result.reason


@pytest.mark.parametrize("lhs, rhs, ok", [
    ((3, 1, 1, 16, 15), (3, 2, 4, 15, 2), False),
    ((1, 16, 15), (3, 15, 2), True),
    ((16, 15), (3, 15, 2), True),
    ((3, 16, 15), (15, 2), True),
    ((2, 3, 16, 15), (3, 15, 2), False),
    ((2, 3, 16, 15), (2, 3, 15, 2), True),
    ((1, 3, 16, 15), (3, 15, 2), True),
])
def test_cutlass_batch_rule_static(lhs, rhs, ok):
    assert bool(is_shape_valid_for_cutlass_matmul(lhs, rhs)) is ok


def test_cutlass_batch_rule_symbolic():
    a, n, k = TirVar("a"), TirVar("n"), TirVar("k")
    result = is_shape_valid_for_cutlass_matmul((a, 16, 15), (3, 15, 2))
    assert not result and "batch dims" in result.reason
    assert is_shape_valid_for_cutlass_matmul((a, 16, 15), (a, 15, 2))
    assert is_shape_valid_for_cutlass_matmul((a, n, 15), (15, 2))  # M symbolic, rhs 2-D
    assert is_shape_valid_for_cutlass_matmul((2, a, 16, 15), (2, a, 15, 2))
    k_result = is_shape_valid_for_cutlass_matmul((16, k), (k, 2))
    assert not k_result and k_result.reason == "reduction dim K=k of lhs is not a constant"
    # through the whole check, on a 3-D matmul
    g = Graph()
    mm = g.call("relax.matmul", g.param("x", (a, 16, 15)), g.param("w", (3, 15, 2)),
                shape=(3, 16, 2), name="mm")
    assert g.decide("cutlass", mm)[0] is None


def test_residual_rule():
    g, mm, add, _ = matmul_chain(relu=False)
    # residual = the bias-add itself (out + out) depends on the root: rejected
    out2 = g.call("relax.add", add, add, shape=(16, 8), name="res")
    e = entry("cutlass.matmul_bias_residual_add")
    result = e.check(g.context(e, out2))
    assert not result and result.reason == "residual add depends on the root mm"
    # an independent output-shaped residual is accepted
    g, mm, add, _ = matmul_chain(relu=False)
    r = g.param("r", (16, 8))
    res = g.call("relax.add", r, add, shape=(16, 8), name="res")
    assert g.decide("cutlass", res)[0] == "cutlass.matmul_bias_residual_add"
    # (1, 8) is bias-like; (16, 1) is neither bias-like nor output-shaped
    for shape, ok in (((1, 8), True), ((2, 16, 1), False)):
        g, mm, add, _ = matmul_chain(relu=False)
        res = g.call("relax.multiply", add, g.param("r", shape), shape=(16, 8), name="res")
        result = entry("cutlass.matmul_bias_residual_multiply").check(
            g.context(entry("cutlass.matmul_bias_residual_multiply"), res))
        assert bool(result) is ok, shape


def test_transposed_rhs_is_the_tensor_before_permute():
    g = Graph()
    x, w = g.param("x", (16, 32)), g.param("w", (8, 32))
    wt = g.call("relax.permute_dims", w, shape=(32, 8), name="wt", attrs={"axes": None})
    mm = g.call("relax.matmul", x, wt, shape=(16, 8), name="mm")
    e = entry("cutlass.matmul_transposed")
    ctx = g.context(e, mm)
    assert ctx.annotated_expr["rhs"] is w
    assert list(ctx.matched_bindings) == [wt, mm]
    assert g.decide("cutlass", mm)[0] == "cutlass.matmul_transposed"


# ---------------------------------------------------------------------------- conv2d, norms
def conv(data_layout="NHWC", kernel_layout="OHWI", groups=1, data=(1, 8, 8, 16), weight=(32, 3, 3, 16)):
    g = Graph()
    out = (data[0], 6, 6, weight[0])
    c = g.call("relax.nn.conv2d", g.param("x", data), g.param("w", weight), shape=out, name="c",
               attrs={"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": groups,
                      "data_layout": data_layout, "kernel_layout": kernel_layout, "out_layout": data_layout,
                      "out_dtype": None})
    return g, c


def test_conv2d_check():
    g, c = conv()
    assert g.decide("cutlass", c)[0] == "cutlass.conv2d"
    for kwargs, reason in (({"data_layout": "NCHW"}, "data_layout NCHW != NHWC"),
                           ({"kernel_layout": "OIHW"}, "kernel_layout OIHW != OHWI"),
                           ({"groups": 16, "weight": (16, 3, 3, 1)},
                            "depthwise conv2d (IC == OC == groups == 16) is not supported")):
        g, c = conv(**kwargs)
        result = entry("cutlass.conv2d").check(g.context(entry("cutlass.conv2d"), c))
        assert not result and result.reason == reason
    g, c = conv(groups=2, weight=(32, 3, 3, 8))
    assert g.decide("cutlass", c)[0] == "cutlass.conv2d"
    g, c = conv(data=(TirVar("n"), 8, 8, 16))
    result = entry("cutlass.conv2d").check(g.context(entry("cutlass.conv2d"), c))
    assert not result and "symbolic dim n" in result.reason


def test_layer_norm_check():
    def ln(axes, center=True):
        g = Graph()
        x = g.param("x", (4, 16), "bfloat16")
        y = g.call("relax.nn.layer_norm", x, g.param("g", (16,)), g.param("b", (16,)), shape=(4, 16),
                   dtype="bfloat16", name="y",
                   attrs={"axes": axes, "epsilon": 1e-5, "center": center, "scale": True})
        return g.decide("cutlass", y)

    assert ln((-1,))[0] == "cutlass.layer_norm"
    assert ln((1,))[0] == "cutlass.layer_norm"
    name, (closest, result) = ln((0,))
    assert name is None and closest == "cutlass.layer_norm" and result.reason == "layer_norm axis 0 is not the last axis 1"
    assert ln((-1,), center=False)[0] is None


def test_rms_norm_check_looks_at_callee_name():
    for fname, ok in (("rms_norm", True), ("my_rms_norm_kernel", True), ("layer_norm", False)):
        g = Graph()
        x, w = g.param("x", (4, 16)), g.param("w", (16,))
        y = g.call("relax.call_tir", GlobalVar(fname), Tuple((x, w)), shape=(4, 16), name="y")
        assert (g.decide("cutlass", y)[0] == "cutlass.rms_norm") is ok, fname


def test_stacked_attention_split_check():
    for axis, ok in ((2, True), (1, False)):
        g = Graph()
        qkv = g.param("qkv", (2, 16, 3 * 64))
        parts = TupleStructInfo(tuple(tensor((2, 16, 64), "float16") for _ in range(3)))
        s = g.call("relax.split", qkv, shape=None, sinfo=parts, name="s",
                   attrs={"indices_or_sections": (64, 128), "axis": axis})
        qkv_vars = []
        for i, n in enumerate("qkv"):
            item = g.bind(TupleGetItem(s, i, tensor((2, 16, 64), "float16")), f"{n}0")
            qkv_vars.append(g.call("relax.reshape", item, g.param("shp", (4,), "int64"),
                                   shape=(2, 16, 4, 16), name=n))
        att = g.call("relax.nn.attention", *qkv_vars, shape=(2, 16, 4, 16), name="att",
                     attrs={"scale": None, "causal_mask": None, "window_size": None})
        name, _ = g.decide("cutlass", att)
        assert name == ("cutlass.stacked_attention" if ok else "cutlass.attention"), axis


def test_stacked_attention_strided_slice_without_strides_raises_like_tvm():
    g = Graph()
    qkv = g.param("qkv", (2, 16, 3 * 64))
    items = []
    for i, n in enumerate("qkv"):
        ints = lambda v: Tuple((PrimValue(v),))  # noqa: E731
        sl = g.call("relax.strided_slice", qkv, ints(2), ints(64 * i), ints(64 * (i + 1)),
                    shape=(2, 16, 64), name=f"{n}0", attrs={"assume_inbound": False})
        items.append(g.call("relax.reshape", sl, g.param("shp", (4,), "int64"), shape=(2, 16, 4, 16), name=n))
    att = g.call("relax.nn.attention", *items, shape=(2, 16, 4, 16), name="att")
    e = [x for x in get_patterns_with_prefix("cutlass") if x.name == "cutlass.stacked_attention"][1]
    with pytest.raises(PatternError, match="without strides"):
        e.check(g.context(e, att))


# ---------------------------------------------------------------------------- cublas
def cublas_decide(lhs, rhs, dtype="float16", bias=None, out_dtype=None):
    g = Graph()
    out = tuple(lhs[:-1]) + (rhs[-1],) if len(lhs) >= len(rhs) else tuple(rhs[:-2]) + (lhs[-2], rhs[-1])
    mm = g.call("relax.matmul", g.param("x", lhs, dtype), g.param("w", rhs, dtype), shape=out,
                dtype=out_dtype or dtype, name="mm")
    root = mm
    if bias is not None:
        root = g.call("relax.add", mm, g.param("b", bias, out_dtype or dtype), shape=out,
                      dtype=out_dtype or dtype, name="add")
    return g.decide("cublas", root)


def test_cublas_rules():
    assert cublas_decide((16, 33), (33, 8), "int8", out_dtype="int32")[0] is None  # K % 4
    name, (closest, result) = cublas_decide((16, 33), (33, 8), "int8", out_dtype="int32")
    assert closest == "cublas.matmul" and result.reason == "int8 matmul needs K % 4 == 0, K is 33"
    assert cublas_decide((16, 32), (32, 8), "int8", out_dtype="int32")[0] == "cublas.matmul"
    # int8 with bias: matmul_bias rejected (the add stays outside)
    name, (closest, result) = cublas_decide((16, 32), (32, 8), "int8", bias=(8,), out_dtype="int32")
    assert name is None and result.reason == "int8 matmul cannot take a bias epilogue"
    assert cublas_decide((16, 32), (32, 8), bias=(8,))[0] == "cublas.matmul_bias"
    assert cublas_decide((16, 32), (32, 8), bias=(1, 8))[0] == "cublas.matmul_bias"
    name, (_, result) = cublas_decide((16, 32), (32, 8), bias=(16, 8))
    assert name is None and result.reason == "bias shape (16, 8) is not a vector"
    assert cublas_decide((2, 16, 32), (32, 8), bias=(2, 1, 8))[0] is None
    # batch rules
    assert cublas_decide((2, 16, 32), (32, 8))[0] == "cublas.matmul"  # ND x 2D
    assert cublas_decide((2, 16, 32), (2, 32, 8))[0] == "cublas.matmul"
    assert cublas_decide((16, 32), (2, 32, 8))[0] is None  # static 2D x ND
    n = TirVar("n")
    assert cublas_decide((n, 16, 32), (3, 32, 8))[0] == "cublas.matmul"  # symbolic batch
    assert cublas_decide((16, 32), (32, 8), "bfloat16", out_dtype="float32")[0] == "cublas.matmul"
    assert cublas_decide((16, 32), (32, 8), "float64")[0] is None


def test_cublas_dequantize_zero_point():
    import numpy as np

    for zp_value, ok in ((0.0, True), (1.0, False)):
        g = Graph()
        x, w = g.param("x", (16, 32), "float8_e4m3fn"), g.param("w", (8, 32), "float8_e4m3fn")
        wt = g.call("relax.permute_dims", w, shape=(32, 8), dtype="float8_e4m3fn", name="wt")
        mm = g.call("relax.matmul", x, wt, shape=(16, 8), dtype="float16", name="mm")
        scale = Constant(np.array(0.5, "float16"), tensor((), "float16"))
        zp = Constant(np.array(zp_value, "float16"), tensor((), "float16"))
        dq = g.call("relax.dequantize", mm, scale, zp, shape=(16, 8), dtype="float16", name="dq")
        name, _ = g.decide("cublas", dq)
        assert (name == "cublas.matmul_transposed_dequantize") is ok, zp_value


# ---------------------------------------------------------------------------- explain
def test_explain_with_the_cutlass_table():
    from byocc.dpl import explain_no_match

    g, mm, add, relu = matmul_chain("bfloat16")

    def factory(entry, memo):
        root = g.value_of(mm)
        return make_check_context(entry, root, memo, g.value_to_bound_var(), g.var_usages())

    patterns = get_patterns_with_prefix("cutlass")
    assert explain_no_match(patterns, g.value_of(mm), g.var2val(), factory) == (
        "cutlass.matmul", "lhs dtype bfloat16 not in {float16, float32, int8, uint8}")
    name, reason = explain_no_match(patterns, g.value_of(mm), g.var2val())
    assert name == "cutlass.matmul" and "not evaluated" in reason
    # a conv2d in NCHW layout
    g, c = conv(data_layout="NCHW")

    def conv_factory(entry, memo):
        return make_check_context(entry, g.value_of(c), memo, g.value_to_bound_var(), g.var_usages())

    assert explain_no_match(patterns, g.value_of(c), g.var2val(), conv_factory) == (
        "cutlass.conv2d", "data_layout NCHW != NHWC")
