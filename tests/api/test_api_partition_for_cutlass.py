"""``partition_for_cutlass`` with attention: the workspace steps (annotate_workspace and
AllocateWorkspace) against TVM 0.27 goldens (tests/data/partition_for_cutlass/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from byocc import relax
from byocc.backends import get_patterns_with_prefix
from byocc.ir import IRModule
from byocc.relax.backend.cuda.cutlass import annotate_workspace
from byocc.relax.backend.cuda.cutlass import partition_for_cutlass
from byocc.script import from_source
from byocc.transform import AllocateWorkspace
from byocc.transform import FuseOpsByPattern

DATA = Path(__file__).parents[1] / "data" / "partition_for_cutlass"
CASES = sorted(p.stem for p in DATA.glob("*.relax"))


def load(case: str) -> IRModule:
    return from_source((DATA / f"{case}.relax").read_text(encoding="utf-8"))


def fuse(mod: IRModule) -> IRModule:
    """Step 2 of the driver alone."""
    return FuseOpsByPattern(get_patterns_with_prefix("cutlass"), bind_constants=False, annotate_codegen=True)(mod)


@pytest.mark.parametrize("annotate", [True, False], ids=["annotate", "composite"])
@pytest.mark.parametrize("case", CASES)
def test_matches_tvm(case, annotate):
    out = partition_for_cutlass(load(case), annotate_codegen=annotate)
    suffix = "annotate" if annotate else "composite"
    golden = (DATA / f"{case}.{suffix}.txt").read_text(encoding="utf-8")
    assert out.script() + "\n" == golden
    assert relax.analysis.well_formed(out)


def test_cases_present():
    expected = {"attention_fp16", "attention_bias_and_causal", "name_order", "two_functions_symbolic"}
    assert expected <= set(CASES)


def test_workspace_is_output_bytes_and_the_maximum():
    fused = fuse(load("name_order"))
    annotated = annotate_workspace(fused)
    # (4,16,32,16) f16 -> 65536 bytes; (2,8,4,8) f32 -> 2048 bytes; the wrapper copies it
    assert annotated["fused_relax_nn_attention1_cutlass"].attrs["WorkspaceSize"] == 65536
    assert annotated["fused_relax_nn_attention_cutlass"].attrs["WorkspaceSize"] == 2048
    out = AllocateWorkspace()(annotated)
    f = out["fused_relax_nn_attention_cutlass1"]
    assert "WorkspaceSize" not in f.attrs
    assert f.attrs["global_symbol"] == "fused_relax_nn_attention_cutlass1"
    assert f.params[-1].struct_info.shape == (65536,) and f.params[-1].struct_info.dtype == "uint8"


def test_symbolic_output_gets_eight_bytes():
    fused = fuse(load("two_functions_symbolic"))
    annotated = annotate_workspace(fused)
    assert annotated["fused_relax_nn_attention2_cutlass"].attrs["WorkspaceSize"] == 8


def test_without_attention_allocate_workspace_changes_nothing():
    mod = from_source('''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((16, 16), dtype="float16")) -> R.Tensor((16, 16), dtype="float16"):
        with R.dataflow():
            y: R.Tensor((16, 16), dtype="float16") = R.matmul(x, x)
            R.output(y)
        return y
''')
    fused = fuse(mod)
    assert AllocateWorkspace()(fused) is fused
    assert partition_for_cutlass(mod).script() == fused.script()
    assert AllocateWorkspace().info.name == "AllocateWorkspace"


@pytest.mark.parametrize("case", CASES)
def test_the_cli_reaches_the_same_steps(case):
    """``byocc partition --backend cutlass --backend-steps --no-bind-constants`` runs the
    cutlass record's rewrites and steps as partition_for_cutlass does: TVM's golden text."""
    from click.testing import CliRunner

    from byocc.cli import cli

    args = ["partition", str(DATA / f"{case}.relax"), "--backend", "cutlass", "--backend-steps",
            "--no-bind-constants"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout == (DATA / f"{case}.annotate.txt").read_text(encoding="utf-8")


def test_without_backend_steps_the_cli_fuses_only():
    """The default CLI path is FuseOpsByPattern alone (the conformance oracle's): no
    rewrites and no workspace."""
    from click.testing import CliRunner

    from byocc.cli import cli

    args = ["partition", str(DATA / "attention_fp16.relax"), "--backend", "cutlass", "--no-bind-constants"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout == fuse(load("attention_fp16")).script() + "\n"
    assert "workspace" not in result.stdout
