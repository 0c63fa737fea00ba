"""ConvertLayout: NCHW/OIHW convolutions to NHWC/OHWI, layout propagation, transpose cancelling.

Every rewrite is checked twice: on the IR (layouts, where the ``permute_dims`` are) and
with the numpy interpreter (the same values as before the pass).
"""

from __future__ import annotations

import numpy as np
import pytest

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import Function
from byocc.ir import PassError
from byocc.ir.well_formed import well_formed
from byocc.runtime import Interpreter
from byocc.runtime import flatten_outputs
from byocc.text import parse_module
from byocc.transform.convert_layout import ConvertLayout
from byocc.transform.convert_layout import convert_layout

RNG = np.random.default_rng(7)


def consts(*arrays) -> dict:
    return {f"ir.GenericConst/{i}": np.asarray(a) for i, a in enumerate(arrays)}


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def calls(mod, name: str, fn: str = "main") -> list[Call]:
    out = []
    for block in mod[fn].body.blocks:
        for b in block.bindings:
            if isinstance(b.value, Call) and getattr(b.value.op, "name", None) == name:
                out.append(b.value)
    return out


def assert_same_values(before, after, args, tol=1e-5):
    assert well_formed(after) == []
    want = flatten_outputs(Interpreter(before).run(args))
    got = flatten_outputs(Interpreter(after).run(args))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert w.shape == g.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


CONV_BIAS_RELU = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 9, 7), dtype="float32")) -> R.Tensor((2, 4, 9, 7), dtype="float32"):
        with R.dataflow():
            lv = R.nn.conv2d(x, metadata["ir.GenericConst"][0], padding=[1, 2])
            lv1 = R.add(lv, metadata["ir.GenericConst"][1])
            gv = R.nn.relu(lv1)
            R.output(gv)
        return gv
'''


def test_conv_bias_relu_becomes_nhwc_with_two_transposes():
    w, b = rand(4, 3, 3, 5), rand(1, 4, 1, 1)
    mod = parse_module(CONV_BIAS_RELU, constants=consts(w, b))
    new = ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})(mod)
    (conv,) = calls(new, "relax.nn.conv2d")
    assert (conv.attrs.data_layout, conv.attrs.kernel_layout, conv.attrs.out_layout) == ("NHWC", "OHWI", "NHWC")
    # the constant weight was transposed at compile time, not by a permute_dims
    assert isinstance(conv.args[1], Constant)
    np.testing.assert_array_equal(conv.args[1].data, w.transpose(0, 2, 3, 1))
    # the bias constant is now (1, 1, 1, C)
    (add,) = calls(new, "relax.add")
    assert isinstance(add.args[1], Constant) and add.args[1].data.shape == (1, 1, 1, 4)
    perms = calls(new, "relax.permute_dims")
    assert [p.attrs.axes for p in perms] == [(0, 2, 3, 1), (0, 3, 1, 2)]
    assert str(new["main"].body.body) == "gv"  # the output keeps its name
    assert_same_values(mod, new, [rand(2, 3, 9, 7)])


def test_default_is_nhwc_ohwi_and_input_not_mutated():
    mod = parse_module(CONV_BIAS_RELU, constants=consts(rand(4, 3, 3, 5), rand(1, 4, 1, 1)))
    text = mod.script()
    new = ConvertLayout()(mod)
    assert calls(new, "relax.nn.conv2d")[0].attrs.data_layout == "NHWC"
    assert mod.script() == text
    assert ConvertLayout().name == "ConvertLayout"


def test_weight_parameter_gets_a_permute_dims():
    src = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), dtype="float32"), w: R.Tensor((6, 3, 3, 3), dtype="float32")):
        with R.dataflow():
            gv = R.nn.conv2d(x, w, strides=[2, 2])
            R.output(gv)
        return gv
'''
    mod = parse_module(src)
    new = convert_layout(mod, {"nn.conv2d": ["NHWC", "OHWI"]})
    (conv,) = calls(new, "relax.nn.conv2d")
    weight_perm = [p for p in calls(new, "relax.permute_dims") if str(p.args[0]) == "w"]
    assert len(weight_perm) == 1 and weight_perm[0].attrs.axes == (0, 2, 3, 1)
    assert conv.args[1].struct_info.shape == (6, 3, 3, 3)
    assert_same_values(mod, new, [rand(1, 3, 8, 8), rand(6, 3, 3, 3)])


PROPAGATION = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 8, 8), dtype="float32"), r: R.Tensor((2, 4, 8, 8), dtype="float32"), g: R.Tensor((4,), dtype="float32")):
        with R.dataflow():
            lv = R.nn.conv2d(x, metadata["ir.GenericConst"][0], padding=[1, 2])
            lv1 = R.add(lv, metadata["ir.GenericConst"][1])
            lv2 = R.multiply(lv1, metadata["ir.GenericConst"][2])
            lv3 = R.add(lv2, r)
            lv4 = R.nn.silu(lv3)
            bn = R.nn.batch_norm(lv4, g, g, g, metadata["ir.GenericConst"][3], axis=1, training=False)
            lv5 = bn[0]
            lv6 = R.nn.max_pool2d(lv5, pool_size=[2, 2], strides=[2, 2])
            lv7 = R.nn.avg_pool2d(lv5, pool_size=[2, 2], strides=[2, 2])
            lv8 = R.concat((lv6, lv7), axis=1)
            lv9 = R.nn.softmax(lv8, axis=1)
            lv10 = R.nn.pad(lv9, pad_width=[0, 0, 1, 2, 0, 1, 3, 0])
            lv11 = R.nn.adaptive_avg_pool2d(lv10, output_size=[2, 2])
            lv12 = R.mean(lv11, axis=[1], keepdims=False)
            lv13 = R.sum(lv10, axis=[2, 3], keepdims=False)
            lv14 = R.clip(lv9, 0, 6)
            lv15 = R.multiply(lv14, R.const(2.0, "float32"))
            lv16 = R.nn.prelu(lv9, metadata["ir.GenericConst"][4])
            gv = (lv12, lv13, lv15, lv16)
            R.output(gv)
        return gv
'''


def test_layout_propagates_through_agnostic_ops():
    mod = parse_module(PROPAGATION, constants=consts(rand(4, 3, 3, 5), rand(1, 4, 1, 1), rand(4, 1, 1),
                                                     RNG.uniform(0.5, 1.5, 4).astype("float32"), rand(8)))
    new = ConvertLayout()(mod)
    assert calls(new, "relax.nn.batch_norm")[0].attrs.axis == 3
    assert calls(new, "relax.concat")[0].attrs.axis == 3
    assert calls(new, "relax.nn.softmax")[0].attrs.axis == 3
    assert calls(new, "relax.nn.prelu")[0].attrs.axis == 3
    assert calls(new, "relax.nn.pad")[0].attrs.pad_width == (0, 0, 0, 1, 3, 0, 1, 2)
    for op in ("relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.nn.adaptive_avg_pool2d"):
        (pool,) = calls(new, op)
        assert (pool.attrs.layout, pool.attrs.out_layout) == ("NHWC", "NHWC")
    assert calls(new, "relax.mean")[0].attrs.axis == (3,)
    assert calls(new, "relax.sum")[0].attrs.axis == (1, 2)
    # the (C, 1, 1) constant broadcast against NCHW became (1, 1, 1, C)
    assert calls(new, "relax.multiply")[0].args[1].data.shape == (1, 1, 1, 4)
    # permute_dims: x in, r in (full-rank residual), lv15 and lv16 out; mean/sum results need none
    sources = sorted(str(p.args[0]) for p in calls(new, "relax.permute_dims"))
    assert len(sources) == 4 and "x" in sources and "r" in sources
    assert_same_values(mod, new, [rand(2, 3, 8, 8), rand(2, 4, 8, 8), RNG.uniform(0.5, 1.5, 4).astype("float32")])


def test_tuple_result_used_whole_is_rebuilt_in_original_layout():
    src = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 6, 6), dtype="float32"), g: R.Tensor((5,), dtype="float32"), w: R.Tensor((5, 3, 1, 1), dtype="float32")):
        with R.dataflow():
            lv = R.nn.conv2d(x, w)
            bn = R.nn.batch_norm(lv, g, g, g, g, axis=1, training=False)
            lv1 = bn[0]
            lv2 = R.nn.relu(lv1)
            gv = (bn, lv2)
            R.output(gv)
        return gv
'''
    mod = parse_module(src)
    new = ConvertLayout()(mod)
    g = RNG.uniform(0.5, 1.5, 5).astype("float32")
    assert_same_values(mod, new, [rand(1, 3, 6, 6), g, rand(5, 3, 1, 1)])


def test_nhwc_model_transposes_cancel():
    """A model already NHWC (an exporter wrapped the conv in transposes): no permute_dims left."""
    src = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 8, 8, 3), dtype="float32")) -> R.Tensor((2, 8, 8, 4), dtype="float32"):
        with R.dataflow():
            a = R.permute_dims(x, axes=[0, 3, 1, 2])
            lv = R.nn.conv2d(a, metadata["ir.GenericConst"][0], padding=[1, 1])
            lv1 = R.nn.relu(lv)
            b = R.permute_dims(lv1, axes=[0, 2, 3, 1])
            c = R.nn.relu(b)
            d = R.permute_dims(c, axes=[0, 3, 1, 2])
            e = R.nn.conv2d(d, metadata["ir.GenericConst"][1], padding=[1, 1])
            gv = R.permute_dims(e, axes=[0, 2, 3, 1])
            R.output(gv)
        return gv
'''
    mod = parse_module(src, constants=consts(rand(4, 3, 3, 3), rand(4, 4, 3, 3)))
    new = ConvertLayout()(mod)
    assert calls(new, "relax.permute_dims") == []
    assert str(calls(new, "relax.nn.conv2d")[0].args[0]) == "x"
    assert_same_values(mod, new, [rand(2, 8, 8, 3)])


def test_adjacent_inverse_transposes_of_input_cancel():
    src = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 5, 6), dtype="float32"), w: R.Tensor((4, 4, 1, 1), dtype="float32")):
        with R.dataflow():
            a = R.permute_dims(x, axes=[0, 2, 3, 1])
            b = R.permute_dims(a, axes=[0, 3, 1, 2])
            lv = R.nn.relu(b)
            gv = R.nn.conv2d(lv, w)
            R.output(gv)
        return gv
'''
    mod = parse_module(src)
    new = ConvertLayout()(mod)
    (relu,) = calls(new, "relax.nn.relu")
    assert str(relu.args[0]) == "x"  # permute_dims(permute_dims(x, p), p^-1) -> x
    assert_same_values(mod, new, [rand(1, 4, 5, 6), rand(4, 4, 1, 1)])


def test_output_var_used_inside_block_keeps_identity():
    src = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 5, 5), dtype="float32"), w: R.Tensor((3, 2, 3, 3), dtype="float32")):
        with R.dataflow():
            gv = R.nn.conv2d(x, w, padding=[1, 1])
            lv = R.nn.relu(gv)
            gv1 = R.nn.conv2d(lv, metadata["ir.GenericConst"][0], padding=[1, 1])
            R.output(gv, gv1)
        y = R.add(gv, gv)
        return (y, gv1)
'''
    mod = parse_module(src, constants=consts(rand(3, 3, 3, 3)))
    new = ConvertLayout()(mod)
    bindings = new["main"].body.blocks[0].bindings
    outputs = {b.var.name_hint: b.var for b in bindings if type(b.var).__name__ == "Var"}
    assert outputs["gv"].struct_info.shape == (1, 3, 5, 5)  # still NCHW outside the block
    # the binding after the block is untouched
    assert new["main"].body.blocks[1] is mod["main"].body.blocks[1]
    assert_same_values(mod, new, [rand(1, 2, 5, 5), rand(3, 2, 3, 3)])


def test_symbolic_batch():
    src = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 8, 8), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            lv = R.nn.conv2d(x, w, padding=[1, 1])
            gv = R.nn.max_pool2d(lv, pool_size=[2, 2], strides=[2, 2])
            R.output(gv)
        return gv
'''
    mod = parse_module(src)
    new = ConvertLayout()(mod)
    assert calls(new, "relax.nn.max_pool2d")[0].attrs.layout == "NHWC"
    assert_same_values(mod, new, [rand(3, 3, 8, 8), rand(4, 3, 3, 3)])


def test_untouched_cases_return_the_same_function():
    no_conv = parse_module('''
@R.function
def main(x: R.Tensor((1, 3, 4, 4), dtype="float32")):
    with R.dataflow():
        gv = R.nn.relu(x)
        R.output(gv)
    return gv
''')
    assert ConvertLayout()(no_conv)["main"] is no_conv["main"]
    no_dataflow = parse_module('''
@R.function
def main(x: R.Tensor((1, 3, 4, 4), dtype="float32"), w: R.Tensor((2, 3, 1, 1), dtype="float32")):
    gv = R.nn.conv2d(x, w)
    return gv
''')
    assert ConvertLayout()(no_dataflow)["main"] is no_dataflow["main"]
    composite = parse_module('''
@R.function
def main(x: R.Tensor((1, 3, 4, 4), dtype="float32"), w: R.Tensor((2, 3, 1, 1), dtype="float32")):
    R.func_attr({"Composite": "cutlass.conv2d"})
    with R.dataflow():
        gv = R.nn.conv2d(x, w)
        R.output(gv)
    return gv
''')
    assert ConvertLayout()(composite)["main"] is composite["main"]


def test_weight_of_unknown_rank_is_left_alone():
    mod = parse_module(CONV_BIAS_RELU)  # no sidecar: the weight's value and rank are unknown
    new = ConvertLayout()(mod)
    assert calls(new, "relax.nn.conv2d")[0].attrs.data_layout == "NCHW"
    assert calls(new, "relax.permute_dims") == []
    assert well_formed(new) == []


def test_pool_in_desired_table():
    src = '''
@R.function
def main(x: R.Tensor((1, 3, 8, 8), dtype="float32")):
    with R.dataflow():
        gv = R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2])
        R.output(gv)
    return gv
'''
    mod = parse_module(src)
    new = ConvertLayout({"relax.nn.max_pool2d": ["NHWC"]})(mod)
    assert calls(new, "relax.nn.max_pool2d")[0].attrs.layout == "NHWC"
    assert_same_values(mod, new, [rand(1, 3, 8, 8)])


@pytest.mark.parametrize("desired", [
    {"relax.nn.relu": ["NHWC"]},
    {"relax.nn.conv2d": ["NHWC4c", "OHWI"]},
    {"relax.nn.conv2d": []},
])
def test_bad_desired_layouts_are_rejected(desired):
    with pytest.raises(PassError):
        ConvertLayout(desired)


def test_long_chain_is_linear_and_not_recursive():
    n = 3000
    lines = "\n".join(f"            lv{i} = R.nn.relu(lv{i - 1})" for i in range(1, n))
    src = f'''
@R.function
def main(x: R.Tensor((1, 2, 4, 4), dtype="float32"), w: R.Tensor((2, 2, 1, 1), dtype="float32")):
    with R.dataflow():
            lv0 = R.nn.conv2d(x, w)
{lines}
            gv = R.nn.conv2d(lv{n - 1}, w)
            R.output(gv)
    return gv
'''.replace("\n            ", "\n        ")
    mod = parse_module(src)
    new = ConvertLayout()(mod)
    block = new["main"].body.blocks[0]
    assert isinstance(block, DataflowBlock)
    assert len(calls(new, "relax.permute_dims")) == 3  # x, w (once, reused), gv
    assert isinstance(new["main"], Function) and well_formed(new) == []
