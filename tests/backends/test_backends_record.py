"""Backend records (byocc.backends.record): lookup by name, the unknown-name error, the
built-in records' fields, and a user's record driving --prepare's layout, --backend-steps'
rewrites and post-fusion steps, and RunCodegen, with transform never naming a backend."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from byocc.backends import PREFERRED
from byocc.backends import Backend
from byocc.backends import backend_steps
from byocc.backends import get_backend
from byocc.backends import get_patterns_with_prefix
from byocc.backends import lazy
from byocc.backends import partition_for_backend
from byocc.backends import prepare_passes
from byocc.backends import register_backend
from byocc.backends import registered_backends
from byocc.backends import registered_codegens
from byocc.backends import unregister_backend
from byocc.backends.cutlass.codegen import codegen
from byocc.backends.cutlass.rewrites import rewrite_attention
from byocc.backends.cutlass.workspace import annotate_workspace
from byocc.cli import cli
from byocc.dpl import is_op
from byocc.dpl import wildcard
from byocc.ir import Function
from byocc.ir import InputError
from byocc.ops.registry import make_call
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform import AllocateWorkspace
from byocc.transform import rewrite_call
from byocc.transform import stub_codegen

ROOT = Path(__file__).resolve().parents[2]

NCHW_CONV = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), dtype="float16"), w: R.Tensor((8, 4, 3, 3), dtype="float16")) -> R.Tensor((1, 8, 6, 6), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((1, 8, 6, 6), dtype="float16") = R.nn.conv2d(x, w)
            gv: R.Tensor((1, 8, 6, 6), dtype="float16") = R.nn.relu(lv)
            R.output(gv)
        return gv
"""


def test_builtin_records_are_looked_up_by_name():
    cutlass, cublas = get_backend("cutlass"), get_backend("cublas")
    assert (cutlass.name, cutlass.preferred_layout, cublas.preferred_layout) == ("cutlass", "NHWC", None)
    assert [r.resolve() for r in cutlass.rewrites] == [rewrite_attention]
    assert cutlass.post_partition[0].resolve() is annotate_workspace
    assert isinstance(cutlass.post_partition[1], AllocateWorkspace)
    assert (cublas.rewrites, cublas.post_partition) == ((), ())
    assert cutlass.codegen.resolve() is codegen
    assert [e.name for e in cutlass.patterns()] == [e.name for e in get_patterns_with_prefix("cutlass")]
    assert len(cutlass.patterns()) == 79 and len(cublas.patterns()) == 10  # spec/backends.md 3, 4
    assert {"cutlass", "cublas"} <= set(registered_backends())
    assert {"cutlass", "cublas"} <= set(registered_codegens())


def test_lazy_names_code_imported_on_first_call():
    step = lazy("byocc.backends.cutlass.workspace:annotate_workspace")
    assert step.__name__ == "annotate_workspace" and step.resolve() is annotate_workspace
    with pytest.raises(ValueError, match="expected 'package.module:attribute'"):
        lazy("byocc.backends.cutlass.workspace")


def test_records_are_frozen():
    with pytest.raises(AttributeError):
        get_backend("cutlass").preferred_layout = "NCHW"  # type: ignore[misc]


def test_an_unknown_name_is_one_clear_error():
    with pytest.raises(InputError, match=r"^unknown backend 'cutlas' \(known: cublas, cutlass\)$"):
        get_backend("cutlas")
    with pytest.raises(InputError, match="unknown backend 'nosuch'"):
        prepare_passes("nosuch")
    result = CliRunner().invoke(cli, ["partition", str(ROOT / "samples" / "seed.relax"), "--backend", "cutlas"])
    assert result.exit_code == 2
    assert "unknown backend 'cutlas' (known: cublas, cutlass); did you mean 'cutlass'?" in result.stderr


def test_a_registration_is_checked():
    with pytest.raises(ValueError, match="already registered"):
        register_backend(Backend("cutlass"))
    with pytest.raises(ValueError, match="without a dot"):
        register_backend(Backend("my.backend"))
    with pytest.raises(TypeError, match="expected a Backend"):
        register_backend("cutlass")  # type: ignore[arg-type]


def test_the_layout_comes_from_the_record():
    names = lambda *a, **k: [p.pass_name for p in prepare_passes(*a, **k)]  # noqa: E731
    assert "ConvertLayout" in names("cutlass")
    assert "ConvertLayout" not in names("cublas")
    assert "ConvertLayout" in names(["cublas", "cutlass"])  # the first that prefers one
    assert "ConvertLayout" not in names("cutlass", layout=None)
    assert names("cutlass", layout=PREFERRED) == names("cutlass", layout="NHWC")


def _relu_to_silu(func: Function, **options) -> Function:
    """A user's rewrite: every relu becomes silu (so its effect shows in the output)."""
    _relu_to_silu.calls.append(options)
    return rewrite_call(is_op("relax.nn.relu")(wildcard()),
                        lambda expr, matches: make_call("relax.nn.silu", [expr.args[0]]), func)


_relu_to_silu.calls = []


def _tag_module(mod):
    """A user's step after fusion."""
    _tag_module.seen.append(sorted(mod.names()))
    return mod


_tag_module.seen = []


@pytest.fixture()
def mine():
    """A user's backend 'mine': conv2d+silu and conv2d patterns, NHWC, one rewrite, one step."""
    conv = is_op("relax.nn.conv2d")(wildcard(), wildcard())
    record = Backend(
        name="mine",
        table=lambda: [("mine.conv2d", conv), ("mine.conv2d_silu", is_op("relax.nn.silu")(conv))],
        preferred_layout="NHWC",
        rewrites=(_relu_to_silu,),
        post_partition=(_tag_module,),
        codegen=stub_codegen("mine"),
    )
    _relu_to_silu.calls.clear()
    _tag_module.seen.clear()
    register_backend(record)
    yield record
    unregister_backend("mine")


def test_a_user_record_is_registered_and_removed(mine):
    assert get_backend("mine") is mine
    assert "mine" in registered_backends() and "mine" in registered_codegens()
    assert [e.name for e in mine.patterns()] == ["mine.conv2d_silu", "mine.conv2d"]  # last first
    assert backend_steps(["cublas", "mine"]) == ([_relu_to_silu], [_tag_module])
    unregister_backend("mine")
    assert "mine" not in registered_backends() and "mine" not in registered_codegens()
    assert get_patterns_with_prefix("mine.") == []
    with pytest.raises(InputError, match="unknown backend 'mine'"):
        get_backend("mine")
    register_backend(mine)  # for the fixture's clean-up


def test_a_user_record_drives_the_driver(mine):
    mod = parse_module(NCHW_CONV)
    out = partition_for_backend(mod, "mine", flavour="x")
    assert _relu_to_silu.calls == [{"flavour": "x"}]  # the driver's options reach the rewrite
    assert _tag_module.seen == [["fused_relax_nn_conv2d_relax_nn_silu_mine", "main"]]
    assert '"Composite": "mine.conv2d_silu"' in print_module(out)


def test_a_user_record_drives_the_cli(mine, tmp_path):
    model = tmp_path / "conv.relax"
    model.write_text(NCHW_CONV)
    plain = CliRunner().invoke(cli, ["partition", str(model), "--backend", "mine"], catch_exceptions=False)
    assert plain.exit_code == 0, plain.output
    assert "R.nn.relu" in plain.stdout and '"Composite": "mine.conv2d"' in plain.stdout
    assert "R.permute_dims" not in plain.stdout and _relu_to_silu.calls == [] and _tag_module.seen == []

    args = ["partition", str(model), "--backend", "mine", "--prepare", "--backend-steps", "-o", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "out" / "conv.partitioned.relax").read_text()
    assert 'data_layout="NHWC"' in text and 'kernel_layout="OHWI"' in text  # the record's layout
    assert '"Composite": "mine.conv2d_silu"' in text and "R.nn.relu" not in text  # its rewrite
    assert _relu_to_silu.calls == [{}] and len(_tag_module.seen) == 1  # its step, after fusion
    codegen = (tmp_path / "out" / "conv.codegen.relax").read_text()
    assert 'R.call_dps_packed("fused_relax_nn_conv2d_relax_nn_silu_mine"' in codegen  # its codegen


BUILTINS = ("cutlass", "cublas")


def backend_names_in(source: str) -> list[tuple[int, str]]:
    """``(line, string)`` of every string in ``source``'s code (docstrings aside) that is a
    built-in backend's name or one of its pattern names (``"cutlass"``, ``"cublas.matmul"``)."""
    tree = ast.parse(source)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in docstrings
                  and (node.value in BUILTINS or node.value.startswith(tuple(b + "." for b in BUILTINS))))


@pytest.mark.parametrize("package", ["transform", "runtime", "cli", "script"])
def test_no_layer_but_backends_dispatches_on_a_backend_name(package):
    """What a backend wants reaches these layers as parameters, from its record, never as a
    test on its name. (The facade's ``partition_for_cutlass`` looks its record up by name,
    so ``relax`` is not listed.)"""
    found = [f"{path.relative_to(ROOT)}:{line}: {value!r}"
             for path in sorted((ROOT / "byocc" / package).rglob("*.py"))
             for line, value in backend_names_in(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_scan_finds_a_substring_dispatch():
    source = ('"""Mentions cutlass."""\nif "cutlass" in str(symbol):\n    pass\n'
              'LAYOUT = frozenset(("cutlass",))\nTABLE = get("cublas.matmul")\n'
              'MESSAGE = "expected a name such as cutlass.matmul"\n')
    assert backend_names_in(source) == [(2, "cutlass"), (4, "cutlass"), (5, "cublas.matmul")]


def test_verify_runs_the_record_steps_and_catches_a_wrong_rewrite(mine, tmp_path):
    """``byocc verify --backend-steps`` compares the original with the module after the
    record's rewrites: relu -> silu changes the values, so the check fails."""
    model = tmp_path / "conv.relax"
    model.write_text(NCHW_CONV)
    base = ["verify", str(model), "--backend", "mine", "--trials", "1"]
    result = CliRunner().invoke(cli, base, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, [*base, "--backend-steps"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == "error: 2 outputs differ beyond tolerance"


def test_verify_with_cutlass_steps_keeps_attention_values():
    model = ROOT / "tests" / "data" / "partition_for_cutlass" / "attention_fp16.relax"
    result = CliRunner().invoke(cli, ["verify", str(model), "--backend", "cutlass", "--backend-steps",
                                      "--trials", "1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1] == ("ok: the partitioned module computes what the original does "
                                                 "(on the interpreter; the generated code was not run)")
