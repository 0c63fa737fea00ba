"""ONNX's own backend test data: every model byocc can import must compute the stored
outputs with the interpreter.

The onnx package ships ``backend/test/data/{simple,pytorch-converted,pytorch-operator}/*``
with ``model.onnx`` and ``test_data_set_0/{input,output}_*.pb``. A case whose importer
error is an :class:`~byocc.ir.UnsupportedError` (sequences, strings, training graphs,
data-dependent shapes) is skipped with the reason; every other case must import, run
(with struct-info checking on) and match. The summary test pins the coverage.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from byocc.frontend import from_onnx
from byocc.ir import UnsupportedError
from byocc.runtime import flatten_outputs
from byocc.runtime import run_module

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
KINDS = ("simple", "pytorch-converted", "pytorch-operator")
MAX_MODEL_BYTES = 1 << 20  # keep the suite fast: skip very large models
CASES = sorted(p for kind in KINDS for p in (DATA / kind).glob("*") if (p / "model.onnx").is_file())

# Reasons a case may be skipped (anything else unsupported is a regression)
EXPECTED_UNSUPPORTED = ("Sequence", "SplitToSequence", "ConcatFromSequence", "StringNormalizer",
                        "ai.onnx.preview.training", "the shape input of Expand must be a constant",
                        "is a string tensor")


def load_case(case: Path):
    ds = case / "test_data_set_0"
    inputs = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(ds.glob("input_*.pb"))]
    outputs = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(ds.glob("output_*.pb"))]
    return onnx.load(str(case / "model.onnx")), inputs, outputs


def run_case(case: Path) -> str:
    """'pass', or 'unsupported: <reason>'; raises AssertionError on a wrong result."""
    model, inputs, outputs = load_case(case)
    try:
        mod = from_onnx(model)
    except UnsupportedError as err:
        return "unsupported: " + err.message.replace("\n", " ")
    got = flatten_outputs(run_module(mod, inputs[: len(mod["main"].params)], check=True))
    assert len(got) == len(outputs)
    for g, e in zip(got, outputs):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=1e-3, atol=1e-4,
                                   equal_nan=True)
    return "pass"


@pytest.mark.parametrize("case", [c for c in CASES if (c / "model.onnx").stat().st_size <= MAX_MODEL_BYTES],
                         ids=lambda c: f"{c.parent.name}/{c.name}")
def test_backend_case(case):
    status = run_case(case)
    if status != "pass":
        assert any(r in status for r in EXPECTED_UNSUPPORTED), status
        pytest.skip(status[:200])


def test_backend_coverage_summary(capsys):
    statuses = {c.name: run_case(c) for c in CASES if (c / "model.onnx").stat().st_size <= MAX_MODEL_BYTES}
    supported = sum(1 for s in statuses.values() if s == "pass")
    with capsys.disabled():
        print(f"\nONNX backend data: {supported}/{len(statuses)} cases supported, {supported} pass")
    assert len(statuses) >= 130
    assert supported >= 120


@pytest.mark.parametrize("name", ["shufflenet", "squeezenet"])
def test_light_real_architectures(name):
    """Real CNN graphs (weights made by ConstantOfShape) on onnx's dummy input: the stored
    outputs come from onnx's evaluator."""
    from onnx.backend.test.runner import Runner

    light = DATA / "light"
    model = onnx.load(str(light / f"light_{name}.onnx"))
    inits = {i.name for i in model.graph.initializer}
    args = [Runner.generate_dummy_data(x, seed=0, name=name, random=False)
            for x in model.graph.input if x.name not in inits]
    expected = numpy_helper.to_array(onnx.load_tensor(str(light / f"light_{name}_output_0.pb")))
    got = run_module(from_onnx(model), args)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-7)
