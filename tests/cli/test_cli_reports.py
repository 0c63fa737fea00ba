"""What byocc tells the user (issue 9, class 4): misspelt operators in pattern files, the
preparation passes under the pass instruments, `--dump-ir` without stale files, `--explain`
blaming the right binding after a layout change, and `run`/`verify` saying what they
compared (no RuntimeWarning for NaN, "all NaN", "nothing was offloaded")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from byocc.cli import cli
from byocc.ir import PatternError

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SEED = SAMPLES / "seed.relax"
SEED_PATTERNS = SAMPLES / "seed_patterns.py"
HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_is_op_with_an_unknown_name_raises_with_the_nearest_names():
    from byocc.dpl import is_op

    with pytest.raises(PatternError, match=r"is_op: operator 'relax.mutliply' is not registered; "
                                           r"did you mean 'relax.multiply'"):
        is_op("relax.mutliply")
    with pytest.raises(PatternError, match="did you mean 'relax.nn.conv2d'"):
        is_op("relax.nn.conv2")
    assert is_op("relax.multiply") is not None


def test_a_misspelt_operator_in_a_pattern_file_is_located_there(tmp_path):
    patterns = tmp_path / "typo.py"
    patterns.write_text('patterns = [\n    ("cutlass.mul", is_op("relax.mutliply")(wildcard(), wildcard())),\n]\n')
    result = run("partition", SEED, "--patterns", patterns)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0].startswith(
        f"{patterns}:2:1: error: is_op: operator 'relax.mutliply' is not registered; did you mean 'relax.multiply'")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cnn")
    assert run("import", SAMPLES / "small_cnn.onnx", "-o", folder / "cnn.relax").exit_code == 0
    return folder / "cnn.relax"


def test_preparation_passes_run_under_the_instruments(cnn, tmp_path):
    dump = tmp_path / "dump"
    result = run("partition", cnn, "--backend", "cutlass", "--layout", "NHWC", "--fold-batch-norm",
                 "--time-passes", "--print-after", "ConvertLayout", "--dump-ir", dump)
    assert result.exit_code == 0, result.stderr
    assert "  FoldBatchNorm: " in result.stderr and "  ConvertLayout: " in result.stderr
    assert "After Running Pass: ConvertLayout\n" in result.stderr
    assert "no pass of that name ran" not in result.stderr
    names = sorted(p.name for p in dump.iterdir())
    assert "001_FoldBatchNorm.relax" in names and "002_ConvertLayout.relax" in names
    # a second run with fewer passes leaves none of the first run's files
    result = run("partition", cnn, "--backend", "cutlass", "--dump-ir", dump)
    assert result.exit_code == 0
    assert sorted(p.name for p in dump.iterdir()) == ["000_FuseOpsByPattern.relax", "001_partition.relax"]


DEPTHWISE = HEADER + """\
    @R.function
    def main(x: R.Tensor((1, 8, 16, 16), dtype="float16"), w: R.Tensor((8, 1, 3, 3), dtype="float16")) -> R.Tensor((1, 8, 16, 16), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((1, 8, 16, 16), dtype="float16") = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=8, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
            gv: R.Tensor((1, 8, 16, 16), dtype="float16") = R.nn.relu(lv)
            R.output(gv)
        return gv
"""


def test_explain_after_a_layout_change_blames_the_conv_not_the_permute(tmp_path):
    model = tmp_path / "dw.relax"
    model.write_text(DEPTHWISE)
    result = run("partition", model, "--backend", "cutlass", "--layout", "NHWC", "--explain")
    assert result.exit_code == 0
    assert (f"  {model}:9:61: main.lv = relax.nn.conv2d: [cutlass.conv2d] depthwise conv2d "
            "(IC == OC == groups == 8) is not supported") in result.stderr
    assert "= relax.permute_dims" not in result.stderr  # no permute blamed (only counted)


NAN = HEADER + """\
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((), dtype="float32") = R.log(R.const(-1, "float32"))
            b: R.Tensor((4, 4), dtype="float32") = R.add(x, a)
            gv: R.Tensor((4, 4), dtype="float32") = R.matmul(b, w, out_dtype="void")
            R.output(gv)
        return gv
"""


def test_nan_outputs_give_no_runtime_warning_and_verify_says_nothing_was_compared(tmp_path, recwarn):
    model = tmp_path / "nan.relax"
    model.write_text(NAN)
    result = run("run", model)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[2].split() == ["output_0", "(4,", "4)", "float32", "nan", "nan", "nan"]
    assert "Warning" not in result.stderr
    result = run("verify", model, "--backend", "cutlass", "--trials", "1")
    assert result.exit_code == 0
    assert "ok (all NaN)" in result.stdout
    assert ("warning: output_0 is NaN everywhere, in the original and the partitioned module, in at least "
            "one trial: that trial compared nothing for it") in result.stderr
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_verify_says_when_nothing_was_offloaded():
    result = run("verify", SEED, "--backend", "cutlass", "--trials", "1")
    assert result.exit_code == 0
    assert result.stderr.endswith("ok: nothing was offloaded (no pattern matched), so the partitioned module "
                                  "is the original; only that was checked\n")
    result = run("verify", SEED, "--patterns", SEED_PATTERNS, "--trials", "1")
    assert result.stderr.endswith("ok: the partitioned module computes what the original does "
                                  "(on the interpreter; the generated code was not run)\n")
