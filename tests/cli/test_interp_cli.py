"""``byocc run``, ``byocc verify`` and ``byocc import`` through click's test runner."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from byocc.cli.import_ import import_
from byocc.cli.main import ByoccGroup
from byocc.cli.run import run
from byocc.cli.verify import verify

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture()
def cli():
    @click.group(cls=ByoccGroup)
    @click.option("--debug", is_flag=True)
    def group(debug):
        pass

    for command in (run, verify):
        group.add_command(command)
    group.add_command(import_, name="import")
    return group


def invoke(cli, *args, **kw):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, **kw)


def test_run_random_inputs_summary_and_npz(cli, tmp_path):
    out = tmp_path / "out.npz"
    r = invoke(cli, "run", SAMPLES / "mlp_fp16.relax", "--random-inputs", "7", "-o", out)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "main: 1 output"
    assert lines[1].split() == ["output", "shape", "dtype", "min", "max", "mean"]
    assert lines[2].split()[:4] == ["output_0", "(16,", "10)", "float16"]
    assert r.stderr == f"wrote 1 output to {out}\n"
    with np.load(out) as npz:
        assert npz.files == ["output_0"] and npz["output_0"].dtype == np.float16
        first = npz["output_0"]
    again = tmp_path / "again.npz"
    invoke(cli, "run", SAMPLES / "mlp_fp16.relax", "--random-inputs", "7", "-o", again)
    with np.load(again) as npz:
        np.testing.assert_array_equal(npz["output_0"], first)


def test_run_with_inputs_by_name_and_position(cli, tmp_path):
    x = np.arange(100, dtype=np.float32).reshape(10, 10)
    y = np.full((10, 10), 2, np.float32)
    np.savez(tmp_path / "named.npz", y=y, x=x)
    np.savez(tmp_path / "positional.npz", x, y)
    for name in ("named.npz", "positional.npz"):
        r = invoke(cli, "run", SAMPLES / "seed.relax", "--inputs", tmp_path / name, "-o", tmp_path / "o.npz")
        assert r.exit_code == 0, r.output
        with np.load(tmp_path / "o.npz") as npz:
            np.testing.assert_array_equal(npz["output_0"], x * y)
    np.savez(tmp_path / "bad.npz", x=x)
    r = invoke(cli, "run", SAMPLES / "seed.relax", "--inputs", tmp_path / "bad.npz")
    assert r.exit_code == 1
    assert "error: " in r.stderr and "missing 'y'" in r.stderr


def test_run_onnx_model_directly(cli):
    r = invoke(cli, "run", SAMPLES / "small_encoder.onnx")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "main: 2 outputs"
    assert "(1, 16, 32)" in r.stdout and "(1, 32)" in r.stdout


def test_run_unknown_entry_is_an_input_error(cli):
    r = invoke(cli, "run", SAMPLES / "seed.relax", "--entry", "nope")
    assert r.exit_code == 1
    assert "no function 'nope' (functions: main)" in r.stderr


@pytest.mark.parametrize("path", ["annotate", "merge"])
def test_verify_ok(cli, path):
    r = invoke(cli, "verify", SAMPLES / "transformer_block_fp16.relax", "--backend", "cutlass",
               "--path", path, "--trials", "2")
    assert r.exit_code == 0, r.output
    assert "comparing partitioned and codegen with the original over 2 trials" in r.stderr
    rows = [line.split() for line in r.stdout.splitlines()[2:]]
    assert [row[:2] for row in rows] == [["output_0", "partitioned"], ["output_0", "codegen"]]
    assert all(row[-1] == "ok" for row in rows)


def test_verify_says_it_checked_the_program_on_the_interpreter_not_the_generated_code(cli, tmp_path):
    # a bare transpose composite has no CUDA code: partition -o fails, verify still says ok,
    # and it says what that ok is about
    from byocc.cli import cli as byocc

    refused = Path(__file__).resolve().parents[1] / "data" / "refused"
    args = [refused / "softmax_fp16.relax", "--patterns", refused / "softmax_patterns.py",
            "--backend", "cutlass", "--path", "merge"]
    generated = invoke(byocc, "partition", *args, "-o", tmp_path / "out")
    assert generated.exit_code == 1 and "cannot generate code" in generated.stderr
    r = invoke(cli, "verify", *args, "--trials", "1")
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()
    assert lines[0].endswith("over 1 trial on the numpy interpreter (the generated code is not run)")
    assert lines[-1] == ("ok: the partitioned module computes what the original does (on the interpreter; "
                         "the generated code was not run)")
    shown = " ".join(invoke(cli, "verify", "--help").stdout.split())
    assert "Check, on the interpreter, that partitioning MODEL keeps what it computes." in shown
    assert "This checks the partitioned program, not the generated code: no CUDA code is generated, " \
           "compiled or run" in shown


def test_verify_reports_a_mismatch(cli, monkeypatch):
    """A pass that changes the computation must be caught (exit 1, the worst error shown)."""
    import byocc.transform

    real = byocc.transform.partition

    def broken_partition(mod, patterns, **kw):
        from byocc.text import parse_module
        from byocc.text import print_module

        text = print_module(real(mod, patterns, **kw)).replace("R.multiply(x_1, y_1)", "R.add(x_1, y_1)")
        return parse_module(text)

    monkeypatch.setattr(byocc.transform, "partition", broken_partition)
    r = invoke(cli, "verify", SAMPLES / "seed.relax", "--patterns", SAMPLES / "seed_patterns.py")
    assert r.exit_code == 1
    rows = [line.split() for line in r.stdout.splitlines()[2:]]
    assert [row[:2] + row[-3:-1] for row in rows] == [["output_0", "partitioned", "MISMATCH", "(seed"],
                                                      ["output_0", "codegen", "MISMATCH", "(seed"]]
    assert float(rows[0][5]) > 1.0  # the largest absolute error is reported
    assert r.stderr.splitlines()[-1] == "error: 2 outputs differ beyond tolerance"


def test_verify_needs_patterns(cli):
    r = invoke(cli, "verify", SAMPLES / "seed.relax")
    assert r.exit_code == 2
    assert "give a pattern table" in r.stderr


def test_import_writes_module_and_sidecar(cli, tmp_path):
    out = tmp_path / "cnn.relax"
    r = invoke(cli, "import", SAMPLES / "small_cnn.onnx", "-o", out)
    assert r.exit_code == 0, r.output
    assert r.stderr == f"wrote {out} (25 bindings) and {tmp_path / 'cnn.npz'} (15 constants)\n"
    text = out.read_text()
    assert text.startswith("# from tvm.script import ir as I\n") and text.endswith("show it.\n")
    with np.load(tmp_path / "cnn.npz") as npz:
        assert npz["ir.GenericConst/0"].shape == (8, 3, 3, 3)
    # the written pair runs and matches the ONNX model run directly
    r1 = invoke(cli, "run", out, "--random-inputs", "1", "-o", tmp_path / "a.npz")
    r2 = invoke(cli, "run", SAMPLES / "small_cnn.onnx", "--random-inputs", "1", "-o", tmp_path / "b.npz")
    assert r1.exit_code == r2.exit_code == 0
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        np.testing.assert_array_equal(a["output_0"], b["output_0"])


def test_import_params_as_inputs_to_stdout(cli):
    r = invoke(cli, "import", SAMPLES / "small_encoder.onnx", "--params-as-inputs")
    assert r.exit_code == 0, r.output
    assert "def main(input_ids: R.Tensor((1, 16), dtype=\"int64\"), attention_mask: R.Tensor((1, 16), " \
           "dtype=\"int64\"), embeddings_word_embeddings_weight: R.Tensor((50, 32), dtype=\"float32\")" in r.stdout
    assert 'R.func_attr({"num_input": 2})' in r.stdout


def test_import_unsupported_model_exit_1(cli, tmp_path):
    from onnx import TensorProto
    from onnx import helper
    from onnx import save

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    graph = helper.make_graph([helper.make_node("Det", ["x"], ["y"], name="d0")], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "m.onnx"
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    r = invoke(cli, "import", path, "-o", tmp_path / "m.relax")
    assert r.exit_code == 1
    assert r.stderr.startswith(f"{path}: error: 1 ONNX node cannot be imported:\n  Det (node 'd0', opset 13)")
    assert not (tmp_path / "m.relax").exists()
