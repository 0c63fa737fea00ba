"""The numpy interpreter on whole modules: plain, partitioned (both paths), codegen'd,
symbolic shapes, match_cast, local functions, If, value lifetimes and errors."""

from __future__ import annotations

import weakref
from pathlib import Path

import numpy as np
import pytest

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import InterpretError
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import TensorStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.ops import make_call
from byocc.runtime import Interpreter
from byocc.runtime import ShapeValue
from byocc.runtime import bind_arguments
from byocc.runtime import compare
from byocc.runtime import flatten_outputs
from byocc.runtime import random_arguments
from byocc.runtime import run_module
from byocc.text import parse_module
from byocc.text import read_file

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def sample(name: str):
    return read_file(str(SAMPLES / name))


def partition(mod, patterns, path):
    try:
        from byocc.transform import partition as fn
    except ImportError:
        from byocc.transform.pipeline import partition as fn
    return fn(mod, patterns, path=path)


def cutlass_patterns():
    from byocc.backends import get_patterns_with_prefix

    return get_patterns_with_prefix("cutlass")


def mlp_numpy(x, w1, b1, w2, b2, w3, b3):
    """The MLP with every op computed in float64 and rounded to float16, as the IR says."""
    def op(v):
        return v.astype(np.float16)

    def f(v):
        return v.astype(np.float64)
    h = x
    for w, b, relu in ((w1, b1, True), (w2, b2, True), (w3, b3, False)):
        h = op(f(op(f(h) @ f(w))) + f(b))
        if relu:
            h = np.maximum(h, np.float16(0))
    return h


def test_plain_module_float16_matches_numpy():
    mod = sample("mlp_fp16.relax")
    func = mod["main"]
    args = bind_arguments(func, random_arguments(func, seed=3))
    out = Interpreter(mod, check=True).run(args)
    assert out.dtype == np.float16 and out.shape == (16, 10)
    np.testing.assert_array_equal(out, mlp_numpy(*args))


@pytest.mark.parametrize("path", ["annotate", "merge"])
def test_partitioned_and_codegen_modules_compute_the_same(path):
    from byocc.transform import RunCodegen
    from byocc.transform import stub_codegen

    mod = sample("transformer_block_fp16.relax")
    part = partition(mod, cutlass_patterns(), path)
    assert any("Codegen" in f.attrs for _, f in part.items() if isinstance(f, Function))
    codegen = RunCodegen(codegens={"cutlass": stub_codegen("cutlass")})(part)
    assert "offloaded" in codegen.extras
    main_text = str(codegen)
    assert "R.call_dps_packed(" in main_text
    func = mod["main"]
    for seed in (0, 1):
        args = bind_arguments(func, random_arguments(func, seed))
        expected = run_module(mod, args)
        for m in (part, codegen):
            got = Interpreter(m, check=True).run(args)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)


def test_codegen_module_read_back_needs_an_implementation():
    from byocc.text import print_module
    from byocc.transform import RunCodegen
    from byocc.transform import stub_codegen

    mod = sample("seed.relax")
    from byocc.backends import load_pattern_file

    part = partition(mod, load_pattern_file(str(SAMPLES / "seed_patterns.py")), "merge")
    codegen = RunCodegen(codegens={"cutlass": stub_codegen("cutlass")})(part)
    reread = parse_module(print_module(codegen))
    x, y = np.full((10, 10), 2, np.float32), np.full((10, 10), 3, np.float32)
    with pytest.raises(InterpretError, match="no implementation of the external function "
                                              "'fused_relax_multiply1_cutlass'") as info:
        run_module(reread, [x, y])
    assert any("RunCodegen" in n for n in info.value.notes)
    out = run_module(reread, [x, y], packed={"fused_relax_multiply1_cutlass": lambda a, b: a * b + 1})
    np.testing.assert_array_equal(out, np.full((10, 10), 7, np.float32))


SYMBOLIC = '''# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import relax as R

batch = TypeVar("batch")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((batch, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16")) -> R.Tensor(("batch * 2", 64), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((batch, 128), dtype="float16") = R.matmul(x, w, out_dtype=None)
            lv1: R.Tensor((batch, 128), dtype="float16") = R.nn.relu(lv)
            gv: R.Tensor((batch * 2, 64), dtype="float16") = R.reshape(lv1, R.shape([batch * 2, 64]))
            R.output(gv)
        return gv
'''


@pytest.mark.parametrize("batch", [1, 7])
def test_symbolic_dims_bind_from_inputs(batch):
    mod = parse_module(SYMBOLIC)
    x = np.ones((batch, 64), np.float16)
    w = np.full((64, 128), 0.5, np.float16)
    out = Interpreter(mod, check=True).run([x, w])
    assert out.shape == (batch * 2, 64) and out.dtype == np.float16
    np.testing.assert_array_equal(out, np.full((batch * 2, 64), 32, np.float16))


def test_wrong_input_shape_names_the_parameter():
    mod = parse_module(SYMBOLIC)
    with pytest.raises(InterpretError, match=r"argument 'w' of main: dimension 0 is 32, but 64 is required"):
        run_module(mod, [np.ones((3, 64), np.float16), np.ones((32, 128), np.float16)])
    with pytest.raises(InterpretError, match=r"argument 'x' of main: expected dtype float16"):
        run_module(mod, [np.ones((3, 64), np.float32), np.ones((64, 128), np.float16)])


MATCH_CAST = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)) -> R.Tensor(dtype="float32", ndim=2):
        m = T.int64()
        k = T.int64()
        y: R.Tensor((m, k), dtype="float32") = R.match_cast(x, R.Tensor((m, k), dtype="float32"))
        z: R.Tensor((m, k), dtype="float32") = R.add(y, y)
        s: R.Tensor((k, m), dtype="float32") = R.reshape(z, R.shape([k, m]))
        return s
'''


def test_match_cast_binds_dims_used_later():
    mod = parse_module(MATCH_CAST)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run_module(mod, [x], check=True)
    np.testing.assert_array_equal(out, (x + x).reshape(3, 2))
    # the binding's annotation must equal the cast type (TVM rejects anything else)
    bad = parse_module(MATCH_CAST.replace("R.Tensor((m, k), dtype=\"float32\") = R.match_cast(x, R.Tensor((m, k)",
                                          "R.Tensor((m, 4), dtype=\"float32\") = R.match_cast(x, R.Tensor((m, 4)"))
    with pytest.raises(InterpretError, match="R.match_cast to 'y': dimension 1 is 3, but 4 is required"):
        run_module(bad, [x])


def test_local_function_closure_and_tuple_results():
    # main calls a local function that captures an outer variable, and returns a tuple
    x = Var("x", tensor((3,), "float32"))
    p = Var("p", tensor((3,), "float32"))
    outer = make_call("relax.multiply", [x, x])
    sq = DataflowVar("sq", outer.struct_info)
    inner_call = make_call("relax.add", [p, sq])
    r = Var("r", inner_call.struct_info)
    local = Function((p,), SeqExpr((DataflowBlock((VarBinding(r, inner_call),)),), r), r.struct_info)
    f = Var("f", local.struct_info)
    call_local = Call(f, (x,), None, (), r.struct_info)
    out = Var("out", r.struct_info)
    from byocc.ops.convert import make_tuple

    tup = make_tuple([out, sq])
    res = Var("res", tup.struct_info)
    body = SeqExpr((DataflowBlock((VarBinding(sq, outer), VarBinding(f, local), VarBinding(out, call_local),
                                   VarBinding(res, tup))),), res)
    mod = IRModule({"main": Function((x,), body, res.struct_info, attrs={"global_symbol": "main"})})
    got = run_module(mod, [np.array([1, 2, 3], np.float32)], check=True)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_array_equal(got[0], [2, 6, 12])
    np.testing.assert_array_equal(got[1], [1, 4, 9])


def test_if_runs_the_chosen_branch():
    c = Var("c", tensor((), "bool"))
    x = Var("x", tensor((2,), "float32"))

    def branch(op):
        call = make_call(op, [x, x])
        v = Var("v", call.struct_info)
        from byocc.ir import BindingBlock

        return SeqExpr((BindingBlock((VarBinding(v, call),)),), v)

    si = tensor((2,), "float32")
    y = Var("y", si)
    from byocc.ir import BindingBlock

    body = SeqExpr((BindingBlock((VarBinding(y, If(c, branch("relax.add"), branch("relax.multiply"), si)),)),), y)
    mod = IRModule({"main": Function((c, x), body, si, attrs={"global_symbol": "main"})})
    xv = np.array([3, 4], np.float32)
    np.testing.assert_array_equal(run_module(mod, [np.array(True), xv]), [6, 8])
    np.testing.assert_array_equal(run_module(mod, [np.array(False), xv]), [9, 16])


def test_values_are_dropped_after_their_last_use():
    """``a`` is dead once ``probe`` has used it; the interpreter must not keep it alive."""
    si = tensor((4,), "float32")
    x = Var("x", si)
    seen: list = []

    def probe(v):
        seen.append(weakref.ref(v))
        return v + 1

    def check(v):
        assert seen[0]() is None, "a dead intermediate value is still referenced"
        return v

    a, b, c, d = (Var(n, si) for n in "abcd")
    bindings = (
        VarBinding(a, make_call("relax.add", [x, x])),
        VarBinding(b, Call(ExternFunc("probe"), (a,), None, (si,), si)),
        VarBinding(c, make_call("relax.multiply", [b, b])),
        VarBinding(d, Call(ExternFunc("check"), (c,), None, (si,), si)),
    )
    from byocc.ir import BindingBlock

    mod = IRModule({"main": Function((x,), SeqExpr((BindingBlock(bindings),), d), si, False,
                                     {"global_symbol": "main"})})
    out = run_module(mod, [np.ones(4, np.float32)], packed={"probe": probe, "check": check})
    np.testing.assert_array_equal(out, np.full(4, 9, np.float32))
    assert len(seen) == 1


def test_100k_bindings_run_without_recursion():
    si = tensor((4,), "float32")
    x = Var("x", si)
    one = Constant(np.ones((), np.float32), tensor((), "float32"))
    add = Op.get("relax.add")
    cur, bindings = x, []
    n = 100_000
    for i in range(n):
        v = DataflowVar(f"lv{i}", si) if i < n - 1 else Var("gv", si)
        bindings.append(VarBinding(v, Call(add, (cur, one), None, (), si)))
        cur = v
    mod = IRModule({"main": Function((x,), SeqExpr((DataflowBlock(tuple(bindings)),), cur), si,
                                     attrs={"global_symbol": "main"})})
    np.testing.assert_array_equal(run_module(mod, [np.zeros(4, np.float32)]), np.full(4, n, np.float32))


def test_constant_without_value_is_reported():
    si = tensor((2,), "float32")
    x = Var("x", si)
    call = make_call("relax.add", [x, Constant(None, si)])
    y = Var("y", call.struct_info)
    from byocc.ir import BindingBlock

    mod = IRModule({"main": Function((x,), SeqExpr((BindingBlock((VarBinding(y, call),)),), y), si,
                                     attrs={"global_symbol": "main"})})
    with pytest.raises(InterpretError, match="sidecar .npz") as info:
        run_module(mod, [np.ones(2, np.float32)])
    assert info.value.notes == ("while computing 'y' in main",)


def test_entry_and_arity_errors():
    mod = sample("seed.relax")
    with pytest.raises(InterpretError, match=r"no function 'nope' \(functions: main\)"):
        run_module(mod, [], entry="nope")
    with pytest.raises(InterpretError, match="main takes 2 arguments, got 1"):
        run_module(mod, [np.ones((10, 10), np.float32)])


def test_bind_arguments_by_name_then_position():
    func = sample("seed.relax")["main"]
    a, b = np.zeros((10, 10), np.float32), np.ones((10, 10), np.float32)
    assert [v is w for v, w in zip(bind_arguments(func, {"y": b, "x": a}), (a, b))] == [True, True]
    assert [v is w for v, w in zip(bind_arguments(func, {"arr_0": a, "arr_1": b}), (a, b))] == [True, True]
    with pytest.raises(InterpretError, match="missing 'y'"):
        bind_arguments(func, {"x": a})
    with pytest.raises(InterpretError, match="no parameter named 'z'"):
        bind_arguments(func, {"x": a, "y": b, "z": b})


def test_random_arguments_are_reproducible_and_share_symbolic_dims():
    func = parse_module(SYMBOLIC.replace("w: R.Tensor((64, 128)", "w: R.Tensor((batch, 128)"))["main"]
    a1, a2 = random_arguments(func, 5), random_arguments(func, 5)
    assert a1.keys() == {"x", "w"}
    np.testing.assert_array_equal(a1["x"], a2["x"])
    assert a1["x"].shape[0] == a1["w"].shape[0] and 10 <= a1["x"].shape[0] < 50
    assert random_arguments(func, 5, {"batch": 3})["x"].shape == (3, 64)


def test_compare_uses_dtype_tolerances():
    e16 = np.array([1.0, 2.0], np.float16)
    ok = compare(e16, (e16 + np.float16(0.01)).astype(np.float16))
    assert ok[0]["ok"] and ok[0]["rtol"] == 1e-2
    e32 = np.array([1.0, 2.0], np.float32)
    bad = compare((e32, ShapeValue((2,))), (e32 + 1e-3, ShapeValue((2,))))
    assert [r["ok"] for r in bad] == [False, True] and bad[0]["mismatches"] == 2
    assert compare(np.array([3], np.int32), np.array([4], np.int32))[0]["ok"] is False
    assert flatten_outputs(((e32, (e16,)), ShapeValue((1, 2)))) [2] == (1, 2)


def test_check_mode_catches_a_reference_that_disagrees_with_inference():
    si = tensor((2,), "float32")
    x = Var("x", si)
    call = make_call("relax.nn.relu", [x])
    y = Var("y", TensorStructInfo((2,), "float16"))  # annotation says float16
    from byocc.ir import BindingBlock

    mod = IRModule({"main": Function((x,), SeqExpr((BindingBlock((VarBinding(y, call),)),), y), y.struct_info,
                                     attrs={"global_symbol": "main"})})
    assert run_module(mod, [np.ones(2, np.float32)]).dtype == np.float32
    with pytest.raises(InterpretError, match="the value bound to 'y': expected dtype float16"):
        run_module(mod, [np.ones(2, np.float32)], check=True)
