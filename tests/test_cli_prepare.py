"""`byocc partition --layout NHWC --fold-batch-norm` on the sample CNN imported from ONNX:
every convolution ends up in a cutlass function, --explain says so, and the partitioned
module still computes what the ONNX model does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from byocc.cli import cli

ROOT = Path(__file__).resolve().parents[1]
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
