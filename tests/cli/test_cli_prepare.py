"""`byocc partition --layout NHWC --fold-batch-norm` on the sample CNN imported from ONNX:
every convolution ends up in a cutlass function, --explain says so, and the partitioned
module still computes what the ONNX model does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from byocc.cli import cli

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "samples" / "small_cnn.onnx"


@pytest.fixture(scope="module")
def cnn_relax(tmp_path_factory):
    out = tmp_path_factory.mktemp("cnn") / "cnn.relax"
    result = CliRunner().invoke(cli, ["import", str(CNN), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _explain(model, *extra):
    report = Path(model).with_suffix(".explain.json")
    result = CliRunner().invoke(cli, ["partition", str(model), "--path", "merge", "--backend", "cutlass",
                                      *extra, "--explain-json", str(report)])
    assert result.exit_code == 0, result.output
    return result.stdout, json.loads(report.read_text())


def test_nchw_convolutions_stay_on_the_host_with_the_reason(cnn_relax):
    text, report = _explain(cnn_relax)
    convs = [row for row in report["host"] if row["op"] == "relax.nn.conv2d"]
    assert len(convs) == 5
    assert all("NCHW" in row["reason"] for row in convs)
    assert "R.nn.conv2d" in text


def test_layout_nhwc_offloads_every_convolution(cnn_relax):
    text, report = _explain(cnn_relax, "--layout", "NHWC", "--fold-batch-norm")
    assert not [row for row in report["host"] if row["op"] in ("relax.nn.conv2d", "relax.nn.batch_norm")]
    composites = [c for item in report["offloaded"] for c in item["composites"]]
    assert sum(c.startswith("cutlass.conv2d") for c in composites) >= 4
    main = text.split("def main(")[1]
    assert "R.nn.conv2d" not in main and "R.nn.batch_norm" not in main


def test_prepared_partition_verifies(cnn_relax):
    result = CliRunner().invoke(cli, ["verify", str(cnn_relax), "--path", "merge", "--backend", "cutlass",
                                      "--trials", "2"])
    assert result.exit_code == 0, result.output


def test_output_folder_writes_constant_sidecars_that_read_back(cnn_relax, tmp_path):
    """`-o` with lifted constants: each written module gets its `.npz`, and the partitioned
    module read back from the folder computes what the imported model does."""
    import numpy as np

    from byocc.backends import register_codegen
    from byocc.backends import unregister_codegen
    from byocc.runtime import Interpreter
    from byocc.runtime import random_arguments
    from byocc.text import read_file
    from byocc.transform import stub_codegen

    patterns = tmp_path / "mm.py"
    patterns.write_text('patterns = [("stubbed.mm", is_op("relax.matmul")(wildcard(), wildcard()))]\n')
    out = tmp_path / "out"
    register_codegen("stubbed", stub_codegen("stubbed"))
    try:
        result = CliRunner().invoke(cli, ["partition", str(cnn_relax), "--path", "merge", "--patterns",
                                          str(patterns), "--no-bind-constants", "-o", str(out)])
    finally:
        unregister_codegen("stubbed")
    assert result.exit_code == 0, result.output
    assert (out / "cnn.partitioned.npz").exists() and (out / "cnn.codegen.npz").exists()
    original = read_file(str(cnn_relax))
    partitioned = read_file(str(out / "cnn.partitioned.relax"))
    args = list(random_arguments(original["main"], 3).values())
    expected = np.asarray(Interpreter(original).run(args))
    np.testing.assert_allclose(np.asarray(Interpreter(partitioned).run(args)), expected, rtol=1e-5, atol=1e-6)
