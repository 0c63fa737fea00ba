"""partition_for_cutlass where TVM 0.27 is wrong or raises (tests/data/attention_rewrite_defects,
reproducers from tools/tvm_diff_attention.py): byocc gives a well-formed module that computes
what the input computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from byocc.backends.cutlass.rewrites import rewrite_attention
from byocc.ir.well_formed import well_formed
from byocc.relax.backend.cuda.cutlass import partition_for_cutlass
from byocc.runtime import Interpreter
from byocc.runtime import random_arguments
from byocc.script import from_source

DATA = Path(__file__).parents[1] / "data" / "attention_rewrite_defects"


def _load(name: str):
    return from_source((DATA / f"{name}.relax").read_text())


def _same_results(a, b, func_name="main", dims=None):
    args = [np.asarray(x * 0.25, dtype=x.dtype) for x in random_arguments(a[func_name], seed=11, dims=dims).values()]
    exp = np.asarray(Interpreter(a).run(args, func_name), dtype=np.float64)
    act = np.asarray(Interpreter(b).run(args, func_name), dtype=np.float64)
    assert exp.shape == act.shape
    np.testing.assert_allclose(act, exp, rtol=2e-2, atol=2e-3)


def _step1(mod):
    return mod.with_function("main", rewrite_attention(mod["main"]), mod.get_global_var("main"))


def test_repeat_on_the_sequence_axis_is_dropped_as_tvm_does():
    mod = _load("repeat_axis1")
    assert partition_for_cutlass(mod).script() + "\n" == (DATA / "repeat_axis1.annotate.txt").read_text()
    rewritten = _step1(mod)
    assert "R.repeat" not in rewritten.script()
    _same_results(mod, rewritten)


@pytest.mark.parametrize("k_axis,v_axis,k_rep,v_rep,ok", [
    (2, 2, 2, 2, True), (-2, 2, 4, 4, True), (1, 1, 2, 2, True), (-3, 1, 3, 3, True),
    (1, 1, 2, 3, False), (1, 2, 2, 2, False), (3, 3, 2, 2, False), (0, 0, 2, 2, False)])
def test_which_repeats_the_multi_query_rewrite_may_drop(k_axis, v_axis, k_rep, v_rep, ok):
    from byocc.backends.cutlass.rewrites import _check_repeats
    from byocc.backends.cutlass.rewrites import _Reject
    from byocc.ir import TensorStructInfo
    from byocc.ir import Var
    from byocc.ops.registry import make_call

    x = Var("x", TensorStructInfo((2, 16, 4, 32), "float16"))
    rk = make_call("relax.repeat", [x], {"repeats": k_rep, "axis": k_axis})
    rv = make_call("relax.repeat", [x], {"repeats": v_rep, "axis": v_axis})
    if ok:
        _check_repeats(rk, rv)
    else:
        with pytest.raises(_Reject):
            _check_repeats(rk, rv)


def test_tvm_defect_symbolic_bias_check_raises_value_error():
    """TVM raises ValueError comparing an int with a symbolic dim; byocc rewrites (the bias
    (1, 16, 16) becomes (1, 1, 16, 16)) and keeps the results."""
    mod = _load("valueerror")
    rewritten = _step1(mod)
    text = rewritten.script()
    assert "R.nn.attention_bias(" in text and "R.shape([1, 1, 16, 16])" in text
    assert not well_formed(rewritten)
    _same_results(mod, rewritten, dims={"b": 3})


def test_tvm_defect_shape_changing_attention_replacement():
    """TVM replaces a BSNH output by a (8, 16, 1, 32) attention and retypes main; byocc keeps
    main's (2, 16, 4, 32) result."""
    mod = _load("shape_change")
    out = partition_for_cutlass(mod)
    assert not well_formed(out)
    assert out["main"].ret_struct_info == mod["main"].ret_struct_info
    _same_results(mod, _step1(mod))


def test_tvm_defect_matmul_check_on_unknown_shape_raises_attribute_error():
    """TVM's cutlass matmul check raises on an operand of unknown shape; byocc leaves the
    matmul on the host."""
    mod = _load("unknown_shape_matmul")
    for annotate in (True, False):
        out = partition_for_cutlass(mod, annotate_codegen=annotate)
        assert not well_formed(out)
        assert "= R.matmul(x, w" in out.script()
