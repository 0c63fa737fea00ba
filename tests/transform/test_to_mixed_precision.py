"""ToMixedPrecision on small modules: the dtypes TVM's policies give (matmul/conv/attention
in half, element-wise ops following, softmax and reductions in fp32), casts made once and
never cast back and forth, constants converted at compile time, and numerics within the
half dtype's tolerance of the fp32 module on the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import PassError
from byocc.ir.well_formed import well_formed
from byocc.runtime.interpreter import run_module
from byocc.text import parse_module
from byocc.transform import ToMixedPrecision
from byocc.transform import to_mixed_precision

RNG = np.random.default_rng(3)

MLP = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 16), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            a = R.matmul(x, metadata["ir.GenericConst"][0])
            b = R.add(a, metadata["ir.GenericConst"][1])
            c = R.nn.relu(b)
            d = R.nn.softmax(a, axis=-1)
            e = R.add(c, d)
            f = R.matmul(e, metadata["ir.GenericConst"][2])
            m = R.mean(f, axis=[-1], keepdims=True)
            g = R.subtract(f, m)
            gv = R.nn.layer_norm(g, metadata["ir.GenericConst"][3], metadata["ir.GenericConst"][4], axes=[-1])
            R.output(gv)
        return gv
'''


def mlp():
    shapes = [(16, 8), (8,), (8, 8), (8,), (8,)]
    return parse_module(MLP, constants={f"ir.GenericConst/{i}": RNG.standard_normal(s).astype("float32")
                                        for i, s in enumerate(shapes)})


def bindings(mod):
    """name -> binding, the casts the pass made left out (they take their source's name)."""
    return {b.var.name_hint: b for blk in mod["main"].body.blocks for b in blk.bindings
            if not (isinstance(b.value, Call) and getattr(b.value.op, "name", "") == "relax.astype")}


def dtype(b) -> str:
    return b.var.struct_info.dtype


def casts(mod) -> list:
    return [b for blk in mod["main"].body.blocks for b in blk.bindings
            if isinstance(b.value, Call) and getattr(b.value.op, "name", "") == "relax.astype"]


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_policies_give_the_dtypes_tvm_gives(half):
    new = to_mixed_precision(mlp(), half, out_dtype=half)
    assert well_formed(new) == []
    b = bindings(new)
    assert dtype(b["a"]) == half and b["a"].value.attrs.out_dtype == half  # always: half
    assert all(a.struct_info.dtype == half for a in b["a"].value.args)
    assert dtype(b["b"]) == half and dtype(b["c"]) == half  # follow: half operands -> half
    assert dtype(b["d"]) == "float32"  # never: softmax in fp32
    assert dtype(b["e"]) == "float32"  # follow with an fp32 operand -> fp32
    assert dtype(b["m"]) == "float32"  # the statistics of a decomposed norm stay fp32
    assert new["main"].ret_struct_info.dtype == "float32"  # the signature keeps its dtypes
    assert new["main"].params[0].struct_info.dtype == "float32"
    # constants converted at compile time, not through astype
    assert isinstance(b["b"].value.args[1], Constant) and b["b"].value.args[1].struct_info.dtype == half


def test_fp32_accumulator_feeds_fp32_users_without_a_round_trip():
    new = to_mixed_precision(mlp(), "float16", out_dtype="float32")
    b = bindings(new)
    assert dtype(b["a"]) == "float32" and b["a"].value.attrs.out_dtype == "float32"
    # softmax reads the fp32 accumulator itself, not astype(astype(a, f16), f32)
    assert b["d"].value.args[0] is b["a"].var
    srcs = {id(c.var): c for c in casts(new)}
    for c in casts(new):  # no cast of a cast back to where it came from
        src = c.value.args[0]
        if id(src) in srcs:
            assert srcs[id(src)].value.args[0].struct_info.dtype != c.var.struct_info.dtype


def test_each_var_is_cast_once_per_dtype():
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.matmul(x, w)
            c = R.matmul(a, w)
            gv = R.add(b, c)
            R.output(gv)
        return gv
'''
    new = to_mixed_precision(parse_module(text), "float16", "float16")
    srcs = [c.value.args[0].name_hint for c in casts(new)]
    assert sorted(srcs) == ["lv", "w", "x"]  # x and w once each, the fp16 output back once
    assert well_formed(new) == []


def test_module_casts_are_looked_through():
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            a = R.matmul(x, w)
            h = R.astype(a, dtype="float16")
            f = R.astype(h, dtype="float32")
            gv = R.nn.softmax(f, axis=-1)
            R.output(gv)
        return gv
'''
    new = to_mixed_precision(parse_module(text), "float16", "float32")
    b = bindings(new)
    assert "h" not in b and "f" not in b
    assert b["gv"].value.args[0] is b["a"].var  # softmax of the fp32 accumulator
    assert casts(new) and all(c.value.args[0].name_hint in ("x", "w") for c in casts(new))


def test_numerics_against_fp32_on_the_interpreter():
    mod = mlp()
    x = RNG.standard_normal((4, 16)).astype("float32")
    want = np.asarray(run_module(mod, [x]))
    for half, tol in (("float16", 1e-2), ("bfloat16", 5e-2)):
        for acc in ("float32", half):
            got = np.asarray(run_module(to_mixed_precision(mod, half, acc), [x]))
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_conv_and_out_of_range_constants():
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), dtype="float32")) -> R.Tensor((1, 4, 8, 8), dtype="float32"):
        with R.dataflow():
            c = R.nn.conv2d(x, metadata["ir.GenericConst"][0], padding=[1, 1, 1, 1])
            big = R.add(c, metadata["ir.GenericConst"][1])
            small = R.add(c, metadata["ir.GenericConst"][2])
            gv = R.add(big, small)
            R.output(gv)
        return gv
'''
    consts = {"ir.GenericConst/0": RNG.standard_normal((4, 4, 3, 3)).astype("float32"),
              "ir.GenericConst/1": np.full((1, 4, 1, 1), 1e6, "float32"),
              "ir.GenericConst/2": np.ones((1, 4, 1, 1), "float32")}
    new = to_mixed_precision(parse_module(text, constants=consts), "float16", "float16")
    b = bindings(new)
    assert dtype(b["c"]) == "float16" and b["c"].value.attrs.out_dtype == "float16"
    assert dtype(b["big"]) == "float32"  # 1e6 does not fit fp16: fp32, as TVM
    assert dtype(b["small"]) == "float16"
    # bfloat16 has fp32's range: the big constant is cast
    assert dtype(bindings(to_mixed_precision(parse_module(text, constants=consts), "bfloat16", "bfloat16"))["big"]) == "bfloat16"


def test_a_module_without_fp32_tensor_core_ops_is_unchanged_and_bad_dtypes_are_refused():
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            gv = R.nn.softmax(x, axis=-1)
            R.output(gv)
        return gv
'''
    mod = parse_module(text)
    assert to_mixed_precision(mod) is mod
    with pytest.raises(PassError, match="dtype must be one of"):
        ToMixedPrecision("float64")
    with pytest.raises(PassError, match="out_dtype"):
        ToMixedPrecision("float16", "bfloat16")


def test_an_embedding_lookup_keeps_the_stream_in_half():
    """take follows its table (byocc; TVM: never): gathering from the fp16 table is exactly
    the cast of the fp32 gather, and the residual stream after it stays fp16."""
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2, 3), dtype="int64"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor((2, 3, 8), dtype="float32"):
        with R.dataflow():
            e = R.take(metadata["ir.GenericConst"][0], ids, axis=0)
            m = R.matmul(e, w)
            r = R.add(e, m)
            gv = R.nn.layer_norm(r, metadata["ir.GenericConst"][1], metadata["ir.GenericConst"][2], axes=[-1])
            R.output(gv)
        return gv
'''
    consts = {"ir.GenericConst/0": RNG.standard_normal((10, 8)).astype("float32"),
              "ir.GenericConst/1": np.ones(8, "float32"), "ir.GenericConst/2": np.zeros(8, "float32")}
    mod = parse_module(text, constants=consts)
    new = to_mixed_precision(mod, "float16", "float16")
    b = bindings(new)
    assert [dtype(b[n]) for n in ("e", "m", "r")] == ["float16"] * 3
    assert b["e"].value.args[0].struct_info.dtype == "float16"  # the table converted at compile time
    ids = RNG.integers(0, 10, (2, 3)).astype("int64")
    w = RNG.standard_normal((8, 8)).astype("float32")
    np.testing.assert_allclose(np.asarray(run_module(new, [ids, w])), np.asarray(run_module(mod, [ids, w])),
                               rtol=2e-2, atol=2e-2)


def test_long_chains_run_without_recursion():
    """30 000 bindings through RecomposeOps and ToMixedPrecision (linear passes, no recursion
    over bindings): a matmul / sigmoid / multiply chain whose last silu-shaped pair fuses."""
    import sys

    from byocc.ir import DataflowBlock
    from byocc.ir import DataflowVar
    from byocc.ir import Function
    from byocc.ir import IRModule
    from byocc.ir import SeqExpr
    from byocc.ir import TensorStructInfo
    from byocc.ir import Var
    from byocc.ir import VarBinding
    from byocc.ops import constant_of
    from byocc.ops import make_call
    from byocc.transform import recompose_ops

    n = 30_000
    x = Var("x", TensorStructInfo((4, 4), "float32"))
    w = constant_of(np.eye(4, dtype="float32"))
    binds, cur = [], x
    for i in range(n):
        k = i % 3
        value = (make_call("relax.matmul", [cur, w]) if k == 0 else make_call("relax.sigmoid", [cur]) if k == 1
                 else make_call("relax.multiply", [binds[-2].var, cur]))
        cur = (Var if i == n - 1 else DataflowVar)(f"v{i}", value.struct_info)
        binds.append(VarBinding(cur, value))
    func = Function((x,), SeqExpr((DataflowBlock(tuple(binds)),), cur), cur.struct_info, True, {"global_symbol": "main"})
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        fused = recompose_ops(IRModule({"main": func}))
        new = to_mixed_precision(fused, "float16", "float16")
    finally:
        sys.setrecursionlimit(limit)
    names = [b.value.op.name for b in new["main"].body.blocks[0].bindings if isinstance(b.value, Call)]
    assert names.count("relax.nn.silu") == n // 3 and names.count("relax.matmul") == n // 3
    assert new["main"].ret_struct_info.dtype == "float32"
