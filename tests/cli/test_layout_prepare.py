"""prepare_for_backend on the ONNX sample CNN: every conv2d lands in a CUTLASS composite and
the module computes the same values before preparing, after it and after partitioning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from byocc.backends import get_patterns_with_prefix
from byocc.backends import prepare_for_backend
from byocc.backends import prepare_passes
from byocc.frontend import from_onnx
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import Function
from byocc.ir import PassError
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.well_formed import well_formed
from byocc.runtime import Interpreter
from byocc.transform import partition

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "small_cnn.onnx"


@pytest.fixture(scope="module")
def cnn():
    return from_onnx(str(SAMPLE))


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((1, 3, 32, 32)).astype("float32") for _ in range(2)]


def op_calls(func: Function, name: str) -> list[Call]:
    out = []
    for blk in func.body.blocks:
        for b in blk.bindings:
            v = b.value
            if isinstance(v, Call) and getattr(v.op, "name", None) == name:
                out.append(v)
            elif isinstance(v, Function):  # composite functions nested in Codegen functions
                out.extend(op_calls(v, name))
    return out


def logits_module(mod):
    """The model without its final softmax, so float differences are not squashed."""
    func = mod["main"]
    block = func.body.blocks[-1]
    *rest, last = block.bindings
    assert last.value.op.name == "relax.nn.softmax"
    logits = last.value.args[0]
    out = Var("logits", logits.struct_info)
    bindings = tuple(rest) + (VarBinding(out, logits),)
    body = SeqExpr(tuple(func.body.blocks[:-1]) + (DataflowBlock(bindings),), out)
    return mod.with_function("main", Function(func.params, body, out.struct_info, True, dict(func.attrs)))


def test_every_conv2d_is_offloaded_to_cutlass_after_prepare(cnn, inputs):
    prepared = prepare_for_backend(cnn, "cutlass")
    assert well_formed(prepared) == []
    main = prepared["main"]
    assert op_calls(main, "relax.nn.batch_norm") == []
    convs = op_calls(main, "relax.nn.conv2d")
    assert len(convs) == len(op_calls(cnn["main"], "relax.nn.conv2d")) == 5
    assert all((c.attrs.data_layout, c.attrs.kernel_layout) == ("NHWC", "OHWI") for c in convs)
    # one transpose for the input, one before the flatten (reshape) of the head
    assert len(op_calls(main, "relax.permute_dims")) == 2

    parted = partition(prepared, get_patterns_with_prefix("cutlass"), path="merge")
    assert well_formed(parted) == []
    assert op_calls(parted["main"], "relax.nn.conv2d") == []
    offloaded = 0
    for name, func in parted.items():
        if name == "main" or not isinstance(func, Function):
            continue
        assert func.attrs.get("Codegen") == "cutlass"
        offloaded += len(op_calls(func, "relax.nn.conv2d"))
    assert offloaded == 5

    for x in inputs:
        want = Interpreter(cnn).run([x])
        np.testing.assert_allclose(Interpreter(prepared).run([x]), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(Interpreter(parted).run([x]), want, rtol=1e-5, atol=1e-6)


def test_logits_agree_to_float32_tolerance(cnn, inputs):
    before = logits_module(cnn)
    after = prepare_for_backend(before, "cutlass")
    for x in inputs:
        want = Interpreter(before).run([x])
        got = Interpreter(after).run([x])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_without_layout_conversion_no_conv_is_offloaded(cnn):
    prepared = prepare_for_backend(cnn, "cutlass", layout=None)
    assert op_calls(prepared["main"], "relax.nn.batch_norm") == []
    assert all(c.attrs.data_layout == "NCHW" for c in op_calls(prepared["main"], "relax.nn.conv2d"))
    parted = partition(prepared, get_patterns_with_prefix("cutlass"), path="merge")
    assert len(op_calls(parted["main"], "relax.nn.conv2d")) == 5  # NCHW fails CUTLASS's check


def test_fold_batch_norm_can_be_turned_off(cnn):
    prepared = prepare_for_backend(cnn, "cutlass", fold_batch_norm=False)
    (bn,) = op_calls(prepared["main"], "relax.nn.batch_norm")
    assert bn.attrs.axis == 3  # carried into NHWC


def test_pass_lists():
    names = [p.pass_name for p in prepare_passes("cutlass")]
    assert names == ["FoldConstant", "FoldBatchNorm", "ConvertLayout", "FoldConstant",
                     "DeadCodeElimination", "CanonicalizeBindings"]
    assert "ConvertLayout" not in [p.pass_name for p in prepare_passes("cublas")]
    with pytest.raises(PassError):
        prepare_passes("cutlass", layout="NCHW4c")
